//! `FLOAT[n]` vectors through SQL: DDL, literals and casts, INSERT, SELECT, the distance
//! functions, and the errors (wrong dimension, NaN/infinite elements, unsupported operations),
//! each of which leaves the table unchanged.

use zepto_sql::Engine;
use zepto_storage::Value;

fn rows(e: &Engine, sql: &str) -> Vec<Vec<Value>> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = r.batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i)).collect()).collect()
}

fn one(e: &Engine, sql: &str) -> Value {
    rows(e, sql).into_iter().next().and_then(|r| r.into_iter().next()).expect("one value")
}

fn err(e: &Engine, sql: &str) -> String {
    e.execute(sql).err().unwrap_or_else(|| panic!("{sql} should fail")).to_string()
}

fn f64_of(v: Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v:?}"))
}

fn table() -> Engine {
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, id INT, v FLOAT[3])").expect("create");
    e.execute(
        "INSERT INTO t VALUES (1, 'A', 1, [1, 0, 0]), (2, 'A', 2, '[0, 1, 0]'), (3, 'B', 3, [0.5, 0.5, 0]::FLOAT[3]), \
         (4, 'B', 4, NULL), (5, 'A', 5, CAST('[1,2,3]' AS REAL[3]))",
    )
    .expect("insert");
    e
}

#[test]
fn vectors_store_and_select() {
    let e = table();
    assert_eq!(one(&e, "SELECT v FROM t WHERE id = 1"), Value::Vector(vec![1.0, 0.0, 0.0]));
    assert_eq!(one(&e, "SELECT v FROM t WHERE id = 5"), Value::Vector(vec![1.0, 2.0, 3.0]));
    assert_eq!(one(&e, "SELECT count(*) FROM t WHERE v IS NULL"), Value::Int64(1));
    assert_eq!(one(&e, "SELECT count(v) FROM t"), Value::Int64(4));
    assert_eq!(one(&e, "SELECT CAST(v AS VARCHAR) FROM t WHERE id = 3"), Value::Str("[0.5, 0.5, 0.0]".into()));
    assert_eq!(one(&e, "SELECT '[1, 2]'::FLOAT4[2]"), Value::Vector(vec![1.0, 2.0]));
    assert_eq!(one(&e, "SELECT array_length(v) FROM t WHERE id = 1"), Value::Int64(3));
    assert_eq!(one(&e, "SELECT len(v) FROM t WHERE id = 1"), Value::Int64(3));
    let schema = rows(&e, "DESCRIBE t");
    assert!(schema.iter().any(|r| r.get(1) == Some(&Value::Str("FLOAT[3]".into()))), "{schema:?}");
    // Vectors move with their rows through sorts, filters, joins and CREATE TABLE AS.
    e.execute("CREATE TABLE u AS SELECT ts, sym, id, v FROM t WHERE v IS NOT NULL ORDER BY ts DESC").expect("ctas");
    assert_eq!(one(&e, "SELECT v FROM u WHERE id = 2"), Value::Vector(vec![0.0, 1.0, 0.0]));
    assert_eq!(one(&e, "SELECT count(*) FROM t JOIN u ON t.id = u.id WHERE t.v IS NOT NULL"), Value::Int64(4));
    assert_eq!(rows(&e, "SELECT DISTINCT v FROM t").len(), 5);
    assert_eq!(rows(&e, "SELECT v, count(*) FROM t GROUP BY v").len(), 5);
    assert_eq!(one(&e, "SELECT id FROM t WHERE v IS NOT NULL ORDER BY v LIMIT 1"), Value::Int32(2));
}

#[test]
fn distances() {
    let e = table();
    let q = "[1, 2, 2]::FLOAT[3]";
    let near = rows(&e, &format!("SELECT id FROM t ORDER BY array_cosine_distance(v, {q}) LIMIT 2"));
    assert_eq!(near, vec![vec![Value::Int32(5)], vec![Value::Int32(3)]]);
    let d = f64_of(one(&e, &format!("SELECT array_distance(v, {q}) FROM t WHERE id = 1")));
    assert!((d - 8f64.sqrt()).abs() < 1e-6, "{d}");
    let ip = f64_of(one(&e, &format!("SELECT array_inner_product({q}, v) FROM t WHERE id = 5")));
    assert!((ip - 11.0).abs() < 1e-6);
    let nip = f64_of(one(&e, &format!("SELECT array_negative_inner_product(v, {q}) FROM t WHERE id = 5")));
    assert!((nip + 11.0).abs() < 1e-6);
    let cs = f64_of(one(&e, &format!("SELECT array_cosine_similarity(v, {q}) FROM t WHERE id = 1")));
    assert!((cs - 1.0 / 3.0).abs() < 1e-6);
    let cd = f64_of(one(&e, "SELECT array_cosine_distance(v, '[0, 0, 1]') FROM t WHERE id = 2"));
    assert!((cd - 1.0).abs() < 1e-6);
    // Two columns, a NULL row and a NULL argument.
    assert_eq!(
        one(&e, "SELECT array_distance(a.v, b.v) FROM t a JOIN t b ON a.ts = b.ts WHERE a.id = 1"),
        Value::Float64(0.0)
    );
    assert_eq!(one(&e, &format!("SELECT array_distance(v, {q}) FROM t WHERE id = 4")), Value::Null);
    assert_eq!(one(&e, "SELECT array_distance(v, NULL) FROM t WHERE id = 1"), Value::Null);
}

#[test]
fn bad_vectors_are_errors_and_change_nothing() {
    let e = table();
    let before = one(&e, "SELECT count(*) FROM t");
    for (sql, want) in [
        ("INSERT INTO t VALUES (9, 'C', 9, [1, 2])", "FLOAT[2]"),
        ("INSERT INTO t VALUES (9, 'C', 9, [1, 2, 3]), (10, 'C', 10, '[1, 2]')", "row 2"),
        ("INSERT INTO t VALUES (9, 'C', 9, '[1, nan, 3]')", "NaN"),
        ("INSERT INTO t VALUES (9, 'C', 9, '[1, inf, 3]')", "infinite"),
        ("INSERT INTO t VALUES (9, 'C', 9, [1, 1e39, 3])", "infinite"),
        ("INSERT INTO t VALUES (9, 'C', 9, '1, 2, 3')", "not a vector"),
        ("INSERT INTO t VALUES (9, 'C', 9, 'x')", "v"),
    ] {
        let m = err(&e, sql);
        assert!(m.contains(want), "{sql}: {m}");
    }
    assert_eq!(one(&e, "SELECT count(*) FROM t"), before);
    for (sql, want) in [
        ("SELECT array_distance(v, [1, 2]) FROM t", "dimension"),
        ("SELECT array_distance(v, 3) FROM t", "FLOAT[n]"),
        ("SELECT [1, 2]::FLOAT[3]", "FLOAT[3]"),
        ("SELECT [1, 'a']", "numbers"),
        ("SELECT []", "empty"),
        ("SELECT 1::FLOAT[0]", "dimension"),
        ("SELECT 1::FLOAT[65536]", "dimension"),
        ("SELECT 1::INT[3]", "FLOAT[n]"),
        ("CREATE TABLE bad (v DOUBLE[2])", "FLOAT[n]"),
        ("SELECT v + v FROM t", "FLOAT[3]"),
        ("SELECT v = v FROM t", "FLOAT[3]"),
        ("SELECT sum(v) FROM t", "FLOAT[3]"),
    ] {
        let m = err(&e, sql);
        assert!(m.contains(want), "{sql}: {m}");
    }
}
