use super::*;

fn one(sql: &str) -> Statement {
    parse_statement(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

#[test]
fn parses_the_surface() {
    for sql in [
        "SELECT 1",
        "select a, b as c, t.* from t where a > 1 and not b is null group by 1, a having count(*) > 2 order by a desc nulls first limit 10 offset 2",
        "WITH x AS (SELECT 1 AS a), y AS (SELECT a FROM x) SELECT * FROM y UNION ALL SELECT 2 EXCEPT SELECT 3",
        "SELECT * FROM a JOIN b ON a.id = b.id LEFT JOIN c USING (id) CROSS JOIN d, e",
        "SELECT * FROM t ASOF JOIN q ON t.sym = q.sym AND t.ts >= q.ts ASOF LEFT JOIN r ON t.ts < r.ts LEFT ASOF JOIN s ON t.ts > s.ts",
        "SELECT CASE WHEN a THEN 1 ELSE 2 END, CAST(x AS DOUBLE), x::INT, y NOT IN (1, 2), z NOT BETWEEN 1 AND 2",
        "SELECT count(DISTINCT a), percentile_cont(0.5) WITHIN GROUP (ORDER BY x), 'a' || 'b', 7 // 2, -3 % 2",
        "SELECT ts + INTERVAL '1 minute', INTERVAL 5 MINUTE, TIMESTAMP '2024-01-02 09:30:00', extract(hour FROM ts)",
        "SELECT * FROM t WHERE EXISTS (SELECT 1) AND x IN (SELECT y FROM u) AND name ILIKE 'a%'",
        "CREATE TABLE IF NOT EXISTS t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n VARCHAR(10)) TIMESTAMP(ts) PARTITION BY sym",
        "INSERT INTO t (a, b) VALUES (1, 'x'), (2, NULL)",
        "INSERT INTO t SELECT * FROM u",
        "COPY t FROM 'x.csv' (HEADER true)",
        "COPY (SELECT 1) TO 'x.parquet' (FORMAT parquet)",
        "DROP TABLE IF EXISTS t",
        "ALTER TABLE t ADD COLUMN c BIGINT",
        "SHOW TABLES",
        "DESCRIBE t",
        "EXPLAIN SELECT 1",
    ] {
        one(sql);
    }
}

#[test]
fn precedence() {
    let Statement::Query(q) = one("SELECT 1 + 2 * 3 = 7 OR NOT a AND b") else { panic!("query") };
    let SetExpr::Select(s) = &q.body else { panic!("select") };
    let SelectItem::Expr { expr, .. } = &s.items[0] else { panic!("expr") };
    assert_eq!(expr.to_string(), "(((1 + (2 * 3)) = 7) OR ((NOT a) AND b))");
}

#[test]
fn errors_carry_positions() {
    let e = parse_statement("SELECT a,\n  ) FROM t").expect_err("bad");
    assert_eq!(e.code(), "SQL_PARSE");
    let p = e.pos().expect("pos");
    assert_eq!((p.line, p.column), (2, 3));
    assert!(parse_statement("SELECT (((1)").is_err());
    assert!(parse_statement(&"(".repeat(10_000)).is_err());
    assert!(parse_statement(&"-".repeat(10_000)).is_err());
}
