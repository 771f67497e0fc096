//! QuestDB's REST query API (`GET /exec`, `GET /exp`) on ZeptoDB's HTTP port: the JSON shape
//! and the CSV file QuestDB's console, tools and scripts read (checked against a QuestDB 9.3
//! answer to the same statements, byte for byte for `/exp`), the `limit`, `count`, `nm` and
//! `timings` parameters, DDL and DML answers, and errors with their position; and QuestDB's
//! CSV import (`POST /imp`): tables created with guessed types, appends, `overwrite`, bad rows
//! skipped and counted or the whole file refused, both answer shapes, and roles.

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

/// A multipart/form-data body of `parts` (name, file name, content): its content type and bytes.
fn multipart(parts: &[(&str, Option<&str>, &str)]) -> (String, Vec<u8>) {
    let boundary = "------------------------zeptoimp1234";
    let mut body = String::new();
    for (name, file, content) in parts {
        body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\""));
        if let Some(f) = file {
            body.push_str(&format!("; filename=\"{f}\"\r\nContent-Type: text/csv"));
        }
        body.push_str(&format!("\r\n\r\n{content}\r\n"));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body.into_bytes())
}

/// `POST /imp?{query}` of `csv` as the `data` part (file `data.csv`), with `headers`.
fn imp(a: &str, query: &str, csv: &str, headers: &[(&str, &str)]) -> common::Resp {
    let (ctype, body) = multipart(&[("data", Some("data.csv"), csv)]);
    let mut h = headers.to_vec();
    h.push(("Content-Type", ctype.as_str()));
    request(a, "POST", &format!("/imp?{query}"), &h, &body)
}

fn dataset(a: &str, q: &str) -> serde_json::Value {
    let (status, j) = exec(a, q, "");
    assert_eq!(status, 200, "{q}: {j}");
    j["dataset"].clone()
}

