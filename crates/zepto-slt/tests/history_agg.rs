//! Aggregates over the Parquet history (merged partials, `exec/partials.rs`) against the
//! same rows kept in memory (the path the DuckDB corpus checks), on random data: several
//! days and symbols, NULL keys, prices and timestamps, late rows that reach memory after
//! tiering and a second tiering whose files overlap the first's days in time.

use zepto_slt::{result_lines, tiering_engine};
use zepto_sql::Engine;

use zepto_storage::rng::XorShift as Rng;

const DAY: i64 = zepto_storage::time::NS_PER_DAY;
const T0: i64 = 1_704_153_600_000_000_000; // 2024-01-02

fn ts_sql(ns: i64) -> String {
    // Nanoseconds since the epoch as a timestamp literal the engine parses.
    format!("CAST({ns} AS TIMESTAMP)")
}

/// `n` random rows as an INSERT; `(sym, ts)` pairs are unique across calls so first/last by
/// time have one answer (ties are ambiguous in every engine).
fn rows(
    rng: &mut Rng,
    n: usize,
    days: std::ops::Range<i64>,
    used: &mut std::collections::HashSet<(u64, i64)>,
) -> String {
    let mut vals = Vec::new();
    while vals.len() < n {
        let sym = rng.below(6); // 5 = NULL
        let ts = if rng.below(40) == 0 {
            None
        } else {
            let day = days.start + rng.below((days.end - days.start) as u64) as i64;
            Some(T0 + day * DAY + rng.below(86_400) as i64 * 1_000_000_000)
        };
        if let Some(t) = ts {
            if !used.insert((sym, t)) {
                continue;
            }
        }
        let sym = if sym == 5 { "NULL".to_string() } else { format!("'S{sym}'") };
        let px =
            if rng.below(15) == 0 { "NULL".to_string() } else { format!("{}.{}", 10 + rng.below(90), rng.below(100)) };
        let qty = if rng.below(20) == 0 { "NULL".to_string() } else { (rng.below(1000) as i64 - 100).to_string() };
        let ts = ts.map_or("NULL".to_string(), ts_sql);
        vals.push(format!("({ts}, {sym}, {px}, {qty})"));
    }
    format!("INSERT INTO t VALUES {}", vals.join(", "))
}

fn run(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let mut lines = result_lines(&r);
    lines.sort();
    lines
}

fn same(a: &str, b: &str) -> bool {
    a.split('\t').zip(b.split('\t')).all(|(x, y)| {
        x == y || matches!((x.parse::<f64>(), y.parse::<f64>()), (Ok(p), Ok(q)) if (p - q).abs() <= 1e-9 * p.abs().max(q.abs()))
    }) && a.split('\t').count() == b.split('\t').count()
}

