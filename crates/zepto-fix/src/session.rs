//! A FIX session, as a state machine over received bytes: Logon (received as acceptor, or sent
//! first as initiator, [`Session::initiate`], then a MarketDataRequest once logged on),
//! Heartbeat and TestRequest, sequence-number checks (a gap asks for a resend, a too-low
//! number without PossDupFlag ends the session, a PossDup already seen is dropped), the
//! counterparty's ResendRequest answered with a gap fill (we send no application messages),
//! SequenceReset, Reject of a malformed message (nothing of it applied) and Logout.
//!
//! Exactly once: received messages are only read into a [`Batch`]; [`Session::commit`]
//! then stores their rows and the session's sequence numbers as one logged change, and only
//! after that are the responses handed out to be sent. A crash before the commit loses
//! neither: the counterparty's messages are still unacknowledged, and after the restart the
//! stored sequence number asks for exactly what is missing. No network here ([`crate::server`]
//! drives it), so it is tested message by message.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::encode::{Encoder, Reject};
use crate::map::{last_state, Batch, MapError, SessionState};
use crate::parse::{frame, parse, Fields, FixError, Message};
use std::sync::Arc;
use zepto_storage::{Catalog, StorageError};

pub use crate::config::{InitiatorConfig, SessionConfig, Subscription};
pub use crate::registry::{Registry, Stats};

/// One connection's session.
pub struct Session {
    cfg: Arc<SessionConfig>,
    registry: Arc<Registry>,
    /// Set by the Logon.
    enc: Option<Encoder>,
    name: String,
    heartbeat_secs: u64,
    /// The next incoming MsgSeqNum expected.
    expected: u64,
    /// The last outgoing MsgSeqNum used.
    out_seq: u64,
    /// (expected, out_seq) as last stored.
    saved: (u64, u64),
    /// When the state was last stored (the next is stored later, whatever the clock says).
    saved_at: i64,
    /// A ResendRequest is out, for messages up to this one.
    resend_until: Option<u64>,
    /// When the last ResendRequest went out.
    resend_at: i64,
    batch: Batch,
    /// Responses waiting for the commit.
    out: Vec<u8>,
    idle: u32,
    closed: bool,
    /// Counters.
    pub stats: Stats,
    /// The SendingTime of the newest message in the batch, for the lag to stored.
    newest_sent: Option<i64>,
    /// As initiator: what to ask for once logged on, and whether the Logon reply is awaited.
    initiator: Option<Arc<InitiatorConfig>>,
    logon_pending: bool,
}

fn log(name: &str, msg: &str) {
    let who = if name.is_empty() { "(not logged on)" } else { name };
    eprintln!("zeptodb: fix {who}: {msg}");
}

/// SessionRejectReason (373) for a parse or mapping error.
fn reject_reason(e: &FixError) -> u32 {
    match e {
        FixError::MissingTag { .. } => 1,
        FixError::GroupCount { .. } => 16,
        _ => 6,
    }
}

impl Session {
    /// A session not logged on yet.
    pub fn new(cfg: Arc<SessionConfig>, registry: Arc<Registry>) -> Session {
        let batch = Batch::new(cfg.names.clone());
        let heartbeat_secs = cfg.heartbeat_secs;
        Session {
            cfg,
            registry,
            enc: None,
            name: String::new(),
            heartbeat_secs,
            expected: 1,
            out_seq: 0,
            saved: (0, 0),
            saved_at: 0,
            newest_sent: None,
            resend_until: None,
            resend_at: 0,
            batch,
            out: Vec::new(),
            idle: 0,
            closed: false,
            stats: Stats::default(),
            initiator: None,
            logon_pending: false,
        }
    }

