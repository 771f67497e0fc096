//! The memory layer end to end on an in-memory engine: round trips, ranking against a score
//! computed here from the formula, filters, tenants, budgets, TTLs, quotas and the cache.

use std::collections::HashSet;
use zepto_memory::api::{
    from_value, CacheLookupRequest, CacheStoreRequest, ContextRequest, MemoryRecord, PutRequest, SearchRequest,
};
use zepto_memory::{AgentMemory, Config, MemoryError, TenantSources};
use zepto_sql::{Engine, RunContext};

fn run() -> RunContext {
    RunContext::unlimited()
}

fn mem(config: Config) -> AgentMemory {
    AgentMemory::new(Engine::new(), config)
}

fn t(tenant: &'static str) -> TenantSources<'static> {
    TenantSources { key: None, header: Some(tenant) }
}

fn put(m: &AgentMemory, tenant: &'static str, v: serde_json::Value) -> String {
    let r: PutRequest = from_value(v).expect("a put");
    m.put(&run(), &t(tenant), &[r]).expect("stored").remove(0)
}

fn search(m: &AgentMemory, tenant: &'static str, v: serde_json::Value) -> Vec<MemoryRecord> {
    let r: SearchRequest = from_value(v).expect("a search");
    m.search(&run(), &t(tenant), &r).expect("searched")
}

fn contents(v: &[MemoryRecord]) -> Vec<&str> {
    v.iter().map(|m| m.content.as_str()).collect()
}

#[test]
fn put_get_delete_round_trip() {
    let m = mem(Config::default());
    let id = put(
        &m,
        "a",
        serde_json::json!({"content": "likes tea", "embedding": [1, 0, 0, 0], "user_id": "u1", "type": "preference",
            "metadata": {"source": "chat", "n": 2}, "importance": 0.9, "pinned": true}),
    );
    let got = m.get(&run(), &t("a"), &id, true).expect("found");
    assert_eq!(
        (got.content.as_str(), got.user_id.as_deref(), got.kind.as_deref()),
        ("likes tea", Some("u1"), Some("preference"))
    );
    assert_eq!(got.metadata, serde_json::json!({"source": "chat", "n": 2}));
    assert_eq!(got.embedding, Some(vec![1.0, 0.0, 0.0, 0.0]));
    assert_eq!((got.importance, got.pinned, got.token_count, got.access_count), (0.9, true, 3, 0));
    assert_eq!(got.namespace.as_deref(), Some("default"));
    assert!(m.get(&run(), &t("a"), &id, false).expect("found").embedding.is_none());
    assert!(matches!(m.get(&run(), &t("b"), &id, false), Err(MemoryError::NotFound(_))), "other tenant");
    assert!(matches!(m.delete(&run(), &t("b"), &id), Err(MemoryError::NotFound(_))), "other tenant");
    assert!(matches!(m.get(&run(), &t("a"), "nonsense", false), Err(MemoryError::NotFound(_))));
    m.delete(&run(), &t("a"), &id).expect("deleted");
    assert!(matches!(m.get(&run(), &t("a"), &id, false), Err(MemoryError::NotFound(_))));
    assert!(matches!(m.delete(&run(), &t("a"), &id), Err(MemoryError::NotFound(_))));
}

#[test]
fn bad_puts_store_nothing() {
    let m = mem(Config::default());
    let bad = |v: serde_json::Value, field: &str| {
        let r: PutRequest = from_value(v).expect("parses");
        match m.put(&run(), &t("a"), &[r]) {
            Err(MemoryError::BadRequest { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected a bad {field}: {other:?}"),
        }
    };
    bad(serde_json::json!({"content": "x"}), "embedding");
    bad(serde_json::json!({"embedding": [1, 2]}), "content");
    put(&m, "a", serde_json::json!({"content": "first", "embedding": [1, 2]}));
    bad(serde_json::json!({"content": "x", "embedding": [1, 2, 3]}), "embedding");
    bad(serde_json::json!({"content": "x", "embedding": [0, 0]}), "embedding");
    bad(serde_json::json!({"content": "x", "embedding": [1e39, 1]}), "embedding");
    bad(serde_json::json!({"content": "x", "importance": 2}), "importance");
    bad(serde_json::json!({"content": "x", "token_count": -1}), "token_count");
    bad(serde_json::json!({"content": "x", "ttl_seconds": 0}), "ttl_seconds");
    bad(serde_json::json!({"content": "x", "expires_at": "2001-01-01T00:00:00Z"}), "expires_at");
    bad(serde_json::json!({"content": "x", "namespace": ""}), "namespace");
    bad(serde_json::json!({"content": "x", "tenant_id": "b"}), "tenant_id");
    let nan = PutRequest { content: Some("x".into()), embedding: Some(vec![f64::NAN, 1.0]), ..Default::default() };
    assert!(m.put(&run(), &t("a"), &[nan]).is_err());
    // A batch with one bad item stores none of it, and the error names the item.
    let items = [
        PutRequest { content: Some("ok".into()), ..Default::default() },
        PutRequest { content: Some("bad".into()), importance: Some(-1.0), ..Default::default() },
    ];
    match m.put(&run(), &t("a"), &items) {
        Err(MemoryError::BadRequest { field, .. }) => assert_eq!(field, "memories[1].importance"),
        other => panic!("{other:?}"),
    }
    let all = search(&m, "a", serde_json::json!({"limit": 100}));
    assert_eq!(contents(&all), ["first"], "nothing else was stored");
}

/// The score of a record as the formula in `rank` defines it, computed here independently.
fn expected_score(m: &MemoryRecord, now: i64, w: [f64; 5], half_life_s: f64) -> f64 {
    let created = zepto_storage::time::parse_timestamp(&m.created_at).expect("a time");
    let age = ((now - created) as f64).max(0.0);
    w[0] * m.similarity.unwrap_or(0.0)
        + w[1] * m.importance
        + w[2] * 0.5f64.powf(age / (half_life_s * 1e9))
        + w[3] * ((1.0 + (m.access_count - 1) as f64).ln() / 101f64.ln()).min(1.0)
        + w[4] * if m.pinned { 1.0 } else { 0.0 }
}

fn cos(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (n(a) * n(b))
}

/// Hand-built cases: each weight alone decides the order it should.
#[test]
fn ranking_follows_each_weight() {
    let m = mem(Config::default());
    let day = 86_400_000_000_000i64;
    let now = zepto_storage::time::now_ns();
    let rows = [
        ("near", [1.0, 0.0, 0.0], 0.1, false, 3),
        ("important", [0.0, 1.0, 0.0], 1.0, false, 2),
        ("pinned", [0.0, 0.0, 1.0], 0.1, true, 1),
        ("recent", [0.5, 0.5, 0.0], 0.1, false, 0),
    ];
    for (content, e, importance, pinned, days_old) in rows {
        put(
            &m,
            "a",
            serde_json::json!({"content": content, "embedding": e, "importance": importance, "pinned": pinned,
                "created_at": now - days_old * day}),
        );
    }
    let only = |k: &str| {
        let mut w = serde_json::json!({"similarity": 0, "importance": 0, "recency": 0, "access": 0, "pinned": 0});
        w[k] = serde_json::json!(1);
        w
    };
    let q = serde_json::json!([1.0, 0.1, 0.0]);
    let first = |k: &str| {
        let r = search(
            &m,
            "a",
            serde_json::json!({"query_embedding": q, "weights": only(k), "limit": 1, "update_access": false}),
        );
        r[0].content.clone()
    };
    assert_eq!(first("similarity"), "near");
    assert_eq!(first("importance"), "important");
    assert_eq!(first("pinned"), "pinned");
    assert_eq!(first("recency"), "recent");
    // Access: read one record a few times; with only that weight it comes first.
    for _ in 0..3 {
        search(&m, "a", serde_json::json!({"type": null, "query_embedding": [0.0, 0.0, 1.0], "limit": 1}));
    }
    assert_eq!(first("access"), "pinned");
    // The default mix: every score is the formula's, and the order is by score.
    let w = [1.0, 0.3, 0.2, 0.1, 0.3];
    let got = search(&m, "a", serde_json::json!({"query_embedding": q, "limit": 4}));
    let after = zepto_storage::time::now_ns();
    assert_eq!(got.len(), 4);
    for r in &got {
        let qv = [1.0, 0.1, 0.0];
        let e = match r.content.as_str() {
            "near" => [1.0, 0.0, 0.0],
            "important" => [0.0, 1.0, 0.0],
            "pinned" => [0.0, 0.0, 1.0],
            _ => [0.5, 0.5, 0.0],
        };
        assert!((r.similarity.expect("a similarity") - cos(&qv, &e)).abs() < 1e-6, "{r:?}");
        let want = expected_score(r, after, w, 7.0 * 86_400.0);
        assert!((r.score.expect("a score") - want).abs() < 1e-3, "{}: {:?} vs {want}", r.content, r.score);
    }
    assert!(got.windows(2).all(|p| p[0].score >= p[1].score), "best first");
    // Without a query embedding there is no similarity, and the rest still ranks.
    let plain = search(&m, "a", serde_json::json!({"limit": 4, "update_access": false}));
    assert!(plain.iter().all(|r| r.similarity.is_none()));
    assert_eq!(plain[0].content, "pinned", "pinned and most read, with no similarity to beat it");
}

/// Filters and tenants: every filter keeps exactly the records it names, and no read of one
/// tenant returns another's records.
#[test]
fn filters_and_tenants() {
    let m = mem(Config::default());
    let now = zepto_storage::time::now_ns();
    for i in 0..40i64 {
        let tenant = if i % 2 == 0 { "a" } else { "b" };
        put(
            &m,
            tenant,
            serde_json::json!({"content": format!("m{i}"), "embedding": [1.0, i as f64 / 40.0], "namespace": format!("n{}", i % 3),
                "user_id": format!("u{}", i % 4), "session_id": format!("s{}", i % 5), "agent_id": format!("g{}", i % 2),
                "type": if i % 7 == 0 { "fact" } else { "episode" }, "created_at": now - (40 - i) * 1_000_000_000}),
        );
    }
    let q = serde_json::json!([1.0, 0.5]);
    let all_a = search(&m, "a", serde_json::json!({"limit": 100, "query_embedding": q}));
    assert_eq!(all_a.len(), 20);
    assert!(all_a.iter().all(|r| r.tenant_id == "a"));
    let cases = [("namespace", "n1"), ("user_id", "u2"), ("session_id", "s3"), ("agent_id", "g0"), ("type", "fact")];
    for (f, v) in cases {
        let got = search(&m, "a", serde_json::json!({"limit": 100, "query_embedding": q, f: v}));
        let want: HashSet<&str> = all_a
            .iter()
            .filter(|r| match f {
                "namespace" => r.namespace.as_deref() == Some(v),
                "user_id" => r.user_id.as_deref() == Some(v),
                "session_id" => r.session_id.as_deref() == Some(v),
                "agent_id" => r.agent_id.as_deref() == Some(v),
                _ => r.kind.as_deref() == Some(v),
            })
            .map(|r| r.content.as_str())
            .collect();
        assert!(!want.is_empty(), "{f}");
        assert_eq!(got.iter().map(|r| r.content.as_str()).collect::<HashSet<_>>(), want, "{f} = {v}");
    }
    let cut = now - 20 * 1_000_000_000;
    let before = search(&m, "a", serde_json::json!({"limit": 100, "created_before": cut}));
    assert_eq!(before.len(), 10, "records created before t: m0, m2, ..., m18");
    assert!(before.iter().all(|r| zepto_storage::time::parse_timestamp(&r.created_at).is_some_and(|c| c < cut)));
    // Tenant b sees only its own, through every read.
    let b = search(&m, "b", serde_json::json!({"limit": 100}));
    assert!(b.len() == 20 && b.iter().all(|r| r.tenant_id == "b"));
    let ctx: ContextRequest = from_value(serde_json::json!({"token_budget": 1000, "query_embedding": q})).expect("ctx");
    assert!(m.context(&run(), &t("b"), &ctx).expect("ctx").memories.iter().all(|r| r.tenant_id == "b"));
    assert_eq!(m.stats(&run(), &t("b")).expect("stats").memories, 20);
    assert!(search(&m, "c", serde_json::json!({"limit": 100})).is_empty());
}

/// Context: ranked, one record per content, and a record too big for what is left is skipped
/// while smaller ones after it still fit.
#[test]
fn context_fits_the_budget() {
    let m = mem(Config::default());
    let items = [("a", 1.0, 40), ("a", 0.99, 40), ("big", 0.9, 100), ("small", 0.8, 10), ("tiny", 0.7, 5)];
    for (i, (content, x, tokens)) in items.iter().enumerate() {
        let content = if i == 1 { "  A " } else { *content };
        put(&m, "a", serde_json::json!({"content": content, "embedding": [x, 1.0 - x], "token_count": tokens}));
    }
    let weights = serde_json::json!({"importance": 0, "recency": 0, "access": 0, "pinned": 0});
    let req: ContextRequest =
        from_value(serde_json::json!({"token_budget": 60, "query_embedding": [1, 0], "weights": weights}))
            .expect("ctx");
    let c = m.context(&run(), &t("a"), &req).expect("context");
    assert_eq!(contents(&c.memories), ["a", "small", "tiny"]);
    assert_eq!((c.token_count, c.skipped, c.duplicates), (55, 1, 1));
    assert!(c.memories.iter().all(|r| r.access_count == 1), "a context counts as an access");
    let none: ContextRequest = from_value(serde_json::json!({"token_budget": 0})).expect("parses");
    assert!(m.context(&run(), &t("a"), &none).is_err());
}

#[test]
fn ttl_hides_then_sweeps() {
    let m = mem(Config::default());
    let keep = put(&m, "a", serde_json::json!({"content": "keep", "embedding": [1, 0]}));
    let gone = put(&m, "a", serde_json::json!({"content": "gone", "embedding": [1, 0], "ttl_seconds": 0.2}));
    assert_eq!(search(&m, "a", serde_json::json!({"limit": 10})).len(), 2);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(contents(&search(&m, "a", serde_json::json!({"limit": 10}))), ["keep"]);
    assert!(m.get(&run(), &t("a"), &gone, false).is_err());
    assert_eq!(m.stats(&run(), &t("a")).expect("stats").expired, 1);
    assert_eq!(m.sweep(&run()).expect("swept"), 1);
    assert_eq!(m.stats(&run(), &t("a")).expect("stats").memories, 1);
    assert!(m.get(&run(), &t("a"), &keep, false).is_ok());
}

/// At the quota a put evicts expired records first, then the lowest-scored unpinned ones; when
/// everything left is pinned it is refused and nothing changes.
#[test]
fn quotas_evict_expired_then_lowest_never_pinned() {
    let m = mem(Config { max_memories_per_tenant: 3, ..Config::default() });
    put(&m, "a", serde_json::json!({"content": "pinned", "embedding": [1, 0], "pinned": true, "importance": 0}));
    put(&m, "a", serde_json::json!({"content": "low", "embedding": [1, 0], "importance": 0.0}));
    put(&m, "a", serde_json::json!({"content": "soon", "embedding": [1, 0], "importance": 1.0, "ttl_seconds": 0.2}));
    put(&m, "b", serde_json::json!({"content": "other tenant", "embedding": [1, 0]}));
    std::thread::sleep(std::time::Duration::from_millis(300));
    put(&m, "a", serde_json::json!({"content": "high", "embedding": [1, 0], "importance": 1.0}));
    let names = |m: &AgentMemory| {
        let mut v: Vec<String> =
            search(m, "a", serde_json::json!({"limit": 10})).into_iter().map(|r| r.content).collect();
        v.sort();
        v
    };
    assert_eq!(names(&m), ["high", "low", "pinned"], "the expired one went first");
    put(&m, "a", serde_json::json!({"content": "new", "embedding": [1, 0], "importance": 0.5}));
    assert_eq!(names(&m), ["high", "new", "pinned"], "then the lowest score");
    assert_eq!(search(&m, "b", serde_json::json!({"limit": 10})).len(), 1, "other tenants untouched");
    let m2 = mem(Config { max_memories_per_tenant: 1, ..Config::default() });
    put(&m2, "a", serde_json::json!({"content": "p", "embedding": [1, 0], "pinned": true}));
    let r: PutRequest = from_value(serde_json::json!({"content": "x"})).expect("put");
    assert!(matches!(m2.put(&run(), &t("a"), &[r]), Err(MemoryError::Quota(_))));
    assert_eq!(search(&m2, "a", serde_json::json!({"limit": 10})).len(), 1);
}

#[test]
fn cache_exact_then_semantic() {
    let m = mem(Config::default());
    let store = |tenant: &'static str, v: serde_json::Value| {
        let r: CacheStoreRequest = from_value(v).expect("store");
        m.cache_store(&run(), &t(tenant), &r).expect("stored")
    };
    let lookup = |tenant: &'static str, v: serde_json::Value| {
        let r: CacheLookupRequest = from_value(v).expect("lookup");
        m.cache_lookup(&run(), &t(tenant), &r).expect("looked up")
    };
    store(
        "a",
        serde_json::json!({"prompt": "What is  VWAP?", "response": "volume-weighted price", "embedding": [1, 0, 0]}),
    );
    let hit = lookup("a", serde_json::json!({"prompt": "  what is\nvwap? "}));
    assert_eq!((hit.hit, hit.kind, hit.score), (true, Some("exact"), Some(1.0)));
    assert_eq!(hit.entry.as_ref().map(|e| (e.response.as_str(), e.hits)), Some(("volume-weighted price", 1)));
    let near = serde_json::json!([0.95, 0.05, 0.0]);
    let sem = lookup("a", serde_json::json!({"prompt": "define vwap", "embedding": near}));
    assert_eq!((sem.hit, sem.kind), (true, Some("semantic")));
    assert!(sem.score.is_some_and(|s| s > 0.99));
    let strict =
        lookup("a", serde_json::json!({"prompt": "define vwap", "embedding": near, "semantic_threshold": 0.9999}));
    assert!(!strict.hit && strict.score.is_some_and(|s| s < 0.9999), "{strict:?}");
    let far = lookup("a", serde_json::json!({"prompt": "weather?", "embedding": [0, 1, 0]}));
    assert!(!far.hit);
    assert!(!lookup("b", serde_json::json!({"prompt": "what is vwap?", "embedding": [1, 0, 0]})).hit, "tenants");
    // Storing the same prompt again replaces the entry.
    store("a", serde_json::json!({"prompt": "what is vwap?", "response": "v2"}));
    let again = lookup("a", serde_json::json!({"prompt": "WHAT IS VWAP?"}));
    assert_eq!(again.entry.map(|e| e.response), Some("v2".into()));
    let s = m.stats(&run(), &t("a")).expect("stats");
    assert_eq!((s.cache_entries, s.cache_exact_hits, s.cache_semantic_hits, s.cache_misses), (1, 2, 1, 2));
    // TTL.
    store("a", serde_json::json!({"prompt": "short", "response": "r", "ttl_seconds": 0.1}));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(!lookup("a", serde_json::json!({"prompt": "short"})).hit);
}

/// Generated records, filters and weights: search returns what an oracle computed here gives
/// (filter, the nearest `candidates` by cosine, then the score), with the same scores.
#[test]
fn search_agrees_with_an_oracle_on_generated_data() {
    let m = mem(Config::default());
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64
    };
    let now = zepto_storage::time::now_ns();
    let dim = 8;
    let mut puts = Vec::new();
    for i in 0..1500 {
        let e: Vec<f64> = (0..dim).map(|_| rnd() - 0.5).collect();
        puts.push(
            from_value::<PutRequest>(serde_json::json!({"content": format!("r{i}"), "embedding": e,
                "namespace": format!("n{}", (rnd() * 3.0) as u32), "user_id": format!("u{}", (rnd() * 10.0) as u32),
                "importance": (rnd() * 100.0).round() / 100.0, "pinned": rnd() < 0.1,
                "created_at": now - (rnd() * 30.0 * 86_400e9) as i64}))
            .expect("put"),
        );
    }
    for chunk in puts.chunks(500) {
        m.put(&run(), &t("a"), chunk).expect("stored");
    }
    // Every record, a namespace at a time (a search returns at most 1,000).
    let all: Vec<MemoryRecord> = (0..3)
        .flat_map(|n| {
            search(&m, "a", serde_json::json!({"limit": 1000, "update_access": false, "namespace": format!("n{n}")}))
        })
        .collect();
    assert_eq!(all.len(), 1500);
    let embs: std::collections::HashMap<String, Vec<f64>> =
        puts.iter().map(|p| (p.content.clone().expect("content"), p.embedding.clone().expect("embedding"))).collect();
    let mut records: std::collections::HashMap<String, MemoryRecord> = std::collections::HashMap::new();
    for r in all {
        records.insert(r.memory_id.clone(), r);
    }
    for case in 0..40 {
        let q: Vec<f64> = (0..dim).map(|_| rnd() - 0.5).collect();
        let limit = [1usize, 5, 10, 40][case % 4];
        let candidates = [None, Some(200), None, Some(40)][(case / 4) % 4];
        let ws = [rnd(), rnd(), rnd(), 0.0, rnd()];
        let ns = (case % 3 == 0).then(|| format!("n{}", case % 3));
        let mut req = serde_json::json!({"query_embedding": q, "limit": limit, "update_access": false,
            "weights": {"similarity": ws[0], "importance": ws[1], "recency": ws[2], "access": ws[3], "pinned": ws[4]}});
        if let Some(n) = &ns {
            req["namespace"] = serde_json::json!(n);
        }
        if let Some(c) = candidates {
            req["candidates"] = serde_json::json!(c);
        }
        let got = search(&m, "a", req);
        let after = zepto_storage::time::now_ns();
        // The oracle.
        let mut pool: Vec<(f64, &MemoryRecord)> = records
            .values()
            .filter(|r| ns.as_ref().is_none_or(|n| r.namespace.as_deref() == Some(n.as_str())))
            .map(|r| (cos(&q, &embs[&r.content]), r))
            .collect();
        pool.sort_by(|a, b| b.0.total_cmp(&a.0));
        pool.truncate(candidates.unwrap_or((3 * limit).max(30)).max(limit));
        let mut scored: Vec<(f64, &MemoryRecord)> = pool
            .iter()
            .map(|(s, r)| {
                let with = MemoryRecord { similarity: Some(*s), access_count: 1, ..(*r).clone() };
                (expected_score(&with, after, ws, 7.0 * 86_400.0), *r)
            })
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        assert_eq!(got.len(), limit.min(scored.len()), "case {case}");
        let boundary = scored[got.len() - 1].0;
        for (i, g) in got.iter().enumerate() {
            let want = scored.iter().find(|(_, r)| r.memory_id == g.memory_id).map(|(s, _)| *s);
            let want =
                want.unwrap_or_else(|| panic!("case {case}: {} is not among the oracle's candidates", g.content));
            assert!((g.score.expect("score") - want).abs() < 1e-3, "case {case}: score of {}", g.content);
            assert!(want >= boundary - 1e-3, "case {case}: {} ranks below the oracle's top {limit}", g.content);
            assert!((scored[i].0 - want).abs() < 1e-3, "case {case}: place {i}");
        }
    }
}
