//! `memory_bench [--records N] [--dim D] [--queries Q] [--batch B]`
//!
//! The agent-memory layer in process, on clustered unit vectors (N/100 centres, each record a
//! centre plus noise, so nearest neighbours are meaningful as with sentence embeddings):
//! 1. put N records in batches of B (each with a session of 100 and a namespace of 10), timed;
//! 2. the HNSW graphs built (timed), then Q searches each: unfiltered, one namespace (10%),
//!    one session (1%), with and without the access update, and context assembly;
//! 3. 10,000 cache entries, then exact and semantic lookups.
//!
//! Prints one JSON object: rates, p50/p95 latencies in microseconds, peak RSS.

#[path = "../ann_io.rs"]
#[allow(dead_code)] // the vector-file reader is the ANN binaries'
mod ann_io;

use ann_io::percentile;
use std::time::Instant;
use zepto_memory::api::{CacheLookupRequest, CacheStoreRequest, ContextRequest, Filters, PutRequest, SearchRequest};
use zepto_memory::{AgentMemory, Config, TenantSources};
use zepto_sql::{Engine, RunContext};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }

    fn unit(&mut self, dim: usize) -> Vec<f64> {
        norm((0..dim).map(|_| self.next()).collect())
    }
}

fn norm(v: Vec<f64>) -> Vec<f64> {
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
    v.into_iter().map(|x| x / n).collect()
}

fn near(rng: &mut Rng, c: &[f64]) -> Vec<f64> {
    norm(c.iter().map(|x| x + 0.08 * rng.next()).collect())
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn peak_rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1));
    kb.and_then(|k| k.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

/// p50 and p95 of `f` over `n` runs, in microseconds.
fn time(n: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    let mut t: Vec<f64> = (0..n)
        .map(|i| {
            let t0 = Instant::now();
            f(i);
            t0.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (percentile(&t, 0.5), percentile(&t, 0.95))
}

fn main() {
    let (n, dim, queries, batch) =
        (arg("--records", 100_000), arg("--dim", 384), arg("--queries", 200), arg("--batch", 1000));
    let engine = Engine::new();
    let m = AgentMemory::new(engine.clone(), Config { max_memories_per_tenant: n + 1, ..Config::default() });
    let (run, src) = (RunContext::unlimited(), TenantSources { key: None, header: Some("bench") });
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let centres: Vec<Vec<f64>> = (0..(n / 100).max(1)).map(|_| rng.unit(dim)).collect();
    let put_s = load(&m, &mut rng, &centres, n, batch);
    let t1 = Instant::now();
    engine.refresh_indexes().expect("graphs");
    let build_s = t1.elapsed().as_secs_f64();
    eprintln!("put {put_s:.2} s, graphs {build_s:.2} s");
    let qs: Vec<Vec<f64>> = (0..queries).map(|q| near(&mut rng, &centres[(q * 7919) % centres.len()])).collect();
    let search = |filters: Filters, update: bool| {
        time(queries, |q| {
            let r = SearchRequest {
                filters: filters.clone(),
                query_embedding: Some(qs[q].clone()),
                limit: Some(10),
                update_access: Some(update),
                ..Default::default()
            };
            assert!(!m.search(&run, &src, &r).expect("search").is_empty());
        })
    };
    let all = search(Filters::default(), false);
    let ns = search(Filters { namespace: Some("ns3".into()), ..Default::default() }, false);
    let session = search(Filters { session_id: Some("s42".into()), ..Default::default() }, false);
    let with_access = search(Filters::default(), true);
    let context = time(queries, |q| {
        let r = ContextRequest { query_embedding: Some(qs[q].clone()), token_budget: Some(2000), ..Default::default() };
        m.context(&run, &src, &r).expect("context");
    });
    let entries = 10_000.min(n);
    for c in 0..entries {
        let r = CacheStoreRequest {
            prompt: Some(format!("prompt number {c}")),
            response: Some("an answer".into()),
            embedding: Some(near(&mut rng, &centres[c % centres.len()])),
            ..Default::default()
        };
        m.cache_store(&run, &src, &r).expect("store");
    }
    engine.refresh_indexes().expect("graphs");
    let exact = time(queries, |q| {
        let r =
            CacheLookupRequest { prompt: Some(format!("PROMPT  number {}", q * 13 % entries)), ..Default::default() };
        assert!(m.cache_lookup(&run, &src, &r).expect("lookup").hit);
    });
    let semantic = time(queries, |q| {
        let r = CacheLookupRequest {
            prompt: Some(format!("unseen {q}")),
            embedding: Some(qs[q].clone()),
            ..Default::default()
        };
        m.cache_lookup(&run, &src, &r).expect("lookup");
    });
    // The planner's walk-or-scan choice under a 10% filter, by k: the graph walk (ann on)
    // against the exact scan of the rows the filter keeps (ann off).
    let mut walk = Vec::new();
    for k in [10, 30, 100] {
        for ann in ["on", "off"] {
            let t = time(queries.min(50), |q| {
                let v: Vec<String> = qs[q].iter().map(|x| format!("{x:?}")).collect();
                let sql = format!(
                    "SET ann = {ann}; SELECT memory_id FROM ai_memories WHERE tenant_id = 'bench' AND namespace = 'ns3' \
                     ORDER BY array_cosine_distance(embedding, [{}]) LIMIT {k}",
                    v.join(", ")
                );
                engine.execute(&sql).expect("search");
            });
            walk.push(format!("\"k{k}_ann_{ann}\": {{\"p50_us\": {:.0}}}", t.0));
        }
    }
    eprintln!("filtered 10%: {{{}}}", walk.join(", "));
    let us = |(p50, p95): (f64, f64)| format!("{{\"p50_us\": {p50:.0}, \"p95_us\": {p95:.0}}}");
    println!(
        "{{\"records\": {n}, \"dim\": {dim}, \"put_per_s\": {:.0}, \"graph_build_s\": {build_s:.2}, \
         \"search\": {}, \"search_namespace_10pct\": {}, \"search_session_1pct\": {}, \"search_with_access_update\": {}, \
         \"context_2000_tokens\": {}, \"cache_exact\": {}, \"cache_semantic\": {}, \"peak_rss_mb\": {:.0}}}",
        n as f64 / put_s,
        us(all),
        us(ns),
        us(session),
        us(with_access),
        us(context),
        us(exact),
        us(semantic),
        peak_rss_mb()
    );
}

/// Put `n` records in batches of `batch`; returns the seconds it took.
fn load(m: &AgentMemory, rng: &mut Rng, centres: &[Vec<f64>], n: usize, batch: usize) -> f64 {
    let (run, src) = (RunContext::unlimited(), TenantSources { key: None, header: Some("bench") });
    let t0 = Instant::now();
    let mut i = 0;
    while i < n {
        let reqs: Vec<PutRequest> = (i..(i + batch).min(n))
            .map(|j| PutRequest {
                content: Some(format!("memory {j}: a note an agent kept about something it saw")),
                embedding: Some(near(rng, &centres[j % centres.len()])),
                namespace: Some(format!("ns{}", j % 10)),
                session_id: Some(format!("s{}", j % 100)),
                ..Default::default()
            })
            .collect();
        i += reqs.len();
        m.put(&run, &src, &reqs).expect("put");
        if i % (n / 10).max(batch) == 0 {
            eprintln!("put {i}/{n} ({:.0}/s)", i as f64 / t0.elapsed().as_secs_f64());
        }
    }
    t0.elapsed().as_secs_f64()
}
