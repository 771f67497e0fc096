//! ASOF RIGHT and FULL JOIN where DuckDB cannot be the oracle: NULL left times (DuckDB 1.5.6
//! matches them in these joins; here a NULL time never matches), a condition on one side
//! (DuckDB refuses those in RIGHT and FULL ASOF joins), and the partition-pair merge the
//! planner must not choose (it walks left partitions, so it could not find the right rows no
//! left row matched). The DuckDB-checked cases are in tests/slt/16_asof.slt.

use zepto_sql::Engine;
use zepto_storage::Value;

fn rows(e: &Engine, sql: &str) -> Vec<Vec<Value>> {
    let b = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}")).batch();
    let mut out: Vec<Vec<Value>> = (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i)).collect()).collect();
    out.sort_by_key(|r| format!("{r:?}"));
    out
}

fn engine() -> Engine {
    let e = Engine::new();
    e.execute(
        "CREATE TABLE l (id INT, k VARCHAR, ts BIGINT);
         INSERT INTO l VALUES (1, 'a', 10), (2, 'a', 20), (3, 'b', 5), (4, NULL, 7), (5, 'a', NULL);
         CREATE TABLE r (k VARCHAR, ts BIGINT, v INT);
         INSERT INTO r VALUES ('a', 9, 100), ('a', 15, 200), ('a', 30, 300), ('b', 6, 400), ('c', 1, 500),
                              (NULL, 1, 600), ('a', NULL, 700)",
    )
    .expect("setup");
    e
}

fn explain(e: &Engine, sql: &str) -> String {
    let plan = e.execute(&format!("EXPLAIN {sql}")).expect("explain");
    (0..plan.batch().rows).map(|i| plan.batch().columns[0].get(i).to_string()).collect::<Vec<_>>().join("\n")
}

fn pairs(v: &[(Option<i32>, i32)]) -> Vec<Vec<Value>> {
    let mut out: Vec<Vec<Value>> =
        v.iter().map(|&(l, r)| vec![l.map_or(Value::Null, Value::Int32), Value::Int32(r)]).collect();
    out.sort_by_key(|r| format!("{r:?}"));
    out
}

#[test]
fn right_keeps_every_right_row_once_and_null_times_never_match() {
    let e = engine();
    let got = rows(&e, "SELECT l.id, r.v FROM l ASOF RIGHT JOIN r ON l.k = r.k AND l.ts >= r.ts");
    // 1 -> 100, 2 -> 200; 300, 400 (3 at 5 is before 6), 500, 600 (NULL key), 700 (NULL time)
    // unmatched; left 4 (NULL key) and 5 (NULL time) match nothing and are not kept.
    let want =
        pairs(&[(Some(1), 100), (Some(2), 200), (None, 300), (None, 400), (None, 500), (None, 600), (None, 700)]);
    assert_eq!(got, want);
}

#[test]
fn full_keeps_the_unmatched_of_both_sides() {
    let e = engine();
    let got = rows(&e, "SELECT l.id, r.v FROM l ASOF FULL JOIN r ON l.k = r.k AND l.ts >= r.ts");
    let mut want = pairs(&[(Some(1), 100), (Some(2), 200), (None, 300), (None, 400), (None, 500), (None, 600)]);
    want.push(vec![Value::Null, Value::Int32(700)]);
    for id in [3, 4, 5] {
        want.push(vec![Value::Int32(id), Value::Null]);
    }
    want.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(got, want);
}

#[test]
fn one_sided_conditions_decide_matches_and_drop_no_kept_row() {
    let e = engine();
    // A right row failing its condition is searched by no left row, and kept unmatched.
    let got = rows(&e, "SELECT l.id, r.v FROM l ASOF RIGHT JOIN r ON l.k = r.k AND l.ts >= r.ts AND r.v <> 200");
    let want = pairs(&[
        (Some(1), 100),
        (Some(2), 100),
        (None, 200),
        (None, 300),
        (None, 400),
        (None, 500),
        (None, 600),
        (None, 700),
    ]);
    // Left 2 (ts 20) now meets 100: 200 is out of its search; 100 is matched twice.
    assert_eq!(got, want);
    // A left row failing its condition finds no match (FULL keeps it with NULLs).
    let got = rows(&e, "SELECT l.id, r.v FROM l ASOF FULL JOIN r ON l.k = r.k AND l.ts >= r.ts AND l.id <> 2");
    let has = |l: Value, r: Value| got.contains(&vec![l, r]);
    assert!(has(Value::Int32(2), Value::Null) && has(Value::Null, Value::Int32(200)), "{got:?}");
    assert_eq!(got.len(), 11, "{got:?}");
}

#[test]
fn a_keyed_timed_scan_pair_is_searched_not_merged() {
    let e = Engine::new();
    e.execute(
        "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE);
         CREATE TABLE q (ts TIMESTAMP, sym SYMBOL, bid DOUBLE);
         INSERT INTO t VALUES ('2024-01-02 10:00:00', 'A', 1.0), ('2024-01-02 10:05:00', 'A', 2.0);
         INSERT INTO q VALUES ('2024-01-02 09:59:00', 'A', 10.0), ('2024-01-02 10:01:00', 'A', 11.0),
                              ('2024-01-02 10:02:00', 'A', 12.0), ('2024-01-02 09:00:00', 'B', 20.0)",
    )
    .expect("setup");
    let sql = "SELECT t.px, q.bid FROM t ASOF RIGHT JOIN q ON t.sym = q.sym AND t.ts >= q.ts";
    let text = explain(&e, sql);
    assert!(text.contains("AsofSearchJoin RIGHT"), "{text}");
    // A partition-pair merge over `t` could not have seen B (no left partition) nor 11.0.
    let f = |x: Option<f64>, y: f64| vec![x.map_or(Value::Null, Value::Float64), Value::Float64(y)];
    let mut want = vec![f(Some(1.0), 10.0), f(Some(2.0), 12.0), f(None, 11.0), f(None, 20.0)];
    want.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(rows(&e, sql), want);
    // The LEFT join of the same scans still merges partition pairs.
    let text = explain(&e, &sql.replace("RIGHT", "LEFT"));
    assert!(text.contains("AsofMergeJoin LEFT"), "{text}");
}
