//! Long `IN` lists run as hash lookups (8 constants or more): answers checked against the rows
//! counted here on generated data, NULLs on both sides and `NOT IN`; EXPLAIN says so; a list on
//! the partition key still prunes partitions and a DELETE by a list of times still finds its
//! rows by binary search. The DuckDB-checked cases are in tests/slt/02_where.slt and the
//! random IN lists of tests/gen/random_diff.py.

use zepto_sql::Engine;
use zepto_storage::Value;

/// 3,000 rows of (ts, sym, a, s): `a` in 0..500 with every 13th NULL, `s` its text.
fn engine() -> Engine {
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, a BIGINT, s VARCHAR)").expect("create");
    let mut x = 7u64;
    let rows: Vec<String> = (0..3_000)
        .map(|i| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let a = (x >> 33) % 500;
            let sym = ["A", "B", "C", "D"][(x >> 20) as usize % 4];
            if i % 13 == 0 {
                format!("({i}, '{sym}', NULL, NULL)")
            } else {
                format!("({i}, '{sym}', {a}, 'k{a}')")
            }
        })
        .collect();
    for chunk in rows.chunks(500) {
        e.execute(&format!("INSERT INTO t VALUES {}", chunk.join(","))).expect("insert");
    }
    e
}

fn count(e: &Engine, sql: &str) -> i64 {
    match e.execute(sql).expect(sql).batch().columns[0].get(0) {
        Value::Int64(n) => n,
        v => panic!("{sql}: {v:?}"),
    }
}

fn explain(e: &Engine, sql: &str) -> String {
    let plan = e.execute(&format!("EXPLAIN {sql}")).expect("explain");
    (0..plan.batch().rows).map(|i| plan.batch().columns[0].get(i).to_string()).collect::<Vec<_>>().join("\n")
}

/// The values of `a` (NULL as None), as stored.
fn column_a(e: &Engine) -> Vec<Option<i64>> {
    let r = e.execute("SELECT a FROM t").expect("a");
    (0..r.row_count())
        .map(|i| match r.batch().columns[0].get(i) {
            Value::Int64(v) => Some(v),
            _ => None,
        })
        .collect()
}

#[test]
fn hashed_lists_answer_as_sql_says() {
    let e = engine();
    let a = column_a(&e);
    for size in [8usize, 50, 1_000, 20_000] {
        let items: Vec<i64> = (0..size as i64).map(|k| k * 7 % 997).collect();
        let list = items.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let member = |v: &Option<i64>| v.is_some_and(|v| items.contains(&v));
        let want_in = a.iter().filter(|v| member(v)).count() as i64;
        let want_not_in = a.iter().filter(|v| v.is_some() && !member(v)).count() as i64;
        assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE a IN ({list})")), want_in, "{size}");
        assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE a NOT IN ({list})")), want_not_in, "{size}");
        // A NULL item: a row that matches nothing is unknown, so NOT IN holds for no row.
        assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE a IN ({list}, NULL)")), want_in);
        assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE a NOT IN ({list}, NULL)")), 0);
        let unknown = a.iter().filter(|v| !member(v)).count() as i64;
        let sql = format!("SELECT count(*) FROM t WHERE (a IN ({list}, NULL)) IS NULL");
        assert_eq!(count(&e, &sql), unknown, "{size}");
        // Text, and floats against the integer column (the list decides the type).
        let texts = items.iter().map(|k| format!("'k{k}'")).collect::<Vec<_>>().join(",");
        assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE s IN ({texts})")), want_in);
        let floats = items.iter().map(|k| format!("{k}.0")).collect::<Vec<_>>().join(",");
        assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE a IN ({floats}, 0.5)")), want_in);
    }
}

#[test]
fn explain_shows_the_lookup_and_keys_still_prune() {
    let e = engine();
    let list = (0..100).map(|k| k.to_string()).collect::<Vec<_>>().join(",");
    let plan = explain(&e, &format!("SELECT count(*) FROM t WHERE a + 1 IN ({list})"));
    assert!(plan.contains("IN by hash lookup over 100 constants"), "{plan}");
    let short = explain(&e, "SELECT count(*) FROM t WHERE a + 1 IN (1, 2, 3)");
    assert!(!short.contains("hash lookup"), "{short}");
    let syms = "'A','C','X1','X2','X3','X4','X5','X6','X7'";
    let plan = explain(&e, &format!("SELECT count(*) FROM t WHERE sym IN ({syms})"));
    assert!(plan.contains("partitions=[\"A\", \"C\""), "{plan}");
    let want = count(&e, "SELECT count(*) FROM t WHERE sym = 'A' OR sym = 'C'");
    assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE sym IN ({syms})")), want);
    let want = count(&e, "SELECT count(*) FROM t WHERE sym = 'B' OR sym = 'D'");
    assert_eq!(count(&e, &format!("SELECT count(*) FROM t WHERE sym NOT IN ({syms})")), want);
}

