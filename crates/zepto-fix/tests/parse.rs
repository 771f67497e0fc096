//! The parser on real FIX messages, the encoder's output read back, and many mutated messages
//! that must give an error or a message, never a panic.

use zepto_fix::encode::Reject;
use zepto_fix::parse::{frame, parse, FixError};
use zepto_fix::Encoder;

/// A message with `body` (`|` for SOH), BodyLength and CheckSum computed.
pub fn fix(begin: &str, body: &str) -> Vec<u8> {
    let body = body.replace('|', "\x01");
    let mut m = format!("8={begin}\x019={}\x01{body}", body.len()).into_bytes();
    let sum = m.iter().fold(0u8, |s, &b| s.wrapping_add(b));
    m.extend_from_slice(format!("10={sum:03}\x01").as_bytes());
    m
}

fn md_w() -> Vec<u8> {
    fix(
        "FIX.4.4",
        "35=W|49=FEED|56=ZEPTO|34=12|52=20240102-09:30:00.123|262=req1|55=EUR/USD|268=3|\
         269=0|270=1.0841|271=1000000|273=09:30:00.120|\
         269=1|270=1.0843|271=2000000|273=09:30:00.121|\
         269=2|270=1.0842|271=500000|272=20240102|273=09:29:59.999|",
    )
}

#[test]
fn parses_the_classic_logon_sample() {
    // The well-known FIX 4.2 Logon, BodyLength 65 and CheckSum 062 as published.
    let raw = b"8=FIX.4.2\x019=65\x0135=A\x0149=SERVER\x0156=CLIENT\x0134=177\x0152=20090107-18:15:16\x0198=0\x01108=30\x0110=062\x01";
    let m = parse(raw).expect("logon");
    assert_eq!(m.len(), raw.len());
    let h = m.header;
    assert_eq!(
        (h.begin_string, h.msg_type, h.sender, h.target),
        (&b"FIX.4.2"[..], &b"A"[..], &b"SERVER"[..], &b"CLIENT"[..])
    );
    assert_eq!((h.seq, h.sending_time, h.poss_dup), (177, &b"20090107-18:15:16"[..], false));
    assert_eq!(m.get(108), Some(&b"30"[..]));
    assert_eq!(frame(raw), Ok(raw.len()));
}

#[test]
fn reads_market_data_groups_without_a_dictionary() {
    let raw = md_w();
    let m = parse(&raw).expect("W");
    assert_eq!(m.msg_type(), "W");
    let g = m.group(268, 269, |t| t != 10).expect("group").expect("268");
    assert_eq!(g.declared(), 3);
    let entries: Vec<_> = g.collect::<Result<_, _>>().expect("entries");
    let px: Vec<_> = entries.iter().map(|e| e.get(270).expect("px")).collect();
    assert_eq!(px, [&b"1.0841"[..], b"1.0843", b"1.0842"]);
    assert_eq!(entries.get(2).and_then(|e| e.get(272)), Some(&b"20240102"[..]));
    assert_eq!(entries.first().and_then(|e| e.get(272)), None);
}

#[test]
fn a_wrong_group_count_is_an_error() {
    for n in ["2", "4"] {
        let raw = fix(
            "FIX.4.4",
            &format!("35=W|49=A|56=B|34=1|52=20240102-09:30:00|55=X|268={n}|269=0|270=1|269=1|270=2|269=2|270=3|"),
        );
        let m = parse(&raw).expect("frame ok");
        let r: Result<Vec<_>, _> = m.group(268, 269, |_| true).expect("group").expect("268").collect();
        assert!(matches!(r, Err(FixError::GroupCount { tag: 268, .. })), "{n}: {r:?}");
    }
}

#[test]
fn frame_errors_name_offset_and_tag() {
    let good = md_w();
    // A damaged checksum.
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 2] = if bad[n - 2] == b'0' { b'1' } else { b'0' };
    let e = parse(&bad).expect_err("checksum");
    assert!(matches!(e, FixError::Checksum { .. }) && e.tag() == 10 && e.offset() == n - 7, "{e}");
    assert!(e.is_garbled());
    // A wrong BodyLength.
    let s = String::from_utf8(good.clone()).expect("ascii");
    let wrong = s.replacen("\x019=", "\x019=1", 1);
    let e = parse(wrong.as_bytes()).expect_err("bodylength");
    assert!(matches!(e, FixError::Incomplete | FixError::Garbled { tag: 9, .. }), "{e}");
    let e = parse(b"8=FIX.4.4\x019=4\x0135=0\x0110=000\x01").expect_err("short body");
    assert_eq!(e.tag(), 9, "{e}");
    // Not FIX at all.
    let e = parse(b"GET / HTTP/1.1\r\n\r\n").expect_err("http");
    assert_eq!((e.tag(), e.offset()), (8, 0));
    // Only the start of a message: read more.
    for cut in [1, 5, 12, 20, good.len() - 1] {
        assert_eq!(parse(&good[..cut]).err(), Some(FixError::Incomplete), "cut at {cut}");
    }
    // Missing header fields.
    let e = parse(&fix("FIX.4.4", "35=0|49=A|56=B|52=20240102-09:30:00|")).expect_err("no 34");
    assert!(matches!(e, FixError::MissingTag { tag: 34, .. }), "{e}");
    let e = parse(&fix("FIX.4.4", "49=A|35=0|56=B|34=1|52=20240102-09:30:00|")).expect_err("35 not first");
    assert!(matches!(e, FixError::MissingTag { tag: 35, .. }), "{e}");
    let e = parse(&fix("FIX.4.4", "35=0|49=A|56=B|34=x|52=20240102-09:30:00|")).expect_err("bad 34");
    assert!(matches!(e, FixError::BadField { tag: 34, .. }), "{e}");
    let e = parse(&fix("FIX.4.4", "35=0|49=A|56=B|34=1|52=20240102-09:30:00|58|")).expect_err("no =");
    assert!(matches!(e, FixError::BadField { .. }), "{e}");
}

