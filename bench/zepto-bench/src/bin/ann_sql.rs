//! `ann_sql --vectors F --queries F --dim D [--k 10] [--every N ...]`
//!
//! ZeptoDB's vector search through SQL, on the vectors `bench/ann.py` gives every engine: the
//! rows go into `CREATE TABLE v (ts TIMESTAMP, id BIGINT, emb FLOAT[D])`, then
//! 1. exact search: `SELECT id FROM v [WHERE id % N = 0] ORDER BY array_cosine_distance(emb,
//!    [q]) LIMIT k` before any index exists (p50/p95 over the queries);
//! 2. `CREATE INDEX ... USING HNSW (emb) WITH (metric = 'cosine', m, ef_construction,
//!    ef_search)`, timed (the build, on every core);
//! 3. the same queries answered from the index, unfiltered and with each `--every N` filter.
//!
//! Prints one JSON object (times, and per search the ids found per query, for the script's
//! recall). Vectors are raw little-endian f32 files (NumPy's `tofile`).

use std::sync::Arc;
#[path = "../ann_io.rs"]
mod ann_io;

use ann_io::{percentile, read_f32};
use std::time::Instant;
use zepto_sql::Engine;
use zepto_storage::{Column, ColumnData};

struct Args {
    vectors: String,
    queries: String,
    dim: usize,
    k: usize,
    every: Vec<u64>,
    hnsw: String,
}

fn parse_args() -> Result<Args, String> {
    let mut a =
        Args { vectors: String::new(), queries: String::new(), dim: 0, k: 10, every: Vec::new(), hnsw: String::new() };
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
            "--every" => a.every.push(num()? as u64),
            "--m" => m = num()?,
            "--ef-construction" => efc = num()?,
            "--ef-search" => efs = num()?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    a.hnsw = format!("metric = 'cosine', m = {m}, ef_construction = {efc}, ef_search = {efs}");
    Ok(a)
}

fn load(e: &Engine, data: Vec<f32>, dim: usize) -> Result<(), String> {
    let rows = data.len() / dim;
    e.execute(&format!("CREATE TABLE v (ts TIMESTAMP, id BIGINT, emb FLOAT[{dim}])")).map_err(|e| e.to_string())?;
    let cols = vec![
        Column::from_data(ColumnData::Timestamp((0..rows as i64).collect())),
        Column::from_data(ColumnData::Int64((0..rows as i64).collect())),
        Column::from_data(ColumnData::Vector {
            dim: u16::try_from(dim).map_err(|e| e.to_string())?,
            values: data.into(),
        }),
    ];
    e.catalog().append("v", cols).map(|_| ()).map_err(|e| e.to_string())
}

/// One pass over the queries: `"name": {"p50_us", "p95_us", "keys": [[...], ...]}`.
fn timed(e: &Engine, name: &str, queries: &[f32], dim: usize, k: usize, every: Option<u64>) -> Result<String, String> {
    let filter = every.map_or(String::new(), |n| format!("WHERE id % {n} = 0"));
    let (mut lat, mut keys) = (Vec::new(), Vec::new());
    for q in queries.chunks(dim) {
        let lit: Vec<String> = q.iter().map(|x| x.to_string()).collect();
        let sql =
            format!("SELECT id FROM v {filter} ORDER BY array_cosine_distance(emb, [{}]) LIMIT {k}", lit.join(","));
        let t = Instant::now();
        let r = e.execute(&sql).map_err(|e| e.to_string())?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        let b = r.batch();
        let ids: Vec<String> =
            (0..b.rows).map(|i| format!("{:?}", b.columns[0].get(i).as_i64().unwrap_or(-1))).collect();
        keys.push(format!("[{}]", ids.join(",")));
    }
    lat.sort_by(f64::total_cmp);
    let name = every.map_or(name.to_string(), |n| format!("{name}every_{n}"));
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
    let e = Engine::with_catalog(Arc::default());
    load(&e, data, a.dim)?;
    let mut searches = vec![timed(&e, "exact_all", &queries, a.dim, a.k, None)?];
    let t = Instant::now();
    e.execute(&format!("CREATE INDEX vi ON v USING HNSW (emb) WITH ({})", a.hnsw)).map_err(|e| e.to_string())?;
    let build_s = t.elapsed().as_secs_f64();
    let graph_mib = e.indexes().memory_bytes() as f64 / (1 << 20) as f64;
    searches.push(timed(&e, "all", &queries, a.dim, a.k, None)?);
    for &n in &a.every {
        searches.push(timed(&e, "", &queries, a.dim, a.k, Some(n))?);
    }
    println!("{{\"build_s\": {build_s:.3}, \"graph_mib\": {graph_mib:.1}, \"searches\": {{{}}}}}", searches.join(", "));
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("ann_sql: {e}");
        std::process::exit(2);
    }
}
