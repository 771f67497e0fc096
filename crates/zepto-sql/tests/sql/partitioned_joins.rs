//! The partition-wise WINDOW JOIN and ASOF JOIN (both sides keyed by their partition key and
//! time-sorted) against the general sweeps, which the DuckDB difftests check: the same rows
//! in a right table keyed by SYMBOL (partitioned path) and by VARCHAR (general path).
//! Timestamps sit on a one-second grid so window edges and as-of matches land exactly on
//! rows; NULL keys and times, symbols on one side only, rows inserted out of order.

use zepto_sql::Engine;

use crate::common;
use common::Rng;

fn rows(e: &Engine, sql: &str) -> Vec<String> {
    common::sorted_rows(e, sql, 9)
}

fn values(rng: &mut Rng, n: usize, syms: u64, with_id: bool) -> String {
    let mut v = Vec::new();
    for i in 0..n {
        let ts = if rng.below(25) == 0 {
            "NULL".to_string()
        } else {
            format!("'2024-01-02 09:{:02}:{:02}'", 30 + rng.below(20), rng.below(60))
        };
        let sym = if rng.below(12) == 0 { "NULL".to_string() } else { format!("'S{}'", rng.below(syms)) };
        let px = if rng.below(10) == 0 { "NULL".to_string() } else { format!("{}.5", rng.below(100)) };
        v.push(if with_id {
            format!("({i}, {ts}, {sym}, {px})")
        } else {
            format!("({ts}, {sym}, {px}, {})", rng.below(1000))
        });
    }
    v.join(", ")
}

#[test]
fn partitioned_joins_match_the_general_sweeps() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    for case in 0..12 {
        // Partition-wise work of any size on helper threads: the parallel paths too.
        let e = Engine::new().with_parallel_min_rows(0);
        e.execute("CREATE TABLE w (id INT, ts TIMESTAMP, sym SYMBOL, x DOUBLE)").expect("w");
        e.execute("CREATE TABLE qs (ts TIMESTAMP, sym SYMBOL, bid DOUBLE, n BIGINT)").expect("qs");
        e.execute("CREATE TABLE qv (ts TIMESTAMP, sym VARCHAR, bid DOUBLE, n BIGINT)").expect("qv");
        // Left symbols S0..S4, right S1..S6: some only on one side.
        e.execute(&format!("INSERT INTO w VALUES {}", values(&mut rng, 150 + case * 20, 5, true))).expect("w rows");
        for _ in 0..3 {
            let q = values(&mut rng, 100 + case * 30, 7, false).replace("'S0'", "'S6'");
            e.execute(&format!("INSERT INTO qs VALUES {q}")).expect("qs rows");
            e.execute(&format!("INSERT INTO qv VALUES {q}")).expect("qv rows");
        }
        let bands = [
            "q.ts BETWEEN w.ts - INTERVAL '2 seconds' AND w.ts + INTERVAL '3 seconds'",
            "q.ts >= w.ts AND q.ts < w.ts + INTERVAL '5 seconds'",
            "w.ts + INTERVAL '10 seconds' >= q.ts AND q.ts > w.ts + INTERVAL '1 seconds'",
            "q.ts BETWEEN w.ts AND w.ts",
        ];
        for band in bands {
            let aggs = "count(*), count(q.bid), sum(q.n), avg(q.bid), min(q.bid), max(q.ts), first(q.bid), last(q.bid)";
            let sql = |q: &str| format!("SELECT w.id, {aggs} FROM w WINDOW JOIN {q} q ON w.sym = q.sym AND {band}");
            let plan = e.execute(&format!("EXPLAIN {}", sql("qs"))).expect("explain");
            assert!(plan.row_count() > 0);
            assert_eq!(rows(&e, &sql("qs")), rows(&e, &sql("qv")), "case {case}: {band}");
        }
        // Bands that hold no time (lo > hi): every left row once, NULL times too, with empty
        // windows, on the partitioned path (the other path shares the cursors).
        let ids: Vec<String> = rows(&e, "SELECT id FROM w");
        for band in
            ["q.ts BETWEEN w.ts + INTERVAL '5 seconds' AND w.ts - INTERVAL '5 seconds'", "q.ts >= w.ts AND q.ts < w.ts"]
        {
            let aggs = "count(*), count(q.bid), sum(q.n), avg(q.bid), min(q.bid), first(q.bid)";
            let sql = format!("SELECT w.id, {aggs} FROM w WINDOW JOIN qs q ON w.sym = q.sym AND {band}");
            let mut want: Vec<String> =
                ids.iter().map(|id| format!("{id}|Int64(0)|Int64(0)|Null|Null|Null|Null")).collect();
            want.sort();
            assert_eq!(rows(&e, &sql), want, "case {case}: {band}");
        }
        for op in [">=", ">", "<=", "<"] {
            let sql = |q: &str| {
                format!(
                    "SELECT w.id, w.ts, q.ts, q.bid FROM w ASOF LEFT JOIN {q} q ON w.sym = q.sym AND w.ts {op} q.ts"
                )
            };
            assert_eq!(rows(&e, &sql("qs")), rows(&e, &sql("qv")), "case {case}: ASOF {op}");
        }
        // No left rows at all: typed empty columns, as the general path gives.
        e.execute("CREATE TABLE w0 (id INT, ts TIMESTAMP, sym SYMBOL, x DOUBLE)").expect("w0");
        let none = "SELECT w.id, w.ts, q.bid FROM w0 w ASOF LEFT JOIN qs q ON w.sym = q.sym AND w.ts >= q.ts";
        let r = e.execute(none).expect("empty ASOF");
        let types: Vec<_> = r.batch().columns.iter().map(|c| c.data_type()).collect();
        use zepto_storage::DataType::{Float64, Int32, Timestamp};
        assert_eq!((r.row_count(), types), (0, vec![Int32, Timestamp, Float64]));
    }
}
