//! `ParallelAggregate` (partials per partition on every core, merged per group) against the
//! single hash aggregate over the same rows, which the DuckDB difftests check. The rows of a
//! table partitioned by many symbols, most partitions a few rows (bundled), one large, read
//! directly (the planner's partials) and through a LIMIT that no scan shape sees through (the
//! hash path). Keys without the partition key or none, NULLs in keys, values and times, ties
//! in time for first/last, filters that empty whole partitions. Keys that are all monotonic in
//! the designated timestamp (the timestamp itself, buckets of it) take `TimeMergeAggregate`:
//! groups as runs of each partition, partials merged by sorting their keys (the timestamp
//! itself only over up to 1,024 partitions read; past that, `HashAggregate`).

use zepto_sql::Engine;

use crate::common;
use common::Rng;

fn rows(e: &Engine, sql: &str) -> Vec<String> {
    common::sorted_rows(e, sql, 9)
}

/// EXPLAIN's lines, one string.
fn explain(e: &Engine, sql: &str) -> String {
    let r = e.execute(&format!("EXPLAIN {sql}")).unwrap_or_else(|err| panic!("EXPLAIN {sql}: {err}"));
    let b = r.batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("\t") + "\n").collect()
}

fn opt(rng: &mut Rng, null_one_in: u64, v: String) -> String {
    if rng.below(null_one_in) == 0 {
        "NULL".into()
    } else {
        v
    }
}

/// `n` rows: a few symbols take most rows, the rest a handful each.
fn values(rng: &mut Rng, n: usize, syms: u64) -> String {
    let mut v = Vec::new();
    for _ in 0..n {
        let sym = if rng.below(3) == 0 { 0 } else { rng.below(syms) };
        let ts = format!("'2024-01-02 09:{:02}:{:02}'", 30 + rng.below(3), rng.below(60));
        let ts = opt(rng, 30, ts);
        let sym = opt(rng, 40, format!("'S{sym}'"));
        let (vn, p) = (rng.below(4), rng.below(100));
        let venue = opt(rng, 8, format!("'v{vn}'"));
        let px = opt(rng, 10, format!("{p}.25"));
        v.push(format!("({ts}, {sym}, {venue}, {px}, {})", rng.below(1000) as i64 - 200));
    }
    v.join(", ")
}

#[test]
fn parallel_partials_match_the_hash_aggregate() {
    let mut rng = Rng::new(0x5851_f42d_4c95_7f2d);
    // Many symbols (most partitions a few rows: buckets hashed) and three (partitions of many
    // rows a bucket: buckets as runs in time, partials merged in time order).
    for (case, syms) in (0..8).flat_map(|c| [(c, 200), (c, 3)]) {
        let e = Engine::new().with_parallel_min_rows(0);
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, venue VARCHAR, px DOUBLE, n BIGINT)").expect("t");
        for _ in 0..3 {
            e.execute(&format!("INSERT INTO t VALUES {}", values(&mut rng, 300 + case * 100, syms))).expect("rows");
        }
        let aggs = "count(*), count(px), sum(n), sum(px), avg(px), min(px), max(n), max(ts), first(px), last(n), \
                    var_samp(px), vwap(px, n)";
        let shapes = [
            ("", ""),
            ("venue,", "GROUP BY venue"),
            ("n % 7 AS k,", "GROUP BY k"),
            ("date_trunc('minute', ts) AS m,", "GROUP BY m"),
            ("venue, n % 3 AS k,", "GROUP BY venue, k"),
            ("ts,", "GROUP BY ts"),
            ("xbar(INTERVAL 10 second, ts) AS b, ts,", "GROUP BY b, ts"),
            ("xbar(INTERVAL 10 second, ts) AS b,", "GROUP BY b"),
        ];
        // The timestamp itself: rows grouped in time order; buckets of it: in time order where
        // partitions hold several rows a bucket.
        // (Over many symbols the estimate may go either way for buckets: both are checked.)
        let want = |group: &str| match group {
            g if g.contains("ts") => &["TimeMergeAggregate"][..],
            "GROUP BY m" | "GROUP BY b" if syms == 3 => &["TimeMergeAggregate"][..],
            "GROUP BY m" | "GROUP BY b" => &["TimeMergeAggregate", "ParallelAggregate"][..],
            _ => &["ParallelAggregate"][..],
        };
        let filters = ["", "WHERE n > 500", "WHERE px IS NULL", "WHERE venue = 'v1' AND n < 0", "WHERE n > 10000"];
        for (keys, group) in shapes {
            for filter in filters {
                let sql = |from: &str| format!("SELECT {keys} {aggs} FROM {from} {filter} {group}");
                let direct = sql("t");
                let plan = explain(&e, &direct);
                assert!(want(group).iter().any(|w| plan.contains(w)), "case {case}, {syms} symbols: {direct}\n{plan}");
                let hashed = sql("(SELECT * FROM t LIMIT 1000000000) s");
                let plan = explain(&e, &hashed);
                assert!(plan.contains("HashAggregate"), "case {case}: {hashed}\n{plan}");
                assert_eq!(rows(&e, &direct), rows(&e, &hashed), "case {case}: {direct}");
            }
        }
    }
}