#[test]
fn history_aggregates_match_memory() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let mut used = std::collections::HashSet::new();
    // Partition-wise work of any size on helper threads: the parallel paths too.
    let hist = tiering_engine().expect("tiering engine").with_parallel_min_rows(0);
    let mem = Engine::new().with_parallel_min_rows(0);
    let both = |sql: &str| {
        for e in [&hist, &mem] {
            e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
        }
    };
    both("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, qty BIGINT)");
    for _ in 0..4 {
        both(&rows(&mut rng, 500, 0..6, &mut used));
    }
    let tier = |day: i64| {
        // T0 is 2024-01-02; days stay inside January.
        let sql = format!("ALTER TABLE t CONVERT PARTITION TO PARQUET WHERE ts < '2024-01-{:02}'", 2 + day);
        hist.execute(&sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    };
    tier(3);
    // Late rows for days already in the history, then a second tiering over the same days.
    both(&rows(&mut rng, 300, 0..6, &mut used));
    tier(5);
    both(&rows(&mut rng, 300, 0..7, &mut used));
    let snap = hist.catalog().snapshot("t").expect("table t");
    assert!(snap.history().files.len() >= 8, "expected overlapping files: {:?}", snap.history().files.len());
    assert!(snap.row_count() > 0 && snap.history().rows() > 0);

    let day = |d: i64| ts_sql(T0 + d * DAY);
    let aggs = "count(*), count(px), sum(qty), sum(px), min(px), max(px), min(qty), max(sym), avg(px), avg(qty), \
                first(px), last(px), first(qty), last(qty), vwap(px, qty), stddev(px), var_pop(qty)";
    // Every one of these merges from partial states: no query assembles the history.
    let plan = hist.execute(&format!("EXPLAIN SELECT sym, {aggs} FROM t GROUP BY sym")).expect("explain");
    let text = result_lines(&plan).join("\n");
    assert!(text.contains("HistoryAggregate"), "{text}");
    let queries = [
        format!("SELECT sym, {aggs} FROM t GROUP BY sym"),
        format!("SELECT {aggs} FROM t"),
        format!("SELECT sym, {aggs} FROM t WHERE ts >= {} AND ts < {} GROUP BY sym", day(1), day(4)),
        format!("SELECT sym, xbar(INTERVAL '6 hours', ts) AS b, {aggs} FROM t GROUP BY sym, b"),
        format!("SELECT xbar(INTERVAL '1 day', ts) AS b, {aggs} FROM t WHERE sym IN ('S1', 'S3') GROUP BY b"),
        format!("SELECT sym, {aggs} FROM t WHERE px > 50 AND qty < 500 GROUP BY sym"),
        format!("SELECT {aggs} FROM t WHERE sym = 'S2' AND ts < {}", day(2)),
        format!("SELECT sym, {aggs} FROM t WHERE ts > {} GROUP BY sym", day(30)),
        format!("SELECT {aggs} FROM t WHERE ts > {}", day(30)),
        "SELECT count(*) FROM t WHERE ts IS NULL".to_string(),
        "SELECT sym, count(*) FROM t GROUP BY sym HAVING count(*) > 300".to_string(),
    ];
    for q in &queries {
        let (h, m) = (run(&hist, q), run(&mem, q));
        assert_eq!(h.len(), m.len(), "{q}");
        for (x, y) in h.iter().zip(&m) {
            assert!(same(x, y), "{q}\n history: {x}\n memory:  {y}");
        }
    }
}

/// A BIGINT sum whose partial over one file overflows while the total fits: the partial path
/// gives way to the assembled rows, which answer as memory does.
#[test]
fn partial_sum_overflow_falls_back() {
    let hist = tiering_engine().expect("tiering engine");
    let mem = Engine::new();
    let big = i64::MAX / 2 + 1;
    for e in [&hist, &mem] {
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, q BIGINT)").expect("create");
        e.execute(&format!(
            "INSERT INTO t VALUES ('2024-01-02 10:00:00', 'A', {big}), ('2024-01-02 11:00:00', 'A', {big}), \
             ('2024-01-03 10:00:00', 'A', -{big}), ('2024-01-04 10:00:00', 'A', 1)"
        ))
        .expect("insert");
    }
    hist.execute("ALTER TABLE t CONVERT PARTITION TO PARQUET WHERE ts < '2024-01-04'").expect("tier");
    for q in ["SELECT sum(q) FROM t", "SELECT sym, sum(q), count(*) FROM t GROUP BY sym"] {
        assert_eq!(run(&hist, q), run(&mem, q), "{q}");
    }
    // A total past BIGINT is exact on both (a HUGEINT, as in DuckDB).
    for e in [&hist, &mem] {
        e.execute(&format!("INSERT INTO t VALUES ('2024-01-05 10:00:00', 'A', {big})")).expect("insert");
        let total = e.execute("SELECT sum(q) FROM t").expect("sum").batch().columns[0].get(0);
        assert_eq!(total, zepto_storage::Value::Int128(2 * i128::from(big) + 1));
    }
}
