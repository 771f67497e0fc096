//! `ann_graph --vectors F --queries F --dim D [--k 10] [--threads 2] [--every N ...]`
//!
//! Times ZeptoDB's HNSW graph (`zepto-ann`) the way `bench/ann.py` times hnswlib, faiss and
//! usearch on the same vectors: build on `--threads` threads, then one query at a time (p50 and
//! p95 latency), unfiltered and with a filter that keeps every N-th row (`--every 100` is 1%
//! selectivity). Vectors are raw little-endian f32 files (NumPy's `tofile`). Prints one JSON
//! object with the build time, latencies, memory and, for each search, the keys found per
//! query (the script computes recall against exact search).

#[path = "../ann_io.rs"]
mod ann_io;

use ann_io::{percentile, read_f32};
use std::time::Instant;
use zepto_ann::{Graph, HnswParams, Metric, Query};

struct Args {
    vectors: String,
    queries: String,
    dim: usize,
    k: usize,
    threads: usize,
    every: Vec<u64>,
    params: HnswParams,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        vectors: String::new(),
        queries: String::new(),
        dim: 0,
        k: 10,
        threads: 2,
        every: Vec::new(),
        params: HnswParams::default(),
    };
    let (mut m, mut efc, mut efs) = (16, 128, 64);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = || value.parse::<usize>().map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--vectors" => a.vectors = value.clone(),
            "--queries" => a.queries = value.clone(),
            "--dim" => a.dim = num()?,
            "--k" => a.k = num()?,
            "--threads" => a.threads = num()?,
            "--every" => a.every.push(num()? as u64),
            "--m" => m = num()?,
            "--ef-construction" => efc = num()?,
            "--ef-search" => efs = num()?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    a.params = HnswParams::new(m, efc, efs).map_err(|e| e.to_string())?;
    Ok(a)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// One timed pass over the queries: `"name": {"p50_us", "p95_us", "keys": [[...], ...]}`.
fn timed(g: &Graph, queries: &[f32], dim: usize, k: usize, every: Option<u64>) -> Result<String, String> {
    let keep = move |key: u64| every.is_none_or(|n| key.is_multiple_of(n));
    let filter: Option<&(dyn Fn(u64) -> bool + Sync)> = every.map(|_| &keep as &(dyn Fn(u64) -> bool + Sync));
    let (mut lat, mut keys) = (Vec::new(), Vec::new());
    for q in queries.chunks(dim) {
        let t = Instant::now();
        let hits = g.search(&Query::new(g.spec().metric(), q), k, filter).map_err(|e| e.to_string())?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        keys.push(format!("[{}]", hits.iter().map(|h| h.key.to_string()).collect::<Vec<_>>().join(",")));
    }
    lat.sort_by(f64::total_cmp);
    let name = every.map_or("all".to_string(), |n| format!("every_{n}"));
    Ok(format!(
        "\"{name}\": {{\"p50_us\": {:.1}, \"p95_us\": {:.1}, \"keys\": [{}]}}",
        percentile(&lat, 0.5),
        percentile(&lat, 0.95),
        keys.join(",")
    ))
}

fn run() -> Result<(), String> {
    let a = parse_args()?;
    let (data, queries) = (read_f32(&a.vectors)?, read_f32(&a.queries)?);
    if a.dim == 0 || data.len() % a.dim != 0 || queries.len() % a.dim != 0 {
        return Err(format!("--dim {} does not divide the files' lengths", a.dim));
    }
    let before = rss_kib();
    let g = Graph::new(a.dim, Metric::Cosine, a.params).map_err(|e| e.to_string())?;
    let t = Instant::now();
    g.add(0, &data, a.threads).map_err(|e| e.to_string())?;
    let build_s = t.elapsed().as_secs_f64();
    let mem_mib = (rss_kib().saturating_sub(before)) as f64 / 1024.0;
    let mut searches = vec![timed(&g, &queries, a.dim, a.k, None)?];
    for &n in &a.every {
        searches.push(timed(&g, &queries, a.dim, a.k, Some(n))?);
    }
    println!(
        "{{\"build_s\": {build_s:.3}, \"rss_mib\": {mem_mib:.1}, \"graph_mib\": {:.1}, \"searches\": {{{}}}}}",
        g.memory_bytes() as f64 / (1 << 20) as f64,
        searches.join(", ")
    );
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("ann_graph: {e}");
        std::process::exit(2);
    }
}
