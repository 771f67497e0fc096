//! QuestDB's REST query API (`GET /exec`, `GET /exp`) on ZeptoDB's HTTP port: the JSON shape
//! and the CSV file QuestDB's console, tools and scripts read (checked against a QuestDB 9.3
//! answer to the same statements, byte for byte for `/exp`), the `limit`, `count`, `nm` and
//! `timings` parameters, DDL and DML answers, and errors with their position.

mod common;

use common::{enc, get, request, Server};

fn exec(a: &str, q: &str, extra: &str) -> (u16, serde_json::Value) {
    let r = get(a, &format!("/exec?query={}{extra}", enc(q)));
    (r.status, r.json())
}

#[test]
fn exec_answers_in_questdbs_shape() {
    let s = Server::start(&[]);
    let a = s.addr.as_str();
    // DDL and DML answer as QuestDB's do.
    let ddl =
        "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, ok BOOLEAN, d DATE, i INTEGER) TIMESTAMP(ts)";
    assert_eq!(exec(a, ddl, ""), (200, serde_json::json!({"ddl": "OK"})));
    let ins = "INSERT INTO t VALUES ('2024-01-02T09:30:00.123456789Z', 'A', 1.5, 7, true, '2024-01-02', 3), \
               ('2024-01-02T09:30:01Z', 'B', NULL, NULL, false, NULL, NULL), \
               ('2024-01-02T09:30:02Z', 'C', 'NaN'::DOUBLE, 9, NULL, '2024-01-03', 4)";
    assert_eq!(exec(a, ins, ""), (200, serde_json::json!({"dml": "OK"})));
    // Rows: QuestDB's type names, timestamps to the microsecond, NaN and NULL as null.
    let q = "SELECT ts, sym, px, n, ok, d, i FROM t ORDER BY ts";
    let (status, j) = exec(a, q, "");
    assert_eq!(status, 200, "{j}");
    assert_eq!(
        j,
        serde_json::json!({
            "query": q,
            "columns": [
                {"name": "ts", "type": "TIMESTAMP"}, {"name": "sym", "type": "SYMBOL"},
                {"name": "px", "type": "DOUBLE"}, {"name": "n", "type": "LONG"},
                {"name": "ok", "type": "BOOLEAN"}, {"name": "d", "type": "DATE"}, {"name": "i", "type": "INT"}
            ],
            "timestamp": 0,
            "dataset": [
                ["2024-01-02T09:30:00.123456Z", "A", 1.5, 7, true, "2024-01-02T00:00:00.000Z", 3],
                ["2024-01-02T09:30:01.000000Z", "B", null, null, false, null, null],
                ["2024-01-02T09:30:02.000000Z", "C", null, 9, null, "2024-01-03T00:00:00.000Z", 4]
            ],
            "count": 3
        })
    );
    // limit=n and limit=lo,hi; count=true counts every row; nm=true drops the columns.
    let (_, j) = exec(a, "SELECT sym FROM t ORDER BY sym", "&limit=2");
    assert_eq!((j["dataset"].clone(), j["count"].clone()), (serde_json::json!([["A"], ["B"]]), serde_json::json!(2)));
    let (_, j) = exec(a, "SELECT sym FROM t ORDER BY sym", "&limit=2,3");
    assert_eq!((j["dataset"].clone(), j["count"].clone()), (serde_json::json!([["B"], ["C"]]), serde_json::json!(3)));
    let (_, j) = exec(a, "SELECT sym FROM t ORDER BY sym", "&limit=5,9");
    assert_eq!((j["dataset"].clone(), j["count"].clone()), (serde_json::json!([]), serde_json::json!(0)));
    let (_, j) = exec(a, "SELECT sym FROM t ORDER BY sym", "&limit=3,3&count=true&nm=true");
    assert_eq!(j, serde_json::json!({"dataset": [["C"]], "count": 3}));
    let (_, j) = exec(a, "SELECT 1 AS x", "&timings=true");
    assert!(j["timings"]["execute"].as_u64().is_some(), "{j}");
    // PostgreSQL's infinite timestamps as their words.
    let (_, j) = exec(a, "SELECT 'infinity'::TIMESTAMP AS a, '-infinity'::TIMESTAMP AS b", "");
    assert_eq!(j["dataset"], serde_json::json!([["infinity", "-infinity"]]), "{j}");
    // A browser's request from another site may only read.
    let cross = [("Sec-Fetch-Site", "cross-site")];
    let r = request(a, "GET", &format!("/exec?query={}", enc("DROP TABLE t")), &cross, b"");
    assert_eq!(r.status, 400, "{}", r.text());
    let r = request(a, "GET", &format!("/exec?query={}", enc("SELECT count(*) FROM t")), &cross, b"");
    assert_eq!(r.json()["dataset"], serde_json::json!([[3]]));
    // Errors: QuestDB's shape, the position a 0-based offset into the query.
    let (status, j) = exec(a, "SELECT nope FROM t", "");
    assert_eq!(status, 400);
    assert_eq!(j["query"], "SELECT nope FROM t");
    assert_eq!(j["position"], 7, "{j}");
    assert!(j["error"].as_str().is_some_and(|e| e.contains("nope")), "{j}");
    let (status, j) = exec(a, "SELECT 1", "&limit=x");
    assert_eq!(status, 400);
    assert!(j["error"].as_str().is_some_and(|e| e.contains("limit")), "{j}");
    let r = get(a, "/exec");
    assert_eq!(r.status, 400);
    assert_eq!(r.json(), serde_json::json!({"error": "empty query", "query": "", "position": "0"}));
    // /exp: a CSV file as QuestDB writes it (names and text quoted, CRLF), reads only.
    let r = get(a, &format!("/exp?query={}", enc("SELECT ts, sym, px, n, ok, d, i FROM t ORDER BY ts")));
    assert_eq!(r.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(r.header("content-disposition"), Some("attachment; filename=\"questdb-query.csv\""));
    assert_eq!(
        r.text(),
        "\"ts\",\"sym\",\"px\",\"n\",\"ok\",\"d\",\"i\"\r\n\
         \"2024-01-02T09:30:00.123456Z\",\"A\",1.5,7,true,\"2024-01-02T00:00:00.000Z\",3\r\n\
         \"2024-01-02T09:30:01.000000Z\",\"B\",,,false,,\r\n\
         \"2024-01-02T09:30:02.000000Z\",\"C\",,9,,\"2024-01-03T00:00:00.000Z\",4\r\n"
    );
    let r = get(a, &format!("/exp?query={}&limit=2,3&filename=syms", enc("SELECT sym FROM t ORDER BY sym")));
    assert_eq!(
        (r.text(), r.header("content-disposition")),
        ("\"sym\"\r\n\"C\"\r\n".to_string(), Some("attachment; filename=\"syms.csv\""))
    );
    let r = get(a, &format!("/exp?query={}", enc("SELECT 'a\"b' AS s, NULL::VARCHAR AS n, '' AS e")));
    assert_eq!(r.text(), "\"s\",\"n\",\"e\"\r\n\"a\"\"b\",,\"\"\r\n");
    let r = get(a, &format!("/exp?query={}", enc("DROP TABLE t")));
    assert_eq!(r.status, 400, "/exp only reads");
    // A large answer streams, and a limit cuts it.
    assert_eq!(exec(a, "CREATE TABLE big AS SELECT i AS n FROM range(200000) AS r(i)", "").0, 200);
    let r = request(a, "GET", &format!("/exec?query={}", enc("SELECT n FROM big ORDER BY n")), &[], b"");
    assert_eq!(r.header("transfer-encoding"), Some("chunked"), "a large answer is streamed");
    let j = r.json();
    assert_eq!((j["count"].as_u64(), j["dataset"].as_array().map(Vec::len)), (Some(200_000), Some(200_000)));
    assert_eq!(j["dataset"][199_999][0], 199_999);
    let (_, j) = exec(a, "SELECT n FROM big ORDER BY n", "&limit=100001,100002");
    assert_eq!(j["dataset"], serde_json::json!([[100000], [100001]]));
    s.stop();
}

#[test]
fn exec_checks_keys_and_roles_as_every_endpoint_does() {
    let s = Server::start(&["--api-key", "exec-admin-key-0123456789"]);
    let a = s.addr.as_str();
    let r = get(a, &format!("/exec?query={}", enc("SELECT 1")));
    assert_eq!(r.status, 401, "{}", r.text());
    let auth = [("Authorization", "Bearer exec-admin-key-0123456789")];
    let r = request(a, "GET", &format!("/exec?query={}", enc("SELECT 1 AS x")), &auth, b"");
    assert_eq!(r.json()["dataset"], serde_json::json!([[1]]));
    s.stop();
}