    /// A session started from this side: its Logon (with the stored sequence numbers, or
    /// reset ones) is the first thing [`Session::commit`] hands out. `None` if the session is
    /// logged on already (through the acceptor, or another connection).
    pub fn initiate(
        cfg: Arc<SessionConfig>,
        registry: Arc<Registry>,
        init: Arc<InitiatorConfig>,
        catalog: &Catalog,
        now_ns: i64,
    ) -> Option<Session> {
        let mut s = Session::new(cfg, registry);
        let name = format!("{}-{}", s.cfg.sender, init.target);
        if !s.registry.claim(&name) {
            return None;
        }
        s.name = name;
        s.enc = Some(Encoder::new("FIX.4.4", &s.cfg.sender, &init.target));
        if let Some(st) = last_state(catalog, &s.cfg.names, &s.name) {
            (s.expected, s.out_seq, s.saved_at) = (st.in_seq + 1, st.out_seq, st.at);
        }
        if init.reset_on_logon {
            (s.expected, s.out_seq) = (1, 0);
        }
        s.heartbeat_secs = init.heartbeat_secs;
        let (hb, reset) = (init.heartbeat_secs, init.reset_on_logon);
        log(&s.name, &format!("logon to {}, expecting {}, next out {}", init.connect, s.expected, s.out_seq + 1));
        s.send(now_ns, |e, out, seq, now| e.logon(out, seq, now, hb, reset));
        s.saved = (0, 0);
        s.initiator = Some(init);
        s.logon_pending = true;
        Some(s)
    }

    /// Whether the session got as far as a Logon from the counterparty.
    pub fn logged_on(&self) -> bool {
        self.enc.is_some() && !self.logon_pending
    }

    /// `OURS-THEIRS` once logged on, else empty.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The heartbeat interval agreed at Logon, seconds.
    pub fn heartbeat_secs(&self) -> u64 {
        self.heartbeat_secs.max(1)
    }

    /// The session is over: send what [`Session::commit`] returns, then close.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// The next incoming sequence number expected.
    pub fn expected(&self) -> u64 {
        self.expected
    }

    /// Read the complete messages at the start of `buf`; returns the bytes used (the rest is
    /// the start of a message still arriving). Nothing is stored or sent before
    /// [`Session::commit`].
    pub fn receive(&mut self, buf: &[u8], catalog: &Catalog, now_ns: i64) -> usize {
        self.idle = 0;
        let mut at = 0;
        while !self.closed {
            let rest = buf.get(at..).unwrap_or_default();
            if rest.is_empty() {
                break;
            }
            match parse(rest) {
                Ok(m) => {
                    at += m.len();
                    self.on_message(&m, catalog, now_ns);
                }
                Err(FixError::Incomplete) => break,
                Err(e) => at += self.on_bad(rest, &e, now_ns),
            }
        }
        at
    }

    /// Store the rows read and the sequence numbers, then hand out the responses to send. On
    /// a storage error nothing read since the last commit counts as received (the session
    /// closes; the counterparty resends after its next Logon).
    pub fn commit(&mut self, catalog: &Catalog, now_ns: i64) -> Result<Vec<u8>, StorageError> {
        let state = (self.expected, self.out_seq);
        if !self.name.is_empty() && (self.batch.rows() > 0 || state != self.saved) {
            let st = SessionState {
                name: self.name.clone(),
                in_seq: self.expected.saturating_sub(1),
                out_seq: self.out_seq,
                at: now_ns.max(self.saved_at.saturating_add(1)),
            };
            match self.batch.apply(catalog, Some(&st)) {
                Ok(n) => {
                    self.stats.rows += n as u64;
                    self.saved = state;
                    self.saved_at = st.at;
                    let lag = self.newest_sent.take().filter(|_| n > 0).map(|t| now_ns.saturating_sub(t));
                    self.registry.publish(&self.name, self.stats, lag);
                }
                Err(e) => {
                    (self.expected, self.out_seq) = self.saved;
                    self.out.clear();
                    self.closed = true;
                    log(&self.name, &format!("not stored, closing (the counterparty resends): {e}"));
                    return Err(e);
                }
            }
        }
        Ok(std::mem::take(&mut self.out))
    }

