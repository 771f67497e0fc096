//! A query's result as several batches (whole partitions shared, partition-wise operators'
//! outputs kept apart) against the same query made one batch: the same rows in the same order,
//! the same types, and no empty batch but the one an empty result keeps. The one-batch form
//! wraps the query in `LIMIT`, whose input is always assembled into one batch.

use zepto_sql::{Engine, QueryResult};
use zepto_storage::column::Column;

use crate::common;
use common::Rng;

fn cell(c: &Column, i: usize) -> String {
    format!("{:?}", c.get(i))
}

/// Every row, batch by batch, in the order the result holds them.
fn lines(r: &QueryResult) -> Vec<String> {
    r.chunks()
        .iter()
        .flat_map(|b| (0..b.rows).map(move |i| b.columns.iter().map(|c| cell(c, i)).collect::<Vec<_>>().join("|")))
        .collect()
}

fn types(r: &QueryResult) -> Vec<Vec<zepto_storage::DataType>> {
    r.chunks().iter().map(|b| b.columns.iter().map(|c| c.data_type()).collect()).collect()
}

fn values(rng: &mut Rng, n: usize, syms: u64) -> String {
    let mut v = Vec::new();
    for _ in 0..n {
        let ts = if rng.below(30) == 0 {
            "NULL".to_string()
        } else {
            format!("'2024-01-02 09:{:02}:{:02}.{:03}'", 30 + rng.below(20), rng.below(60), rng.below(1000))
        };
        let sym = if rng.below(15) == 0 { "NULL".to_string() } else { format!("'S{}'", rng.below(syms)) };
        let x = if rng.below(10) == 0 { "NULL".to_string() } else { format!("{}.25", rng.below(100)) };
        v.push(format!("({ts}, {sym}, {x})"));
    }
    v.join(", ")
}

#[test]
fn chunked_results_equal_one_batch() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    for case in 0..6 {
        // Partition-wise work of any size on helper threads: the parallel paths too.
        let e = Engine::new().with_parallel_min_rows(0);
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x DOUBLE)").expect("t");
        e.execute("CREATE TABLE q (ts TIMESTAMP, sym SYMBOL, bid DOUBLE)").expect("q");
        // Even cases: 12 symbols of a few hundred rows, which partition-wise operators run
        // bundled together (one batch); odd: 3 symbols of thousands, each a batch of its own.
        let large = case % 2 == 1;
        let (n, syms) = if large { (6000, 3) } else { (800 + case * 200, 12) };
        for _ in 0..3 {
            // Symbols S10, S11 only on the left, S8, S9 only on the right.
            let rows = values(&mut rng, n, syms).replace("'S8'", "'S10'").replace("'S9'", "'S11'");
            e.execute(&format!("INSERT INTO t VALUES {rows}")).expect("t rows");
            e.execute(&format!("INSERT INTO q VALUES {}", values(&mut rng, 300, 10))).expect("q rows");
        }
        let queries = [
            ("SELECT * FROM t", true),
            ("SELECT ts, x * 2 + 1 AS y, sym FROM t WHERE x > 40", true),
            ("SELECT sym, x FROM t WHERE sym = 'S3' OR x < 10", false),
            (
                "SELECT * FROM t WHERE ts BETWEEN TIMESTAMP '2024-01-02 09:35:00' AND TIMESTAMP '2024-01-02 09:40:00'",
                false,
            ),
            ("SELECT t.ts, t.sym, t.x, q.bid FROM t ASOF LEFT JOIN q ON t.sym = q.sym AND t.ts >= q.ts", true),
            ("SELECT q.bid, t.x FROM t ASOF JOIN q ON t.sym = q.sym AND t.ts > q.ts", true),
            ("SELECT ts, sym, x, ema(x, 10) OVER (PARTITION BY sym ORDER BY ts) AS e FROM t", true),
            ("SELECT ts, sym, x - mavg(x, 3) OVER (PARTITION BY sym ORDER BY ts) AS d FROM t", false),
            (
                "SELECT t.ts, t.sym, avg(q.bid) AS a, count(*) AS n FROM t WINDOW JOIN q ON t.sym = q.sym \
                 AND q.ts BETWEEN t.ts - INTERVAL '2 seconds' AND t.ts + INTERVAL '2 seconds'",
                true,
            ),
            ("SELECT * FROM t WHERE sym = 'nowhere'", false),
            // Per-partition groups: kept apart when they average MIN_CHUNK_ROWS rows.
            (
                "SELECT sym, xbar(INTERVAL '10 milliseconds', ts) AS b, first(x) AS o, max(x) AS h, min(x) AS l, \
                 last(x) AS c, count(*) AS n FROM t GROUP BY sym, b",
                false,
            ),
            ("SELECT sym, count(*) AS n, avg(x) AS a FROM t GROUP BY sym", false),
            ("SELECT sym, xbar(INTERVAL '1 second', ts) AS b, sum(x) AS s FROM t GROUP BY sym, b HAVING count(*) > 1", false),
            ("SELECT t.ts, q.bid FROM t ASOF JOIN q ON t.sym = q.sym AND t.ts >= q.ts + INTERVAL '20 seconds'", false),
            ("SELECT ts, x FROM t WHERE x > 1000", false),
        ];
        for (sql, chunked) in queries {
            let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
            let one = e.execute(&format!("SELECT * FROM ({sql}) z LIMIT 1000000000")).expect("one batch");
            assert_eq!(one.chunks().len(), 1, "{sql}: LIMIT gives one batch");
            assert_eq!(lines(&r), lines(&one), "case {case}: {sql}");
            assert_eq!(r.row_count(), one.row_count());
            // Every batch has the one-batch result's column types.
            assert!(types(&r).iter().all(|t| *t == types(&one)[0]), "{sql}: {:?}", types(&r));
            if chunked && large {
                assert!(r.chunks().len() > 1, "{sql}: expected one batch per large partition");
            }
            // Small batches are made one.
            let min = zepto_sql::exec::MIN_CHUNK_ROWS;
            assert!(r.chunks().len() == 1 || r.row_count() >= r.chunks().len() * min, "{sql}: tiny batches kept");
            assert!(r.chunks().len() == 1 || r.chunks().iter().all(|b| b.rows > 0), "{sql}: an empty batch kept");
            // The one-batch view of a chunked result is the same rows.
            let b = r.batch();
            assert_eq!(b.rows, r.row_count());
        }
        // An ASOF JOIN emits only what its parent reads: the same values as the columns picked
        // from SELECT * (t.ts, t.sym, t.x, q.ts, q.sym, q.bid), which emits everything.
        for (how, op) in [("ASOF", ">="), ("ASOF LEFT", ">"), ("ASOF", "<=")] {
            let on = format!("FROM t {how} JOIN q ON t.sym = q.sym AND t.ts {op} q.ts");
            let all = e.execute(&format!("SELECT * {on}")).expect("select *").batch();
            let pick = |cols: &[usize], keep: &dyn Fn(usize) -> bool| -> Vec<String> {
                (0..all.rows)
                    .filter(|&i| keep(i))
                    .map(|i| cols.iter().map(|&j| cell(&all.columns[j], i)).collect::<Vec<_>>().join("|"))
                    .collect()
            };
            let r = e.execute(&format!("SELECT q.sym, q.ts, t.x {on}")).expect("keys read above");
            assert_eq!(lines(&r), pick(&[4, 3, 2], &|_| true), "case {case}: {how} {op}");
            let r = e.execute(&format!("SELECT t.x {on} WHERE q.bid IS NULL")).expect("filter on the right");
            assert_eq!(lines(&r), pick(&[2], &|i| !all.columns[5].is_valid(i)), "case {case}: {how} {op}");
            let r = e.execute(&format!("SELECT count(*) {on}")).expect("count");
            assert_eq!(lines(&r), vec![format!("{:?}", zepto_storage::Value::Int64(all.rows as i64))]);
        }
        // now() is read once per query, not once per batch.
        let r = e.execute("SELECT now() AS n, x FROM t").expect("now");
        let mut seen: Vec<String> =
            lines(&r).into_iter().map(|l| l.split('|').next().unwrap_or("").to_string()).collect();
        seen.dedup();
        assert_eq!(seen.len(), 1, "now() took {} values", seen.len());
    }
}

