//! The acceptor's state machine, message by message: Logon, stored rows, a gap filled by a
//! resend, duplicates dropped, a too-low number ending the session, a bad message rejected
//! with nothing applied, and a new session on the same store resuming where the last stopped.

use std::sync::Arc;
use zepto_fix::encode::Value as V;
use zepto_fix::parse::parse;
use zepto_fix::session::{InitiatorConfig, Registry, Session, SessionConfig, Subscription};
use zepto_fix::Encoder;
use zepto_storage::Catalog;

const NOW: i64 = 1_704_187_800_000_000_000;

/// A message from the counterparty (FEED → ZEPTO); `body` as `tag=value|…`.
fn msg(t: &str, seq: u64, poss_dup: bool, body: &str) -> Vec<u8> {
    let mut e = Encoder::new("FIX.4.4", "FEED", "ZEPTO");
    let fields: Vec<(u32, V<'_>)> = body
        .split('|')
        .filter(|f| !f.is_empty())
        .map(|f| {
            let (k, v) = f.split_once('=').expect("tag=value");
            (k.parse().expect("tag"), V::Bytes(v.as_bytes()))
        })
        .collect();
    let mut out = Vec::new();
    e.message(&mut out, t, seq, NOW, poss_dup, &fields);
    out
}

fn quote(seq: u64, px: &str) -> Vec<u8> {
    msg("X", seq, false, &format!("268=1|279=0|269=0|55=AAA|270={px}|271=1|"))
}

fn text(v: Option<&[u8]>) -> String {
    String::from_utf8_lossy(v.unwrap_or(b"")).into_owned()
}

/// Feed bytes, commit, and return the types and numbers of the responses.
fn step(s: &mut Session, c: &Catalog, bytes: &[u8]) -> Vec<String> {
    let used = s.receive(bytes, c, NOW);
    assert_eq!(used, bytes.len());
    let out = s.commit(c, NOW).expect("commit");
    let mut at = 0;
    let mut seen = Vec::new();
    while at < out.len() {
        let m = parse(&out[at..]).expect("our response parses");
        let extra = match m.msg_type() {
            "2" => format!(" {}-{}", text(m.get(7)), text(m.get(16))),
            "3" => format!(" ref {} tag {}", text(m.get(45)), text(m.get(371))),
            "4" => format!(" to {}", text(m.get(36))),
            "A" => (if m.get(141) == Some(b"Y") { " reset" } else { "" }).to_string(),
            "V" => format!(" {} {}", text(m.get(262)), text(m.get(55))),
            _ => String::new(),
        };
        seen.push(format!("{}#{}{extra}", m.msg_type(), m.header.seq));
        at += m.len();
    }
    seen
}

/// `seq:price` of every stored quote, by seq.
fn prices(c: &Catalog) -> Vec<String> {
    let Ok(t) = c.snapshot("quotes") else { return Vec::new() };
    let mut out: Vec<(i64, String)> = Vec::new();
    for p in t.partitions() {
        let (price, seq) = (&p.columns()[3], &p.columns()[8]);
        for i in 0..p.len() {
            if let zepto_storage::Value::Int64(s) = seq.get(i) {
                out.push((s, price.get(i).to_string()));
            }
        }
    }
    out.sort();
    out.into_iter().map(|(s, p)| format!("{s}:{p}")).collect()
}

#[test]
fn a_session_stores_each_message_once_through_gaps_rejects_and_restarts() {
    let c = Catalog::new();
    let cfg = Arc::new(SessionConfig { targets: vec!["FEED".into()], ..SessionConfig::default() });
    let reg = Arc::new(Registry::default());
    let mut s = Session::new(cfg.clone(), reg.clone());
    assert_eq!(step(&mut s, &c, &msg("A", 1, false, "98=0|108=30|")), ["A#1"]);
    assert_eq!(s.name(), "ZEPTO-FEED");
    // Two messages in one read; then a gap (4 missing): a ResendRequest, 5 dropped.
    let mut two = quote(2, "1");
    two.extend(quote(3, "2"));
    assert!(step(&mut s, &c, &two).is_empty());
    assert_eq!(step(&mut s, &c, &quote(5, "4")), ["2#2 4-0"]);
    assert_eq!(prices(&c), ["2:1.0", "3:2.0"]);
    // The resend: 4 and 5 again with PossDup; then a PossDup already seen is dropped.
    let mut resent = msg("X", 4, true, "268=1|279=0|269=0|55=AAA|270=3|271=1|");
    resent.extend(msg("X", 5, true, "268=1|279=0|269=0|55=AAA|270=4|271=1|"));
    resent.extend(msg("X", 3, true, "268=1|279=0|269=0|55=AAA|270=2|271=1|"));
    assert!(step(&mut s, &c, &resent).is_empty());
    assert_eq!(prices(&c), ["2:1.0", "3:2.0", "4:3.0", "5:4.0"]);
    // A bad price: Reject naming the tag, nothing stored, the number consumed.
    assert_eq!(step(&mut s, &c, &quote(6, "x")), ["3#3 ref 6 tag 270"]);
    // A damaged checksum is ignored (no number consumed); a TestRequest is answered.
    let mut bad = quote(7, "5");
    let n = bad.len();
    bad[n - 2] = if bad[n - 2] == b'9' { b'8' } else { b'9' };
    assert!(step(&mut s, &c, &bad).is_empty());
    assert_eq!(step(&mut s, &c, &msg("1", 7, false, "112=T1|")), ["0#4"]);
    // Their ResendRequest: we keep no application messages, so it is all a gap fill.
    assert_eq!(step(&mut s, &c, &msg("2", 8, false, "7=2|16=0|")), ["4#2 to 5"]);
    assert_eq!(s.expected(), 9);
    // A second connection for the same session is refused while this one is on.
    let mut other = Session::new(cfg.clone(), reg.clone());
    assert_eq!(step(&mut other, &c, &msg("A", 9, false, "98=0|108=30|")), ["5#1"]);
    assert!(other.closed());
    drop(other);
    // "Crash": a new session on the same store resumes (expects 9; our next number is 5).
    drop(s);
    let mut s = Session::new(cfg.clone(), reg.clone());
    assert_eq!(step(&mut s, &c, &msg("A", 10, false, "98=0|108=30|")), ["A#5", "2#6 9-0"]);
    drop(s);
    // Too low without PossDup: Logout.
    let mut s2 = Session::new(cfg.clone(), reg.clone());
    assert_eq!(step(&mut s2, &c, &msg("A", 3, false, "98=0|108=30|")), ["A#7", "5#8"]);
    assert!(s2.closed());
    assert_eq!(prices(&c), ["2:1.0", "3:2.0", "4:3.0", "5:4.0"], "every message exactly once");
    drop(s2);
    // A counterparty that is not configured is logged out.
    let mut s3 = Session::new(cfg, reg);
    let mut e = Encoder::new("FIX.4.4", "STRANGER", "ZEPTO");
    let mut logon = Vec::new();
    e.logon(&mut logon, 1, NOW, 30, false);
    assert_eq!(step(&mut s3, &c, &logon), ["5#1"]);
    // Refused logons store nothing: the only session stored is ZEPTO-FEED.
    let t = c.snapshot("fix_sessions").expect("fix_sessions");
    assert_eq!(t.dict().len(), 1);
}

#[test]
fn a_resend_that_skips_a_message_is_asked_again() {
    let c = Catalog::new();
    let cfg = Arc::new(SessionConfig { targets: vec!["FEED".into()], ..SessionConfig::default() });
    let mut s = Session::new(cfg, Arc::new(Registry::default()));
    assert_eq!(step(&mut s, &c, &msg("A", 1, false, "98=0|108=30|")), ["A#1"]);
    // A gap: 2..6 asked for; live 7 and 8 arrive first and wait for the resend.
    assert_eq!(step(&mut s, &c, &quote(6, "5")), ["2#2 2-0"]);
    assert!(step(&mut s, &c, &quote(7, "6")).is_empty());
    // The resend brings 2 and 3, then (4 lost on the way) 5: asked again from 4.
    let mut resent = msg("X", 2, true, "268=1|279=0|269=0|55=AAA|270=1|271=1|");
    resent.extend(msg("X", 3, true, "268=1|279=0|269=0|55=AAA|270=2|271=1|"));
    assert!(step(&mut s, &c, &resent).is_empty());
    assert_eq!(step(&mut s, &c, &msg("X", 5, true, "268=1|279=0|269=0|55=AAA|270=4|271=1|")), ["2#3 4-0"]);
    let mut again = Vec::new();
    for (seq, px) in [(4, "3"), (5, "4"), (6, "5"), (7, "6")] {
        again.extend(msg("X", seq, true, &format!("268=1|279=0|269=0|55=AAA|270={px}|271=1|")));
    }
    assert!(step(&mut s, &c, &again).is_empty());
    assert_eq!(s.expected(), 8);
    assert_eq!(prices(&c), ["2:1.0", "3:2.0", "4:3.0", "5:4.0", "6:5.0", "7:6.0"], "every message exactly once");
}

/// Rows of the session table, and where a new session resumes.
fn session_rows(c: &Catalog) -> usize {
    c.snapshot("fix_sessions").map_or(0, |t| t.row_count())
}

#[test]
fn a_reset_logon_is_where_a_restart_resumes_and_compaction_keeps_it() {
    let c = Catalog::new();
    let (cfg, reg) = (Arc::new(SessionConfig::default()), Arc::new(Registry::default()));
    let mut s = Session::new(cfg.clone(), reg.clone());
    assert_eq!(step(&mut s, &c, &msg("A", 1, false, "98=0|108=30|")), ["A#1"]);
    for seq in 2..=40 {
        step(&mut s, &c, &quote(seq, "1"));
    }
    drop(s);
    // The next day: the counterparty resets sequence numbers at logon (141=Y).
    let mut s = Session::new(cfg.clone(), reg.clone());
    assert_eq!(step(&mut s, &c, &msg("A", 1, false, "98=0|108=30|141=Y|")), ["A#1 reset"]);
    step(&mut s, &c, &quote(2, "2"));
    drop(s);
    assert!(session_rows(&c) > 2);
    let deleted = zepto_fix::map::compact_sessions(&c, &SessionConfig::default().names).expect("compacted");
    assert_eq!(session_rows(&c), 1, "one row per session left ({deleted} deleted)");
    // A crash after the reset resumes after the reset's numbers, not the day before's.
    let mut s = Session::new(cfg, reg);
    assert_eq!(step(&mut s, &c, &msg("A", 3, false, "98=0|108=30|")), ["A#2"]);
    assert_eq!(s.expected(), 4, "after the reset day's 2, not the day before's 40");
}

#[test]
fn an_initiator_logs_on_subscribes_and_resumes_where_it_stopped() {
    let c = Catalog::new();
    let (cfg, reg) = (Arc::new(SessionConfig::default()), Arc::new(Registry::default()));
    let sub =
        Subscription { md_req_id: "Z1".into(), symbols: vec!["AAA".into()], entry_types: vec!["0".into()], depth: 1 };
    let init = Arc::new(InitiatorConfig {
        connect: "127.0.0.1:1".into(),
        target: "FEED".into(),
        heartbeat_secs: 30,
        reset_on_logon: false,
        subscribe: Some(sub),
        tls: None,
    });
    let mut s = Session::initiate(cfg.clone(), reg.clone(), init.clone(), &c, NOW).expect("not logged on yet");
    assert_eq!(step(&mut s, &c, b""), ["A#1"], "our Logon goes first");
    assert!(!s.logged_on());
    assert!(Session::initiate(cfg.clone(), reg.clone(), init.clone(), &c, NOW).is_none(), "one connection a session");
    // Their Logon: then our MarketDataRequest; their market data is stored.
    assert_eq!(step(&mut s, &c, &msg("A", 1, false, "98=0|108=30|")), ["V#2 Z1 AAA"]);
    assert!(s.logged_on());
    assert!(step(&mut s, &c, &quote(2, "1")).is_empty());
    drop(s);
    // A restart: our Logon carries the next number; their Logon shows a gap: a ResendRequest
    // first, then the subscription again.
    let mut s = Session::initiate(cfg.clone(), reg.clone(), init.clone(), &c, NOW).expect("free again");
    assert_eq!(step(&mut s, &c, b""), ["A#3"]);
    assert_eq!(step(&mut s, &c, &msg("A", 5, false, "98=0|108=30|")), ["2#4 3-0", "V#5 Z1 AAA"]);
    let mut resent = msg("X", 3, true, "268=1|279=0|269=0|55=AAA|270=2|271=1|");
    resent.extend(msg("X", 4, true, "268=1|279=0|269=0|55=AAA|270=3|271=1|"));
    resent.extend(msg("A", 5, true, "98=0|108=30|"));
    assert!(step(&mut s, &c, &resent).is_empty());
    assert_eq!(prices(&c), ["2:1.0", "3:2.0", "4:3.0"]);
    assert_eq!(s.expected(), 6);
    drop(s);
    // A Logout in answer to our Logon ends the attempt; anything else is not a Logon reply.
    let mut s = Session::initiate(cfg.clone(), reg.clone(), init.clone(), &c, NOW).expect("free");
    step(&mut s, &c, b"");
    assert!(step(&mut s, &c, &msg("5", 6, false, "58=not today|")).is_empty());
    assert!(s.closed() && !s.logged_on());
    drop(s);
    let mut s = Session::initiate(cfg, reg, init, &c, NOW).expect("free");
    step(&mut s, &c, b"");
    assert_eq!(step(&mut s, &c, &quote(6, "9")), ["5#8"]);
    assert!(s.closed());
    assert_eq!(prices(&c), ["2:1.0", "3:2.0", "4:3.0"], "nothing stored before the Logon reply");
}
