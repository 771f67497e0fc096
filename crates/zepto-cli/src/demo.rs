//! The demo data set: one trading day of trades and quotes for 100 symbols with Zipf-like
//! popularity and per-symbol random-walk prices — the same shapes as `bench/harness/gen_data.py`
//! (not the same numbers: this generator is a small deterministic xorshift, not NumPy).

use clap::Arg;
use std::sync::Arc;
use std::time::Instant;
use zepto_sql::{Engine, Result};
use zepto_storage::{Column, ColumnData, Dict};

/// 2024-01-02 09:30:00 UTC in ns, and the 6.5-hour session length.
const DAY_START_NS: i64 = 1_704_187_800_000_000_000;
const DAY_NS: i64 = 23_400_000_000_000;
const SYMBOLS: usize = 100;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        // Box-Muller
        let (u, v) = (self.unit().max(1e-300), self.unit());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

fn symbols() -> Arc<Dict> {
    let mut d = Dict::default();
    for i in 0..SYMBOLS {
        d.intern(&format!("S{i:03}"));
    }
    Arc::new(d)
}

/// Strictly increasing timestamps over the session and Zipf-distributed symbol codes.
fn times_and_codes(rng: &mut Rng, n: usize) -> (Vec<i64>, Vec<u32>) {
    let mean_gap = (DAY_NS / n.max(1) as i64).max(2);
    let mut ts = Vec::with_capacity(n);
    let mut t = DAY_START_NS;
    let cdf: Vec<f64> = {
        let w: Vec<f64> = (1..=SYMBOLS).map(|k| 1.0 / k as f64).collect();
        let total: f64 = w.iter().sum();
        let mut acc = 0.0;
        w.iter()
            .map(|x| {
                acc += x / total;
                acc
            })
            .collect()
    };
    let mut codes = Vec::with_capacity(n);
    for i in 0..n {
        if i > 0 {
            t += 1 + (rng.next() % (2 * mean_gap as u64 - 1)) as i64;
        }
        ts.push(t);
        let u = rng.unit();
        codes.push(cdf.partition_point(|&c| c < u).min(SYMBOLS - 1) as u32);
    }
    (ts, codes)
}

/// Per-symbol geometric random walk from the symbol's starting level.
fn walk(rng: &mut Rng, codes: &[u32], start: &[f64]) -> Vec<f64> {
    let mut level = start.to_vec();
    codes
        .iter()
        .map(|&c| {
            let l = &mut level[c as usize];
            *l *= (rng.normal() * 2e-4).exp();
            *l
        })
        .collect()
}

fn col(d: ColumnData) -> Column {
    Column::from_data(d)
}

/// Create and fill `trades` and `quotes` with `rows` rows each.
/// `--rows N`: rows per demo table (serve, sql and demo take it alike).
pub fn rows_arg() -> Arg {
    Arg::new("rows")
        .long("rows")
        .value_parser(clap::value_parser!(usize))
        .default_value("1000000")
        .help("Rows per demo table")
}