#[test]
fn imp_creates_appends_and_overwrites_as_questdb_does() {
    let s = Server::start(&[]);
    let a = s.addr.as_str();
    let csv = "ts,sym,px,qty,note,ok\n\
               2024-01-02T09:30:00.000000Z,AAPL,1.5,10,hello,true\n\
               2024-01-02T09:31:00.000000Z,MSFT,2.5,20,\"a \"\"q\"\"\",false\n\
               2024-01-02T09:32:00.000000Z,AAPL,,,,\n";
    // A new table: QuestDB's guessed types (checked against QuestDB 9.3), the designated timestamp.
    let r = imp(a, "name=trades&timestamp=ts&partitionBy=DAY&fmt=json", csv, &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    let col = |n: &str, t: &str, size: u32, errors: u32| serde_json::json!({"name": n, "type": t, "size": size, "errors": errors});
    assert_eq!(
        r.json(),
        serde_json::json!({
            "status": "OK", "location": "trades", "rowsRejected": 0, "rowsImported": 3, "header": true,
            "partitionBy": "DAY", "timestamp": "ts",
            "columns": [col("ts", "TIMESTAMP", 8, 0), col("sym", "VARCHAR", 0, 0), col("px", "DOUBLE", 8, 0),
                        col("qty", "INT", 4, 0), col("note", "VARCHAR", 0, 0), col("ok", "BOOLEAN", 1, 0)]
        })
    );
    let (_, j) = exec(a, "SELECT * FROM trades", "");
    assert_eq!(j["timestamp"], 0, "ts is the designated timestamp: {j}");
    assert_eq!(
        j["dataset"],
        serde_json::json!([
            ["2024-01-02T09:30:00.000000Z", "AAPL", 1.5, 10, "hello", true],
            ["2024-01-02T09:31:00.000000Z", "MSFT", 2.5, 20, "a \"q\"", false],
            ["2024-01-02T09:32:00.000000Z", "AAPL", null, null, null, null]
        ])
    );
    // An existing table takes the rows, columns matched by the header's names (any order, some
    // missing); the default answer is QuestDB's text table.
    let r = imp(a, "name=trades", "sym,ts,px\nGOOG,2024-01-02T09:33:00.000000Z,3.5\n", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    let border = format!("+{}+\r\n", "-".repeat(113));
    let want = format!(
        "{border}\
|      Location:  |                                            trades  |        Pattern  | Locale  |      Errors  |\r\n\
|   Partition by  |                                              NONE  |                 |         |              |\r\n\
|      Timestamp  |                                                ts  |                 |         |              |\r\n\
{border}\
|   Rows handled  |                                                 1  |                 |         |              |\r\n\
|  Rows imported  |                                                 1  |                 |         |              |\r\n\
{border}\
|              0  |                                                ts  |                TIMESTAMP  |           0  |\r\n\
|              1  |                                               sym  |                  VARCHAR  |           0  |\r\n\
|              2  |                                                px  |                   DOUBLE  |           0  |\r\n\
|              3  |                                               qty  |                      INT  |           0  |\r\n\
|              4  |                                              note  |                  VARCHAR  |           0  |\r\n\
|              5  |                                                ok  |                  BOOLEAN  |           0  |\r\n\
{border}"
    );
    assert_eq!(r.text(), want);
    assert_eq!(
        dataset(a, "SELECT sym, px, qty FROM trades WHERE sym = 'GOOG'"),
        serde_json::json!([["GOOG", 3.5, null]])
    );
    // skipRow (the default): rows that do not read are left out and counted, per column.
    let bad = "ts,px,qty\n2024-01-02T09:34:00.000000Z,abc,1\n2024-01-02T09:35:00.000000Z,4.5,2\n\
               2024-01-02T09:36:00.000000Z,5.5\n,6.5,3\n2024-01-02T09:37:00.000000Z,7.5,x\n";
    let r = imp(a, "name=trades&fmt=json", bad, &[]);
    let j = r.json();
    assert_eq!((j["rowsImported"].clone(), j["rowsRejected"].clone()), (1.into(), 4.into()), "{j}");
    let errors: Vec<u64> =
        j["columns"].as_array().expect("columns").iter().map(|c| c["errors"].as_u64().expect("n")).collect();
    assert_eq!(errors, vec![1, 0, 1, 1, 0, 0], "ts empty, px 'abc', qty 'x' (the short row is no column's): {j}");
    assert_eq!(dataset(a, "SELECT count() FROM trades"), serde_json::json!([[5]]));
    // abort: the first bad row refuses the whole file, in QuestDB's shape (status 200).
    let r = imp(a, "name=trades&fmt=json&atomicity=abort", bad, &[]);
    assert_eq!(r.status, 200);
    let msg = r.json()["status"].as_str().expect("status").to_string();
    assert!(msg.contains("row 1") && msg.contains("'px'") && msg.contains("atomicity=abort"), "{msg}");
    assert_eq!(dataset(a, "SELECT count() FROM trades"), serde_json::json!([[5]]), "nothing stored");
    let r = imp(a, "name=fresh&fmt=json&atomicity=abort&timestamp=ts", "ts,n\n2024-01-02T00:00:00Z,1\n,2\n", &[]);
    assert!(r.json()["status"].as_str().is_some_and(|m| m.contains("row 2")), "{}", r.text());
    assert_eq!(exec(a, "SELECT * FROM fresh", "").0, 400, "a table it would have created is not there");
    // overwrite=true replaces the table, its columns too.
    let r = imp(
        a,
        "name=trades&fmt=json&overwrite=true&timestamp=t",
        "t,v\n2024-01-03 10:00:00,1\n2024-01-03 11:00:00,2\n",
        &[],
    );
    assert_eq!(r.json()["rowsImported"], 2, "{}", r.text());
    let (_, j) = exec(a, "SELECT * FROM trades", "");
    assert_eq!(j["columns"], serde_json::json!([{"name": "t", "type": "TIMESTAMP"}, {"name": "v", "type": "INT"}]));
    assert_eq!(j["dataset"][1], serde_json::json!(["2024-01-03T11:00:00.000000Z", 2]));
    // The table's name defaults to the data part's file name; errors in QuestDB's words.
    assert_eq!(imp(a, "fmt=json", "x\n1\n", &[]).json()["location"], "data.csv");
    let r = imp(a, "name=t2&timestamp=nope&fmt=json", "ts,x\n2024-01-02T00:00:00Z,1\n", &[]);
    assert_eq!(r.json(), serde_json::json!({"status": "invalid timestamp column 'nope'"}));
    let r = imp(a, "name=t2&partitionBy=DAY", "ts,x\n2024-01-02T00:00:00Z,1\n", &[]);
    assert_eq!(r.text(), "when specifying partitionBy you must also specify timestamp");
    let r = imp(a, "name=trades&fmt=json", "t,v,w\n2024-01-03 10:00:00,1,2\n", &[]);
    assert!(r.json()["status"].as_str().is_some_and(|m| m.contains("column count mismatch")), "{}", r.text());
    let r = request(a, "POST", "/imp?name=t2", &[("Content-Type", "text/csv")], b"x\n1\n");
    assert_eq!((r.status, r.text().as_str()), (400, "Non-multipart POST not supported\r\n"));
    assert_eq!(get(a, "/imp?name=t2").status, 405);
    s.stop();
}

/// A key's role and grants apply to `/imp` as to `/write`; a body over the limit changes nothing.
#[test]
fn imp_checks_roles_and_the_body_limit() {
    let dir = common::fresh_dir("imp-keys");
    let (mut entries, mut keys) = (Vec::new(), Vec::new());
    for (name, role) in [("r", "reader"), ("w", "writer")] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeptodb"))
            .args(["keygen", "--name", name, "--role", role])
            .output()
            .expect("keygen");
        assert!(out.status.success());
        entries.push(String::from_utf8(out.stdout).expect("utf8").trim().to_string());
        keys.push(String::from_utf8(out.stderr).expect("utf8").rsplit(' ').next().expect("key").trim().to_string());
    }
    let file = dir.join("keys.json");
    std::fs::write(&file, format!("{{\"keys\": [{}]}}", entries.join(","))).expect("keys file");
    let admin = "imp-admin-key-0123456789";
    let s = Server::start_env(
        &["--keys-file", file.to_str().expect("path"), "--max-body-mb", "1"],
        &[("ZEPTO_API_KEY", admin)],
    );
    let a = s.addr.as_str();
    let bearer = |k: &str| format!("Bearer {k}");
    let (reader, writer, admin) = (bearer(&keys[0]), bearer(&keys[1]), bearer(admin));
    let csv = "ts,x\n2024-01-02T00:00:00.000000Z,1\n";
    assert_eq!(imp(a, "name=t&fmt=json", csv, &[]).status, 401);
    let r = imp(a, "name=t&fmt=json", csv, &[("Authorization", &reader)]);
    assert_eq!(r.status, 403, "a reader may not import: {}", r.text());
    let r = imp(a, "name=t&fmt=json&timestamp=ts", csv, &[("Authorization", &writer)]);
    assert_eq!(r.json()["rowsImported"], 1, "{}", r.text());
    let r = imp(a, "name=t&fmt=json&overwrite=true", csv, &[("Authorization", &writer)]);
    assert_eq!(r.status, 403, "overwrite drops the table, which a writer may not: {}", r.text());
    let r = imp(a, "name=t&fmt=json&overwrite=true", csv, &[("Authorization", &admin)]);
    assert_eq!(r.json()["rowsImported"], 1, "{}", r.text());
    // Refused from its declared length (not sent, so the answer is not lost to a reset).
    let head = format!(
        "POST /imp?name=t&fmt=json HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: {admin}\r\n\
         Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {}\r\n\r\n",
        2 << 20
    );
    let r = common::raw(a, head.as_bytes());
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.json()["status"].as_str().is_some_and(|m| m.contains("limit")), "{}", r.text());
    let r =
        request(a, "GET", &format!("/exec?query={}", enc("SELECT count() FROM t")), &[("Authorization", &admin)], b"");
    assert_eq!(r.json()["dataset"], serde_json::json!([[1]]));
    s.stop();
}