/// A key of the timestamp itself over more partitions than merging their runs pays for
/// (`plan/time_merge.rs`: 1,024): the rows are hashed, with the answer of the in-order way
/// over the same rows in a table of one symbol (aggregates that ties in time leave alone).
#[test]
fn a_timestamp_key_over_many_partitions_is_hashed() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let rows_sql = values(&mut rng, 6000, 3000);
    let (many, few) = (Engine::new().with_parallel_min_rows(0), Engine::new().with_parallel_min_rows(0));
    for e in [&many, &few] {
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, venue VARCHAR, px DOUBLE, n BIGINT)").expect("t");
    }
    many.execute(&format!("INSERT INTO t VALUES {rows_sql}")).expect("rows");
    // The same rows under one symbol: one partition, grouped in time order.
    few.execute(&format!(
        "INSERT INTO t SELECT ts, 'ONE', venue, px, n FROM (VALUES {rows_sql}) v(ts, sym, venue, px, n)"
    ))
    .expect("rows");
    for sql in [
        "SELECT ts, count(*), sum(n), min(px), max(n) FROM t GROUP BY ts",
        "SELECT xbar(INTERVAL 10 second, ts) AS b, ts, count(*) FROM t WHERE n > 0 GROUP BY b, ts",
    ] {
        let (plan_many, plan_few) = (explain(&many, sql), explain(&few, sql));
        assert!(plan_many.contains("HashAggregate"), "{sql}\n{plan_many}");
        assert!(plan_few.contains("TimeMergeAggregate"), "{sql}\n{plan_few}");
        assert_eq!(rows(&many, sql), rows(&few, sql), "{sql}");
    }
    // A scan of a few keys reads a few partitions: merged in time order again.
    let some = "SELECT ts, count(*), max(n) FROM t WHERE sym IN ('S1', 'S2', 'S3') GROUP BY ts";
    assert!(explain(&many, some).contains("TimeMergeAggregate"), "{some}\n{}", explain(&many, some));
    let hashed = "SELECT ts, count(*), max(n) FROM (SELECT * FROM t LIMIT 1000000000) s \
                  WHERE sym IN ('S1', 'S2', 'S3') GROUP BY ts";
    assert_eq!(rows(&many, some), rows(&many, hashed), "{some}");
}

