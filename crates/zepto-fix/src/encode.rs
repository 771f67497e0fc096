//! The encoder of the messages ZeptoDB sends: Logon (A), Heartbeat (0), TestRequest (1),
//! ResendRequest (2), Reject (3), SequenceReset (4), Logout (5) and, as initiator,
//! MarketDataRequest (V), with BodyLength and
//! CheckSum computed. It reuses one body buffer, so encoding allocates nothing once warm.

use crate::config::Subscription;
use crate::parse::{checksum, SOH};
use crate::time::write_timestamp;
use std::io::Write;

/// Writes messages from one session side (our SenderCompID to their TargetCompID).
#[derive(Debug, Clone)]
pub struct Encoder {
    /// BeginString (8), e.g. `FIX.4.4`.
    pub begin_string: String,
    /// Our SenderCompID (49).
    pub sender: String,
    /// The counterparty's CompID, our TargetCompID (56).
    pub target: String,
    body: Vec<u8>,
}

/// What a Reject (3) says.
#[derive(Debug, Clone, Copy)]
pub struct Reject<'a> {
    /// RefSeqNum (45): the message rejected.
    pub ref_seq: u64,
    /// RefTagID (371): the tag at fault (0: none named).
    pub ref_tag: u32,
    /// SessionRejectReason (373), e.g. 1 required tag missing, 5 value incorrect.
    pub reason: u32,
    /// Text (58).
    pub text: &'a str,
}

/// A field value: text or an integer, written without allocating.
#[derive(Debug, Clone, Copy)]
pub enum Value<'a> {
    /// Bytes as they are.
    Bytes(&'a [u8]),
    /// An unsigned integer in decimal.
    Int(u64),
}

impl Encoder {
    /// An encoder for `sender` → `target` speaking `begin_string`.
    pub fn new(begin_string: &str, sender: &str, target: &str) -> Encoder {
        Encoder {
            begin_string: begin_string.to_string(),
            sender: sender.to_string(),
            target: target.to_string(),
            body: Vec::with_capacity(256),
        }
    }

    /// Append to `out` the message `msg_type` numbered `seq`, sent at `now_ns`, with `fields`
    /// after the standard header (PossDupFlag=Y and OrigSendingTime when `poss_dup`).
    pub fn message(
        &mut self,
        out: &mut Vec<u8>,
        msg_type: &str,
        seq: u64,
        now_ns: i64,
        poss_dup: bool,
        fields: &[(u32, Value<'_>)],
    ) {
        let b = &mut self.body;
        b.clear();
        let _ = write!(b, "35={msg_type}\x0149={}\x0156={}\x0134={seq}\x0152=", self.sender, self.target);
        write_timestamp(b, now_ns);
        b.push(SOH);
        if poss_dup {
            b.extend_from_slice(b"43=Y\x01122=");
            write_timestamp(b, now_ns);
            b.push(SOH);
        }
        for (tag, v) in fields {
            let _ = match v {
                Value::Bytes(s) => write!(b, "{tag}=").and_then(|()| b.write_all(s)),
                Value::Int(n) => write!(b, "{tag}={n}"),
            };
            b.push(SOH);
        }
        let start = out.len();
        let _ = write!(out, "8={}\x019={}\x01", self.begin_string, b.len());
        out.extend_from_slice(b);
        let sum = checksum(out.get(start..).unwrap_or_default());
        let _ = write!(out, "10={sum:03}\x01");
    }

    /// Logon (A): EncryptMethod none, HeartBtInt `heartbeat_secs`, ResetSeqNumFlag if `reset`.
    pub fn logon(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, heartbeat_secs: u64, reset: bool) {
        let mut f = vec![(98, Value::Int(0)), (108, Value::Int(heartbeat_secs))];
        if reset {
            f.push((141, Value::Bytes(b"Y")));
        }
        self.message(out, "A", seq, now_ns, false, &f);
    }

    /// Heartbeat (0), answering TestRequest `test_req_id` if given.
    pub fn heartbeat(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, test_req_id: Option<&[u8]>) {
        match test_req_id {
            Some(id) => self.message(out, "0", seq, now_ns, false, &[(112, Value::Bytes(id))]),
            None => self.message(out, "0", seq, now_ns, false, &[]),
        }
    }

    /// TestRequest (1) with TestReqID `id`.
    pub fn test_request(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, id: &[u8]) {
        self.message(out, "1", seq, now_ns, false, &[(112, Value::Bytes(id))]);
    }

    /// ResendRequest (2) for `begin` to `end` (0: everything after `begin`).
    pub fn resend_request(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, begin: u64, end: u64) {
        self.message(out, "2", seq, now_ns, false, &[(7, Value::Int(begin)), (16, Value::Int(end))]);
    }

    /// Reject (3) as `why` says.
    pub fn reject(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, why: &Reject<'_>) {
        let mut f = vec![(45, Value::Int(why.ref_seq))];
        if why.ref_tag != 0 {
            f.push((371, Value::Int(u64::from(why.ref_tag))));
        }
        f.push((373, Value::Int(u64::from(why.reason))));
        f.push((58, Value::Bytes(why.text.as_bytes())));
        self.message(out, "3", seq, now_ns, false, &f);
    }

    /// SequenceReset (4) to NewSeqNo `new_seq`; GapFillFlag=Y (numbered `seq`, PossDup) if
    /// `gap_fill`, else a reset.
    pub fn sequence_reset(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, new_seq: u64, gap_fill: bool) {
        let flag = if gap_fill { &b"Y"[..] } else { b"N" };
        self.message(out, "4", seq, now_ns, gap_fill, &[(123, Value::Bytes(flag)), (36, Value::Int(new_seq))]);
    }

    /// MarketDataRequest (V) for `sub`: snapshot plus updates, as incremental refreshes.
    pub fn market_data_request(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, sub: &Subscription) {
        let mut f = vec![
            (262, Value::Bytes(sub.md_req_id.as_bytes())),
            (263, Value::Bytes(b"1")),
            (264, Value::Int(sub.depth)),
            (265, Value::Bytes(b"1")),
            (267, Value::Int(sub.entry_types.len() as u64)),
        ];
        f.extend(sub.entry_types.iter().map(|t| (269, Value::Bytes(t.as_bytes()))));
        f.push((146, Value::Int(sub.symbols.len() as u64)));
        f.extend(sub.symbols.iter().map(|s| (55, Value::Bytes(s.as_bytes()))));
        self.message(out, "V", seq, now_ns, false, &f);
    }

    /// Logout (5), with Text if given.
    pub fn logout(&mut self, out: &mut Vec<u8>, seq: u64, now_ns: i64, text: Option<&str>) {
        match text {
            Some(t) => self.message(out, "5", seq, now_ns, false, &[(58, Value::Bytes(t.as_bytes()))]),
            None => self.message(out, "5", seq, now_ns, false, &[]),
        }
    }
}
