//! What materialized views cost ingest: a trades stream (`trades,sym=S price=..,size=..i ts`,
//! `symbols` symbols, one row per millisecond in time order with 1% of rows up to a minute
//! late) written as ILP `/write` bodies into an in-memory engine with 0, 1 and 10 views of
//! bars, best of `repeat` runs each; then how long a read of each view takes, beside running
//! its query on the table, and a read after each of 21 writes of 100 lines (the median: a
//! reader polling the view as rows arrive).
//! `view_upkeep [rows] [symbols] [batch] [repeat]`; defaults 2,000,000, 100, 10,000, 3.

use std::time::Instant;
use zepto_server::auth::Principal;
use zepto_server::ingest::{ilp, write, IngestFormat, WriteRequest};
use zepto_storage::rng::XorShift;

/// The views: one-minute bars first (the 1-view run), then nine more.
const VIEWS: [&str; 10] = [
    "SELECT sym, timestamp, first(price) AS open, max(price) AS high, min(price) AS low, last(price) AS close, \
     sum(size) AS volume, count(*) AS n FROM trades SAMPLE BY 1m",
    "SELECT sym, timestamp, last(price) AS close, sum(size) AS volume FROM trades SAMPLE BY 1s",
    "SELECT sym, timestamp, max(price) AS high, min(price) AS low FROM trades SAMPLE BY 10s",
    "SELECT sym, timestamp, vwap(price, size) AS vwap FROM trades SAMPLE BY 5m",
    "SELECT sym, timestamp, avg(price) AS mean, stddev(price) AS sd FROM trades SAMPLE BY 15m",
    "SELECT sym, timestamp, first(price) AS open, last(price) AS close FROM trades SAMPLE BY 1h",
    "SELECT timestamp, count(*) AS n, sum(size) AS volume FROM trades SAMPLE BY 1m",
    "SELECT sym, count(*) AS n, sum(size) AS volume, max(price) AS high FROM trades GROUP BY sym",
    "SELECT sym, date_trunc('hour', timestamp) AS h, count(*) AS big FROM trades WHERE size > 90 GROUP BY sym, h",
    "SELECT count(*) AS n, sum(size) AS volume, min(price) AS low, max(price) AS high FROM trades",
];

fn arg(i: usize, default: usize) -> usize {
    std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// The stream as ILP bodies of `batch` lines.
fn generate(rows: usize, symbols: usize, batch: usize) -> Vec<Vec<u8>> {
    let mut rng = XorShift::new(0x9E37_79B9_7F4A_7C15);
    let t0: i64 = 1_704_186_000_000_000_000;
    let mut prices = vec![100_000i64; symbols];
    let mut bodies = Vec::new();
    let mut body = Vec::new();
    for i in 0..rows {
        let s = rng.index(symbols);
        prices[s] = (prices[s] + rng.below(21) as i64 - 10).max(1);
        let late = if rng.below(100) == 0 { rng.below(60_000) as i64 } else { 0 };
        let ts = t0 + (i as i64 - late).max(0) * 1_000_000;
        let line = format!(
            "trades,sym=S{s} price={}.{:02},size={}i {ts}\n",
            prices[s] / 100,
            prices[s] % 100,
            1 + rng.below(100)
        );
        body.extend_from_slice(line.as_bytes());
        if (i + 1) % batch == 0 {
            bodies.push(std::mem::take(&mut body));
        }
    }
    if !body.is_empty() {
        bodies.push(body);
    }
    bodies
}

/// An engine with the table and `views` views, the stream written into it: seconds taken.
fn run(bodies: &[Vec<u8>], views: usize) -> (f64, zepto_sql::Engine) {
    let engine = zepto_sql::Engine::new();
    let who = Principal::anonymous_admin();
    let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: ilp::Precision::NANOS, now_ns: 0 };
    // The first body creates the table; the views are made over it before the clock starts.
    write(&engine, &who, &req, &bodies[0]).expect("the batch is stored");
    for (k, sql) in VIEWS.iter().take(views).enumerate() {
        engine.execute(&format!("CREATE MATERIALIZED VIEW v{k} AS {sql}")).expect("the view is made");
    }
    let t = Instant::now();
    for b in &bodies[1..] {
        write(&engine, &who, &req, b).expect("the batch is stored");
    }
    (t.elapsed().as_secs_f64(), engine)
}

fn main() {
    let (rows, symbols, batch, repeat) = (arg(1, 2_000_000), arg(2, 100), arg(3, 10_000), arg(4, 3).max(1));
    let bodies = generate(rows, symbols, batch);
    let timed = rows - bodies[0].iter().filter(|&&b| b == b'\n').count();
    println!("{rows} rows of {symbols} symbols in bodies of {batch} lines (the first before the clock)");
    let mut base = 0.0;
    let mut last = None;
    for views in [0, 1, 10] {
        let mut best = f64::INFINITY;
        for _ in 0..repeat {
            let (s, e) = run(&bodies, views);
            best = best.min(s);
            last = Some(e);
        }
        if views == 0 {
            base = best;
        }
        println!(
            "{views:>2} views: {best:>7.3} s  {:>10.0} rows/s  {:>+6.1}% time",
            timed as f64 / best,
            (best / base - 1.0) * 100.0
        );
    }
    let Some(engine) = last else { return };
    let stats = engine.catalog().view_stats();
    for (k, sql) in VIEWS.iter().enumerate() {
        let t = Instant::now();
        let view = engine.execute(&format!("SELECT * FROM v{k}")).expect("the view reads");
        let read = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let query = engine.execute(sql).expect("the query runs");
        let ran = t.elapsed().as_secs_f64();
        assert_eq!(view.row_count(), query.row_count(), "v{k}");
        let upkeep = stats.iter().find(|(n, _)| *n == format!("v{k}")).map_or(0.0, |(_, s)| s.upkeep_ns as f64 / 1e6);
        println!(
            "v{k}: {:>7} rows, upkeep {upkeep:>8.1} ms in all, first read {:>8.2} ms, its query {:>8.2} ms, \
             read after a {POLL_LINES}-line write {:>8.2} ms",
            view.row_count(),
            read * 1e3,
            ran * 1e3,
            read_after_writes(&engine, k, symbols) * 1e3
        );
    }
}

/// Lines of each write between two reads of a polling reader.
const POLL_LINES: usize = 100;

/// A reader polling view `k` while rows arrive: the median time of a read after a write of
/// [`POLL_LINES`] lines (the newest minute, every symbol in turn).
fn read_after_writes(engine: &zepto_sql::Engine, k: usize, symbols: usize) -> f64 {
    let who = Principal::anonymous_admin();
    let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: ilp::Precision::NANOS, now_ns: 0 };
    let last: i64 = match engine
        .execute("SELECT max(timestamp) FROM trades")
        .ok()
        .as_ref()
        .and_then(zepto_sql::result::first_value)
    {
        Some(zepto_storage::Value::Timestamp(t)) => t,
        _ => 0,
    };
    let mut times: Vec<f64> = (0..POLL_READS)
        .map(|r| {
            let body: String = (0..POLL_LINES)
                .map(|i| {
                    format!("trades,sym=S{} price=100.5,size=7i {}\n", (r * POLL_LINES + i) % symbols, last + i as i64)
                })
                .collect();
            write(engine, &who, &req, body.as_bytes()).expect("the batch is stored");
            let t = Instant::now();
            engine.execute(&format!("SELECT * FROM v{k}")).expect("the view reads");
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Writes and reads per view in [`read_after_writes`].
const POLL_READS: usize = 21;
