//! ASOF JOIN with conditions between the two sides beside its keys and inequality (DuckDB's
//! semantics: a left row meets the nearest right row that also satisfies them), on inputs
//! large enough that the walk from a row's nearest candidate runs many rounds, checked against
//! a nested loop over the same rows: on the partition-pair merge (keys are the tables' SYMBOL
//! partition keys) and on the per-key search (VARCHAR keys), with and without a tolerance, for
//! both directions. The DuckDB-checked cases are in tests/gen/asof_diff.py (make difftest).

use zepto_sql::Engine;
use zepto_storage::Value;

/// A row of either side: id, key, time (microseconds), v.
type Row = (i64, &'static str, i64, i64);

const KEYS: [&str; 3] = ["a", "b", "c"];

/// `n` rows with distinct times (even for the left side, odd for the right: no ties).
fn rows(n: usize, odd: i64, seed: u64) -> Vec<Row> {
    let mut s = seed;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut times: Vec<i64> = (0..n as i64 * 4).map(|t| t * 2 + odd).collect();
    for i in (1..times.len()).rev() {
        times.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    (0..n).map(|i| (i as i64, KEYS[(next() % 3) as usize], times[i], (next() % 1000) as i64)).collect()
}

fn load(e: &Engine, table: &str, key_type: &str, rows: &[Row]) {
    e.execute(&format!("CREATE TABLE {table} (ts TIMESTAMP, k {key_type}, id BIGINT, v BIGINT)")).expect("create");
    let values: Vec<String> = rows
        .iter()
        .map(|(id, k, t, v)| format!("(TIMESTAMP '2024-01-01' + INTERVAL '{t} microseconds', '{k}', {id}, {v})"))
        .collect();
    for chunk in values.chunks(500) {
        e.execute(&format!("INSERT INTO {table} VALUES {}", chunk.join(", "))).expect("insert");
    }
}

/// The nested loop: for each left row, the right row of its key on the inequality's side of
/// it (`backward`: at or before), within `tol`, satisfying `(l.v + r.v) % 97 = 0`, nearest.
fn expected(l: &[Row], r: &[Row], backward: bool, tol: Option<i64>) -> Vec<(i64, Option<i64>)> {
    let mut out: Vec<(i64, Option<i64>)> = l
        .iter()
        .map(|&(id, k, t, v)| {
            let ok = |&&(_, rk, rt, rv): &&Row| {
                rk == k
                    && (if backward { rt <= t } else { rt >= t })
                    && tol.is_none_or(|d| (t - rt).abs() <= d)
                    && (v + rv) % 97 == 0
            };
            let best = if backward {
                r.iter().filter(ok).max_by_key(|x| x.2)
            } else {
                r.iter().filter(ok).min_by_key(|x| x.2)
            };
            (id, best.map(|x| x.0))
        })
        .collect();
    out.sort_unstable();
    out
}

fn got(e: &Engine, sql: &str) -> Vec<(i64, Option<i64>)> {
    let b = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}")).batch();
    let mut out: Vec<(i64, Option<i64>)> = (0..b.rows)
        .map(|i| match (b.columns[0].get(i), b.columns[1].get(i)) {
            (Value::Int64(l), Value::Int64(r)) => (l, Some(r)),
            (Value::Int64(l), Value::Null) => (l, None),
            other => panic!("unexpected row {other:?}"),
        })
        .collect();
    out.sort_unstable();
    out
}

fn plan(e: &Engine, sql: &str) -> String {
    let p = e.execute(&format!("EXPLAIN {sql}")).expect("explain").batch();
    (0..p.rows).map(|i| p.columns[0].get(i).to_string()).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_match_is_the_nearest_row_that_satisfies_every_condition() {
    let (l, r) = (rows(3000, 0, 0x9e37_79b9), rows(3000, 1, 0x1234_5678));
    for (key_type, operator) in [("SYMBOL", "AsofMergeJoin"), ("VARCHAR", "AsofSearchJoin")] {
        let e = Engine::new();
        load(&e, "l", key_type, &l);
        load(&e, "r", key_type, &r);
        for (op, backward) in [(">=", true), ("<=", false)] {
            for tol in [None, Some(2000)] {
                let tol_sql = tol.map(|d| format!(" TOLERANCE INTERVAL '{d} microseconds'")).unwrap_or_default();
                let sql = format!(
                    "SELECT l.id, r.id FROM l ASOF LEFT JOIN r ON l.k = r.k AND (l.v + r.v) % 97 = 0 AND l.ts {op} r.ts{tol_sql}"
                );
                if backward {
                    assert!(plan(&e, &sql).contains(operator), "{key_type}: {}", plan(&e, &sql));
                }
                let want = expected(&l, &r, backward, tol);
                assert!(want.iter().filter(|x| x.1.is_some()).count() > 100, "the condition leaves matches");
                assert_eq!(got(&e, &sql), want, "{key_type} {op} {tol:?}");
                // SEMI and ANTI: the left rows with and without such a match.
                let semi = format!("SELECT l.id, NULL::BIGINT FROM l ASOF SEMI JOIN r ON l.k = r.k AND (l.v + r.v) % 97 = 0 AND l.ts {op} r.ts{tol_sql}");
                let matched: Vec<(i64, Option<i64>)> =
                    want.iter().filter(|x| x.1.is_some()).map(|x| (x.0, None)).collect();
                assert_eq!(got(&e, &semi), matched, "SEMI {key_type} {op} {tol:?}");
                let anti = semi.replace("SEMI", "ANTI");
                assert_eq!(got(&e, &anti).len(), want.len() - matched.len(), "ANTI {key_type} {op} {tol:?}");
            }
        }
    }
}

#[test]
fn what_a_residual_cannot_go_with_is_refused() {
    let e = Engine::new();
    e.execute("CREATE TABLE l (ts TIMESTAMP, k SYMBOL, v BIGINT); CREATE TABLE r (ts TIMESTAMP, k SYMBOL, v BIGINT)")
        .expect("create");
    for (sql, says) in [
        ("SELECT * FROM l ASOF JOIN r ON l.k = r.k AND nearest(l.ts, r.ts) AND l.v + r.v > 1", "nearest()"),
        ("SELECT * FROM l ASOF JOIN r ON l.k = r.k AND (l.ts >= r.ts OR l.v = r.v)", "needs an inequality"),
        ("SELECT * FROM l ASOF JOIN r ON l.ts >= r.ts AND l.v > r.v", "exactly one inequality"),
    ] {
        let err = e.execute(sql).err().unwrap_or_else(|| panic!("{sql} should be refused")).to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
}

/// `rows` with a DOUBLE `w` and a BIGINT `big` beside `v`: on the right side (`odd`) NaN, both
/// infinities, NULL and -1e308 (finite, but ten times it is not) now and then in `w`, and
/// `big` past INTEGER's range; on the left, `w` is -inf now and then. Block summaries must
/// never rule a block out on any of these.
fn load_w(e: &Engine, table: &str, key_type: &str, rows: &[Row], odd: bool) {
    let ddl = format!("CREATE TABLE {table} (ts TIMESTAMP, k {key_type}, id BIGINT, v BIGINT, w DOUBLE, big BIGINT)");
    e.execute(&ddl).expect("create");
    let w = |id: i64, v: i64| match id % 97 {
        _ if !odd && id % 11 == 3 => "'-inf'::DOUBLE".into(),
        _ if !odd => format!("{}", (v * 7919 % 1000) as f64 + 0.5),
        5 => "'NaN'::DOUBLE".into(),
        11 => "'inf'::DOUBLE".into(),
        17 => "'-inf'::DOUBLE".into(),
        23 | 31 => "NULL".into(),
        41 => "-1e308".into(),
        _ => format!("{}", (v * 7919 % 1000) as f64 + 0.25),
    };
    let big = |id: i64, v: i64| if id % 7 == 3 { v + 5_000_000_000 } else { v };
    let values: Vec<String> = rows
        .iter()
        .map(|&(id, k, t, v)| {
            let at = format!("TIMESTAMP '2024-01-01' + INTERVAL '{t} microseconds'");
            format!("({at}, '{k}', {id}, {v}, {}, {})", w(id, v), big(id, v))
        })
        .collect();
    for chunk in values.chunks(500) {
        e.execute(&format!("INSERT INTO {table} VALUES {}", chunk.join(", "))).expect("insert");
    }
}

/// Conditions that move one way with each right column, most rarely true, so walks pass over
/// long stretches of right rows by their blocks' summaries: the same matches as the same
/// condition under `coalesce(.., false)`, which no summary reads (so walks try every pair).
#[test]
fn blocks_a_condition_rules_out_change_no_match() {
    let (l, r) = (rows(2000, 0, 0x5151_7e57), rows(6000, 1, 0x0dd_ba11));
    let conditions = [
        "r.w - l.w > 990",
        "l.w - r.w * 2 > 1900",
        "(r.v - l.v >= 995 OR r.w < 1)",
        "NOT (r.v <= l.v + 990)",
        "r.v * 3 - l.v > 2900 AND r.w / 4 > 100",
        "(l.ts - r.ts > INTERVAL '40 microseconds' OR -r.w < -999)",
        "CAST(r.v AS DOUBLE) + l.w >= 1950",
        // An extreme out of INTEGER's range is NULL, not the block's best value.
        "TRY_CAST(r.big AS INTEGER) - l.v > 990",
        // Ten times -1e308 is -inf: with a left -inf that is NaN, where the block's other rows
        // give -inf >= -inf.
        "(l.w - r.w * 10 >= l.w AND r.v - l.id * 0 > 980)",
    ];
    for key_type in ["SYMBOL", "VARCHAR"] {
        let e = Engine::new();
        load_w(&e, "l", key_type, &l, false);
        load_w(&e, "r", key_type, &r, true);
        for (op, kind) in [(">=", "LEFT"), ("<=", "LEFT"), (">", "SEMI")] {
            for cond in conditions {
                let sql = |c: &str| {
                    let pick = if kind == "SEMI" { "NULL::BIGINT" } else { "r.id" };
                    format!("SELECT l.id, {pick} FROM l ASOF {kind} JOIN r ON l.k = r.k AND {c} AND l.ts {op} r.ts")
                };
                let (fast, every_pair) = (got(&e, &sql(cond)), got(&e, &sql(&format!("coalesce({cond}, false)"))));
                let hits = every_pair.iter().filter(|x| kind == "SEMI" || x.1.is_some()).count();
                assert!(hits > 10, "{cond}: {hits} matches");
                assert_eq!(fast, every_pair, "{key_type} {op} {kind}: {cond}");
            }
        }
    }
}