pub fn load(engine: &Engine, rows: usize, verbose: bool) -> Result<()> {
    let t0 = Instant::now();
    if verbose {
        eprintln!("generating {rows} trades and {rows} quotes ...");
    }
    engine.execute(
        "CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT);
         CREATE TABLE quotes (ts TIMESTAMP, sym SYMBOL, bid DOUBLE, ask DOUBLE, bid_size BIGINT, ask_size BIGINT)",
    )?;
    let dict = symbols();
    let mut rng = Rng(0x5EED_CAFE_F00D_0001);
    let start: Vec<f64> = (0..SYMBOLS).map(|_| 10.0 + rng.unit() * 490.0).collect();
    let (ts, codes) = times_and_codes(&mut rng, rows);
    let price: Vec<f64> = walk(&mut rng, &codes, &start).into_iter().map(|p| (p * 100.0).round() / 100.0).collect();
    let size: Vec<i64> = (0..rows)
        .map(|_| if rng.unit() < 0.1 { 1 + (rng.next() % 99) as i64 } else { 100 * (1 + (rng.next() % 10) as i64) })
        .collect();
    let trades = vec![
        col(ColumnData::Timestamp(ts.into())),
        col(ColumnData::Symbol { codes: codes.into(), dict: dict.clone() }),
        col(ColumnData::Float64(price.into())),
        col(ColumnData::Int64(size.into())),
    ];
    engine.catalog().append("trades", trades)?;
    let (ts, codes) = times_and_codes(&mut rng, rows);
    let mid = walk(&mut rng, &codes, &start);
    let spread: Vec<f64> = (0..rows).map(|_| (1 + rng.next() % 5) as f64).collect();
    let bid: Vec<f64> = mid.iter().zip(&spread).map(|(m, s)| ((m - s * 0.005) * 100.0).round() / 100.0).collect();
    let ask: Vec<f64> = bid.iter().zip(&spread).map(|(b, s)| ((b + s * 0.01) * 100.0).round() / 100.0).collect();
    let bsz: Vec<i64> = (0..rows).map(|_| 100 * (1 + (rng.next() % 49) as i64)).collect();
    let asz: Vec<i64> = (0..rows).map(|_| 100 * (1 + (rng.next() % 49) as i64)).collect();
    let quotes = vec![
        col(ColumnData::Timestamp(ts.into())),
        col(ColumnData::Symbol { codes: codes.into(), dict }),
        col(ColumnData::Float64(bid.into())),
        col(ColumnData::Float64(ask.into())),
        col(ColumnData::Int64(bsz.into())),
        col(ColumnData::Int64(asz.into())),
    ];
    engine.catalog().append("quotes", quotes)?;
    if verbose {
        eprintln!("loaded in {:.0} ms", t0.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}

pub const EXAMPLES: &[(&str, &str)] = &[
    ("One symbol, last hour (partition pick + binary search)", "SELECT * FROM trades WHERE sym = 'S042' AND ts > TIMESTAMP '2024-01-02 15:00:00' LIMIT 5"),
    ("Aggregates per symbol", "SELECT sym, avg(price) AS avg_price, max(size) AS max_size, count(*) AS n FROM trades GROUP BY sym ORDER BY n DESC LIMIT 5"),
    ("VWAP per symbol", "SELECT sym, vwap(price, size) AS vwap FROM trades GROUP BY sym ORDER BY sym LIMIT 5"),
    ("1-minute OHLC bars for one symbol", "SELECT xbar(INTERVAL '1 minute', ts) AS bar, first(price) AS open, max(price) AS high, min(price) AS low, last(price) AS close, sum(size) AS volume FROM trades WHERE sym = 'S000' GROUP BY bar ORDER BY bar LIMIT 5"),
    ("Spread statistics from quotes", "SELECT sym, avg(ask - bid) AS avg_spread, median(ask - bid) AS median_spread FROM quotes GROUP BY sym ORDER BY avg_spread DESC LIMIT 5"),
    ("Join trades to per-symbol quote averages", "WITH q AS (SELECT sym, avg(bid) AS avg_bid FROM quotes GROUP BY sym) SELECT t.sym, count(*) AS trades, round(avg(t.price - q.avg_bid), 4) AS premium FROM trades t JOIN q ON t.sym = q.sym GROUP BY t.sym ORDER BY trades DESC LIMIT 5"),
    ("EXPLAIN shows the pruning", "EXPLAIN SELECT * FROM trades WHERE sym = 'S042' AND ts > TIMESTAMP '2024-01-02 15:00:00'"),
];

pub fn run(rows: usize) -> Result<()> {
    let engine = Engine::new();
    load(&engine, rows, true)?;
    for (title, sql) in EXAMPLES {
        println!("\n-- {title}\n{sql};");
        let t0 = Instant::now();
        let r = engine.execute(sql)?;
        let el = t0.elapsed();
        print!("{}", crate::output::render(&r, "table", el));
        println!("Time: {:.3} ms", el.as_secs_f64() * 1e3);
    }
    println!("\nTry it yourself: zeptodb sql --demo");
    Ok(())
}
