//! `DEDUP UPSERT KEYS` through SQL: QuestDB's table DDL (`TIMESTAMP(ts) PARTITION BY DAY WAL
//! DEDUP UPSERT KEYS(ts, sym)`), `ALTER TABLE ... DEDUP ENABLE/DISABLE`, DESCRIBE's roles, and
//! every way rows arrive (INSERT, INSERT ... SELECT) replacing rows with equal keys.

use crate::common;
use common::sorted_rows;
use zepto_sql::Engine;

fn engine() -> Engine {
    let e = Engine::new();
    e.execute(
        "CREATE TABLE q (ts TIMESTAMP, sym SYMBOL, venue VARCHAR, px DOUBLE) \
         TIMESTAMP(ts) PARTITION BY DAY WAL DEDUP UPSERT KEYS(ts, sym, venue)",
    )
    .expect("QuestDB's DDL");
    e
}

#[test]
fn inserts_replace_rows_with_equal_keys() {
    let e = engine();
    let batch =
        "INSERT INTO q VALUES ('2024-01-01 00:00:01', 'a', 'x', 1.0), ('2024-01-01 00:00:01', 'a', NULL, 2.0), \
                 ('2024-01-01 00:00:02', 'b', 'x', 3.0)";
    e.execute(batch).expect("first");
    e.execute(batch).expect("retried");
    e.execute("INSERT INTO q VALUES ('2024-01-01 00:00:01', 'a', NULL, 5.0), ('2024-01-01 00:00:01', 'a', NULL, 6.0)")
        .expect("upsert, the last wins");
    e.execute("INSERT INTO q SELECT ts, sym, venue, px * 10 FROM q WHERE sym = 'b'").expect("from a query");
    let got = sorted_rows(&e, "SELECT sym, venue, px FROM q", 3);
    let want = [r#"Str("a")|Null|6.000e0"#, r#"Str("a")|Str("x")|1.000e0"#, r#"Str("b")|Str("x")|3.000e1"#];
    assert_eq!(got, want);
}

#[test]
fn alter_turns_it_on_and_off_and_describe_shows_the_keys() {
    let e = engine();
    let describe = |e: &Engine| {
        let b = e.execute("DESCRIBE q").expect("describe").batch();
        (0..b.rows).map(|i| format!("{:?}", b.columns[2].get(i))).collect::<Vec<_>>()
    };
    assert_eq!(
        describe(&e),
        [
            r#"Str("designated timestamp, dedup key")"#,
            r#"Str("partition key, dedup key")"#,
            r#"Str("dedup key")"#,
            r#"Str("")"#
        ]
    );
    e.execute("ALTER TABLE q DEDUP DISABLE").expect("off");
    let row = "INSERT INTO q VALUES ('2024-01-01', 'a', 'x', 1.0)";
    e.execute(row).expect("one");
    e.execute(row).expect("two");
    assert_eq!(sorted_rows(&e, "SELECT count(*) FROM q", 3), ["Int64(2)"]);
    e.execute("ALTER TABLE q DEDUP ENABLE UPSERT KEYS(ts, sym)").expect("on");
    assert_eq!(describe(&e)[2], r#"Str("")"#);
    e.execute(row).expect("replaces both stored rows");
    assert_eq!(sorted_rows(&e, "SELECT count(*) FROM q", 3), ["Int64(1)"]);
}

#[test]
fn bad_keys_say_what_to_write() {
    let e = engine();
    let err = |sql: &str| e.execute(sql).map(|_| String::new()).unwrap_or_else(|err| err.to_string());
    assert!(err("ALTER TABLE q DEDUP ENABLE UPSERT KEYS(sym)").contains("must include the designated timestamp 'ts'"));
    assert!(err("ALTER TABLE q DEDUP ENABLE UPSERT KEYS(ts)").contains("must include the partition key 'sym'"));
    assert!(err("ALTER TABLE q DEDUP ENABLE UPSERT KEYS(ts, sym, nope)").contains("nope"));
    assert!(err("ALTER TABLE q DEDUP ENABLE KEYS(ts)").contains("UPSERT"));
    assert!(err("CREATE TABLE v (id INT, e FLOAT[3]) DEDUP UPSERT KEYS(id)").contains("no designated timestamp"));
    // QuestDB's DEDUP UPSERT KEYS(ts) on a table with a SYMBOL column: one partition.
    e.execute("CREATE TABLE k (ts TIMESTAMP, sym SYMBOL, px DOUBLE) TIMESTAMP(ts) DEDUP UPSERT KEYS(ts)").expect("ts");
    e.execute("INSERT INTO k VALUES (1, 'a', 1.0), (1, 'b', 2.0), (2, 'a', 3.0)").expect("insert");
    assert_eq!(sorted_rows(&e, "SELECT sym, px FROM k", 3), [r#"Str("a")|3.000e0"#, r#"Str("b")|2.000e0"#]);
    e.execute("CREATE TABLE k2 (ts TIMESTAMP, a SYMBOL, b SYMBOL) DEDUP UPSERT KEYS(ts, b)").expect("b");
    let roles = e.execute("DESCRIBE k2").expect("describe").batch();
    assert_eq!(format!("{:?}", roles.columns[2].get(2)), r#"Str("partition key, dedup key")"#);
    assert!(err("ALTER TABLE k2 DEDUP DISABLE").is_empty());
    // A column named like a QuestDB time unit is still a partition key.
    e.execute("CREATE TABLE d (ts TIMESTAMP, day SYMBOL, s SYMBOL) PARTITION BY day").expect("column day");
    let b = e.execute("DESCRIBE d").expect("describe").batch();
    assert_eq!(format!("{:?}", b.columns[2].get(1)), r#"Str("partition key")"#);
}
