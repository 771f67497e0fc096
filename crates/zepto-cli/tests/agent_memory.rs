//! Agent memory through the server (SPEC §5): every endpoint, the tenant rules of the HTTP
//! door, bad input refused with nothing stored, and records that survive `kill -9`.

mod common;

use common::*;
use serde_json::json;
use std::path::PathBuf;

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zepto-ai-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn call(addr: &str, method: &str, path: &str, tenant: Option<&str>, body: serde_json::Value) -> Resp {
    let body = if body.is_null() { String::new() } else { body.to_string() };
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(t) = tenant {
        headers.push(("X-Zepto-Tenant-Id", t));
    }
    request(addr, method, path, &headers, body.as_bytes())
}

fn ok(addr: &str, method: &str, path: &str, tenant: Option<&str>, body: serde_json::Value) -> serde_json::Value {
    let r = call(addr, method, path, tenant, body);
    assert_eq!(r.status, 200, "{method} {path}: {}", r.text());
    r.json()
}

fn emb(i: usize) -> Vec<f32> {
    (0..8).map(|k| ((i * 7 + k * 3) % 11) as f32 / 11.0 + 0.05).collect()
}

#[test]
fn every_endpoint_over_http() {
    let s = Server::start(&[]);
    let a = &s.addr;
    let id = ok(
        a,
        "POST",
        "/api/ai/memories",
        Some("acme"),
        json!({"content": "prefers dark mode", "embedding": emb(1),
        "user_id": "u1", "type": "preference", "pinned": true}),
    )["memory_id"]
        .as_str()
        .expect("an id")
        .to_string();
    let batch: Vec<serde_json::Value> =
        (2..12).map(|i| json!({"content": format!("note {i}"), "embedding": emb(i), "session_id": "s1"})).collect();
    let ids = ok(a, "POST", "/api/ai/memories", None, json!({"tenant_id": "acme", "memories": batch}));
    assert_eq!(ids["memory_ids"].as_array().map(Vec::len), Some(10));
    let got = ok(a, "GET", &format!("/api/ai/memories/{id}?include_embedding=true"), Some("acme"), json!(null));
    assert_eq!(got["content"], "prefers dark mode");
    assert_eq!(got["embedding"].as_array().map(Vec::len), Some(8));
    let found = ok(a, "POST", "/api/ai/memories/search", Some("acme"), json!({"query_embedding": emb(3), "limit": 3}));
    let m = found["matches"].as_array().expect("matches");
    assert_eq!(m.len(), 3);
    assert!(m.iter().all(|r| r["score"].is_number() && r["similarity"].is_number() && r["tenant_id"] == "acme"));
    let filtered = ok(a, "POST", "/api/ai/memories/search", Some("acme"), json!({"session_id": "s1", "limit": 100}));
    assert_eq!(filtered["matches"].as_array().map(Vec::len), Some(10));
    let ctx = ok(a, "POST", "/api/ai/context", Some("acme"), json!({"query_embedding": emb(1), "token_budget": 6}));
    assert!(
        ctx["token_count"].as_i64().is_some_and(|t| t <= 6) && !ctx["memories"].as_array().expect("list").is_empty()
    );
    ok(
        a,
        "POST",
        "/api/ai/cache/store",
        Some("acme"),
        json!({"prompt": "Hello  World", "response": "hi", "embedding": emb(5)}),
    );
    let hit = ok(a, "POST", "/api/ai/cache/lookup", Some("acme"), json!({"prompt": "hello world"}));
    assert_eq!((hit["hit"].clone(), hit["kind"].clone()), (json!(true), json!("exact")));
    let sem = ok(a, "POST", "/api/ai/cache/lookup", Some("acme"), json!({"prompt": "hey", "embedding": emb(5)}));
    assert_eq!(sem["kind"], "semantic");
    let stats = ok(a, "GET", "/api/ai/stats", Some("acme"), json!(null));
    assert_eq!(
        (stats["memories"].clone(), stats["pinned"].clone(), stats["cache_entries"].clone()),
        (json!(11), json!(1), json!(1))
    );
    // The records are a table like any other.
    let n = sql(a, "SELECT count(*) FROM ai_memories WHERE tenant_id = 'acme' AND session_id = 's1'");
    assert_eq!(n["data"][0][0], 10);
    // Another tenant sees nothing of acme's.
    assert_eq!(call(a, "GET", &format!("/api/ai/memories/{id}"), Some("other"), json!(null)).status, 404);
    let none = ok(a, "POST", "/api/ai/memories/search", Some("other"), json!({"query_embedding": emb(3)}));
    assert_eq!(none["matches"], json!([]));
    assert_eq!(ok(a, "POST", "/api/ai/cache/lookup", Some("other"), json!({"prompt": "hello world"}))["hit"], false);
    assert_eq!(ok(a, "GET", "/api/ai/stats", Some("other"), json!(null))["memories"], 0);
    assert_eq!(call(a, "DELETE", &format!("/api/ai/memories/{id}"), Some("other"), json!(null)).status, 404);
    ok(a, "DELETE", &format!("/api/ai/memories/{id}"), Some("acme"), json!(null));
    assert_eq!(call(a, "GET", &format!("/api/ai/memories/{id}"), Some("acme"), json!(null)).status, 404);
}