    /// Nothing received for a heartbeat interval: send a Heartbeat, then a TestRequest, then
    /// give up.
    pub fn on_idle(&mut self, now_ns: i64) {
        if self.enc.is_none() || self.logon_pending {
            log(&self.name, "no Logon in a heartbeat interval: closing");
            self.closed = true;
            return;
        }
        self.idle += 1;
        match self.idle {
            1 => self.send(now_ns, |e, out, seq, now| e.heartbeat(out, seq, now, None)),
            2 => self.send(now_ns, |e, out, seq, now| e.test_request(out, seq, now, b"ZEPTO-IDLE")),
            _ => self.logout(now_ns, "no heartbeat from the counterparty"),
        }
    }

    fn send(&mut self, now_ns: i64, f: impl FnOnce(&mut Encoder, &mut Vec<u8>, u64, i64)) {
        if let Some(e) = self.enc.as_mut() {
            self.out_seq += 1;
            f(e, &mut self.out, self.out_seq, now_ns);
        }
    }

    fn logout(&mut self, now_ns: i64, text: &str) {
        log(&self.name, &format!("logout: {text}"));
        self.send(now_ns, |e, out, seq, now| e.logout(out, seq, now, Some(text)));
        self.closed = true;
    }

    fn reject(&mut self, now_ns: i64, ref_seq: u64, e: &FixError) {
        self.stats.rejects += 1;
        let text = e.to_string();
        log(&self.name, &format!("reject of message {ref_seq}: {text}"));
        let why = Reject { ref_seq, ref_tag: e.tag(), reason: reject_reason(e), text: &text };
        self.send(now_ns, |enc, out, seq, now| enc.reject(out, seq, now, &why));
    }

    /// A message that failed to parse: skip it (returns the bytes to skip), rejecting it if
    /// its frame and sequence number are readable.
    fn on_bad(&mut self, rest: &[u8], e: &FixError, now_ns: i64) -> usize {
        if let FixError::Garbled { .. } = e {
            self.stats.rejects += 1;
            log(&self.name, &format!("garbled input skipped to the next 8=FIX: {e}"));
            let next = rest.get(1..).and_then(|r| r.windows(5).position(|w| w == b"8=FIX")).map(|p| p + 1);
            return next.unwrap_or_else(|| rest.len().saturating_sub(4).max(1));
        }
        let len = frame(rest).unwrap_or(rest.len()).max(1);
        if let FixError::Checksum { .. } = e {
            self.stats.rejects += 1;
            log(&self.name, &format!("message ignored: {e}"));
            return len;
        }
        let seq = Fields::new(rest.get(..len).unwrap_or_default(), 0)
            .map_while(Result::ok)
            .find(|f| f.tag == 34)
            .and_then(|f| f.as_u64().ok());
        match seq {
            _ if self.enc.is_none() => {
                log("", &format!("the first message is not a valid Logon: {e}"));
                self.closed = true;
            }
            None => self.logout(now_ns, &format!("a message without a valid MsgSeqNum: {e}")),
            Some(seq) => {
                if self.in_sequence(seq, false, now_ns) {
                    self.reject(now_ns, seq, e);
                }
            }
        }
        len
    }

