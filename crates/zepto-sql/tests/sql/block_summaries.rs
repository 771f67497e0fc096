//! Partitions long enough to be read through their blocks' summaries
//! (`zepto_storage::summary`): `sum`, `avg`, `min` and `max` by partition agree with the same
//! aggregates grouped by hashing (a second key that is not monotonic in time), before and
//! after appends in place, out-of-order appends, updates and deletes of the rows the
//! summaries describe, over whole partitions and over time ranges (views of their columns
//! that start and end between blocks); and a query asked twice (summaries made, then kept)
//! gives the same bits.

use zepto_sql::Engine;

use crate::common;
use common::{lines, sorted_rows, Rng};

const AGGS: &str = "sum(x), avg(x), min(x), max(x), sum(q), avg(q), min(q), max(q), \
                    sum(i), avg(i), min(i), max(i), min(d), max(d), min(ts), max(ts), count(*)";

/// `n` rows over 3 symbols from second `t0` on (time order within each symbol): doubles in
/// quarter units (their sums exact in any order), BIGINTs some near the ends of i64, INTEGERs
/// over all of i32, DATEs.
fn rows(rng: &mut Rng, n: usize, t0: u64) -> String {
    let mut v = Vec::with_capacity(n);
    for k in 0..n as u64 {
        let q = match rng.below(50) {
            0 => i64::MAX - rng.below(1000) as i64,
            1 => i64::MIN + rng.below(1000) as i64,
            _ => rng.below(1 << 40) as i64 - (1 << 39),
        };
        let x = (rng.below(4_000_000) as f64 - 2e6) / 4.0;
        let i = rng.below(1 << 32) as i64 - (1 << 31);
        v.push(format!(
            "({}, 'S{}', {x}, {q}, {i}, DATE '2024-01-01' + {})",
            (t0 + k) * 1_000_000_000,
            rng.below(3),
            rng.below(3000)
        ));
    }
    v.join(", ")
}

/// The partition-wise answer (one run per symbol) against hashed groups, and asked again;
/// then over time ranges that cut partitions between blocks (views of their columns).
fn check(e: &Engine, what: &str) {
    for range in ["", "WHERE ts >= to_timestamp(1234) AND ts < to_timestamp(51234)", "WHERE ts < to_timestamp(30000)"] {
        let by_partition = format!("SELECT sym, {AGGS} FROM t {range} GROUP BY sym");
        let hashed = format!("SELECT sym, {AGGS} FROM t {range} GROUP BY sym, i % 1");
        assert_eq!(sorted_rows(e, &by_partition, 15), sorted_rows(e, &hashed, 15), "{what} {range}");
        let first = lines(e, &format!("{by_partition} ORDER BY sym"));
        assert_eq!(first.len(), 3, "{what} {range}: three symbols");
        assert_eq!(first, lines(e, &format!("{by_partition} ORDER BY sym")), "{what} {range}: asked again");
    }
}

#[test]
fn summarized_partitions_answer_as_hashed_groups() {
    let mut rng = Rng::new(0x510e_527f_ade6_82d1);
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x DOUBLE, q BIGINT, i INTEGER, d DATE)").expect("t");
    common::held_appends(&e, |n, t0| rows(&mut rng, n, t0), check);
    let steps = [
        ("UPDATE t SET x = x + 0.5, q = q / 3 WHERE i % 5 = 0", "updated"),
        ("UPDATE t SET x = CAST('NaN' AS DOUBLE) WHERE i % 9973 = 0", "a NaN in some blocks"),
        ("DELETE FROM t WHERE i % 7 = 0", "deleted"),
        ("UPDATE t SET x = CAST('Infinity' AS DOUBLE), q = 0 WHERE i % 3 = 0", "infinities"),
    ];
    common::after_each(&e, &steps, check);
}
