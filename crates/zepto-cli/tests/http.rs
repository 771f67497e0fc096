//! End-to-end tests of `zeptodb serve`: the real binary on an ephemeral loopback port, spoken
//! to over raw TCP (so malformed HTTP can be sent too). Every endpoint, format, role and error
//! path of SPEC §2.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zepto_storage::{ColumnDef, DataType, Value};

mod common;
use common::*;

#[test]
fn probes_queries_and_formats() {
    let s = Server::start(&["--demo", "--rows", "60000"]);
    let a = s.addr.as_str();
    assert_eq!(get(a, "/ping").text(), "Ok");
    let h = request(a, "HEAD", &format!("/?query={}", enc("SELECT 1")), &[], b"");
    assert_eq!((h.status, h.body.len()), (200, 0), "HEAD is GET without a body");
    assert_eq!(get(a, "/health").json()["status"], "ok");
    assert_eq!(get(a, "/ready").json()["ready"], true);
    let r = get(a, "/ping");
    assert!(r.header("x-request-id").is_some_and(|v| !v.is_empty()));
    let r = request(a, "GET", "/ping", &[("X-Request-Id", "abc-123")], b"");
    assert_eq!(r.header("x-request-id"), Some("abc-123"), "a client's request id is echoed");

    // JSON, as SPEC §2 pins it.
    let j = sql(a, "SELECT sym, count(*) AS n FROM trades GROUP BY sym ORDER BY sym LIMIT 2");
    assert_eq!(j["columns"], serde_json::json!([{"name":"sym","type":"SYMBOL"},{"name":"n","type":"BIGINT"}]));
    assert_eq!(j["rows"], 2);
    assert_eq!(j["data"][0][0], "S000");
    assert!(j["elapsed_us"].as_f64().is_some());
    // GET with ?query= and ?sql=, CSV and JSONL.
    let q = enc("SELECT ts, sym FROM trades ORDER BY ts LIMIT 1");
    let csv = get(a, &format!("/?query={q}&format=csv"));
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    assert_eq!(csv.text(), "ts,sym\n2024-01-02T09:30:00.000000000Z,S009\n");
    let jl = get(a, &format!("/query?sql={q}&format=jsonl")).text();
    assert_eq!(jl, "{\"ts\":\"2024-01-02T09:30:00.000000000Z\",\"sym\":\"S009\"}\n");
    // Accept header picks the format too.
    let r = request(a, "POST", "/", &[("Accept", "text/csv")], b"SELECT 1 AS x");
    assert_eq!(r.text(), "x\n1\n");
    // JSON body with parameters.
    let body = r#"{"sql": "SELECT count(*) AS n FROM trades WHERE sym = $1 AND size >= $2", "params": ["S001", 100]}"#;
    let r = request(a, "POST", "/query", &[("Content-Type", "application/json")], body.as_bytes());
    let n = r.json()["data"][0][0].as_i64().expect("count");
    let direct = sql(a, "SELECT count(*) FROM trades WHERE sym = 'S001' AND size >= 100");
    assert_eq!(Some(n), direct["data"][0][0].as_i64());
    // A parameter is a value, never SQL text.
    let body = r#"{"sql": "SELECT count(*) FROM trades WHERE sym = ?", "params": ["x' OR '1'='1"]}"#;
    let r = request(a, "POST", "/", &[("Content-Type", "application/json")], body.as_bytes());
    assert_eq!(r.json()["data"][0][0], 0);

    // Arrow IPC stream, large enough to be streamed in several chunks.
    let r = request(a, "POST", "/", &[("Accept", "application/vnd.apache.arrow.stream")], b"SELECT * FROM trades");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("transfer-encoding"), Some("chunked"), "a large result is streamed");
    let defs: Vec<ColumnDef> = [("ts", DataType::Timestamp), ("sym", DataType::Symbol), ("price", DataType::Float64)]
        .iter()
        .map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t })
        .collect();
    let defs_all = [defs.clone(), vec![ColumnDef { name: "size".into(), data_type: DataType::Int64 }]].concat();
    let cols = zepto_io::ipc::read_ipc_stream(&r.body, &defs_all).expect("valid Arrow stream");
    assert_eq!(cols[0].len(), 60000);
    let first = sql(a, "SELECT price FROM trades LIMIT 1");
    assert_eq!(cols[2].get(0), Value::Float64(first["data"][0][0].as_f64().expect("price")));
    // A large JSON result streams and is still one valid document.
    let big = request(a, "POST", "/", &[], b"SELECT * FROM trades");
    assert_eq!(big.header("transfer-encoding"), Some("chunked"));
    assert_eq!(big.json()["rows"], 60000);
    assert_eq!(big.json()["data"].as_array().map(Vec::len), Some(60000));

    // Catalog endpoints.
    let t = get(a, "/tables").json();
    let names: Vec<&str> = t["tables"].as_array().expect("list").iter().filter_map(|x| x["name"].as_str()).collect();
    assert_eq!(names, ["quotes", "trades"]);
    let t = get(a, "/tables/trades").json();
    assert_eq!(t["rows"], 60000);
    assert_eq!(t["columns"][1], serde_json::json!({"name":"sym","type":"SYMBOL","role":"partition key"}));
    assert_eq!(get(a, "/tables/nope").error_code(), "TABLE_NOT_FOUND");

    // Errors: code, position, status.
    let r = post(a, "/", "SELECT price FROM trades WHERE");
    assert_eq!((r.status, r.error_code().as_str()), (400, "SQL_PARSE"));
    assert_eq!(r.json()["error"]["line"], 1);
    assert_eq!(r.json()["error"]["column"], 31);
    let r = post(a, "/", "SELECT nope FROM trades");
    assert_eq!((r.status, r.error_code().as_str()), (400, "COLUMN_NOT_FOUND"));
    assert_eq!(post(a, "/", "SELECT * FROM missing").status, 404);
    let r = get(a, &format!("/?query={}", enc("DROP TABLE trades")));
    assert_eq!((r.status, r.error_code().as_str()), (405, "READ_ONLY"));
    assert_eq!(get(a, "/nope").status, 404);
    let r = request(a, "DELETE", "/tables", &[], b"");
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    // A script reports which statement failed and what was applied before it.
    let r = post(a, "/", "CREATE TABLE s (x INT); INSERT INTO s VALUES (1); SELECT nope FROM s");
    assert!(r.text().contains("statement 3 of 3") && r.text().contains("2 earlier"), "{}", r.text());
    assert_eq!(get(a, "/?query=SELECT+1&format=xml").error_code(), "BAD_REQUEST");
    let r = request(a, "POST", "/", &[("Content-Type", "application/json")], b"{\"sql\": 1}");
    assert_eq!(r.error_code(), "BAD_REQUEST");
    let r = request(a, "POST", "/", &[("Content-Type", "application/json")], b"{not json");
    assert_eq!(r.error_code(), "BAD_REQUEST");
    // Malformed HTTP gets a 400 from the protocol layer.
    let r = raw(a, b"THIS IS NOT HTTP\r\n\r\n");
    assert_eq!(r.status, 400);

    // Metrics count what happened.
    let m = get(a, "/metrics").text();
    assert!(m.contains("zepto_http_requests_total{route=\"query\",class=\"2xx\"}"), "{m}");
    assert!(m.contains("zepto_errors_total{code=\"SQL_PARSE\"} 1"), "{m}");
    assert!(m.contains("zepto_table_rows 120001"), "{m}"); // + the scripted INSERT
    assert!(m.contains("zepto_memory_resident_bytes"), "{m}");
    // A column of 5M BIGINTs (40 MB) is a block the server advises to use huge pages
    // (`--huge-pages on` by default); the kernel takes or refuses the advice, counted either way.
    assert_eq!(post(a, "/", "SELECT count(*) FROM range(5000000) r(x) WHERE x % 7 = 0").status, 200);
    let m = get(a, "/metrics").text();
    let value = |name: &str| -> u64 {
        let line =
            m.lines().find(|l| l.split_whitespace().next() == Some(name)).unwrap_or_else(|| panic!("{name}: {m}"));
        line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
    };
    assert!(value("zepto_huge_page_advice") + value("zepto_huge_page_advice_refused") >= 1, "{m}");
    assert!(m.contains("zepto_memory_huge_page_bytes"), "{m}");
    assert!(s.stop().success(), "SIGTERM ends the server cleanly");
}