    /// Whether message `seq` is the next: if so it counts as received; a gap sends a
    /// ResendRequest, a number too low ends the session unless PossDup. While a resend is out,
    /// a number past the next but inside the range asked for (the resend skipped a message),
    /// or any number past the next a heartbeat interval after asking, asks again: a resend
    /// that does not complete never leaves the session dropping every later message.
    fn in_sequence(&mut self, seq: u64, poss_dup: bool, now_ns: i64) -> bool {
        if seq == self.expected {
            self.expected += 1;
            self.stats.messages += 1;
            if self.resend_until.is_some_and(|u| self.expected > u) {
                self.resend_until = None;
            }
            return true;
        }
        if seq > self.expected {
            let waited = now_ns.saturating_sub(self.resend_at) > (self.heartbeat_secs.max(1) as i64) * 1_000_000_000;
            let ask = match self.resend_until {
                None => {
                    self.stats.gaps += 1;
                    log(&self.name, &format!("gap: expected {}, received {seq}; asking for a resend", self.expected));
                    true
                }
                Some(u) if seq <= u || waited => {
                    log(
                        &self.name,
                        &format!("resend incomplete: expected {}, received {seq}; asking again", self.expected),
                    );
                    true
                }
                Some(_) => false,
            };
            if ask {
                let begin = self.expected;
                self.send(now_ns, |e, out, s, now| e.resend_request(out, s, now, begin, 0));
                self.resend_until = Some(self.resend_until.map_or(seq, |u| u.max(seq)));
                self.resend_at = now_ns;
            }
            return false;
        }
        if !poss_dup {
            let text = format!("MsgSeqNum too low, expecting {} but received {seq}", self.expected);
            self.logout(now_ns, &text);
        }
        false
    }

    fn on_message(&mut self, m: &Message<'_>, catalog: &Catalog, now_ns: i64) {
        let Some(enc) = self.enc.as_ref() else {
            return self.on_logon(m, catalog, now_ns);
        };
        let h = &m.header;
        if h.sender != enc.target.as_bytes() || h.target != enc.sender.as_bytes() {
            let e = FixError::BadField { offset: 0, tag: 49, reason: "CompID problem" };
            self.reject(now_ns, h.seq, &e);
            return self.logout(now_ns, "wrong SenderCompID or TargetCompID");
        }
        if self.logon_pending {
            return self.on_logon_reply(m, now_ns);
        }
        if h.msg_type == b"4" && m.get(123) != Some(b"Y") {
            // SequenceReset-Reset: the next number is NewSeqNo, whatever this one's.
            return self.sequence_reset(m, now_ns);
        }
        if !self.in_sequence(h.seq, h.poss_dup, now_ns) {
            return;
        }
        match h.msg_type {
            b"0" | b"A" => {}
            b"1" => {
                let id = m.get(112).unwrap_or(b"?");
                self.send(now_ns, |e, out, seq, now| e.heartbeat(out, seq, now, Some(id)));
            }
            b"2" => self.answer_resend(m, now_ns),
            b"3" => log(&self.name, &format!("the counterparty rejected our message {:?}", m.get(45))),
            b"4" => self.sequence_reset(m, now_ns),
            b"5" => {
                log(&self.name, "logout by the counterparty");
                self.send(now_ns, |e, out, seq, now| e.logout(out, seq, now, None));
                self.closed = true;
            }
            _ => match self.batch.add(m) {
                Ok(_) => {
                    let sent = crate::time::parse_timestamp(h.sending_time);
                    self.newest_sent = self.newest_sent.max(sent);
                }
                Err(MapError::Fix(e)) => self.reject(now_ns, h.seq, &e),
                Err(MapError::Storage(e)) => {
                    log(&self.name, &format!("message {} cannot be stored: {e}", h.seq));
                    let e = FixError::BadField { offset: 0, tag: 35, reason: "cannot be stored" };
                    self.reject(now_ns, h.seq, &e);
                }
            },
        }
    }

    fn sequence_reset(&mut self, m: &Message<'_>, now_ns: i64) {
        match m.field(36).map(|f| f.as_u64()) {
            Some(Ok(n)) if n >= self.expected => {
                self.expected = n;
                if self.resend_until.is_some_and(|u| n > u) {
                    self.resend_until = None;
                }
            }
            Some(Ok(n)) => {
                let e = FixError::BadField { offset: 0, tag: 36, reason: "NewSeqNo would go back" };
                self.reject(now_ns, m.header.seq, &e);
                log(&self.name, &format!("SequenceReset to {n} ignored: below {}", self.expected));
            }
            Some(Err(e)) => self.reject(now_ns, m.header.seq, &e),
            None => self.reject(now_ns, m.header.seq, &FixError::MissingTag { offset: 0, tag: 36 }),
        }
    }

