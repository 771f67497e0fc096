//! TopN over the input's chunks (`exec/topn.rs`): each partition keeps the rows whose first
//! key may be among the first `k`, and the exact TopN runs over those. Its answer must be the
//! first `k` rows of the full sort, row for row and in order, over keys of every mapped type
//! with NULLs, NaN, both zeros and heavy ties, in both directions and NULL placements, with
//! more keys after the first, offsets and filters, over a few large partitions and many
//! small ones.

use zepto_sql::Engine;

use crate::common;
use common::Rng;

/// `n` rows over `syms` symbols: every value column has NULLs, `x` NaN and both zeros, `g`
/// three values (ties), `d` dates.
fn values(rng: &mut Rng, n: usize, syms: u64) -> String {
    let rows: Vec<String> = (0..n)
        .map(|i| {
            let sym = if rng.below(3) == 0 { 0 } else { rng.below(syms) };
            let ts = format!("'2024-01-02 09:{:02}:{:02}.{:03}'", 30 + i / 3600 % 30, i / 60 % 60, i % 1000);
            let x = match rng.below(12) {
                0 => "NULL".to_string(),
                1 => "'NaN'::DOUBLE".to_string(),
                2 => "-0.0".to_string(),
                3 => "0.0".to_string(),
                _ => format!("{}.25", rng.below(2000) as i64 - 1000),
            };
            let g = if rng.below(10) == 0 { "NULL".to_string() } else { rng.below(3).to_string() };
            let n = if rng.below(10) == 0 {
                "NULL".to_string()
            } else {
                (rng.below(1 << 40) as i64 - (1 << 39)).to_string()
            };
            let d = format!("DATE '2024-01-{:02}'", 1 + rng.below(28));
            format!("({ts}, 'S{sym}', {x}, {g}, {n}, {d})")
        })
        .collect();
    rows.join(", ")
}

#[test]
fn chunked_topn_answers_as_the_full_sort() {
    let mut rng = Rng::new(0x5851_f42d_4c95_7f2d);
    for (syms, par) in [(4, false), (300, true)] {
        let e = if par { Engine::new().with_parallel_min_rows(0) } else { Engine::new() };
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x DOUBLE, g INT, n BIGINT, d DATE)").expect("t");
        for _ in 0..3 {
            e.execute(&format!("INSERT INTO t VALUES {}", values(&mut rng, 1500, syms))).expect("rows");
        }
        let orders = [
            "x",
            "x DESC",
            "x NULLS FIRST",
            "x DESC NULLS FIRST, n",
            "g, x DESC",
            "g DESC NULLS FIRST, n, ts",
            "n DESC",
            "n NULLS FIRST, sym",
            "d, ts DESC",
            "d DESC, x, n",
            "x * 2 DESC, n",
            "sym, x",
        ];
        for filter in ["", "WHERE n > 0", "WHERE sym IN ('S1', 'S2') OR g = 2"] {
            for order in orders {
                let all = common::lines(&e, &format!("SELECT ts, sym, x, g, n, d FROM t {filter} ORDER BY {order}"));
                for (k, offset) in [(1, 0), (5, 0), (20, 7), (100, 0)] {
                    let sql = format!(
                        "SELECT ts, sym, x, g, n, d FROM t {filter} ORDER BY {order} LIMIT {k} OFFSET {offset}"
                    );
                    let want: Vec<String> = all.iter().skip(offset).take(k).cloned().collect();
                    assert_eq!(common::lines(&e, &sql), want, "{syms} symbols: {sql}");
                }
            }
        }
    }
}
