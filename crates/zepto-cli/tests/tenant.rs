//! End to end: a key bound to a tenant (`zeptodb keygen --tenant`) sees only its tenant's rows
//! of a table with a `tenant_id` column through SQL, may not `/write` to such a table (403,
//! nothing stored), and may not read `/metrics`.

use std::process::Command;

mod common;
use common::*;

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
    let dir = std::env::temp_dir().join(format!("zepto-tenant-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("keys.json");
    std::fs::write(&file, format!("{{\"keys\": [{agent_entry}, {ops_entry}]}}")).expect("write keys");
    let s = Server::start(&["--keys-file", file.to_str().expect("path")]);
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

fn get_key(a: &str, path: &str, key: &str) -> Resp {
    request(a, "GET", path, &[("Authorization", &format!("Bearer {key}"))], b"")
}