/// Many small partitions (bundled a few hundred at a time), each holding several rows of one
/// minute, no NULL times: a run of equal buckets across a bundle would cross from one partition
/// into the next, out of time order, and `first`/`last` over it would pick by position. They
/// must answer as the hashed aggregate does.
#[test]
fn runs_in_time_order_never_cross_partitions() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let e = Engine::new().with_parallel_min_rows(0);
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE)").expect("t");
    // Distinct times (no ties for first/last to break), spread over every symbol at random.
    let mut times: Vec<u64> = (0..1600).map(|i| i * 37).collect();
    for i in (1..times.len()).rev() {
        times.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let values: Vec<String> = times
        .iter()
        .enumerate()
        .map(|(i, ms)| {
            let ts = format!("TIMESTAMP '2024-01-02 09:30:00' + INTERVAL '{ms} milliseconds'");
            format!("({ts}, 'S{}', {}.5)", i % 200, rng.below(1000))
        })
        .collect();
    e.execute(&format!("INSERT INTO t VALUES {}", values.join(", "))).expect("rows");
    for key in ["date_trunc('minute', ts)", "xbar(INTERVAL 30 second, ts)"] {
        let sql =
            |from: &str| format!("SELECT {key} AS m, first(px), last(px), min(ts), count(*) FROM {from} GROUP BY m");
        let direct = sql("t");
        let plan = explain(&e, &direct);
        assert!(plan.contains("TimeMergeAggregate") && plan.contains("partials"), "{direct}\n{plan}");
        assert_eq!(rows(&e, &direct), rows(&e, &sql("(SELECT * FROM t LIMIT 1000000000) s")), "{direct}");
    }
}

/// Aggregates without GROUP BY whose accumulators fold batch after batch (count, sum, avg,
/// min, max; `sum(p * s)` read in place, `min(c)` and `max(c)` in one pass) take `ParallelAggregate`'s folding form: runs of
/// partitions, whole packs and packs cut by time folded in place into one group per run
/// (`exec/keyless.rs`). Against the hash aggregate over the same rows: few large partitions,
/// many small ones, packed ones (a bulk insert over thousands of symbols), NULLs, filters
/// that empty some partitions or all of them, and a time range that cuts the packs.
#[test]
fn keyless_folds_match_the_hash_aggregate() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let aggs = "count(*), count(px), sum(n), sum(px), avg(px), avg(n), min(px), max(n), min(ts), max(venue), \
                sum(px * n), avg(n * px), max(px)";
    let filters = [
        "",
        "WHERE n > 500",
        "WHERE px IS NULL",
        "WHERE venue = 'v1' AND n < 0",
        "WHERE n > 10000",
        "WHERE ts >= '2024-01-02 09:31:00' AND ts < '2024-01-02 09:32:00'",
        "WHERE sym IN ('S0', 'S5', 'S7')",
        "WHERE px > 20",
    ];
    // (symbols, rows per insert, inserts): large partitions; small ones over several inserts;
    // one bulk insert over thousands of symbols, which packs them.
    for (case, (syms, n, inserts)) in [(3, 400, 3), (200, 500, 3), (3000, 9000, 1)].into_iter().enumerate() {
        let e = Engine::new().with_parallel_min_rows(0);
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, venue VARCHAR, px DOUBLE, n BIGINT)").expect("t");
        for _ in 0..inserts {
            e.execute(&format!("INSERT INTO t VALUES {}", values(&mut rng, n, syms))).expect("rows");
        }
        for filter in filters {
            let sql = |from: &str| format!("SELECT {aggs} FROM {from} {filter}");
            let direct = sql("t");
            let plan = explain(&e, &direct);
            assert!(plan.contains("folded"), "case {case}: {direct}\n{plan}");
            let hashed = sql("(SELECT * FROM t LIMIT 1000000000) s");
            assert!(explain(&e, &hashed).contains("HashAggregate"), "case {case}: {hashed}");
            assert_eq!(rows(&e, &direct), rows(&e, &hashed), "case {case}: {direct}");
        }
        // An aggregate that does not fold: partials per bundle (`first` by time), or the hash
        // aggregate (DISTINCT does not merge).
        for (other, how) in [
            ("SELECT first(px), count(*) FROM t", "ParallelAggregate"),
            ("SELECT count(DISTINCT n), sum(px) FROM t", "HashAggregate"),
        ] {
            let plan = explain(&e, other);
            assert!(plan.contains(how) && !plan.contains("folded"), "{other}\n{plan}");
        }
    }
}

