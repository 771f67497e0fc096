//! `zepto-bench --data DIR [--queries Q1,Q2,Q7] [--sql NAME=SELECT...] [--iters N] [--budget S] [--json FILE]`
//!
//! Loads `trades.parquet` and `quotes.parquet` (from `bench/harness/gen_data.py`) into an
//! in-process engine and times the benchmark queries the way `bench/harness/peers.py` does
//! (one warm-up, then up to N runs within a time budget; median and p99), printing a JSON
//! record in the peer harness's format so `bench/compare.py` can report ratios. Results are
//! summarized as (rows, per-column sums) for cross-checking against the peers.

use std::collections::BTreeMap;
use std::time::Instant;
use zepto_sql::{Engine, QueryResult};
use zepto_storage::ColumnData;

const DDL: &[(&str, &str)] = &[
    ("trades", "CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT)"),
    (
        "quotes",
        "CREATE TABLE quotes (ts TIMESTAMP, sym SYMBOL, bid DOUBLE, ask DOUBLE, bid_size BIGINT, ask_size BIGINT)",
    ),
];

/// The same queries as `ZEPTO_SQL` in `bench/harness/peers.py`.
const QUERIES: &[(&str, &str)] = &[
    ("Q1", "SELECT * FROM trades WHERE sym = 'S042' AND ts > TIMESTAMP '2024-01-02 15:00:00'"),
    ("Q2", "SELECT sym, avg(price) AS avg_price, max(size) AS max_size, count(*) AS n FROM trades GROUP BY sym"),
    ("Q3a", "SELECT xbar(INTERVAL '1 minute', ts) AS bucket, first(price) AS open, max(price) AS high, min(price) AS low, last(price) AS close, sum(size) AS volume FROM trades WHERE sym = 'S042' GROUP BY bucket"),
    ("Q3b", "SELECT sym, xbar(INTERVAL '1 minute', ts) AS bucket, first(price) AS open, max(price) AS high, min(price) AS low, last(price) AS close, sum(size) AS volume FROM trades GROUP BY sym, bucket"),
    ("Q4", "SELECT t.ts, t.sym, t.price, t.size, q.bid, q.ask FROM trades t ASOF LEFT JOIN quotes q ON t.sym = q.sym AND t.ts >= q.ts"),
    ("Q5", "SELECT ts, sym, price, ema(price, 100) OVER (PARTITION BY sym ORDER BY ts) AS ema FROM trades"),
    ("Q6", "SELECT t.ts, t.sym, t.price, avg(q.bid) AS avg_bid FROM trades t WINDOW JOIN quotes q ON t.sym = q.sym AND q.ts BETWEEN t.ts - INTERVAL '1 second' AND t.ts + INTERVAL '1 second'"),
    ("Q7", "SELECT sym, vwap(price, size) AS vwap FROM trades GROUP BY sym"),
    ("X3", "SELECT t.ts, t.sym, t.price, q.bid FROM trades t ASOF LEFT JOIN quotes q ON t.sym = q.sym AND t.ts >= q.ts AND t.price - q.bid > 0.05"),
];

fn status_kib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0.0)
}

