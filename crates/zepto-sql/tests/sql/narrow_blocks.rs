//! Partitions long enough that `sum(p * s)`, `avg(p * s)`, `sum(s)` and `vwap(p, s)` read their
//! blocks' narrow forms (`zepto_storage::narrow`, `exec/accum/dot_blocks.rs`): the answers
//! are the bits of the same aggregates over evaluated columns (which keep no narrow blocks),
//! over whole partitions and time ranges (views that start between blocks, at every offset
//! modulo eight), before and after appends in place, out-of-order appends, updates that
//! leave blocks narrow, updates that make them wide (a long decimal, a size past i32) and
//! deletes; and a query asked twice (blocks made, then kept) gives the same bits. Hourly bars'
//! `min`, `max` and `sum` (long runs: `exec/accum/narrow_runs.rs`) likewise.

use zepto_sql::Engine;

use crate::common;
use common::{lines, Rng};

/// `n` rows over 12 symbols from second `t0` on: prices in cents, sizes up to 5,000. A
/// symbol's rows stay under 8,192 (74,000 rows in all): longer runs sum an evaluated column
/// through its blocks' summaries, in another order than the lanes the reference needs.
fn rows(rng: &mut Rng, n: usize, t0: u64) -> String {
    let mut v = Vec::with_capacity(n);
    for k in 0..n as u64 {
        let px = format!("{}.{:02}", 20 + rng.below(480), rng.below(100));
        let size = 1 + rng.below(5000);
        v.push(format!("({}, 'S{}', {px}, {size}, 0.0)", (t0 + k) * 1_000_000_000, rng.below(12)));
    }
    v.join(", ")
}

/// The aggregates over the columns as stored, against the same over `px + z` (zeros: the
/// same values, evaluated, which keep no narrow blocks), whole and over time ranges starting
/// at every offset modulo 8.
fn check(e: &Engine, what: &str) {
    let ranges = (0..8).map(|k| format!("WHERE ts >= to_timestamp({}) AND ts < to_timestamp(61234)", 1000 + 3 * k));
    for range in std::iter::once(String::new()).chain(ranges) {
        let stored = format!(
            "SELECT sym, sum(px * n), avg(px * n), sum(n), vwap(px, n), sum(px * n) / sum(n) \
             FROM t {range} GROUP BY sym ORDER BY sym"
        );
        let evaluated = format!(
            "SELECT sym, sum((px + z) * n), avg((px + z) * n), sum(n + 0), vwap(px + z, n), \
             sum((px + z) * n) / sum(n + 0) FROM t {range} GROUP BY sym ORDER BY sym"
        );
        let got = lines(e, &stored);
        assert_eq!(got.len(), 12, "{what} {range}: twelve symbols");
        assert_eq!(got, lines(e, &evaluated), "{what} {range}");
        assert_eq!(got, lines(e, &stored), "{what} {range}: asked again");
        // Hourly bars of about 300 rows a symbol: their high, low and volume read the blocks'
        // narrow forms (`exec/accum/narrow_runs.rs`).
        let bars = |p: &str, n: &str| {
            format!(
                "SELECT sym, xbar(INTERVAL '1 hour', ts) AS b, min({p}), max({p}), sum({n}) FROM t {range} \
                 GROUP BY sym, b ORDER BY sym, b"
            )
        };
        let got = lines(e, &bars("px", "n"));
        assert!(got.len() >= 12 * 17, "{what} {range}: hourly bars of twelve symbols ({} lines)", got.len());
        assert_eq!(got, lines(e, &bars("px + z", "n + 0")), "{what} {range}: bars");
        assert_eq!(got, lines(e, &bars("px", "n")), "{what} {range}: bars asked again");
        let highs = |p: &str| {
            format!(
                "SELECT sym, xbar(INTERVAL '1 hour', ts) AS b, max({p}) FROM t {range} GROUP BY sym, b ORDER BY sym, b"
            )
        };
        assert_eq!(lines(e, &highs("px")), lines(e, &highs("px + z")), "{what} {range}: highs alone");
    }
}

#[test]
fn narrow_blocks_answer_as_the_values() {
    let mut rng = Rng::new(0x6a09_e667_f3bc_c908);
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, z DOUBLE)").expect("t");
    common::held_appends(&e, |n, t0| rows(&mut rng, n, t0), check);
    let steps = [
        ("UPDATE t SET px = px + 0.25, n = n + 1 WHERE n % 5 = 0", "updated, still cents"),
        ("UPDATE t SET px = px + 0.000123456789 WHERE n % 997 = 0", "some blocks with long decimals"),
        ("UPDATE t SET n = n * 1000000 WHERE n % 1009 = 0", "some blocks with sizes past i32"),
        ("DELETE FROM t WHERE n % 7 = 0", "deleted"),
    ];
    common::after_each(&e, &steps, check);
}
