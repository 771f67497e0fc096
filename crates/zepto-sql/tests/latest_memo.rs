//! `LATEST ON ts PARTITION BY key` answered from partition tails keeps its last answer as a
//! memo (`zepto_storage::table::TailMemo`) and reuses the rows of partitions that did not
//! change. Differential test: random appends (in order and late), UPDATEs, DELETEs, new
//! symbols, a new column and NULL timestamps, each followed by the LATEST queries (every
//! column, some columns, a time-bounded one), compared with the last row per key found by
//! sorting every row.

use std::collections::BTreeMap;
use zepto_sql::Engine;
use zepto_storage::rng::XorShift;

/// Rows of `sql` as text, one string per row, in answer order.
fn rows(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = r.batch();
    (0..r.row_count()).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("|")).collect()
}

/// The last row per `sym` with a timestamp, by sorting every row: the oracle. Timestamps are
/// distinct, so "last" has one answer. `cols` is the select list; `sym` and `ts` come first.
fn oracle(e: &Engine, cols: &str, bound: &str) -> Vec<String> {
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    for r in rows(e, &format!("SELECT {cols} FROM t WHERE ts IS NOT NULL {bound} ORDER BY ts")) {
        let sym = r.split('|').next().unwrap_or_default().to_string();
        last.insert(sym, r);
    }
    let mut out: Vec<String> = last.into_values().collect();
    out.sort();
    out
}

fn latest(e: &Engine, cols: &str, bound: &str) -> Vec<String> {
    let filter = if bound.is_empty() { String::new() } else { format!("WHERE {} ", bound.trim_start_matches("AND ")) };
    let mut out = rows(e, &format!("SELECT {cols} FROM t {filter}LATEST ON ts PARTITION BY sym"));
    out.sort();
    out
}

/// One random change to `t`; `next_ts` hands out distinct timestamps.
fn change(e: &Engine, rng: &mut XorShift, next_ts: &mut i64, step: usize) {
    let sym = |rng: &mut XorShift| format!("S{}", rng.below(12));
    let sql = match rng.below(10) {
        0..=3 => {
            let values: Vec<String> = (0..1 + rng.below(20))
                .map(|_| {
                    *next_ts += 1 + rng.below(5) as i64;
                    // A late row now and then: a timestamp below ones already stored.
                    let t = if rng.below(4) == 0 { *next_ts - 40 } else { *next_ts };
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
            *next_ts - rng.below(30) as i64
        ),
        8 if step == 40 => "ALTER TABLE t ADD COLUMN note VARCHAR".to_string(),
        _ => format!("INSERT INTO t (ts, sym, px) VALUES ({}, 'N{step}', 7)", {
            *next_ts += 1;
            *next_ts
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
            let bound = format!("AND ts < CAST({} AS TIMESTAMP)", next_ts - 10);
            for (cols, bound) in [("*", ""), ("sym, ts, px", ""), ("sym, ts", ""), ("*", ""), ("*", bound.as_str())] {
                assert_eq!(
                    latest(&e, cols, bound),
                    oracle(&e, cols, bound),
                    "round {round} step {step}: {cols} {bound}"
                );
            }
        }
    }
}

/// A query of the latest rows while nothing changed reuses the memo (the same answer), and a
/// change to one partition is seen in the next answer.
#[test]
fn an_unchanged_table_answers_from_the_memo() {
    let e = Engine::new();
    e.execute("CREATE TABLE t (sym SYMBOL, ts TIMESTAMP, px BIGINT)").expect("create");
    let values: Vec<String> = (0..2_000).map(|i| format!("({}, 'S{}', {i})", 1_000 + i, i % 500)).collect();
    e.execute(&format!("INSERT INTO t (ts, sym, px) VALUES {}", values.join(", "))).expect("insert");
    let first = latest(&e, "*", "");
    assert_eq!(first.len(), 500);
    assert_eq!(latest(&e, "*", ""), first);
    e.execute("UPDATE t SET px = -1 WHERE sym = 'S7'").expect("update");
    let after = latest(&e, "*", "");
    assert_eq!(after, oracle(&e, "*", ""));
    assert!(after.iter().any(|r| r.starts_with("S7|") && r.ends_with("|-1")), "{after:?}");
}