#[test]
fn a_delete_by_many_times_removes_those_rows() {
    let e = engine();
    let times: Vec<String> =
        (0..3_000).step_by(3).map(|i| format!("TIMESTAMP '1970-01-01' + INTERVAL '{i} nanoseconds'")).collect();
    e.execute(&format!("DELETE FROM t WHERE ts IN ({})", times.join(","))).expect("delete");
    assert_eq!(count(&e, "SELECT count(*) FROM t"), 2_000);
    assert_eq!(count(&e, "SELECT count(*) FROM t WHERE epoch_ns(ts) % 3 = 0"), 0);
}

#[test]
fn a_subquery_of_many_values_is_a_lookup_too() {
    let e = engine();
    let want = count(&e, "SELECT count(*) FROM t WHERE a IS NOT NULL AND a < 250");
    let sql = "SELECT count(*) FROM t WHERE a IN (SELECT a FROM t WHERE a < 250)";
    assert_eq!(count(&e, sql), want);
    assert!(explain(&e, sql).contains("IN by hash lookup"), "{}", explain(&e, sql));
}

/// A list of integer literals only, or string literals only, is held packed from the parser
/// on (`InValues`) and bound straight into the set: it answers (and fails) as the same list
/// does when one item is written as an expression (a cast to its own type), which keeps it a
/// list of expressions. Every column type against both kinds, short and long lists, numbers past
/// INTEGER, numeric and other strings, the select list's column name and `NOT IN`.
#[test]
fn packed_lists_answer_as_lists_of_expressions() {
    let e = engine();
    e.execute("CREATE TABLE u (ts TIMESTAMP, i INTEGER, b BIGINT, d DOUBLE, v VARCHAR, y SYMBOL)").expect("create");
    let rows: Vec<String> = (0..400)
        .map(|k| format!("({k}, {}, {}, {}.5, '{}', 's{}')", k % 37, k * 1_000_003, k % 11, k % 23, k % 7))
        .collect();
    e.execute(&format!("INSERT INTO u VALUES {}", rows.join(","))).expect("insert");
    let mut x = 11u64;
    let mut next = |n: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    let mut compared = 0;
    for round in 0..120 {
        let size = [1usize, 3, 8, 40, 300][round % 5];
        let items: Vec<String> = (0..size)
            .map(|_| match round % 4 {
                0 => (next(60) as i64 - 5).to_string(),
                // Both INTEGER and BIGINT literals (past 2^31) in one list.
                1 => (next(400) * [1_000_003, 10_000_019][next(2) as usize]).to_string(),
                2 => format!("'{}'", next(30)),
                _ => ["'s1'", "'s3'", "'7'", "'x''y'", "'12'"][next(5) as usize].to_string(),
            })
            .collect();
        let packed = items.join(", ");
        // The first item cast to the type its literal binds to: the same value, but not a
        // literal, so the list stays one of expressions.
        let mut spelled = items.clone();
        let ty = match items[0].parse::<i64>() {
            Ok(v) if i32::try_from(v).is_ok() => "INTEGER",
            Ok(_) => "BIGINT",
            Err(_) => "VARCHAR",
        };
        spelled[0] = format!("CAST({} AS {ty})", spelled[0]);
        let spelled = spelled.join(", ");
        let packs = |list: &str| {
            let st = zepto_sql::parser::parse_statement(&format!("SELECT 1 IN ({list})")).expect("parses");
            format!("{st:?}").contains("InValues")
        };
        assert!(packs(&packed) && !packs(&spelled), "{packed} / {spelled}");
        for col in ["i", "b", "d", "v", "y", "ts"] {
            for not in ["", "NOT "] {
                let q = |list: &str| format!("SELECT {col} {not}IN ({list}), count(*) FROM u GROUP BY 1 ORDER BY 1");
                let (a, b) = (e.execute(&q(&packed)), e.execute(&q(&spelled)));
                match (&a, &b) {
                    (Ok(a), Ok(b)) => {
                        let rows = |r: &zepto_sql::QueryResult| {
                            let b = r.batch();
                            (0..r.row_count())
                                .map(|i| b.columns.iter().map(|c| c.get(i)).collect())
                                .collect::<Vec<Vec<Value>>>()
                        };
                        assert_eq!(rows(a), rows(b), "{}", q(&packed));
                        compared += 1;
                    }
                    (Err(_), Err(_)) => {}
                    _ => panic!("{}: {:?} / {:?}", q(&packed), a.as_ref().err(), b.as_ref().err()),
                }
            }
        }
    }
    assert!(compared > 500, "{compared} answers compared");
    let r = e.execute("SELECT i IN (1, 2) FROM u LIMIT 1").expect("name");
    assert_eq!(r.fields[0].name, "(i IN (1, 2))");
    let err = e.execute("SELECT count(*) FROM u WHERE v IN (1, 2)").expect_err("text against numbers");
    assert!(err.to_string().contains("cannot compare"), "{err}");
}
