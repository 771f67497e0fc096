//! Materialized views through the server: kept exact as ILP and SQL writes arrive, their
//! definitions surviving `kill -9` (the WAL) and a clean stop (the checkpoint), deletes and
//! updates replayed from the log reaching a view restored from its states, a dropped view
//! staying dropped, and their gauges on `/metrics`.

mod common;

use common::*;

const BARS: &str =
    "SELECT host, timestamp, count(*) AS n, sum(bytes) AS total, max(usage) AS peak, last(usage) AS usage \
                    FROM cpu SAMPLE BY 10s";

/// The view's rows and its query's, each sorted.
fn both(addr: &str) -> (serde_json::Value, serde_json::Value) {
    let view = sql(addr, "SELECT * FROM bars ORDER BY host, timestamp")["data"].clone();
    let query = sql(addr, &format!("SELECT * FROM ({BARS}) ORDER BY host, timestamp"))["data"].clone();
    (view, query)
}

/// ILP lines for hosts a..e from second `from`, one per host and second, some a minute late.
fn lines(from: u64, seconds: u64) -> String {
    let mut out = String::new();
    for s in from..from + seconds {
        for (k, host) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            let late = if (s + k as u64).is_multiple_of(7) { 60 } else { 0 };
            let ts = (1_700_000_000 + s.saturating_sub(late)) * 1_000_000_000;
            out.push_str(&format!(
                "cpu,host={host} usage={}.5,bytes={}i {ts}\n",
                (s * 7 + k as u64) % 100,
                s + k as u64
            ));
        }
    }
    out
}

#[test]
fn a_view_stays_exact_across_doors_kill_9_and_restarts() {
    let dir = fresh_dir("views");
    let data = dir.display().to_string();
    let s = Server::start(&["--data-dir", &data]);
    assert_eq!(post(&s.addr, "/write", &lines(0, 30)).status, 200);
    sql(&s.addr, &format!("CREATE MATERIALIZED VIEW bars AS {BARS}"));
    let (view, query) = both(&s.addr);
    assert_eq!(view, query);
    assert!(view.as_array().is_some_and(|r| r.len() > 10), "{view}");
    assert_eq!(post(&s.addr, "/write", &lines(30, 30)).status, 200);
    sql(&s.addr, "INSERT INTO cpu (host, usage, bytes, timestamp) VALUES ('a', 99.0, 5, 1700000001000000000)");
    let (view, query) = both(&s.addr);
    assert_eq!(view, query, "after ILP and INSERT");
    let metrics = get(&s.addr, "/metrics").text();
    assert!(metrics.contains("zepto_view_commits{view=\"bars\"} 2"), "{metrics}");
    assert!(metrics.contains("zepto_view_rebuilds{view=\"bars\"} 1"), "{metrics}");
    drop(s); // kill -9: the view's definition is only in the WAL

    let s = Server::start(&["--data-dir", &data]);
    let (view, query) = both(&s.addr);
    assert_eq!(view, query, "after recovery from the WAL");
    assert_eq!(post(&s.addr, "/write", &lines(60, 20)).status, 200);
    sql(&s.addr, "DELETE FROM cpu WHERE host = 'b' AND bytes % 3 = 0");
    let (view, query) = both(&s.addr);
    assert_eq!(view, query, "after a delete");
    assert!(s.stop().success(), "a clean stop checkpoints");

    // The checkpoint holds the view's states: it starts from them, and the appends the log
    // replays after it fold in, with no rebuild.
    let rebuilds = |addr: &str| {
        let m = get(addr, "/metrics").text();
        m.lines().find_map(|l| l.strip_prefix("zepto_view_rebuilds{view=\"bars\"} ")).map(str::to_string)
    };
    let s = Server::start(&["--data-dir", &data]);
    let (view, query) = both(&s.addr);
    assert_eq!(view, query, "after recovery from the checkpoint");
    assert_eq!(rebuilds(&s.addr).as_deref(), Some("0"), "started from the checkpointed states");
    assert_eq!(post(&s.addr, "/write", &lines(80, 20)).status, 200);
    drop(s); // kill -9: the appends since the checkpoint are only in the WAL
    let s = Server::start(&["--data-dir", &data]);
    let (view, query) = both(&s.addr);
    assert_eq!(view, query, "from the checkpointed states and the replayed log");
    assert_eq!(rebuilds(&s.addr).as_deref(), Some("0"), "the replayed appends folded in");
    sql(&s.addr, "DELETE FROM cpu WHERE host = 'c' AND bytes % 2 = 0");
    sql(&s.addr, "UPDATE cpu SET usage = usage + 1000 WHERE host = 'd'");
    let (view, query) = both(&s.addr);
    assert_eq!(view, query, "after a delete and an update");
    drop(s); // kill -9: both are only in the WAL, after the checkpointed states
    let s = Server::start(&["--data-dir", &data]);
    let (view, query) = both(&s.addr);
    assert_eq!(view, query, "a replayed delete and update reach the view");
    let r = post(&s.addr, "/", "DROP TABLE cpu");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("materialized views (bars)"), "{}", r.text());
    sql(&s.addr, "DROP MATERIALIZED VIEW bars");
    drop(s); // kill -9 after the drop

    let s = Server::start(&["--data-dir", &data]);
    let r = post(&s.addr, "/", "SELECT * FROM bars");
    assert_ne!(r.status, 200, "the drop was recovered: {}", r.text());
    sql(&s.addr, "DROP TABLE cpu");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
