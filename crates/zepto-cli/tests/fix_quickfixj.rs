//! The FIX door against a real FIX engine, QuickFIX/J (run by `java` as single source files):
//! - as acceptor: tests/fix/QfjFeed.java logs on, sends W, X and 8 messages and forces a gap;
//!   the rows read back over HTTP SQL are what it sent, once each;
//! - as initiator: ZeptoDB connects to tests/fix/QfjVenue.java, subscribes, is killed with
//!   `kill -9` mid-stream and restarted; every message is stored once, a bad one rejected.
//!
//! The jars come from Maven Central (`make fix-engine`, into ~/.m2; or $ZEPTO_QFJ_CLASSPATH):
//! without them or without `java` a test says so and passes without running, except under
//! `make test` (ZEPTO_REQUIRE_FIX_ENGINE=1), where that is a failure.

mod common;

use common::{sql, Server};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// The QuickFIX/J class path, if its jars are here.
fn classpath() -> Option<String> {
    if let Ok(cp) = std::env::var("ZEPTO_QFJ_CLASSPATH") {
        return Some(cp);
    }
    let m2 = PathBuf::from(std::env::var("HOME").ok()?).join(".m2/repository");
    let jars = [
        "org/quickfixj/quickfixj-core/2.3.1/quickfixj-core-2.3.1.jar",
        "org/quickfixj/quickfixj-messages-fix44/2.3.1/quickfixj-messages-fix44-2.3.1.jar",
        "org/apache/mina/mina-core/2.1.4/mina-core-2.1.4.jar",
        "org/slf4j/slf4j-api/1.7.30/slf4j-api-1.7.30.jar",
    ];
    let paths: Vec<PathBuf> = jars.iter().map(|j| m2.join(j)).collect();
    if !paths.iter().all(|p| p.exists()) {
        return None;
    }
    Some(paths.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>().join(":"))
}

fn rows(addr: &str, q: &str) -> Vec<String> {
    sql(addr, q)["data"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let cells: Vec<String> =
                r.as_array().expect("row").iter().map(|v| v.to_string().trim_matches('"').to_string()).collect();
            cells.join("|")
        })
        .collect()
}

/// The class path to run QuickFIX/J with, or `None` (the test skips) without the jars or
/// `java`. `make test` (and so CI) fetches the engine and requires it: there a missing engine
/// is a failure, not a skip.
fn engine() -> Option<String> {
    let required = std::env::var_os("ZEPTO_REQUIRE_FIX_ENGINE").is_some();
    let Some(cp) = classpath() else {
        assert!(!required, "no QuickFIX/J jars: make fix-engine (Maven) or set ZEPTO_QFJ_CLASSPATH");
        eprintln!("skipped: no QuickFIX/J jars (make fix-engine, or set ZEPTO_QFJ_CLASSPATH)");
        return None;
    };
    if Command::new("java").arg("-version").output().is_err() {
        assert!(!required, "no java on PATH, which the FIX door's engine test needs");
        eprintln!("skipped: no java");
        return None;
    }
    Some(cp)
}

#[test]
fn quickfixj_messages_become_rows_once_each_through_a_forced_gap() {
    let Some(cp) = engine() else { return };
    let s = Server::start(&["--fix", "127.0.0.1:0"]);
    let line = s.startup.iter().find(|l| l.contains("accepting FIX sessions on")).expect("FIX address printed");
    let addr = line.split("accepting FIX sessions on ").nth(1).and_then(|r| r.split_whitespace().next()).expect("addr");
    let port = addr.rsplit(':').next().expect("port");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut child = Command::new("java")
        .current_dir(&root)
        .args(["-cp", &cp, "tests/fix/QfjFeed.java", port])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs java");
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("QuickFIX/J did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().expect("output");
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(status.success(), "QuickFIX/J failed: {log}");
    assert!(log.contains("Received ResendRequest FROM: 5"), "the gap was asked for: {log}");
    let a = s.addr.as_str();
    assert_eq!(
        rows(a, "SELECT sym, side, price, size, epoch_ns(timestamp), action, md_req_id, seq FROM quotes WHERE sym = 'EURUSD' ORDER BY side"),
        [
            "EURUSD|bid|1.0841|1000000.0|1704187800120000000|null|R1|2",
            "EURUSD|offer|1.0843|2000000.0|1704187800121000000|null|R1|2",
        ]
    );
    // X entries have no MDEntryTime: their time is the (original) SendingTime.
    assert_eq!(
        rows(a, "SELECT side, price, size, action, md_req_id, seq, timestamp = sending_time FROM quotes WHERE sym = 'GBPUSD' ORDER BY seq, side"),
        [
            "bid|1.25|5.0|new|R2|3|true",
            "offer|1.26|5.0|new|R2|3|true",
            "bid|1.3|5.0|new|R2|6|true",
            "offer|1.31|5.0|new|R2|6|true",
        ],
        "the message after the gap is stored once, from its resend"
    );
    assert_eq!(
        rows(a, "SELECT sym, side, price, size, epoch_ns(timestamp), seq FROM trades"),
        ["EURUSD|null|1.0842|500000.0|1704187799999000000|2"]
    );
    assert_eq!(
        rows(a, "SELECT sym, epoch_ns(timestamp), cl_ord_id, order_id, exec_id, exec_type, ord_status, side, last_px, last_qty, cum_qty, avg_px, seq FROM executions"),
        ["IBM|1704187801000000000|C1|O1|E1|F|2|buy|101.5|100.0|100.0|101.5|4"]
    );
    assert_eq!(rows(a, "SELECT max(in_seq), max(out_seq) FROM fix_sessions"), ["7|3"]);
}

/// QuickFIX/J as the venue (tests/fix/QfjVenue.java): its stdout lines arrive on a channel.
struct Venue {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Venue {
    /// QuickFIX/J listening on a free port (returned): the port is found free here and bound
    /// again by the JVM seconds later, so another test may take it meanwhile; then the venue
    /// says so on stderr and is started again on another port.
    fn start(cp: &str, count: u32) -> (Venue, u16) {
        for _ in 0..5 {
            let port =
                std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
            let mut v = Venue::spawn(cp, port, count);
            if v.wait_for_either("listening", "Caused by: java.net.BindException", 60).starts_with("listening") {
                return (v, port);
            }
        }
        panic!("QuickFIX/J found no free port in five tries");
    }

    fn spawn(cp: &str, port: u16, count: u32) -> Venue {
        use std::io::BufRead;
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut child = Command::new("java")
            .current_dir(&root)
            .args(["-cp", cp, "tests/fix/QfjVenue.java", &port.to_string(), &count.to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs java");
        let (tx, lines) = std::sync::mpsc::channel();
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        let tx2 = tx.clone();
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        // Its stderr (the JVM's exceptions) on the same channel, each line as it came.
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx2.send(l);
            }
        });
        Venue { child, lines, seen: Vec::new() }
    }

    /// The first line the venue printed that starts with `what` or with `or` (its stderr
    /// included).
    fn wait_for_either(&mut self, what: &str, or: &str, secs: u64) -> String {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(l) = self.seen.iter().find(|l| l.starts_with(what) || l.starts_with(or)) {
                return l.clone();
            }
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => self.seen.push(l),
                Err(_) => panic!("QuickFIX/J never printed '{what}': {:?}", self.seen),
            }
        }
    }

    /// Wait until the venue printed a line starting with `what`.
    fn wait_for(&mut self, what: &str, secs: u64) -> String {
        self.wait_for_either(what, what, secs)
    }
}

