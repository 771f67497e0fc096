//! `LATEST ON ts PARTITION BY key` answered from partition tails keeps its last answer as a
//! memo (`zepto_storage::table::TailMemo`) and reuses the rows of partitions that did not
//! change. Differential test: random appends (in order and late), UPDATEs, DELETEs, new
//! symbols, a new column and NULL timestamps, each followed by the LATEST queries (every
//! column, some columns, a time-bounded one), compared in answer order with the last row per
//! key found by sorting every row.

use std::collections::BTreeMap;
use zepto_sql::Engine;
use zepto_storage::rng::XorShift;

/// Rows of `sql` as text, one string per row, in answer order.
fn rows(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = r.batch();
    (0..r.row_count()).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("|")).collect()
}

/// The last row per `sym` with a timestamp, by sorting every row, in time order: the oracle.
/// Timestamps are distinct (in-order rows even, late rows odd), so "last" has one answer and
/// so has the order. `cols` is the select list; `sym` comes first.
fn oracle(e: &Engine, cols: &str, bound: &str) -> Vec<String> {
    let mut last: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for (k, r) in
        rows(e, &format!("SELECT {cols} FROM t WHERE ts IS NOT NULL {bound} ORDER BY ts")).into_iter().enumerate()
    {
        let sym = r.split('|').next().unwrap_or_default().to_string();
        last.insert(sym, (k, r));
    }
    let mut out: Vec<(usize, String)> = last.into_values().collect();
    out.sort();
    out.into_iter().map(|(_, r)| r).collect()
}

fn latest(e: &Engine, cols: &str, bound: &str) -> Vec<String> {
    let filter = if bound.is_empty() { String::new() } else { format!("WHERE {} ", bound.trim_start_matches("AND ")) };
    rows(e, &format!("SELECT {cols} FROM t {filter}LATEST ON ts PARTITION BY sym"))
}

/// One random change to `t`; `next_ts` counts up, rows in order get `2 * next_ts`, late rows
/// an odd time below it.
fn change(e: &Engine, rng: &mut XorShift, next_ts: &mut i64, step: usize) {
    let sym = |rng: &mut XorShift| format!("S{}", rng.below(12));
    let sql = match rng.below(10) {
        _ if step == 40 => "ALTER TABLE t ADD COLUMN note VARCHAR".to_string(),
        0..=3 => {
            let values: Vec<String> = (0..1 + rng.below(20))
                .map(|_| {
                    *next_ts += 1 + rng.below(5) as i64;
                    // A late row now and then: a timestamp below ones already stored.
                    let t = if rng.below(4) == 0 { 2 * *next_ts - 81 } else { 2 * *next_ts };
                    format!("({t}, '{}', {})", sym(rng), rng.below(1000))
                })
                .collect();
            format!("INSERT INTO t (ts, sym, px) VALUES {}", values.join(", "))
        }
        4 => format!("INSERT INTO t (ts, sym, px) VALUES (NULL, '{}', 1)", sym(rng)),
        5 | 6 => format!("UPDATE t SET px = px + 1000 WHERE sym = '{}'", sym(rng)),
        7 => format!(
            "DELETE FROM t WHERE sym = '{}' AND ts > CAST({} AS TIMESTAMP)",
            sym(rng),
            2 * (*next_ts - rng.below(30) as i64)
        ),
        _ => format!("INSERT INTO t (ts, sym, px) VALUES ({}, 'N{step}', 7)", {
            *next_ts += 1;
            2 * *next_ts
        }),
    };
    e.execute(&sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
}

#[test]
fn latest_rows_follow_every_change_to_the_table() {
    let mut rng = XorShift::new(51);
    for round in 0..4 {
        let e = Engine::new();
        e.execute("CREATE TABLE t (sym SYMBOL, ts TIMESTAMP, px BIGINT)").expect("create");
        let mut next_ts = 1_000;
        for step in 0..120 {
            change(&e, &mut rng, &mut next_ts, step);
            let bound = format!("AND ts < CAST({} AS TIMESTAMP)", 2 * (next_ts - 10));
            for (cols, bound) in [("*", ""), ("sym, ts, px", ""), ("sym, ts", ""), ("*", ""), ("*", bound.as_str())] {
                assert_eq!(
                    latest(&e, cols, bound),
                    oracle(&e, cols, bound),
                    "round {round} step {step}: {cols} {bound}"
                );
            }
        }
        let columns = e.catalog().snapshot("t").expect("t").schema().columns.len();
        assert_eq!(columns, 4, "round {round}: the column added at step 40");
    }
}

/// A query of the latest rows while nothing changed answers from the memo, rows with the
/// same time in partition order either way, and a change to one partition is seen in the
/// next answer.
#[test]
fn an_unchanged_table_answers_from_the_memo() {
    let e = Engine::new();
    e.execute("CREATE TABLE t (sym SYMBOL, ts TIMESTAMP, px BIGINT)").expect("create");
    // Every series' last row at the same time: the answer's order is the partitions'.
    let values: Vec<String> = (0..2_000).map(|i| format!("({}, 'S{}', {i})", 1_000 + i / 500, i % 500)).collect();
    e.execute(&format!("INSERT INTO t (ts, sym, px) VALUES {}", values.join(", "))).expect("insert");
    let first = latest(&e, "*", "");
    assert_eq!(first.len(), 500);
    let memo = e.catalog().snapshot("t").expect("t").tail_memo().expect("the answer is kept");
    assert_eq!(memo.len(), 500);
    assert_eq!(latest(&e, "*", ""), first);
    e.execute("UPDATE t SET px = -1 WHERE sym = 'S7'").expect("update");
    let after = latest(&e, "*", "");
    assert_eq!(after.len(), 500);
    assert!(after[7].starts_with("S7|") && after[7].ends_with("|-1"), "{:?}", &after[..9]);
    let mut unchanged = after.clone();
    unchanged[7] = first[7].clone();
    assert_eq!(unchanged, first, "the other rows, in the same order");
}
