//! `IS [NOT] DISTINCT FROM`: equality on which NULL equals NULL, never NULL itself; as a join
//! key (hash join and ASOF) it matches NULL keys with each other.

use zepto_sql::Engine;
use zepto_storage::Value;

fn rows(e: &Engine, sql: &str) -> Vec<Vec<Value>> {
    let b = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}")).batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i)).collect()).collect()
}

fn engine() -> Engine {
    let e = Engine::new();
    e.execute(
        "CREATE TABLE l (id INT, k VARCHAR, ts BIGINT); INSERT INTO l VALUES (1, 'a', 20), (2, NULL, 7), (3, 'b', 4);
         CREATE TABLE r (k SYMBOL, ts BIGINT, v INT);
         INSERT INTO r VALUES ('a', 9, 100), ('a', 15, 200), (NULL, 1, 400), ('b', 5, 500)",
    )
    .expect("setup");
    e
}

#[test]
fn null_equals_null_and_the_answer_is_never_null() {
    let e = engine();
    let got = rows(
        &e,
        "SELECT 1 IS NOT DISTINCT FROM NULL, NULL IS NOT DISTINCT FROM NULL, 1 IS DISTINCT FROM 2, \
         NULL IS DISTINCT FROM NULL, 'a' IS DISTINCT FROM 'a'",
    );
    let b = |v| Value::Bool(v);
    assert_eq!(got, vec![vec![b(false), b(true), b(true), b(false), b(false)]]);
}

#[test]
fn join_keys_match_null_with_null() {
    let e = engine();
    let hash = rows(&e, "SELECT l.id, r.v FROM l JOIN r ON l.k IS NOT DISTINCT FROM r.k ORDER BY 1, 2");
    let want: Vec<Vec<Value>> =
        [(1, 100), (1, 200), (2, 400), (3, 500)].iter().map(|&(i, v)| vec![Value::Int32(i), Value::Int32(v)]).collect();
    assert_eq!(hash, want);
    let asof = rows(
        &e,
        "SELECT l.id, r.v FROM l ASOF LEFT JOIN r ON l.k IS NOT DISTINCT FROM r.k AND l.ts >= r.ts ORDER BY 1",
    );
    let want = vec![
        vec![Value::Int32(1), Value::Int32(200)],
        vec![Value::Int32(2), Value::Int32(400)],
        vec![Value::Int32(3), Value::Null],
    ];
    assert_eq!(asof, want);
}