#[test]
fn two_messages_in_one_buffer_are_framed_one_by_one() {
    let mut buf = md_w();
    let first = buf.len();
    buf.extend(fix("FIX.4.4", "35=0|49=FEED|56=ZEPTO|34=13|52=20240102-09:30:01|"));
    let m = parse(&buf).expect("first");
    assert_eq!(m.len(), first);
    let m2 = parse(&buf[first..]).expect("second");
    assert_eq!((m2.msg_type(), m2.header.seq), ("0", 13));
}

#[test]
fn the_encoder_writes_what_the_parser_reads() {
    let mut e = Encoder::new("FIX.4.4", "ZEPTO", "FEED");
    let mut out = Vec::new();
    let now = 1_704_187_800_123_000_000;
    e.logon(&mut out, 1, now, 30, false);
    e.heartbeat(&mut out, 2, now, Some(b"T1"));
    e.test_request(&mut out, 3, now, b"T2");
    e.resend_request(&mut out, 4, now, 7, 0);
    e.reject(&mut out, 5, now, &Reject { ref_seq: 9, ref_tag: 270, reason: 6, text: "bad price" });
    e.sequence_reset(&mut out, 6, now, 10, true);
    e.logout(&mut out, 7, now, Some("bye"));
    let mut at = 0;
    let mut seen = Vec::new();
    while at < out.len() {
        let m = parse(&out[at..]).expect("encoded message parses");
        assert_eq!((m.header.sender, m.header.target), (&b"ZEPTO"[..], &b"FEED"[..]));
        assert_eq!(m.header.sending_time, b"20240102-09:30:00.123");
        seen.push((m.msg_type().to_string(), m.header.seq));
        at += m.len();
    }
    let types: Vec<_> = seen.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types, ["A", "0", "1", "2", "3", "4", "5"]);
    let mut one = Vec::new();
    e.reject(&mut one, 5, now, &Reject { ref_seq: 9, ref_tag: 270, reason: 6, text: "bad price" });
    let m = parse(&one).expect("reject");
    assert_eq!(
        (m.get(45), m.get(371), m.get(373), m.get(58)),
        (Some(&b"9"[..]), Some(&b"270"[..]), Some(&b"6"[..]), Some(&b"bad price"[..]))
    );
    let mut gap = Vec::new();
    e.sequence_reset(&mut gap, 6, now, 10, true);
    let m = parse(&gap).expect("gap fill");
    assert!(m.header.poss_dup);
    assert_eq!((m.get(123), m.get(36)), (Some(&b"Y"[..]), Some(&b"10"[..])));
}

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Every way of reading a message, as the door does.
fn read_all(buf: &[u8]) {
    let _ = frame(buf);
    if let Ok(m) = parse(buf) {
        let _ = m.fields().count();
        for (count, first) in [(268, 269), (268, 279), (146, 55)] {
            if let Ok(Some(g)) = m.group(count, first, |t| t != 89) {
                for e in g.flatten() {
                    let _ = e.fields().count();
                }
            }
        }
        let mut batch = zepto_fix::map::Batch::default();
        let _ = batch.add(&m);
    }
}

#[test]
fn parsers_never_panic_on_mutated_messages() {
    let seeds = [
        md_w(),
        fix("FIX.4.4", "35=X|49=FEED|56=ZEPTO|34=13|52=20240102-09:30:00.5|268=2|279=0|269=0|55=A|270=1|271=2|279=2|269=1|55=B|"),
        fix("FIX.4.4", "35=8|49=B|56=ZEPTO|34=3|52=20240102-09:30:00|37=O1|17=E1|150=F|39=2|55=IBM|54=1|31=101.5|32=100|14=100|6=101.5|60=20240102-09:30:00.001|"),
        fix("FIXT.1.1", "35=A|49=A|56=B|34=1|52=20240102-09:30:00|98=0|108=30|1137=9|"),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let alphabet = b"0123456789=|\x01.-ABWX8";
    for round in 0..20_000 {
        let mut m = seeds[round % seeds.len()].clone();
        for _ in 0..1 + rng.below(4) {
            let n = m.len();
            match rng.below(5) {
                0 => m[rng.below(n)] = alphabet[rng.below(alphabet.len())],
                1 => m[rng.below(n)] = rng.next() as u8,
                2 => {
                    let at = rng.below(n);
                    m.insert(at, alphabet[rng.below(alphabet.len())]);
                }
                3 => {
                    let at = rng.below(n);
                    m.remove(at);
                }
                _ => m.truncate(rng.below(n + 1)),
            }
            if m.is_empty() {
                break;
            }
        }
        read_all(&m);
        // Repair the frame so the body's damage reaches the field and group readers.
        if let Some(p) = m.windows(4).position(|w| w == b"\x0135=") {
            let body_end = m.windows(4).rposition(|w| w == b"\x0110=").map_or(m.len(), |e| e + 1);
            if p + 1 < body_end {
                let body = String::from_utf8_lossy(&m[p + 1..body_end]).replace('\x01', "|");
                read_all(&fix("FIX.4.4", &body));
            }
        }
    }
}