/// The monitoring examples (`deploy/monitoring/`: Prometheus alert rules, a Grafana dashboard)
/// name only series the server exports: every `zepto_*` name in them is in `/metrics` once
/// some traffic made the labelled ones (a histogram's `_bucket`, `_sum` and `_count` as such).
#[test]
fn monitoring_examples_name_series_the_server_exports() {
    let s = Server::start(&["--max-queries", "7"]);
    let a = s.addr.as_str();
    assert_eq!(post(a, "/write", "cpu,host=a usage=0.5 1700000000000000000").status, 200);
    assert_eq!(post(a, "/", "SELECT nope").status, 400);
    let m = get(a, "/metrics").text();
    let exported: std::collections::HashSet<&str> =
        m.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split(['{', ' ']).next()).collect();
    assert!(m.contains("zepto_query_slots 7"), "{m}");
    assert!(m.contains("zepto_query_slots_busy 0"), "no statement holds a slot between requests: {m}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/monitoring");
    let mut named = std::collections::BTreeSet::new();
    for file in ["zeptodb-alerts.yml", "zeptodb-dashboard.json"] {
        let text = std::fs::read_to_string(dir.join(file)).expect("the example is there");
        if file.ends_with(".json") {
            let d: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
            assert!(d["panels"].as_array().is_some_and(|p| p.len() >= 8), "{file} has its panels");
        }
        for (at, _) in text.match_indices("zepto_") {
            let name: String =
                text[at..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
            assert!(exported.contains(name.as_str()), "{file} names {name}, which /metrics does not export:\n{m}");
            named.insert(name);
        }
    }
    assert!(named.len() >= 15, "{named:?}");
    let prom = std::fs::read_to_string(dir.join("prometheus.yml")).expect("prometheus.yml");
    assert!(prom.contains("zeptodb-alerts.yml") && prom.contains("metrics_path: /metrics"), "{prom}");
}