#[test]
fn bad_requests_are_refused_and_store_nothing() {
    let s = Server::start(&[]);
    let a = &s.addr;
    ok(a, "POST", "/api/ai/memories", Some("t"), json!({"content": "first", "embedding": emb(1)}));
    let cases = [
        (json!({"content": "x", "embedding": [1, 2, 3]}), "has 3 values"),
        (json!({"content": "x", "embeding": emb(1)}), "embeding: unknown field"),
        (json!({"content": "x", "tenant_id": "u"}), "conflicts with the X-Zepto-Tenant-Id header"),
        (json!({"content": "x", "importance": "high"}), "body"),
        (
            json!({"memories": [{"content": "ok"}, {"content": "x", "embedding": [0, 0, 0, 0, 0, 0, 0, 0]}]}),
            "memories[1].embedding",
        ),
    ];
    for (body, want) in cases {
        let r = call(a, "POST", "/api/ai/memories", Some("t"), body.clone());
        assert_eq!((r.status, r.error_code().as_str()), (400, "BAD_REQUEST"), "{body}: {}", r.text());
        assert!(r.text().contains(want), "{body}: {}", r.text());
    }
    let r = request(a, "POST", "/api/ai/memories", &[("X-Zepto-Tenant-Id", "t")], b"{not json");
    assert_eq!(r.status, 400);
    // A 100 MB body is refused from its Content-Length, before it is read.
    let big = raw(
        a,
        b"POST /api/ai/memories HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 104857600\r\n\r\n{\"content\":",
    );
    assert_eq!(big.status, 413, "{}", big.text());
    assert_eq!(call(a, "GET", "/api/ai/context", None, json!(null)).status, 405);
    assert_eq!(call(a, "POST", "/api/ai/nothing", None, json!({})).status, 404);
    let n = sql(a, "SELECT count(*) FROM ai_memories");
    assert_eq!(n["data"][0][0], 1, "only the first record was stored");
}