/// A filter over a scan filters the scan's runs on every core: the same rows in the same
/// batches' order as on one core, for partitions large enough to run alone and small ones run
/// together, and an error in any run fails the whole query on both.
#[test]
fn filtered_scans_on_every_core_match_one_core() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let (par, one) = (Engine::new().with_parallel_min_rows(0), Engine::new().with_parallel_min_rows(usize::MAX));
    // Three symbols of thousands of rows (a run each) and forty of a few (runs of many).
    let mut batches = vec![values(&mut rng, 6000, 3)];
    batches.extend((0..4).map(|_| values(&mut rng, 300, 40).replace("'S", "'T")));
    for e in [&par, &one] {
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x DOUBLE)").expect("t");
        for rows in &batches {
            e.execute(&format!("INSERT INTO t VALUES {rows}")).expect("rows");
        }
    }
    for sql in [
        "SELECT * FROM t WHERE x > 40",
        "SELECT sym, x FROM t WHERE x < 5 OR sym = 'T7'",
        "SELECT ts, x * 2 AS y FROM t WHERE x > 90 AND ts > TIMESTAMP '2024-01-02 09:40:00'",
        "SELECT * FROM t WHERE x > 1000",
        "SELECT * FROM t WHERE x > 3 ORDER BY x DESC, ts, sym LIMIT 7",
        "SELECT * FROM t WHERE x IS NULL ORDER BY ts DESC LIMIT 5",
    ] {
        let (a, b) = (par.execute(sql).expect(sql), one.execute(sql).expect(sql));
        assert!(a.row_count() > 0 || sql.contains("1000"), "{sql}: rows expected");
        assert_eq!(lines(&a), lines(&b), "{sql}");
    }
    // Symbols that are not numbers: the cast fails in some runs, and so does the query.
    let bad = "SELECT * FROM t WHERE CAST(replace(CAST(sym AS VARCHAR), 'S', '') AS BIGINT) > 0";
    for e in [&par, &one] {
        assert!(e.execute(bad).is_err(), "{bad}: 'T..' symbols do not cast");
    }
}
