//! A session that asks for PostgreSQL's column names (the PostgreSQL door's) gets them at every
//! level: the statement's own select list, set operations (named by their first branch),
//! parenthesised queries, derived tables and CTEs (so a BI tool's wrapper finds the names the
//! query alone gave), and correlated subqueries planned again per row. Other sessions keep the
//! text names.

use zepto_sql::{ColumnNames, Engine};

fn engine() -> Engine {
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT)").expect("t");
    e.execute("INSERT INTO t VALUES (1, 'A', 1.5, 1), (2, 'B', 2.5, 2), (3, 'A', 3.5, 3)").expect("rows");
    e
}

fn names(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    r.fields.iter().map(|f| f.name.clone()).collect()
}

#[test]
fn postgresql_names_at_every_level() {
    let text = engine();
    let pg = text.with_column_names(ColumnNames::Postgres);
    let plain = "SELECT sym, count(*), sum(px), n + 1 FROM t GROUP BY sym, n";
    assert_eq!(names(&pg, plain), ["sym", "count", "sum", "?column?"]);
    assert_eq!(names(&text, plain), ["sym", "count(*)", "sum(px)", "(n + 1)"]);
    let cases: &[(&str, &[&str])] = &[
        ("SELECT count(*) FROM t UNION ALL SELECT max(n) FROM t", &["count"]),
        ("(SELECT count(*) FROM t) UNION ALL (SELECT max(n) FROM t LIMIT 1)", &["count"]),
        ("(SELECT avg(px) FROM t)", &["avg"]),
        // A BI tool's wrapper around a query it has run alone.
        ("SELECT \"count\", s.sum FROM (SELECT count(*), sum(px) FROM t) s", &["count", "sum"]),
        ("WITH c AS (SELECT sym, max(ts) FROM t GROUP BY sym) SELECT max FROM c ORDER BY max", &["max"]),
        // Two entries of one name, kept as PostgreSQL keeps them.
        ("SELECT * FROM (SELECT sum(px), sum(n) FROM t) s", &["sum", "sum"]),
        ("SELECT sym, (SELECT max(n) FROM t i WHERE i.sym = o.sym) FROM t o ORDER BY ts", &["sym", "max"]),
        ("SELECT count FROM (SELECT sym, count(*) FROM t GROUP BY sym) g ORDER BY count DESC", &["count"]),
    ];
    for (sql, want) in cases {
        assert_eq!(names(&pg, sql), *want, "{sql}");
    }
    // The correlated subquery's values, planned again per row under the session's names.
    let r = pg
        .execute("SELECT n FROM t o WHERE n = (SELECT max FROM (SELECT max(n) FROM t i WHERE i.sym = o.sym) m)")
        .expect("correlated");
    assert_eq!(r.batch().rows, 2);
    // A reference by the text name is PostgreSQL's error there, and still works elsewhere.
    assert!(pg.execute("SELECT \"count(*)\" FROM (SELECT count(*) FROM t) s").is_err());
    assert_eq!(names(&text, "SELECT \"count(*)\" FROM (SELECT count(*) FROM t) s"), ["count(*)"]);
}