#[test]
fn every_door_stops_cleanly_on_sigterm() {
    // HTTP, PostgreSQL, Flight SQL and FIX open, in memory and durable, each with a client
    // connected at the stop: exit 0 and no panic line (`Server::stop` checks both).
    let dir = fresh_dir("every-door");
    let fix_cfg = dir.join("fix.json");
    std::fs::write(&fix_cfg, r#"{"sender_comp_id": "ZEPTO", "target_comp_ids": ["FEED"]}"#).expect("FIX config");
    let data = dir.join("data").to_string_lossy().to_string();
    let fix_cfg = fix_cfg.to_string_lossy().to_string();
    let doors = ["--flight-sql", "127.0.0.1:0", "--fix", "127.0.0.1:0", "--fix-config", fix_cfg.as_str()];
    for durable in [false, true] {
        let mut args = doors.to_vec();
        if durable {
            args.extend(["--data-dir", data.as_str()]);
        }
        let s = Server::start(&args);
        sql(&s.addr, "CREATE TABLE t (ts TIMESTAMP, x INT) TIMESTAMP(ts); INSERT INTO t VALUES (1, 1)");
        let pg = s.printed_addr("PostgreSQL wire protocol on ");
        let open: Vec<TcpStream> = [s.addr.clone(), pg]
            .iter()
            .map(|a| TcpStream::connect(a).unwrap_or_else(|e| panic!("connect {a}: {e}")))
            .collect();
        s.stop();
        drop(open);
    }
    let s = Server::start(&["--data-dir", &data]);
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 1, "the clean stop checkpointed");
    s.stop();
    // SIGTERM the moment a server says it listens: its handler is already installed. It was
    // installed on the accept loop's first poll, and a signal before that killed the process
    // with its default action: 40 rounds failed this way with the CPU busy (not every run).
    for _ in 0..40 {
        Server::start(&["--data-dir", &data]).stop();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tells_systemd_when_ready_and_when_stopping() {
    // Type=notify: the service manager names a datagram socket in NOTIFY_SOCKET.
    let dir = fresh_dir("notify");
    let path = dir.join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
    sock.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let recv = || {
        let mut buf = [0u8; 512];
        let n = sock.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    let s = Server::start_env(&[], &[("NOTIFY_SOCKET", path.to_str().expect("path"))]);
    let ready = recv();
    assert!(ready.starts_with("READY=1\nSTATUS=listening on http://"), "{ready}");
    assert!(ready.contains(&s.addr), "{ready}");
    s.stop();
    assert!(recv().starts_with("STOPPING=1\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ingest_formats_and_all_or_nothing() {
    let s = Server::start(&[]);
    let a = s.addr.as_str();
    sql(a, "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT)");
    let r =
        post(a, "/write?table=t&format=csv", "ts,sym,px,n\n2024-01-02 09:30:00,A,1.5,1\n2024-01-02T09:30:01.5Z,B,,\n");
    assert_eq!((r.status, r.json()["rows_written"].as_i64()), (200, Some(2)), "{}", r.text());
    let r = post(a, "/write?table=t&format=jsonl", "{\"ts\":1704187802000000000,\"sym\":\"C\",\"px\":2,\"n\":3}\n");
    assert_eq!(r.json()["rows_written"], 1);
    // Bad row 3 of CSV: nothing from the batch is stored.
    let r = post(a, "/write?table=t&format=csv", "ts,sym,px,n\n1,A,1,1\n2,B,2,2\n3,C,oops,3\n");
    assert_eq!((r.status, r.error_code().as_str()), (400, "INGEST"));
    assert_eq!(r.json()["error"]["row"], 3);
    let r = post(a, "/write?table=t&format=jsonl", "{\"ts\":1}\n{\"ts\":2,\"bogus\":1}\n");
    assert_eq!(r.json()["error"]["row"], 2);
    let r = post(a, "/write?table=t&format=arrow", "not an arrow stream");
    assert_eq!(r.error_code(), "INGEST");
    assert_eq!(post(a, "/write?table=nope&format=csv", "a\n1\n").error_code(), "TABLE_NOT_FOUND");
    assert_eq!(sql(a, "SELECT count(*) FROM t")["data"][0][0], 3);

    // Arrow IPC in: a stream made by the server itself (SELECT ... format=arrow) fed back.
    let r = request(a, "POST", "/?format=arrow", &[], b"SELECT ts + INTERVAL '1 hour' AS ts, sym, px, n FROM t");
    let r = request(a, "POST", "/write?table=t&format=arrow", &[], &r.body);
    assert_eq!(r.json()["rows_written"], 3, "{}", r.text());
    assert_eq!(sql(a, "SELECT count(*), count(px) FROM t")["data"][0], serde_json::json!([6, 4]));

    // InfluxDB line protocol: tables created and widened; /api/v2/write answers 204.
    let r = post(
        a,
        "/write?precision=ms",
        "cpu,host=a usage=1.5,cores=4i 1700000000000\ncpu,host=b usage=2 1700000000001\n",
    );
    assert_eq!(r.json()["rows_written"], 2, "{}", r.text());
    let r = post(a, "/api/v2/write?bucket=x&precision=s", "cpu,host=c usage=3,temp=40.5 1700000001\n");
    assert_eq!(r.status, 204);
    let j = sql(a, "SELECT host, usage, cores, temp, timestamp FROM cpu ORDER BY timestamp");
    assert_eq!(j["data"][0], serde_json::json!(["a", 1.5, 4, null, "2023-11-14T22:13:20.000000000Z"]));
    assert_eq!(j["data"][2], serde_json::json!(["c", 3.0, null, 40.5, "2023-11-14T22:13:21.000000000Z"]));
    // A bad line 2 rejects the whole batch, including the table it would have created.
    let r = post(a, "/write?format=ilp", "mem,host=a used=1i 1\nmem,host=a used=\n");
    assert_eq!((r.status, r.json()["error"]["line"].as_i64()), (400, Some(2)));
    assert_eq!(post(a, "/", "SELECT * FROM mem").status, 404);
    let r = post(a, "/write?format=ilp", "cpu,host=d usage=1 1\ncpu,host=d cores=1.5 2\n");
    assert_eq!(r.json()["error"]["line"], 2, "float into a BIGINT column");
    assert_eq!(sql(a, "SELECT count(*) FROM cpu")["data"][0][0], 3);
    assert_eq!(post(a, "/write?format=ilp&precision=weeks", "m v=1").error_code(), "BAD_REQUEST");
    // gzip bodies, as Telegraf sends them; other encodings are refused.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"cpu,host=e usage=7 1700000002000000000\n").expect("gzip");
    let body = gz.finish().expect("gzip");
    let r = request(a, "POST", "/api/v2/write", &[("Content-Encoding", "gzip")], &body);
    assert_eq!(r.status, 204, "{}", r.text());
    let r = request(a, "POST", "/write", &[("Content-Encoding", "br")], b"x");
    assert_eq!((r.status, r.error_code().as_str()), (415, "UNSUPPORTED_ENCODING"));
    // Two tables in one batch, the second line bad: neither changes, no table is created.
    let r = post(a, "/write", "newt,k=a v=1 1\ncpu,host=f usage=\"str\" 2\n");
    assert_eq!(r.json()["error"]["line"], 2);
    assert_eq!(post(a, "/", "SELECT * FROM newt").status, 404);
    let m = get(a, "/metrics").text();
    assert!(m.contains("zepto_rows_ingested_total{format=\"ilp\"} 4"), "{m}");
}

#[test]
fn keys_roles_and_grants() {
    let dir = std::env::temp_dir().join(format!("zepto-http-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut entries = Vec::new();
    let mut keys = Vec::new();
    for (name, role, tables) in [("r", "reader", ""), ("w", "writer", ""), ("g", "reader", "trades")] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeptodb"));
        cmd.args(["keygen", "--name", name, "--role", role]);
        if !tables.is_empty() {
            cmd.args(["--tables", tables]);
        }
        let out = cmd.output().expect("keygen");
        assert!(out.status.success());
        entries.push(String::from_utf8(out.stdout).expect("utf8").trim().to_string());
        let err = String::from_utf8(out.stderr).expect("utf8");
        keys.push(err.rsplit(' ').next().expect("key").trim().to_string());
        assert!(!entries.last().expect("entry").contains(keys.last().expect("key").as_str()), "file holds no key");
    }
    let file = dir.join("keys.json");
    std::fs::write(&file, format!("{{\"keys\": [{}]}}", entries.join(","))).expect("write keys");
    let admin = "admin-key-0123456789";
    let s = Server::start_env(
        &["--demo", "--rows", "1000", "--keys-file", file.to_str().expect("path")],
        &[("ZEPTO_API_KEY", admin)],
    );
    let a = s.addr.as_str();
    let (reader, writer, granted) = (keys[0].as_str(), keys[1].as_str(), keys[2].as_str());

    let r = post(a, "/", "SELECT 1");
    assert_eq!((r.status, r.error_code().as_str()), (401, "UNAUTHENTICATED"));
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    assert_eq!(post_key(a, "/", "wrong-key", "SELECT 1").status, 401);
    assert_eq!(get(a, "/ping").status, 200, "probes need no key");
    assert_eq!(get(a, "/metrics").status, 401);
    assert_eq!(request(a, "GET", "/metrics", &[("Authorization", &format!("Bearer {reader}"))], b"").status, 200);

    assert_eq!(post_key(a, "/", reader, "SELECT count(*) FROM trades").status, 200);
    let r = post_key(a, "/", reader, "CREATE TABLE x (a INT)");
    assert_eq!((r.status, r.error_code().as_str()), (403, "PERMISSION_DENIED"));
    assert_eq!(post_key(a, "/write?table=trades&format=csv", reader, "ts\n1\n").status, 403);
    assert_eq!(post_key(a, "/", writer, "CREATE TABLE x (a INT)").status, 200);
    assert_eq!(post_key(a, "/", writer, "INSERT INTO x VALUES (1)").status, 200);
    assert_eq!(post_key(a, "/write?format=ilp", writer, "m,t=a v=1 1").status, 200);
    assert_eq!(post_key(a, "/", writer, "DROP TABLE x").status, 403, "DROP needs admin");
    assert_eq!(post_key(a, "/", writer, "COPY x TO '/tmp/x.csv'").status, 403, "COPY needs admin");
    assert_eq!(post_key(a, "/", admin, "DROP TABLE x").status, 200);

    // Table grants: only trades, everywhere.
    assert_eq!(post_key(a, "/", granted, "SELECT count(*) FROM trades").status, 200);
    let r = post_key(a, "/", granted, "SELECT * FROM quotes");
    assert_eq!((r.status, r.error_code().as_str()), (403, "PERMISSION_DENIED"));
    let r = post_key(a, "/", granted, "SELECT * FROM trades t ASOF JOIN quotes q ON t.sym = q.sym AND t.ts >= q.ts");
    assert_eq!(r.status, 403, "a join reaches the ungranted table");
    let r = post_key(a, "/", granted, "WITH quotes AS (SELECT 1 AS x) SELECT * FROM quotes");
    assert_eq!(r.status, 200, "a CTE is not a table");
    let r = request(a, "GET", "/tables", &[("Authorization", &format!("Bearer {granted}"))], b"");
    let names: Vec<String> = r.json()["tables"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert_eq!(names, ["trades"]);
    let r = post_key(a, "/", granted, "SHOW TABLES");
    assert_eq!(r.json()["data"], serde_json::json!([["trades"]]));
    drop(s);

    // A public address without keys is refused before binding.
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["serve", "--http", "0.0.0.0:0", "--in-memory"])
        .env_remove("ZEPTO_API_KEY")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("without authentication"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compares 50k x 50k pairs in nested-loop blocks and keeps none of them.
const SLOW: &str = "SELECT count(*) FROM trades a JOIN trades b ON a.price < b.price - 1000000 AND a.size > b.size";

#[test]
fn limits_timeouts_and_disconnects() {
    let s = Server::start(&["--demo", "--rows", "50000", "--max-body-mb", "1", "--query-timeout", "0.5"]);
    let a = s.addr.as_str();
    // The declared length alone gets the 413: the client need not (and here does not) send
    // the body, so the answer cannot be lost to a reset while the client is still writing.
    let r = raw(a, format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", 2 << 20).as_bytes());
    assert_eq!((r.status, r.error_code().as_str()), (413, "PAYLOAD_TOO_LARGE"));
    assert!(r.text().contains("--max-body-mb"), "the error names the flag: {}", r.text());
    // Without a length (chunked), the limit applies while reading.
    let chunk = "x".repeat(64 << 10);
    let mut req = String::from("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    let mut s2 = TcpStream::connect(a).expect("connects");
    s2.write_all(req.as_bytes()).expect("head");
    req.clear();
    let mut sent = 0;
    while sent < (2 << 20) {
        if s2.write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes()).is_err() {
            break; // the server answered and closed
        }
        sent += chunk.len();
    }
    let _ = s2.write_all(b"0\r\n\r\n");
    let mut buf = Vec::new();
    let _ = s2.read_to_end(&mut buf);
    if !buf.is_empty() {
        assert_eq!(parse_response(&buf).status, 413);
    }
    // A nested-loop join of 50k x 50k rows (matching nothing) runs far past 0.5 s.
    let t0 = Instant::now();
    let r = post(a, "/", SLOW);
    assert_eq!((r.status, r.error_code().as_str()), (504, "TIMEOUT"), "{}", r.text());
    assert!(r.text().contains("--query-timeout"), "the error names the flag: {}", r.text());
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(sql(a, "SELECT count(*) FROM trades")["data"][0][0], 50000, "the server is fine afterwards");
    drop(s);

    // Sorting 200k rows holds more than 4 MiB.
    let s = Server::start(&["--demo", "--rows", "200000", "--query-memory-mb", "4"]);
    let a = s.addr.as_str();
    let r = post(a, "/", "SELECT * FROM trades ORDER BY price");
    assert_eq!((r.status, r.error_code().as_str()), (429, "RESOURCES_EXHAUSTED"), "{}", r.text());
    assert!(r.text().contains("memory limit"), "{}", r.text());
    assert_eq!(sql(a, "SELECT count(*) FROM trades")["data"][0][0], 200000);
    drop(s);

    // A client that goes away cancels its query.
    let s = Server::start(&["--demo", "--rows", "50000", "--query-timeout", "600"]);
    let a = s.addr.as_str();
    {
        let mut c = TcpStream::connect(a).expect("connects");
        let req = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{SLOW}", SLOW.len());
        c.write_all(req.as_bytes()).expect("writes");
        std::thread::sleep(Duration::from_millis(300));
        let m = get(a, "/metrics").text();
        assert!(m.contains("zepto_queries_running 1"), "{m}");
    }
    let t0 = Instant::now();
    loop {
        let m = get(a, "/metrics").text();
        if m.contains("zepto_queries_running 0") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "the query kept running after its client left");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tls_with_rustls() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("self-signed cert");
    let dir = std::env::temp_dir().join(format!("zepto-http-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("cert");
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).expect("key");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeptodb"));
    cmd.args(["serve", "--http", "127.0.0.1:0", "--access-log", "off", "--in-memory"]);
    cmd.args(["--tls-cert", cert_path.to_str().expect("path"), "--tls-key", key_path.to_str().expect("path")]);
    cmd.env_remove("ZEPTO_API_KEY");
    let server = Server::spawn(cmd);

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).expect("trust the test cert");
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).expect("client");
    let sock = TcpStream::connect(&server.addr).expect("connects");
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let q = "SELECT 40 + 2 AS answer";
    let req =
        format!("POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{q}", q.len());
    tls.write_all(req.as_bytes()).expect("writes over TLS");
    let mut buf = Vec::new();
    // rustls reports the peer's close without close_notify as an error after the data.
    let _ = tls.read_to_end(&mut buf);
    let r = parse_response(&buf);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["data"][0][0], 42);
    // Plain HTTP to the TLS port gets no HTTP answer.
    let mut plain = TcpStream::connect(&server.addr).expect("connects");
    plain.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let _ = plain.write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut out = Vec::new();
    let _ = plain.read_to_end(&mut out);
    assert!(!out.starts_with(b"HTTP/1.1 200"), "no plaintext service on the TLS port");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn shutdown_finishes_or_cancels_work_in_flight() {
    // A quick request in flight at SIGTERM completes; a slow one is cancelled after the grace
    // period and its client still gets an answer; the process exits 0.
    let s = Server::start(&["--demo", "--rows", "50000", "--shutdown-grace", "0.5"]);
    let addr = s.addr.clone();
    let slow = std::thread::spawn(move || post(&addr, "/", SLOW));
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    let status = s.stop();
    assert!(status.success(), "exit status {status:?}");
    assert!(t0.elapsed() < Duration::from_secs(8));
    let r = slow.join().expect("client thread");
    assert_eq!((r.status, r.error_code().as_str()), (499, "CANCELLED"), "{}", r.text());
}

#[test]
fn sql_cli_against_a_server() {
    let s = Server::start(&[]);
    let url = format!("http://{}", s.addr);
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zeptodb")).arg("sql").args(args).output().expect("runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let script = "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x DOUBLE); \
                  INSERT INTO t VALUES ('2024-01-02 09:30:00', 'A', 1.5), ('2024-01-02 09:30:01', 'B', NULL)";
    let (ok, out, err) = run(&["--url", &url, "-c", script]);
    assert!(ok, "{err}");
    assert_eq!(out, "INSERT 2\n");
    let q = "SELECT ts, sym, x, x * 2 AS y FROM t ORDER BY ts";
    let (ok, remote_csv, _) = run(&["--url", &url, "--format", "csv", "-c", q]);
    assert!(ok);
    let (_, local_csv, _) = run(&["--format", "csv", "-c", &format!("{script}; {q}")]);
    assert_eq!(remote_csv, local_csv, "the same rendering, local or remote");
    assert_eq!(
        remote_csv,
        "ts,sym,x,y\n2024-01-02T09:30:00.000000000Z,A,1.5,3.0\n2024-01-02T09:30:01.000000000Z,B,,\n"
    );
    let (_, table, _) = run(&["--url", &url, "-c", q]);
    assert!(table.contains("SYMBOL") && table.contains("(2 rows)"), "{table}");
    let (ok, _, err) = run(&["--url", &url, "-c", "SELECT FROM"]);
    assert!(!ok);
    assert!(err.contains("error [SQL_PARSE]"), "{err}");
    let (ok, _, err) = run(&["--url", "http://127.0.0.1:1", "-c", "SELECT 1"]);
    assert!(!ok && err.contains("cannot connect"), "{err}");
}

#[test]
fn config_file_with_flags_taking_precedence() {
    let dir = std::env::temp_dir().join(format!("zepto-http-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let cfg = dir.join("zepto.json");
    // The file asks for port 9 on all interfaces; the command line's --http wins.
    std::fs::write(&cfg, r#"{"http": "0.0.0.0:9", "demo": true, "rows": 1000, "max-body-mb": 1}"#).expect("cfg");
    let s = Server::start(&["--config", cfg.to_str().expect("path")]);
    let a = s.addr.as_str();
    assert_eq!(sql(a, "SELECT count(*) FROM trades")["data"][0][0], 1000);
    let r = raw(a, format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", 2 << 20).as_bytes());
    assert_eq!(r.status, 413, "max-body-mb from the file");
    drop(s);
    std::fs::write(&cfg, r#"{"htpp": "127.0.0.1:0"}"#).expect("cfg");
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["serve", "--in-memory", "--config", cfg.to_str().expect("path")])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown setting 'htpp'"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A thread that writes ILP batches of 100 rows (batch `b` holds ids `b*100..b*100+100`) from
/// batch `first` on, one connection each, and sends on `acked` every batch answered 200; it
/// stops at the first that is not.
fn spawn_batch_writer(a: String, first: u64, acked: std::sync::mpsc::Sender<u64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for b in first.. {
            let mut body = String::new();
            for i in 0..100u64 {
                let id = b * 100 + i;
                body.push_str(&format!(
                    "ticks,sym=S{} id={id}i,px={}.5 {}\n",
                    id % 7,
                    id % 100,
                    1_700_000_000_000_000_000 + id
                ));
            }
            let mut c = match TcpStream::connect(&a) {
                Ok(c) => c,
                Err(_) => return,
            };
            let req = format!(
                "POST /write HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            if c.write_all(req.as_bytes()).is_err() {
                return;
            }
            let mut buf = Vec::new();
            if c.read_to_end(&mut buf).is_err() || !buf.starts_with(b"HTTP/1.1 200") {
                return;
            }
            if acked.send(b).is_err() {
                return;
            }
        }
    })
}

/// A thread that asks for a CHECKPOINT every 20 ms until `stop`.
fn spawn_checkpointer(a: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let body = "CHECKPOINT";
            let req = format!(
                "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            if let Ok(mut c) = TcpStream::connect(&a) {
                let _ = c.write_all(req.as_bytes());
                let _ = c.read_to_end(&mut Vec::new());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
}

#[test]
fn kill_9_keeps_every_acknowledged_row_exactly_once() {
    let dir = std::env::temp_dir().join(format!("zepto-http-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_str().expect("path").to_string();
    let mut acked: Vec<u64> = Vec::new();
    let mut next_batch = 0u64;
    for round in 0..3u64 {
        let s = Server::start(&["--data-dir", &data, "--sync", "always"]);
        let a = s.addr.clone();
        if round == 0 {
            sql(&a, "CREATE TABLE ticks (ts TIMESTAMP, sym SYMBOL, id BIGINT, px DOUBLE)");
        }
        // Batches of 100 rows over one connection until the kill; remember what was answered 200.
        let (tx, rx) = std::sync::mpsc::channel::<u64>();
        let writer = spawn_batch_writer(a, next_batch, tx);
        // Checkpoints while the writes go on, so some kills land in the middle of one.
        let stop = Arc::new(AtomicBool::new(false));
        let checkpointer = spawn_checkpointer(s.addr.clone(), stop.clone());
        std::thread::sleep(Duration::from_millis(150 + 100 * round));
        let mut s = s;
        s.child.kill().expect("kill -9");
        let _ = s.child.wait();
        let _ = writer.join();
        stop.store(true, Ordering::Relaxed);
        let _ = checkpointer.join();
        acked.extend(rx.try_iter());
        next_batch = acked.iter().max().map_or(next_batch, |m| m + 2);
        assert!(!acked.is_empty(), "round {round}: some batches were acknowledged");
    }
    let s = Server::start(&["--data-dir", &data]);
    let a = s.addr.as_str();
    let j = sql(a, "SELECT count(*), count(DISTINCT id) FROM ticks");
    assert_eq!(j["data"][0][0], j["data"][0][1], "no row twice");
    let ids = sql(a, "SELECT DISTINCT id // 100 AS b FROM ticks ORDER BY b");
    let present: std::collections::HashSet<u64> =
        ids["data"].as_array().expect("rows").iter().filter_map(|r| r[0].as_u64()).collect();
    for b in &acked {
        assert!(present.contains(b), "acknowledged batch {b} was lost");
    }
    let full = sql(a, "SELECT id // 100 AS b, count(*) FROM ticks GROUP BY b HAVING count(*) <> 100");
    assert_eq!(full["rows"], 0, "batches are all or nothing: {}", full["data"]);
    assert!(s.startup.iter().any(|l| l.contains("loaded checkpoint")), "recovery used a checkpoint: {:?}", s.startup);
    let total = sql(a, "SELECT count(*) FROM ticks")["data"][0][0].clone();
    sql(a, "INSERT INTO ticks VALUES (1, 'Z', -1, 0.0)");
    // A clean stop checkpoints, so the next start replays nothing.
    let loaded = |startup: &[String]| {
        let line = startup.iter().find_map(|l| l.split("loaded checkpoint ").nth(1)).expect("a checkpoint loaded");
        line.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).expect("its LSN")
    };
    let before_stop = loaded(&s.startup);
    assert!(s.stop().success());
    let s = Server::start(&["--data-dir", &data]);
    assert!(!s.startup.iter().any(|l| l.contains("replayed")), "{:?}", s.startup);
    let j = sql(&s.addr, "SELECT count(*) FROM ticks");
    assert_eq!(j["data"][0][0].as_u64(), total.as_u64().map(|t| t + 1));
    // The log keeps what followed the checkpoint before the last (for subscribers resuming):
    // the segments the older checkpoint covered are gone.
    let first_lsns: Vec<u64> = std::fs::read_dir(dir.join("wal"))
        .expect("wal dir")
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".wal")?.parse().ok())
        .collect();
    let last = loaded(&s.startup);
    assert!(last > before_stop, "the stop wrote a checkpoint");
    assert!(
        !first_lsns.is_empty() && first_lsns.iter().all(|&l| l > before_stop),
        "segments {first_lsns:?}, the checkpoint before the last at {before_stop}"
    );
    assert!(
        first_lsns.iter().any(|&l| l <= last),
        "the records the last checkpoint ({last}) covers are still there: {first_lsns:?}"
    );
    // Corrections are logged like everything else: they survive a kill -9.
    let before = sql(&s.addr, "SELECT count(*), sum(CASE WHEN id % 2 = 0 THEN 1 ELSE 0 END) FROM ticks");
    sql(&s.addr, "DELETE FROM ticks WHERE id % 2 = 0");
    sql(&s.addr, "UPDATE ticks SET px = -1.0 WHERE id % 3 = 0");
    sql(&s.addr, "UPDATE ticks SET sym = 'MOVED' WHERE id % 5 = 0");
    let want = sql(&s.addr, "SELECT count(*), sum(px), sum(CASE WHEN sym = 'MOVED' THEN 1 ELSE 0 END) FROM ticks");
    assert_eq!(
        want["data"][0][0].as_u64(),
        before["data"][0][0].as_u64().zip(before["data"][0][1].as_u64()).map(|(a, b)| a - b)
    );
    // One process per data directory: a second one is refused before it touches anything.
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["serve", "--http", "127.0.0.1:0", "--data-dir", &data])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use by another zeptodb process"));
    drop(s); // kill -9
    let s = Server::start(&["--data-dir", &data]);
    let got = sql(&s.addr, "SELECT count(*), sum(px), sum(CASE WHEN sym = 'MOVED' THEN 1 ELSE 0 END) FROM ticks");
    assert_eq!(got["data"], want["data"]);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