#[test]
fn memories_and_cache_survive_kill_9() {
    let dir = tmp_dir("restart");
    let data = dir.display().to_string();
    let s = Server::start(&["--data-dir", &data]);
    let mut ids = Vec::new();
    for i in 0..50 {
        let r = ok(
            &s.addr,
            "POST",
            "/api/ai/memories",
            Some("t"),
            json!({"content": format!("m{i}"), "embedding": emb(i)}),
        );
        ids.push(r["memory_id"].as_str().expect("id").to_string());
    }
    ok(&s.addr, "POST", "/api/ai/cache/store", Some("t"), json!({"prompt": "p", "response": "r", "embedding": emb(0)}));
    let before =
        ok(&s.addr, "POST", "/api/ai/memories/search", Some("t"), json!({"query_embedding": emb(4), "limit": 5}));
    drop(s); // SIGKILL: everything acknowledged is only in the WAL
    let s = Server::start(&["--data-dir", &data]);
    for (i, id) in ids.iter().enumerate() {
        let got = ok(&s.addr, "GET", &format!("/api/ai/memories/{id}"), Some("t"), json!(null));
        assert_eq!(got["content"], format!("m{i}"));
    }
    let after =
        ok(&s.addr, "POST", "/api/ai/memories/search", Some("t"), json!({"query_embedding": emb(4), "limit": 5}));
    let contents = |v: &serde_json::Value| -> Vec<String> {
        v["matches"].as_array().expect("list").iter().map(|m| m["content"].to_string()).collect()
    };
    assert_eq!(contents(&after), contents(&before));
    assert_eq!(after["matches"][0]["access_count"], 2, "the access counted before the kill was kept");
    assert_eq!(ok(&s.addr, "POST", "/api/ai/cache/lookup", Some("t"), json!({"prompt": "P"}))["hit"], true);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_quota_flag_bounds_each_tenant() {
    let s = Server::start(&["--ai-max-memories", "2"]);
    let a = &s.addr;
    for i in 0..3 {
        ok(
            a,
            "POST",
            "/api/ai/memories",
            Some("q"),
            json!({"content": format!("m{i}"), "embedding": emb(i), "importance": i as f64 / 2.0}),
        );
    }
    ok(a, "POST", "/api/ai/memories", Some("r"), json!({"content": "other", "embedding": emb(0)}));
    let st = ok(a, "GET", "/api/ai/stats", Some("q"), json!(null));
    assert_eq!((st["memories"].clone(), st["quota_memories"].clone()), (json!(2), json!(2)));
    let left = ok(a, "POST", "/api/ai/memories/search", Some("q"), json!({"limit": 10}));
    let mut names: Vec<String> =
        left["matches"].as_array().expect("list").iter().map(|m| m["content"].to_string()).collect();
    names.sort();
    assert_eq!(names, ["\"m1\"", "\"m2\""], "the least important went");
    let pinned = call(
        a,
        "POST",
        "/api/ai/memories",
        Some("p"),
        json!({"memories": [
        {"content": "a", "embedding": emb(1), "pinned": true}, {"content": "b", "embedding": emb(2), "pinned": true},
        {"content": "c", "embedding": emb(3), "pinned": true}]}),
    );
    assert_eq!((pinned.status, pinned.error_code().as_str()), (429, "QUOTA_EXCEEDED"), "{}", pinned.text());
}

/// A key bound to a tenant acts for that tenant alone: naming another is refused (403), its
/// records are its tenant's, and through SQL it sees no other tenant's memories.
#[test]
fn a_tenant_bound_key_is_its_tenant() {
    let keygen = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeptodb"))
            .arg("keygen")
            .args(args)
            .output()
            .expect("keygen");
        assert!(out.status.success());
        let err = String::from_utf8(out.stderr).expect("utf8");
        (
            err.rsplit(' ').next().expect("key").trim().to_string(),
            String::from_utf8(out.stdout).expect("utf8").trim().to_string(),
        )
    };
    let (acme, acme_entry) = keygen(&["--name", "acme-agent", "--role", "writer", "--tenant", "acme"]);
    let (ops, ops_entry) = keygen(&["--name", "ops", "--role", "admin"]);
    let dir = tmp_dir("keys");
    let file = dir.join("keys.json");
    std::fs::write(&file, format!("{{\"keys\": [{acme_entry}, {ops_entry}]}}")).expect("keys");
    let s = Server::start(&["--keys-file", file.to_str().expect("path")]);
    let a = &s.addr;
    let as_key = |key: &str, method: &str, path: &str, tenant: Option<&str>, body: serde_json::Value| {
        let auth = format!("Bearer {key}");
        let mut h = vec![("Authorization", auth.as_str()), ("Content-Type", "application/json")];
        if let Some(t) = tenant {
            h.push(("X-Zepto-Tenant-Id", t));
        }
        let body = if body.is_null() { String::new() } else { body.to_string() };
        request(a, method, path, &h, body.as_bytes())
    };
    let r = as_key(
        &ops,
        "POST",
        "/api/ai/memories",
        Some("globex"),
        json!({"content": "globex secret", "embedding": emb(1)}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = as_key(&acme, "POST", "/api/ai/memories", None, json!({"content": "acme note", "embedding": emb(1)}));
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.json()["memory_id"].as_str().expect("id").to_string();
    assert_eq!(
        as_key(&ops, "GET", &format!("/api/ai/memories/{id}"), Some("acme"), json!(null)).status,
        200,
        "stored as acme's"
    );
    for (tenant, body) in [(Some("globex"), json!({"query_embedding": emb(1)})), (None, json!({"tenant_id": "globex"}))]
    {
        let r = as_key(&acme, "POST", "/api/ai/memories/search", tenant, body);
        assert_eq!((r.status, r.error_code().as_str()), (403, "PERMISSION_DENIED"), "{}", r.text());
    }
    let found = as_key(&acme, "POST", "/api/ai/memories/search", None, json!({"query_embedding": emb(1)})).json();
    let contents: Vec<&str> =
        found["matches"].as_array().expect("list").iter().filter_map(|m| m["content"].as_str()).collect();
    assert_eq!(contents, ["acme note"]);
    let r = post_key(a, "/", &acme, "SELECT content FROM ai_memories");
    assert_eq!(r.json()["data"], json!([["acme note"]]), "{}", r.text());
    let _ = std::fs::remove_dir_all(&dir);
}