    /// We keep no application messages to resend: the whole range is a gap fill.
    fn answer_resend(&mut self, m: &Message<'_>, now_ns: i64) {
        let begin = m.get(7).and_then(crate::parse::parse_u64).unwrap_or(1).max(1);
        let next = self.out_seq + 1;
        if let Some(e) = self.enc.as_mut() {
            // Numbered `begin` (PossDup), it fills up to our next number without taking one.
            e.sequence_reset(&mut self.out, begin.min(next), now_ns, next, true);
        }
    }

    /// As initiator: the counterparty's answer to our Logon.
    fn on_logon_reply(&mut self, m: &Message<'_>, now_ns: i64) {
        let h = &m.header;
        match h.msg_type {
            b"A" => {}
            b"5" => {
                let text = m.get(58).map(String::from_utf8_lossy).unwrap_or_default();
                log(&self.name, &format!("logon refused by the counterparty: {text}"));
                self.closed = true;
                return;
            }
            _ => return self.logout(now_ns, "the answer to our Logon is not a Logon"),
        }
        self.logon_pending = false;
        if m.get(141) == Some(b"Y") {
            self.expected = 1;
        }
        log(&self.name, &format!("logged on, expecting {} (received {})", self.expected, h.seq));
        self.in_sequence(h.seq, h.poss_dup, now_ns);
        if let Some(sub) = self.initiator.as_ref().and_then(|i| i.subscribe.clone()) {
            self.send(now_ns, |e, out, seq, now| e.market_data_request(out, seq, now, &sub));
        }
    }

    fn on_logon(&mut self, m: &Message<'_>, catalog: &Catalog, now_ns: i64) {
        let h = &m.header;
        if h.msg_type != b"A" {
            log("", "the first message is not a Logon: closing");
            self.closed = true;
            return;
        }
        let (Ok(theirs), Ok(ours)) = (std::str::from_utf8(h.sender), std::str::from_utf8(h.target)) else {
            self.closed = true;
            return;
        };
        let begin = std::str::from_utf8(h.begin_string).unwrap_or("FIX.4.4");
        self.enc = Some(Encoder::new(begin, &self.cfg.sender, theirs));
        let accepted =
            ours == self.cfg.sender && (self.cfg.targets.is_empty() || self.cfg.targets.iter().any(|t| t == theirs));
        if !accepted {
            return self.logout(now_ns, &format!("CompIDs {theirs} -> {ours} are not configured here"));
        }
        let name = format!("{}-{theirs}", self.cfg.sender);
        if !self.registry.claim(&name) {
            return self.logout(now_ns, "this session is already logged on");
        }
        self.name = name;
        if let Some(st) = last_state(catalog, &self.cfg.names, &self.name) {
            (self.expected, self.out_seq, self.saved_at) = (st.in_seq + 1, st.out_seq, st.at);
        }
        let reset = m.get(141) == Some(b"Y");
        if reset {
            (self.expected, self.out_seq) = (1, 0);
        }
        self.heartbeat_secs = m.get(108).and_then(crate::parse::parse_u64).unwrap_or(self.cfg.heartbeat_secs);
        let hb = self.heartbeat_secs;
        log(
            &self.name,
            &format!("logon, expecting {} (received {}), next out {}", self.expected, h.seq, self.out_seq + 1),
        );
        self.send(now_ns, |e, out, seq, now| e.logon(out, seq, now, hb, reset));
        self.saved = (0, 0);
        self.in_sequence(h.seq, h.poss_dup, now_ns);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.name.is_empty() {
            self.registry.release(&self.name);
        }
    }
}
