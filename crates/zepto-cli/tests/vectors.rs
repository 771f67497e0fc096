//! Vector indexes through the server: a `CREATE INDEX ... USING HNSW` survives `kill -9` (its
//! definition is in the WAL, then in a checkpoint), and after the restart the planner answers
//! from it again and the answers are the same.

mod common;

use common::*;
use std::path::PathBuf;

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zepto-vectors-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn explain(addr: &str, q: &str) -> String {
    sql(addr, &format!("EXPLAIN {q}"))["data"].to_string()
}

#[test]
fn a_vector_index_survives_kill_9_and_a_clean_restart() {
    let dir = tmp_dir("restart");
    let data = dir.display().to_string();
    let s = Server::start(&["--data-dir", &data]);
    sql(&s.addr, "CREATE TABLE m (ts TIMESTAMP, id BIGINT, emb FLOAT[3])");
    let rows: Vec<String> =
        (0..300).map(|i| format!("({i}, {i}, [{}, {}, 1])", (i as f32 * 0.1).sin(), (i as f32 * 0.07).cos())).collect();
    sql(&s.addr, &format!("INSERT INTO m VALUES {}", rows.join(", ")));
    sql(&s.addr, "CREATE INDEX mi ON m USING HNSW (emb) WITH (metric = 'l2sq', m = 8)");
    let q = "SELECT id, array_distance(emb, [0.5, 0.5, 1]) AS d FROM m ORDER BY d LIMIT 5";
    assert!(explain(&s.addr, q).contains("AnnTopN"), "{}", explain(&s.addr, q));
    let want = sql(&s.addr, q)["data"].clone();
    let metrics = get(&s.addr, "/metrics").text();
    assert!(metrics.contains("zepto_vector_index_rows 300"), "the graph's rows are reported");
    let bytes = metrics.lines().find_map(|l| l.strip_prefix("zepto_vector_index_bytes ")).expect("graph bytes");
    assert!(bytes.parse::<u64>().is_ok_and(|b| b > 300 * 12), "at least the vectors: {bytes}");
    drop(s); // SIGKILL: the index definition is only in the WAL
    let s = Server::start(&["--data-dir", &data]);
    assert!(explain(&s.addr, q).contains("AnnTopN"), "the definition came back from the WAL");
    assert_eq!(sql(&s.addr, q)["data"], want);
    assert!(s.stop().success(), "a clean stop checkpoints");
    let s = Server::start(&["--data-dir", &data]);
    assert!(explain(&s.addr, q).contains("index=mi metric=l2sq"), "and from the checkpoint");
    assert_eq!(sql(&s.addr, q)["data"], want);
    // The query vector as a parameter: a JSON list binds as FLOAT[n].
    let body =
        r#"{"sql": "SELECT id, array_distance(emb, $1) AS d FROM m ORDER BY d LIMIT 5", "params": [[0.5, 0.5, 1]]}"#;
    let post_json =
        |body: &str| request(&s.addr, "POST", "/query", &[("Content-Type", "application/json")], body.as_bytes());
    let r = post_json(body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"], want);
    for bad in [r#"[[0.5, "x", 1]]"#, "[[]]", "[[1e39, 0, 0]]"] {
        let body = format!(r#"{{"sql": "SELECT array_distance(emb, $1) FROM m", "params": {bad}}}"#);
        assert_eq!(post_json(&body).status, 400, "{bad}");
    }
    let r = post_json(r#"{"sql": "SELECT array_distance(emb, $1) FROM m", "params": [[1, 2]]}"#);
    assert_eq!(r.status, 400, "a vector of the wrong dimension: {}", r.text());
    let exact = sql(&s.addr, &format!("SET ann = off; EXPLAIN {q}"))["data"].to_string();
    assert!(!exact.contains("AnnTopN"), "SET ann = off holds for the rest of the request: {exact}");
    assert_eq!(sql(&s.addr, &format!("SET ann = off; {q}"))["data"], want);
    sql(&s.addr, "DROP INDEX mi");
    assert!(!explain(&s.addr, q).contains("AnnTopN"));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
