//! End to end: a key bound to a tenant (`zeptodb keygen --tenant`) sees only its tenant's rows
//! of a table with a `tenant_id` column through SQL, may not `/write` to such a table (403,
//! nothing stored), and may not read `/metrics`.

use std::process::Command;

mod common;
use common::*;

/// A server whose keys file (in a directory of its own, `zepto-tenant-TAG-PID`, removed by
/// the caller) holds `entries`.
fn keyed_server(tag: &str, entries: &[&str]) -> (Server, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("zepto-tenant-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("keys.json");
    std::fs::write(&file, format!("{{\"keys\": [{}]}}", entries.join(", "))).expect("write keys");
    (Server::start(&["--keys-file", file.to_str().expect("path")]), dir)
}

/// A key made by `zeptodb keygen` with `args`: (the key, its keys-file entry).
fn keygen(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb")).arg("keygen").args(args).output().expect("keygen");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let entry = String::from_utf8(out.stdout).expect("utf8").trim().to_string();
    let err = String::from_utf8(out.stderr).expect("utf8");
    (err.rsplit(' ').next().expect("key").trim().to_string(), entry)
}

fn count(a: &str, key: &str, sql: &str) -> i64 {
    let r = post_key(a, "/", key, sql);
    assert_eq!(r.status, 200, "{sql}: {}", r.text());
    r.json()["data"][0][0].as_i64().unwrap_or_else(|| panic!("{sql}: {}", r.text()))
}

#[test]
fn a_tenant_bound_key_sees_and_writes_only_its_rows() {
    let bad = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["keygen", "--name", "x", "--tenant", ""])
        .output()
        .expect("keygen");
    assert!(!bad.status.success(), "an empty tenant is refused");
    let (agent, agent_entry) = keygen(&["--name", "agent", "--role", "writer", "--tenant", "acme"]);
    assert!(agent_entry.contains("\"tenant\": \"acme\""), "{agent_entry}");
    let (ops, ops_entry) = keygen(&["--name", "ops", "--role", "admin"]);
    let (s, dir) = keyed_server("keys", &[&agent_entry, &ops_entry]);
    let a = s.addr.as_str();

    let setup = "CREATE TABLE ai_memories (ts TIMESTAMP, tenant_id SYMBOL, content VARCHAR, emb FLOAT[4]); \
                 INSERT INTO ai_memories VALUES (1, 'acme', 'ours', [1, 0, 0, 0]), \
                 (2, 'globex', 'theirs', [0, 1, 0, 0]), (3, 'globex', 'theirs too', [1, 0, 0, 0])";
    assert_eq!(post_key(a, "/", &ops, setup).status, 200);
    assert_eq!(count(a, &ops, "SELECT count(*) FROM ai_memories"), 3);

    // SQL: only acme's rows, however they are read.
    assert_eq!(count(a, &agent, "SELECT count(*) FROM ai_memories"), 1);
    assert_eq!(count(a, &agent, "SELECT count(*) FROM ai_memories WHERE tenant_id = 'globex'"), 0);
    let r =
        post_key(a, "/", &agent, "SELECT content FROM ai_memories ORDER BY array_distance(emb, [1, 0, 0, 0]) LIMIT 5");
    assert_eq!(r.json()["data"], serde_json::json!([["ours"]]), "{}", r.text());
    let r = get_key(a, &format!("/query?query={}", enc("SELECT content FROM ai_memories")), &agent);
    assert_eq!(r.json()["data"], serde_json::json!([["ours"]]), "{}", r.text());
    assert_eq!(count(a, &agent, "SELECT (SELECT count(*) FROM ai_memories m JOIN ai_memories n ON m.ts = n.ts)"), 1);
    // SQL writes: its own rows only.
    assert_eq!(post_key(a, "/", &agent, "INSERT INTO ai_memories VALUES (4, 'acme', 'new', NULL)").status, 200);
    let r = post_key(a, "/", &agent, "INSERT INTO ai_memories VALUES (5, 'globex', 'forged', NULL)");
    assert_eq!((r.status, r.error_code().as_str()), (403, "PERMISSION_DENIED"), "{}", r.text());
    assert_eq!(post_key(a, "/", &agent, "DELETE FROM ai_memories").status, 200);
    assert_eq!(count(a, &ops, "SELECT count(*) FROM ai_memories WHERE tenant_id = 'globex'"), 2, "globex intact");
    assert_eq!(count(a, &ops, "SELECT count(*) FROM ai_memories"), 2);

    // /write to the table: refused whole, nothing stored, in every format.
    let r = post_key(a, "/write?table=ai_memories&format=csv", &agent, "ts,tenant_id,content\n6,acme,x\n");
    assert_eq!((r.status, r.error_code().as_str()), (403, "PERMISSION_DENIED"), "{}", r.text());
    let r = post_key(a, "/write?table=ai_memories&format=jsonl", &agent, "{\"ts\":6,\"tenant_id\":\"acme\"}\n");
    assert_eq!(r.status, 403, "{}", r.text());
    let r = post_key(a, "/write?format=ilp", &agent, "ai_memories,tenant_id=acme content=\"x\" 6");
    assert_eq!(r.status, 403, "{}", r.text());
    let r = post_key(a, "/write?format=ilp", &agent, "fresh,tenant_id=acme v=1 6");
    assert_eq!(r.status, 403, "ILP may not create a table with tenant_id: {}", r.text());
    assert_eq!(count(a, &ops, "SELECT count(*) FROM ai_memories"), 2, "nothing stored");
    assert_eq!(post_key(a, "/", &ops, "SELECT * FROM fresh").status, 404, "no table created");
    // Tables without tenant_id take its writes as usual.
    assert_eq!(post_key(a, "/write?format=ilp", &agent, "cpu,host=a usage=1 6").status, 200);

    // /metrics counts every tenant's rows: not for this key.
    let r = get_key(a, "/metrics", &agent);
    assert_eq!((r.status, r.error_code().as_str()), (403, "PERMISSION_DENIED"), "{}", r.text());
    assert_eq!(get_key(a, "/metrics", &ops).status, 200);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The catalogs tell a tenant's key its own share of a scoped table, never the table's totals
/// (how many rows other tenants hold, or how many tenants there are): `/tables` counts its rows
/// and the partitions holding them, `pg_class.reltuples` its rows, `pg_table_size` nothing
/// (NULL). A table without `tenant_id` is reported whole, and an admin sees every table whole.
#[test]
fn a_tenant_bound_keys_catalogs_count_only_its_rows() {
    let (agent, agent_entry) = keygen(&["--name", "agent", "--role", "reader", "--tenant", "acme"]);
    let (ops, ops_entry) = keygen(&["--name", "ops", "--role", "admin"]);
    let (s, dir) = keyed_server("catalogs", &[&agent_entry, &ops_entry]);
    let a = s.addr.as_str();
    let setup = "CREATE TABLE notes (ts TIMESTAMP, tenant_id SYMBOL, v BIGINT); \
                 INSERT INTO notes VALUES (1, 'acme', 1), (2, 'globex', 2), (3, 'globex', 3), (4, 'initech', 4); \
                 CREATE TABLE events (ts TIMESTAMP, sym SYMBOL, tenant_id VARCHAR, v BIGINT); \
                 INSERT INTO events VALUES (1, 'a', 'acme', 1), (2, 'b', 'globex', 2), (3, 'a', 'globex', 3), \
                 (4, 'c', 'acme', 4), (5, 'd', 'initech', 5); \
                 CREATE TABLE ticks (ts TIMESTAMP, sym SYMBOL, tenant_id SYMBOL, v BIGINT); \
                 INSERT INTO ticks VALUES (1, 'a', 'globex', 1), (2, 'a', 'acme', 2), (3, 'b', 'globex', 3), \
                 (4, 'c', NULL, 4), (5, 'c', 'acme', 5), (6, 'c', 'acme', 6); \
                 CREATE TABLE prices (ts TIMESTAMP, sym SYMBOL, px DOUBLE); \
                 INSERT INTO prices VALUES (1, 'a', 1.0), (2, 'b', 2.0)";
    let r = post_key(a, "/", &ops, setup);
    assert_eq!(r.status, 200, "{}", r.text());
    let extent = |key: &str, table: &str| {
        let t = get_key(a, &format!("/tables/{table}"), key).json();
        (t["rows"].as_i64().expect("rows"), t["partitions"].as_i64().expect("partitions"))
    };
    assert_eq!(extent(&agent, "notes"), (1, 1), "acme's one row, in one partition");
    assert_eq!(extent(&ops, "notes"), (4, 3));
    assert_eq!(extent(&agent, "events"), (2, 2), "acme's rows in partitions a and c");
    assert_eq!(extent(&ops, "events"), (5, 4));
    assert_eq!(extent(&agent, "ticks"), (3, 2), "a SYMBOL tenant_id, partitions by sym");
    assert_eq!(extent(&ops, "ticks"), (6, 3));
    assert_eq!(extent(&agent, "prices"), (2, 2), "no tenant_id: the whole table");
    let listed = get_key(a, "/tables", &agent).json();
    let rows: Vec<i64> =
        listed["tables"].as_array().expect("tables").iter().map(|t| t["rows"].as_i64().expect("rows")).collect();
    assert_eq!(rows.iter().sum::<i64>(), 1 + 2 + 3 + 2, "the list as each table's own: {listed}");
    // A view of every tenant's rows (which the key may not read): no count at all.
    let r = post_key(
        a,
        "/",
        &ops,
        "CREATE MATERIALIZED VIEW note_kinds AS SELECT v % 2 AS odd, count(*) AS n FROM notes GROUP BY odd",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let view = get_key(a, "/tables/note_kinds", &agent).json();
    assert!(view["rows"].is_null() && view["partitions"].is_null(), "{view}");
    assert_eq!(get_key(a, "/tables/note_kinds", &ops).json()["rows"].as_i64(), Some(2));
    assert_eq!(post_key(a, "/", &ops, "DROP MATERIALIZED VIEW note_kinds").status, 200);
    let pg = |key: &str, table: &str| {
        let q = format!("SELECT reltuples, pg_table_size(oid) FROM pg_catalog.pg_class WHERE relname = '{table}'");
        let r = post_key(a, "/", key, &q);
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()["data"][0].clone()
    };
    assert_eq!(pg(&agent, "notes")[0].as_f64(), Some(1.0));
    assert!(pg(&agent, "notes")[1].is_null(), "no size of a shared table: {}", pg(&agent, "notes"));
    assert_eq!(pg(&ops, "notes")[0].as_f64(), Some(4.0));
    assert!(pg(&ops, "notes")[1].as_i64().is_some_and(|b| b > 0), "{}", pg(&ops, "notes"));
    assert!(pg(&agent, "prices")[1].as_i64().is_some_and(|b| b > 0), "{}", pg(&agent, "prices"));
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

fn get_key(a: &str, path: &str, key: &str) -> Resp {
    request(a, "GET", path, &[("Authorization", &format!("Bearer {key}"))], b"")
}

/// A subscription's stream, opened with `key`: its status line, and a reader of its event
/// data lines.
fn subscribe(a: &str, key: &str, sql: &str) -> (String, std::io::BufReader<std::net::TcpStream>) {
    use std::io::{BufRead, Write};
    let mut s = std::net::TcpStream::connect(a).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20))).expect("timeout");
    let req = format!(
        "GET /subscribe?query={} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {key}\r\nAccept: text/event-stream\r\n\r\n",
        enc(sql)
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut r = std::io::BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status).expect("status");
    loop {
        let mut h = String::new();
        r.read_line(&mut h).expect("header");
        if h == "\r\n" || h.is_empty() {
            break;
        }
    }
    (status, r)
}