fn json_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `{"rows": N, "sums": {col: sum}}` as peers.py computes it (NULL → 0, timestamps as
/// wrapping i64, strings and dates skipped). Outside the timed runs: the result is made one
/// batch first.
fn checksum(r: &QueryResult) -> String {
    let mut sums = Vec::new();
    let b = r.batch();
    for (f, c) in r.fields.iter().zip(&b.columns) {
        let v = match &c.data() {
            ColumnData::Float64(v) => {
                format!("{:?}", (0..v.len()).filter(|&i| c.is_valid(i)).map(|i| v[i]).sum::<f64>())
            }
            ColumnData::Float32(v) => {
                format!("{:?}", (0..v.len()).filter(|&i| c.is_valid(i)).map(|i| v[i] as f64).sum::<f64>())
            }
            ColumnData::Int64(v) | ColumnData::Timestamp(v) => {
                format!("{}", (0..v.len()).filter(|&i| c.is_valid(i)).fold(0i64, |a, i| a.wrapping_add(v[i])))
            }
            ColumnData::Int32(v) => {
                format!("{}", (0..v.len()).filter(|&i| c.is_valid(i)).fold(0i64, |a, i| a.wrapping_add(v[i] as i64)))
            }
            _ => continue,
        };
        sums.push(format!("{}: {v}", json_str(&f.name)));
    }
    format!("{{\"rows\": {}, \"sums\": {{{}}}}}", b.rows, sums.join(", "))
}

struct Args {
    data: String,
    queries: Vec<String>,
    iters: usize,
    budget_s: f64,
    json: Option<String>,
    /// `--sql NAME=SELECT ...`: ad-hoc queries, timed like the listed ones.
    extra: Vec<(String, String)>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        data: String::new(),
        queries: QUERIES.iter().map(|q| q.0.to_string()).collect(),
        iters: 20,
        budget_s: 8.0,
        json: None,
        extra: Vec::new(),
    };
    let mut named = false;
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        match k.as_str() {
            "--data" => a.data = v()?,
            "--queries" => {
                a.queries = v()?.split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
                named = true;
            }
            "--sql" => {
                let q = v()?;
                let (name, sql) = q.split_once('=').ok_or_else(|| format!("--sql {q:?}: expected NAME=SELECT ..."))?;
                a.extra.push((name.trim().to_string(), sql.to_string()));
            }
            "--iters" => a.iters = v()?.parse().map_err(|e| format!("--iters: {e}"))?,
            "--budget" => a.budget_s = v()?.parse().map_err(|e| format!("--budget: {e}"))?,
            "--json" => a.json = Some(v()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.data.is_empty() {
        return Err(
            "usage: zepto-bench --data DIR [--queries Q1,Q2] [--sql NAME=SELECT...] [--iters N] [--budget S] [--json FILE]"
                .into(),
        );
    }
    // Ad-hoc queries alone run only themselves, unless named queries were asked for too.
    if !named && !a.extra.is_empty() {
        a.queries.clear();
    }
    a.queries.extend(a.extra.iter().map(|(n, _)| n.clone()));
    Ok(a)
}

fn main() {
    // As the server runs (see the function).
    zepto_storage::mem::retain_freed_memory();
    zepto_storage::mem::tune_arenas();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("zepto-bench: {e}");
            std::process::exit(2);
        }
    };
    let engine = Engine::new();
    let t0 = Instant::now();
    for (t, ddl) in DDL {
        let path = format!("{}/{t}.parquet", args.data);
        let step = Instant::now();
        if let Err(e) = engine.execute(ddl).and_then(|_| engine.execute(&format!("COPY {t} FROM '{path}'"))) {
            eprintln!("zepto-bench: loading {path}: {e}");
            std::process::exit(1);
        }
        eprintln!("  loaded {t} in {:.1} ms", step.elapsed().as_secs_f64() * 1e3);
    }
    let load_s = t0.elapsed().as_secs_f64();
    let rss_after_load = status_kib("VmRSS:") / 1024.0;
    let mut queries = BTreeMap::new();
    let mut checks = BTreeMap::new();
    let mut errors = BTreeMap::new();
    for qid in &args.queries {
        let listed = QUERIES.iter().map(|&(q, s)| (q, s));
        let found = args.extra.iter().map(|(q, s)| (q.as_str(), s.as_str())).chain(listed).find(|(q, _)| q == qid);
        let Some((_, sql)) = found else {
            errors.insert(qid.clone(), json_str("not in zepto-bench's query list"));
            continue;
        };
        let run = || engine.execute(sql);
        let t = Instant::now();
        if let Err(e) = run() {
            eprintln!("  zeptodb {qid:4} ERROR {e}");
            errors.insert(qid.clone(), json_str(&e.to_string()));
            continue;
        }
        let first = t.elapsed().as_secs_f64();
        let n = (args.budget_s / first.max(1e-9)) as usize;
        let n = n.clamp(3, args.iters.max(3));
        let mut ms = Vec::with_capacity(n);
        let mut last = None;
        for _ in 0..n {
            let t = Instant::now();
            let r = run();
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            last = r.ok();
        }
        ms.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 { ms[n / 2] } else { (ms[n / 2 - 1] + ms[n / 2]) / 2.0 };
        // numpy's default percentile: linear interpolation at (n-1)*0.99
        let pos = (n - 1) as f64 * 0.99;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        let p99 = ms[lo] + (ms[hi] - ms[lo]) * (pos - lo as f64);
        eprintln!("  zeptodb {qid:4} median {median:10.3} ms  (p99 {p99:.3}, {n} runs)");
        queries.insert(
            qid.clone(),
            format!("{{\"iters\": {n}, \"median_ms\": {median}, \"p99_ms\": {p99}, \"min_ms\": {}}}", ms[0]),
        );
        if let Some(r) = last {
            checks.insert(qid.clone(), checksum(&r));
        }
    }
    let obj = |m: &BTreeMap<String, String>| {
        m.iter().map(|(k, v)| format!("{}: {v}", json_str(k))).collect::<Vec<_>>().join(", ")
    };
    // Partition-wise operators use every core (from 100K input rows on).
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = format!(
        "{{\"engine\": \"zeptodb-rs\", \"version\": {}, \"threads\": {threads}, \"load_s\": {load_s}, \"rss_after_load_mib\": {rss_after_load}, \"rss_before_engine_mib\": 0, \"peak_rss_mib\": {}, \"queries\": {{{}}}, \"checks\": {{{}}}, \"errors\": {{{}}}}}",
        json_str(env!("CARGO_PKG_VERSION")),
        status_kib("VmHWM:") / 1024.0,
        obj(&queries),
        obj(&checks),
        obj(&errors)
    );
    match &args.json {
        Some(p) => {
            if let Err(e) = std::fs::write(p, out) {
                eprintln!("zepto-bench: {p}: {e}");
                std::process::exit(1);
            }
        }
        None => println!("{out}"),
    }
}
