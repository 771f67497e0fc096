//! `TimeTopN`: `ORDER BY ts [DESC] LIMIT k` over rows whose first sort key is the designated
//! timestamp itself reads the newest (or oldest) rows first and widens the window until the
//! limit is met (`plan/bucket_topn.rs`). Its answer must be the plain TopN's, row for row and
//! in order: times tie within and across partitions, some are NULL, filters pass few rows,
//! partitions range from one row to thousands. The plain TopN runs the same query over a
//! LIMIT no scan shape sees through.

use zepto_sql::Engine;

use crate::common;
use common::Rng;

fn explain(e: &Engine, sql: &str) -> String {
    common::lines(e, &format!("EXPLAIN {sql}")).join("\n")
}

/// `n` rows over `syms` symbols (a third of them on symbol 0), times on a coarse grid so that
/// they tie, one in 25 NULL.
fn values(rng: &mut Rng, n: usize, syms: u64) -> String {
    let rows: Vec<String> = (0..n)
        .map(|_| {
            let sym = if rng.below(3) == 0 { 0 } else { rng.below(syms) };
            let ts = match rng.below(25) {
                0 => "NULL".to_string(),
                _ => format!("'2024-01-02 09:{:02}:{:02}'", 30 + rng.below(20), rng.below(60)),
            };
            format!("({ts}, 'S{sym}', {}.5, {})", rng.below(500), rng.below(1000))
        })
        .collect();
    rows.join(", ")
}

#[test]
fn rows_by_time_answer_as_the_plain_topn() {
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    for syms in [1, 7, 300] {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT)").expect("t");
        for _ in 0..4 {
            e.execute(&format!("INSERT INTO t VALUES {}", values(&mut rng, 700, syms))).expect("rows");
        }
        let filters = [
            "",
            "WHERE sym = 'S0'",
            "WHERE sym IN ('S1', 'S2', 'S404')",
            "WHERE n > 990",
            "WHERE n > 100000",
            "WHERE ts < '2024-01-02 09:41:00' AND px > 100",
            "WHERE ts BETWEEN '2024-01-02 09:35:00' AND '2024-01-02 09:36:00'",
        ];
        let orders = ["ts DESC", "ts", "ts DESC, n", "ts, sym DESC, n", "ts DESC NULLS LAST, px"];
        for filter in filters {
            for order in orders {
                for limit in ["LIMIT 1", "LIMIT 3", "LIMIT 40 OFFSET 5", "LIMIT 100000"] {
                    let direct = format!("SELECT ts, sym, px, n FROM t {filter} ORDER BY {order} {limit}");
                    let plan = explain(&e, &direct);
                    assert!(plan.contains("TimeTopN"), "{direct}\n{plan}");
                    let plain = direct.replace("FROM t", "FROM (SELECT * FROM t LIMIT 1000000000) s");
                    assert!(!explain(&e, &plain).contains("TimeTopN"), "{plain}");
                    assert_eq!(common::lines(&e, &direct), common::lines(&e, &plain), "{syms} symbols: {direct}");
                }
            }
            let grouped = format!("SELECT ts, count(*), sum(n) FROM t {filter} GROUP BY ts ORDER BY ts DESC LIMIT 4");
            assert!(explain(&e, &grouped).contains("TimeTopN"), "{grouped}");
            let plain = grouped.replace("FROM t", "FROM (SELECT * FROM t LIMIT 1000000000) s");
            assert_eq!(common::lines(&e, &grouped), common::lines(&e, &plain), "{syms} symbols: {grouped}");
        }
        // NULL times first over an unbounded range: the newest rows are not the first ones.
        let nulls_first = "SELECT ts, n FROM t ORDER BY ts DESC NULLS FIRST, n LIMIT 3";
        assert!(!explain(&e, nulls_first).contains("TimeTopN"), "{nulls_first}");
        // Another first key, or one computed from the time, sorts as before.
        for other in [
            "SELECT ts, n FROM t ORDER BY n, ts LIMIT 3",
            "SELECT ts + INTERVAL 1 second AS t1 FROM t ORDER BY t1 LIMIT 3",
        ] {
            assert!(!explain(&e, other).contains("TimeTopN"), "{other}");
        }
    }
}
