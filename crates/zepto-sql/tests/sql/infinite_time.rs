//! `'infinity'` and `'-infinity'` timestamps on a table whose designated timestamp also holds
//! NULLs: a time bound at either end of the range is still a predicate (NULL times never pass
//! it), comparisons past the ends select nothing, and arithmetic keeps or refuses infinities.

use zepto_sql::Engine;

fn engine() -> Engine {
    let e = Engine::new();
    e.execute(
        "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, v BIGINT) TIMESTAMP(ts) PARTITION BY sym;
         INSERT INTO t VALUES ('2024-01-02 09:30:00', 'A', 1), (NULL, 'A', 2), ('infinity', 'A', 3),
           ('-infinity', 'B', 4), (NULL, 'B', 5), ('2024-01-03', 'B', 6)",
    )
    .expect("setup");
    e
}

fn count(e: &Engine, sql: &str) -> i64 {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    r.batch().columns[0].get(0).as_i64().unwrap_or_else(|| panic!("{sql}: not a count"))
}

#[test]
fn bounds_at_the_ends_still_drop_null_times() {
    let e = engine();
    for (sql, want) in [
        ("SELECT count(*) FROM t WHERE ts <= TIMESTAMP 'infinity'", 4),
        ("SELECT count(*) FROM t WHERE ts >= TIMESTAMP '-infinity'", 4),
        ("SELECT count(*) FROM t WHERE ts > TIMESTAMP 'infinity'", 0),
        ("SELECT count(*) FROM t WHERE ts < TIMESTAMP '-infinity'", 0),
        ("SELECT count(*) FROM t WHERE ts = TIMESTAMP 'infinity'", 1),
        ("SELECT count(*) FROM t WHERE sym = 'A' AND ts <= TIMESTAMP 'infinity'", 2),
        ("SELECT count(*) FROM t WHERE ts IS NULL", 2),
    ] {
        assert_eq!(count(&e, sql), want, "{sql}");
    }
    e.execute("DELETE FROM t WHERE ts <= TIMESTAMP 'infinity'").expect("delete");
    assert_eq!(count(&e, "SELECT count(*) FROM t"), 2, "only the NULL-time rows are left");
}

#[test]
fn arithmetic_keeps_or_refuses_infinities() {
    let e = engine();
    let sql = "SELECT count(*) FROM t WHERE xbar(INTERVAL '1 hour', ts) = ts AND ts + INTERVAL '1 day' = ts";
    assert_eq!(count(&e, sql), 2, "both infinities are their own bucket and absorb intervals");
    let err = e.execute("SELECT ts - TIMESTAMP '2024-01-01' FROM t").expect_err("refused");
    assert!(err.to_string().contains("infinite"), "{err}");
    let err = e.execute("SELECT * FROM range(TIMESTAMP '2024-01-01', TIMESTAMP 'infinity', INTERVAL 1 DAY)");
    assert!(err.is_err(), "a series to infinity has no end");
}

#[test]
fn casts_between_date_and_timestamp_refuse_what_does_not_fit() {
    let e = engine();
    assert!(e.execute("SELECT CAST(ts AS DATE) FROM t").is_err(), "an infinite timestamp has no date");
    assert_eq!(count(&e, "SELECT count(TRY_CAST(ts AS DATE)) FROM t"), 2, "the finite ones cast; the rest are NULL");
    let err = e.execute("SELECT CAST(DATE '3000-01-01' AS TIMESTAMP)").expect_err("past 2262");
    assert!(err.to_string().contains("out of TIMESTAMP's range"), "{err}");
}