/// The next `data:` line of a stream (chunk sizes and other SSE lines skipped).
fn next_data(r: &mut std::io::BufReader<std::net::TcpStream>) -> String {
    use std::io::BufRead;
    loop {
        let mut line = String::new();
        assert!(r.read_line(&mut line).expect("a line") > 0, "the stream ended");
        if let Some(d) = line.strip_prefix("data: ") {
            return d.trim_end().to_string();
        }
    }
}

#[test]
fn a_subscription_sees_only_what_its_key_may_read() {
    let (agent, agent_entry) = keygen(&["--name", "agent", "--role", "reader", "--tenant", "acme"]);
    let (other, other_entry) = keygen(&["--name", "other", "--role", "reader", "--tables", "elsewhere"]);
    let (ops, ops_entry) = keygen(&["--name", "ops", "--role", "admin"]);
    let (s, dir) = keyed_server("sub", &[&agent_entry, &other_entry, &ops_entry]);
    let a = s.addr.as_str();
    let setup = "CREATE TABLE ai_memories (ts TIMESTAMP, tenant_id SYMBOL, content VARCHAR)";
    assert_eq!(post_key(a, "/", &ops, setup).status, 200);

    let (status, _) = subscribe(a, &other, "SELECT content FROM ai_memories");
    assert!(status.contains(" 403 "), "a key without the table's grant: {status}");
    let (status, mut stream) = subscribe(a, &agent, "SELECT content FROM ai_memories");
    assert!(status.contains(" 200 "), "{status}");
    // The same query under the admin key, and again under the tenant's: subscribers of one
    // query share each change's event only under the same key.
    let (status, mut admin) = subscribe(a, &ops, "SELECT content FROM ai_memories");
    assert!(status.contains(" 200 "), "{status}");
    let (status, mut twin) = subscribe(a, &agent, "SELECT content FROM ai_memories");
    assert!(status.contains(" 200 "), "{status}");
    let rows =
        "INSERT INTO ai_memories VALUES (1, 'globex', 'theirs'), (2, 'acme', 'ours'), (3, 'globex', 'also theirs')";
    assert_eq!(post_key(a, "/", &ops, rows).status, 200);
    assert_eq!(post_key(a, "/", &ops, "INSERT INTO ai_memories VALUES (4, 'globex', 'only theirs')").status, 200);
    assert_eq!(post_key(a, "/", &ops, "INSERT INTO ai_memories VALUES (5, 'acme', 'ours again')").status, 200);
    // The tenant's rows only; a batch with none of them is no event at all.
    let first: serde_json::Value = serde_json::from_str(&next_data(&mut stream)).expect("json");
    assert_eq!(first["result"]["data"], serde_json::json!([["ours"]]), "{first}");
    let second: serde_json::Value = serde_json::from_str(&next_data(&mut stream)).expect("json");
    assert_eq!(second["result"]["data"], serde_json::json!([["ours again"]]), "{second}");
    for want in [["ours"], ["ours again"]] {
        let e: serde_json::Value = serde_json::from_str(&next_data(&mut twin)).expect("json");
        assert_eq!(e["result"]["data"], serde_json::json!([want]), "{e}");
    }
    let all: serde_json::Value = serde_json::from_str(&next_data(&mut admin)).expect("json");
    assert_eq!(all["result"]["data"], serde_json::json!([["theirs"], ["ours"], ["also theirs"]]), "{all}");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
