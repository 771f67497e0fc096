//! `sum(p * s)` and `avg(p * s)` of two columns read in place (`exec/accum/product.rs`) give
//! the bits of the same sums over the products' column. The reference adds a column of zeros
//! to each product (`p * s + z`), which the in-place path does not take and which leaves every
//! product as it is (no product here is -0.0). Random rows over partitions large and small
//! (loose and packed), queried whole, filtered, by partition, by bar, and without keys (partial
//! sums merged); the same over a table with NULLs, whose partitions with a NULL take the
//! general path and the others the in-place one. VWAP
//! written as `sum(p * s) / sum(s)` gives the bits of `vwap(p, s)`.

use zepto_sql::Engine;

use crate::common;
use common::{lines, Rng};

/// `n` random rows for `(ts, sym, px, n, k, w, z)` from the `from`th on, some cells NULL when
/// `nulls`, each size mapped by `size`.
fn rows(rng: &mut Rng, n: usize, from: usize, nulls: bool, size: impl Fn(i64) -> i64) -> String {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let sym = match rng.below(3) {
            0 => format!("'S{}'", rng.below(400)),
            _ => format!("'B{}'", rng.below(4)),
        };
        let ts = format!("TIMESTAMP '2024-01-02 00:00:00' + INTERVAL '{} milliseconds'", (from + i) * 13);
        let px = format!("{}.{:02}", 10 + rng.below(490), rng.below(100));
        let px = if nulls && rng.below(15) == 0 { "NULL".to_string() } else { px };
        let size = size(100 * (1 + rng.below(40)) as i64 - rng.below(2) as i64 * 7);
        let w = (rng.below(1 << 20) as f64) / 64.0 - 3000.0;
        out.push(format!("({ts}, {sym}, {px}, {size}, {}, {w:?}, 0.0)", rng.below(1000) as i64 - 500));
    }
    out.join(", ")
}

fn engine(nulls: bool) -> Engine {
    engine_with(nulls, |n| n)
}

/// [`engine`] with each size mapped by `size`.
fn engine_with(nulls: bool, size: impl Fn(i64) -> i64) -> Engine {
    let e = Engine::new().with_parallel_min_rows(0);
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, k INTEGER, w DOUBLE, z DOUBLE)")
        .expect("table");
    let mut rng = Rng::new(if nulls { 0xfeed_5eed } else { 0x5eed_feed });
    for batch in 0..6 {
        e.execute(&format!("INSERT INTO t VALUES {}", rows(&mut rng, 4_000, batch * 4_000, nulls, &size)))
            .expect("rows");
    }
    e
}

/// Each query with `{f}` as the sum (or average) in place and as the reference.
const QUERIES: &[&str] = &[
    "SELECT sym, {f}(px * n) FROM t GROUP BY sym ORDER BY sym",
    "SELECT sym, {f}(n * px) FROM t GROUP BY sym ORDER BY sym",
    "SELECT sym, {f}(px * k) FROM t GROUP BY sym ORDER BY sym",
    "SELECT sym, {f}(px * w), {f}(w * px) FROM t GROUP BY sym ORDER BY sym",
    "SELECT {f}(px * n), {f}(px * k) FROM t",
    "SELECT sym, {f}(px * n) FROM t WHERE ts >= TIMESTAMP '2024-01-02 00:01:00' GROUP BY sym ORDER BY sym",
    "SELECT sym, xbar(INTERVAL '10 seconds', ts) AS b, {f}(px * n) FROM t GROUP BY sym, b ORDER BY sym, b",
    "SELECT {f}(px * n) FROM t WHERE sym = 'B1' AND ts < TIMESTAMP '2024-01-02 00:03:00'",
    // Beside sums of the sizes, which then share the product's pass over them.
    "SELECT sym, {f}(px * n), sum(n), avg(n), sum(k) FROM t GROUP BY sym ORDER BY sym",
    "SELECT avg(n), {f}(n * px), sum(n) FROM t",
    "SELECT sym, xbar(INTERVAL '10 seconds', ts) AS b, sum(n), {f}(px * n) FROM t GROUP BY sym, b ORDER BY sym, b",
];

/// `sql` with the product `a * b` (each `p * s` in it) plus the zeros column.
fn reference(sql: &str) -> String {
    let mut out = sql.to_string();
    for prod in ["px * n", "n * px", "px * k", "px * w", "w * px"] {
        out = out.replace(&format!("({prod})"), &format!("({prod} + z)"));
    }
    out
}

fn same_bits(e: &Engine) {
    for q in QUERIES {
        for f in ["sum", "avg"] {
            let sql = q.replace("{f}", f);
            let (got, want) = (lines(e, &sql), lines(e, &reference(&sql)));
            assert!(!got.is_empty(), "{sql}: no rows");
            assert_eq!(got, want, "{sql}");
        }
    }
}

#[test]
fn sums_of_products_in_place_give_the_bits_of_the_products_summed() {
    let e = engine(false);
    same_bits(&e);
}

#[test]
fn sums_of_products_beside_nulls_give_the_same_bits() {
    let e = engine(true);
    assert_eq!(lines(&e, "SELECT count(*) - count(px) > 0 FROM t"), vec!["true"]);
    same_bits(&e);
}

/// Sizes too large for one pass to prove their sum exact (up to 2^47: a partition of more
/// than 32 rows is past the bound), and past 2^51 (up to 2^57, beyond the conversion the AVX2
/// lanes make): each sum is then computed on its own, with the same answers.
#[test]
fn sums_of_products_beside_huge_sizes_give_the_same_bits() {
    for shift in [35, 45] {
        let e = engine_with(false, |n| n << shift);
        same_bits(&e);
    }
}

#[test]
fn vwap_written_as_two_sums_gives_the_bits_of_vwap() {
    let e = engine(false);
    let two = lines(&e, "SELECT sym, sum(px * n) / sum(n) FROM t GROUP BY sym ORDER BY sym");
    let one = lines(&e, "SELECT sym, vwap(px, n) FROM t GROUP BY sym ORDER BY sym");
    assert!(two.len() > 100, "{} groups", two.len());
    assert_eq!(two, one);
}
