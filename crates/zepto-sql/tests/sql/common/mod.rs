//! Helpers shared by this crate's integration tests (each test uses some of them).
#![allow(dead_code, unused_imports)]

use zepto_sql::Engine;
use zepto_storage::column::Column;

/// The shared deterministic generator of test data.
pub use zepto_storage::rng::XorShift as Rng;

/// One cell as text, floats to `digits` significant digits (sums merged in another order
/// differ in their last bits).
pub fn cell(c: &Column, i: usize, digits: usize) -> String {
    match c.get(i) {
        zepto_storage::Value::Float64(f) => format!("{f:.digits$e}"),
        zepto_storage::Value::Float32(f) => format!("{f:.digits$e}"),
        v => format!("{v:?}"),
    }
}

/// The rows of `sql`'s answer on `e`, each as `|`-separated cells, sorted.
pub fn sorted_rows(e: &Engine, sql: &str, digits: usize) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = &r.batch();
    let mut out: Vec<String> =
        (0..b.rows).map(|i| b.columns.iter().map(|c| cell(c, i, digits)).collect::<Vec<_>>().join("|")).collect();
    out.sort();
    out
}

/// The rows of `sql`'s answer on `e` in its order, each as tab-separated displayed cells.
pub fn lines(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = r.batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("\t")).collect()
}

/// The error `sql` fails with on `e` (a test failure if it runs).
pub fn refused(e: &Engine, sql: &str) -> String {
    match e.execute(sql) {
        Ok(_) => panic!("{sql}: expected an error"),
        Err(err) => err.to_string(),
    }
}

/// A table's rows through the writes that keep or replace what its shared columns keep for
/// their blocks (summaries, narrow forms), `check`ed after each: 60,000 rows; 10,000
/// appended in place while a query holds the columns; 4,000 before the latest ones (merged,
/// moving later rows), inserted 2,000 at a time into table `t`. `rows(n, t0)` is the SQL
/// text of `n` rows from second `t0` on.
pub fn held_appends(e: &Engine, mut rows: impl FnMut(usize, u64) -> String, check: impl Fn(&Engine, &str)) {
    let mut insert = |e: &Engine, n: usize, t0: u64| {
        for b in 0..n / 2000 {
            let sql = format!("INSERT INTO t VALUES {}", rows(2000, t0 + (b * 2000) as u64));
            e.execute(&sql).unwrap_or_else(|err| panic!("insert: {err}"));
        }
    };
    insert(e, 60_000, 0);
    check(e, "loaded");
    let held = e.execute("SELECT * FROM t").expect("held");
    insert(e, 10_000, 60_000);
    check(e, "appended");
    drop(held);
    insert(e, 4_000, 30_000);
    check(e, "merged");
}

/// Each of `steps` (a statement, and what it did for `check`'s messages) run on `e`, `check`ed
/// after it.
pub fn after_each(e: &Engine, steps: &[(&str, &str)], check: impl Fn(&Engine, &str)) {
    for &(sql, what) in steps {
        e.execute(sql).unwrap_or_else(|err| panic!("{what}: {sql}: {err}"));
        check(e, what);
    }
}