/// A GROUP BY of the partition key alone whose every aggregate reads a few rows of a group
/// (`count(*)`, `first`, `last`): the planner marks it (`read at its ends`) so that the executor
/// weighs a partition by its fixed cost, not its rows. Answers as the hashed aggregate, on one
/// core (the default threshold) and on every core, over a few large partitions and many small
/// ones, with NULL values and times. Any other aggregate, key or DISTINCT reads the rows.
#[test]
fn partitions_read_at_their_ends_answer_as_hashed() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let ends = "(per partition, one group each, read at its ends)";
    for syms in [3, 200] {
        for e in [Engine::new(), Engine::new().with_parallel_min_rows(0)] {
            e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, venue VARCHAR, px DOUBLE, n BIGINT)").expect("t");
            e.execute(&format!("INSERT INTO t VALUES {}", values(&mut rng, 2000, syms))).expect("rows");
            for (aggs, filter) in [
                ("count(*), first(px), last(n), last(venue)", ""),
                ("last(px), first(ts), count(*)", "WHERE n > 300"),
                ("count(*)", "WHERE px IS NULL"),
            ] {
                let direct = format!("SELECT sym, {aggs} FROM t {filter} GROUP BY sym");
                let plan = explain(&e, &direct);
                assert!(plan.contains(ends), "{syms} symbols: {direct}\n{plan}");
                let hashed =
                    format!("SELECT sym, {aggs} FROM (SELECT * FROM t LIMIT 1000000000) s {filter} GROUP BY sym");
                assert!(explain(&e, &hashed).contains("HashAggregate"), "{hashed}");
                assert_eq!(rows(&e, &direct), rows(&e, &hashed), "{syms} symbols: {direct}");
            }
            for other in [
                "SELECT sym, count(*), max(px) FROM t GROUP BY sym",
                "SELECT sym, count(px) FROM t GROUP BY sym",
                "SELECT sym, count(DISTINCT venue) FROM t GROUP BY sym",
                "SELECT sym, venue, last(px) FROM t GROUP BY sym, venue",
                "SELECT sym, xbar(INTERVAL 10 second, ts) AS b, last(px) FROM t GROUP BY sym, b",
            ] {
                let plan = explain(&e, other);
                assert!(plan.contains("PartitionAggregate") && !plan.contains(ends), "{other}\n{plan}");
            }
        }
    }
}

/// `max(ts)` and `min(ts)` of the designated timestamp run as `last(ts)` and `first(ts)` (a
/// group's end rows): the same answers as the plain extremes of the same times (an expression
/// of them, which is not rewritten), with NULL times, over every GROUP BY path, under filters;
/// by symbol alone they are read at the partitions' ends. (Keyless, they fold as before.)
#[test]
fn extremes_of_the_timestamp_answer_as_plain_extremes() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    for syms in [3, 200] {
        let e = Engine::new().with_parallel_min_rows(0);
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, venue VARCHAR, px DOUBLE, n BIGINT)").expect("t");
        for _ in 0..3 {
            e.execute(&format!("INSERT INTO t VALUES {}", values(&mut rng, 800, syms))).expect("rows");
        }
        for (keys, group) in
            [("sym,", "GROUP BY sym"), ("venue,", "GROUP BY venue"), ("sym, venue,", "GROUP BY sym, venue")]
        {
            for filter in ["", "WHERE n > 300", "WHERE px IS NULL"] {
                let ends = format!("SELECT {keys} max(ts), min(ts), count(*) FROM t {filter} {group}");
                let plain = format!(
                    "SELECT {keys} max(ts + INTERVAL 0 SECOND), min(ts + INTERVAL 0 SECOND), count(*) FROM t {filter} {group}"
                );
                assert!(explain(&e, &ends).contains("last, first"), "{ends}\n{}", explain(&e, &ends));
                assert_eq!(rows(&e, &ends), rows(&e, &plain), "{syms} symbols: {ends}");
            }
        }
        let by_sym = "SELECT sym, max(ts) FROM t GROUP BY sym";
        assert!(explain(&e, by_sym).contains("read at its ends"), "{}", explain(&e, by_sym));
        // DISTINCT and window aggregates keep their own function.
        let distinct = "SELECT sym, max(DISTINCT ts) FROM t GROUP BY sym";
        assert!(explain(&e, distinct).contains("aggs=[max]"), "{}", explain(&e, distinct));
    }
}