impl Drop for Venue {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Rows of `quotes` (0 before the table is made).
fn count_quotes(addr: &str) -> i64 {
    let r = common::post(addr, "/", "SELECT count(*) FROM quotes");
    match r.status {
        200 => r.json()["data"][0][0].as_i64().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn an_initiator_session_stores_every_message_once_through_kill_9() {
    let Some(cp) = engine() else { return };
    let count = 400;
    let (mut venue, port) = Venue::start(&cp, count);
    let dir = std::env::temp_dir().join(format!("zepto-fix-initiator-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let cfg = dir.join("fix.json");
    let session = format!(
        r#"{{"initiators": [{{"connect": "127.0.0.1:{port}", "target_comp_id": "FEED", "heartbeat_secs": 5,
             "subscribe": {{"symbols": ["GBPUSD"], "entry_types": ["0"], "md_req_id": "Z1"}}}}]}}"#
    );
    std::fs::write(&cfg, session).expect("config");
    let (data, cfg) = (dir.join("data").to_string_lossy().into_owned(), cfg.to_string_lossy().into_owned());
    let args = ["--data-dir", &data, "--fix-config", &cfg];
    let s = Server::start(&args);
    assert!(
        s.startup.iter().any(|l| l.contains("starting FIX sessions as ZEPTO with FEED at 127.0.0.1")),
        "{:?}",
        s.startup
    );
    assert_eq!(venue.wait_for("subscribed", 30), "subscribed GBPUSD");
    let t0 = Instant::now();
    while count_quotes(&s.addr) < 100 {
        assert!(t0.elapsed() < Duration::from_secs(60), "the first 100 quotes never arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    venue.seen.extend(venue.lines.try_iter());
    assert!(!venue.seen.iter().any(|l| l.starts_with("sent")), "killed mid-stream: {:?}", venue.seen);
    let first = s.log.clone();
    drop(s); // kill -9 mid-stream: the venue keeps numbering what it sends meanwhile
    std::thread::sleep(Duration::from_millis(300));
    let s = Server::start(&args);
    venue.wait_for(&format!("sent {count}"), 60);
    let want = i64::from(count) - 1; // message 10 is rejected
    let t0 = Instant::now();
    while count_quotes(&s.addr) < want {
        if t0.elapsed() > Duration::from_secs(60) {
            // Everything both sides said, so that a failure can be read after the fact.
            venue.seen.extend(venue.lines.try_iter());
            let first = first.lock().map(|l| Vec::from(l.clone())).unwrap_or_default().join("\n");
            panic!(
                "only {} of {want} quotes\n== first server:\n{first}\n== restarted server:\n{}\n== venue:\n{}",
                count_quotes(&s.addr),
                s.log_text(),
                venue.seen.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let a = s.addr.as_str();
    let q =
        "SELECT count(*), count(DISTINCT seq), min(price), max(price), sum(price) FROM quotes WHERE md_req_id = 'Z1'";
    let n = i64::from(count);
    let sum = n * (n + 1) / 2 - 10;
    assert_eq!(rows(a, q), [format!("{want}|{want}|1.0|{n}.0|{sum}.0")], "every message once, none twice");
    assert_eq!(rows(a, "SELECT count(*) FROM quotes WHERE price = 10"), ["0"]);
    // The bad message was rejected back to QuickFIX/J (its sequence number is that message's).
    let reject = venue.wait_for("reject", 10);
    assert!(reject.strip_prefix("reject ").and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n > 1), "{reject}");
    let m = common::get(a, "/metrics").text();
    assert!(m.contains("zepto_fix_session_connected{session=\"ZEPTO-FEED\"} 1"), "{m}");
    // What the venue sent while ZeptoDB was down came back through a ResendRequest.
    let gaps = m.lines().find_map(|l| l.strip_prefix("zepto_fix_gaps{session=\"ZEPTO-FEED\"} "));
    assert!(gaps.and_then(|g| g.parse::<u64>().ok()).is_some_and(|g| g >= 1), "{m}");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
