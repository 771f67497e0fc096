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
fn text_within_a_limit_is_the_whole_text_or_none() {
    let sql = "SELECT array_cosine_distance(emb, [0.25, -1.5, 3e-7]) + 1 FROM t";
    let Statement::Query(q) = one(sql) else { panic!("query") };
    let SetExpr::Select(s) = &q.body else { panic!("select") };
    let SelectItem::Expr { expr, .. } = &s.items[0] else { panic!("expr") };
    let whole = expr.to_string();
    assert_eq!(expr.text_within(whole.len()).as_deref(), Some(whole.as_str()));
    assert_eq!(expr.text_within(usize::MAX).as_deref(), Some(whole.as_str()));
    for limit in [0, 1, 20, whole.len() - 1] {
        assert_eq!(expr.text_within(limit), None, "limit {limit} of {}", whole.len());
    }
}

#[test]
fn operators_after_long_runs_of_numbers() {
    // The lexer picks an operator by its first byte, then its length: each kind still reads.
    let nums: Vec<String> = (0..1000).map(|i| format!("{i}.5")).collect();
    let sql = format!("SELECT [{}] || [1] , a::INT, b !~* 'x', c <> d, e >= f, g // 2, h @ 1", nums.join(","));
    let e = parse_statement(&sql).expect_err("@ is no operator");
    assert!(e.to_string().contains("unexpected character '@'"), "{e}");
    let sql = format!("SELECT [{}] || [1], a::INT, b !~* 'x', c <> d, e >= f, g // 2, h ~ 'y' FROM t", nums.join(","));
    let Statement::Query(q) = one(&sql) else { panic!("query") };
    let SetExpr::Select(s) = &q.body else { panic!("select") };
    let texts: Vec<String> = s
        .items
        .iter()
        .skip(1)
        .map(|it| if let SelectItem::Expr { expr, .. } = it { expr.to_string() } else { String::new() })
        .collect();
    assert_eq!(texts.len(), 6);
    assert!(texts[0].starts_with("CAST(a AS INT"), "{}", texts[0]);
    assert!(texts[2] == "(c <> d)" && texts[3] == "(e >= f)" && texts[4] == "(g // 2)", "{texts:?}");
}

/// The literal a query's first select item is, if it is a vector literal.
fn first_vector(sql: &str) -> std::result::Result<Vec<u64>, String> {
    let Statement::Query(q) = parse_statement(sql).map_err(|e| e.to_string())? else {
        return Err("not a query".into());
    };
    let SetExpr::Select(s) = &q.body else { return Err("not a select".into()) };
    match s.items.first() {
        Some(SelectItem::Expr { expr: Expr::Lit(Literal::Vector(v), _), .. }) => {
            Ok(v.iter().map(|x| x.to_bits()).collect())
        }
        _ => Err("not a vector".into()),
    }
}

#[test]
fn a_vector_read_at_once_is_the_vector_read_token_by_token() {
    // After `SELECT` a `[` is read token by token; after `(` (and any operator) the lexer reads
    // a list of plain numbers at once. Both must give the same numbers, or both refuse.
    let pieces = [
        "1",
        "-2.5",
        "+3",
        "0.1",
        "1e-7",
        "-1E+300",
        ".5",
        "7.",
        "123456789012345678901234567890",
        "- 4",
        "+ 5",
        "1e400",
        "-0",
        "0.30000000000000004",
        "2.2250738585072014e-308",
    ];
    let bad = ["", "-", "--1", "+-1", "1h", "x", "$1", "?", "1..2", "'1'", "1 2", "/* c */ 1", "1\n", "[1]", "NULL"];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for case in 0..2000 {
        let len = 1 + next(6);
        let items: Vec<&str> = (0..len)
            .map(|_| if case % 4 == 0 && next(3) == 0 { bad[next(bad.len())] } else { pieces[next(pieces.len())] })
            .collect();
        let gaps = ["", " ", "  ", "\t"];
        let mut list = String::from("[");
        for (k, it) in items.iter().enumerate() {
            if k > 0 {
                list.push_str(gaps[next(gaps.len())]);
                list.push(',');
            }
            list.push_str(gaps[next(gaps.len())]);
            list.push_str(it);
        }
        list.push_str(gaps[next(gaps.len())]);
        list.push(']');
        let by_tokens = first_vector(&format!("SELECT {list}"));
        let at_once = first_vector(&format!("SELECT ({list})"));
        assert_eq!(by_tokens.is_ok(), at_once.is_ok(), "{list}: {by_tokens:?} / {at_once:?}");
        if let (Ok(a), Ok(b)) = (&by_tokens, &at_once) {
            assert_eq!(a, b, "{list}");
        }
    }
    let vectors = |sql: &str| -> Vec<lexer::Tok> {
        let toks = lexer::tokenize(sql, &|| Ok(())).expect("lexes");
        toks.into_iter().map(|t| t.tok).filter(|t| matches!(t, lexer::Tok::Vector(_))).collect()
    };
    assert_eq!(vectors("SELECT ([1, -2e1 ,+.5])"), [lexer::Tok::Vector(vec![1.0, -20.0, 0.5])]);
    assert!(vectors("SELECT [1, 2], a[1], f(x)[1]").is_empty(), "after a word or a ')'");
    assert_eq!(vectors("SELECT ([1][1])").len(), 1, "after a ']'");
    assert!(vectors("SELECT (\n[1, 2])").len() == 1 && vectors("SELECT ([1,\n 2])").is_empty(), "one line");
    // Subscripts and types keep their tokens.
    first_vector("SELECT ([1, 2])[1]").expect_err("a subscript of a vector is no vector");
    for sql in [
        "SELECT a[1], (b)[2] FROM t",
        "SELECT CAST(x AS FLOAT[3]), x::FLOAT[2], ARRAY[1, 2]",
        "CREATE TABLE t (e FLOAT[3])",
    ] {
        parse_statement(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    let e = parse_statement(&format!("SELECT ([{}])", vec!["1"; 70_000].join(","))).expect_err("too long");
    assert!(e.to_string().contains("at most"), "{e}");
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
    // A list read at once is named by what the text has there, its `[`, at the `[`.
    for sql in ["CREATE TABLE t (a INT, [1, 2])", "CREATE TABLE t (a INT,\n [1, 2])"] {
        let e = parse_statement(sql).expect_err("a list is no column");
        assert!(e.to_string().contains("'['"), "{sql}: {e}");
        let p = e.pos().expect("pos");
        let at = sql.find('[').expect("[");
        let line = 1 + sql[..at].matches('\n').count();
        let column = at - sql[..at].rfind('\n').map_or(0, |n| n + 1) + 1;
        assert_eq!((p.line as usize, p.column as usize), (line, column), "{sql}: {e}");
    }
}

#[test]
fn window_clauses_round_trip() {
    for (sql, text) in [
        (
            "SELECT sum(x) OVER (PARTITION BY a, b ORDER BY t DESC ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t",
            "sum(x) OVER (PARTITION BY a, b ORDER BY t DESC ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
        ),
        ("SELECT lag(x, 2 IGNORE NULLS) OVER (ORDER BY t) FROM t", "lag(x, 2 IGNORE NULLS) OVER (ORDER BY t)"),
        ("SELECT first_value(x) IGNORE NULLS OVER () FROM t", "first_value(x IGNORE NULLS) OVER ()"),
        (
            "SELECT count(*) OVER (ORDER BY ts RANGE INTERVAL '1 minute' PRECEDING) FROM t",
            "count(*) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '00:01:00' PRECEDING AND CURRENT ROW)",
        ),
        (
            "SELECT avg(x) OVER w FROM t WINDOW w AS (PARTITION BY s ORDER BY t)",
            "avg(x) OVER (PARTITION BY s ORDER BY t)",
        ),
        (
            "SELECT avg(x) OVER (w ROWS UNBOUNDED PRECEDING) FROM t WINDOW w AS (ORDER BY t)",
            "avg(x) OVER (ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
        ),
        ("SELECT ema(x, 10) FROM t", "ema(x, 10)"),
    ] {
        let Statement::Query(q) = one(sql) else { panic!("query") };
        let SetExpr::Select(s) = &q.body else { panic!("select") };
        let SelectItem::Expr { expr, .. } = &s.items[0] else { panic!("expr") };
        assert_eq!(expr.to_string(), text, "{sql}");
    }
    let Statement::Query(q) = one("SELECT a FROM t QUALIFY row_number() OVER (ORDER BY a) = 1") else { panic!("q") };
    let SetExpr::Select(s) = &q.body else { panic!("select") };
    assert!(s.qualify.is_some());
    for bad in [
        "SELECT sum(x) OVER (ORDER BY t GROUPS 1 PRECEDING) FROM t",
        "SELECT sum(x) OVER (ORDER BY t ROWS 1 PRECEDING EXCLUDE CURRENT ROW) FROM t",
        "SELECT sum(x) OVER w FROM t WINDOW v AS (ORDER BY t)",
        "SELECT sum(x) OVER (ORDER BY t ROWS BETWEEN 1 AND 2) FROM t",
        "SELECT sum(x) OVER (PARTITION BY) FROM t",
    ] {
        assert!(parse_statement(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_timestamp_parameter_is_a_typed_literal() {
    for (ns, text) in [
        (1_700_000_000_123_456_789, "2023-11-14 22:13:20.123456789"),
        (-1, "1969-12-31 23:59:59.999999999"),
        (i64::MIN, "1677-09-21 00:12:43.145224192"),
        (i64::MAX - 1, "2262-04-11 23:47:16.854775806"),
        (i64::MAX, "infinity"),
        (-i64::MAX, "-infinity"),
    ] {
        let stmts = parse_statements_with_params("SELECT ?", &[ParamValue::Timestamp(ns)]).expect("parses");
        let Statement::Query(q) = &stmts[0] else { panic!("query") };
        let SetExpr::Select(s) = &q.body else { panic!("select") };
        let SelectItem::Expr { expr: Expr::Lit(lit, _), .. } = &s.items[0] else { panic!("a literal") };
        assert_eq!(lit, &Literal::Typed(DataType::Timestamp, text.into()));
        assert_eq!(zepto_storage::time::parse_timestamp(text), Some(ns));
    }
}

#[test]
fn create_table_prints_sql_that_reads_back_the_same() {
    for sql in [
        "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT)",
        "CREATE TABLE IF NOT EXISTS \"we\"\"ird\" (\"a b\" VARCHAR, e FLOAT[3], ok BOOLEAN, d DATE, i INTEGER, r REAL) \
         TIMESTAMP(t2) PARTITION BY k",
        "create table Mixed (\"Ts\" timestamp, k symbol) partition by k timestamp(\"Ts\")",
    ] {
        let Statement::CreateTable(ct) = one(sql) else { panic!("{sql}: not a CREATE TABLE") };
        let printed = ct.to_string();
        let Statement::CreateTable(back) = one(&printed) else { panic!("{printed}: not a CREATE TABLE") };
        assert_eq!(back, ct, "{sql} printed as {printed}");
    }
}

#[test]
fn decimal_says_what_to_write_instead() {
    for sql in ["CREATE TABLE d (p DECIMAL(10, 2))", "SELECT CAST(1.5 AS NUMERIC)", "SELECT 1.5::decimal"] {
        let e = parse_statement(sql).expect_err("DECIMAL is refused");
        assert!(e.to_string().contains("use DOUBLE, or BIGINT"), "{sql}: {e}");
    }
}

#[test]
fn table_names_carry_schemas() {
    let from = |sql: &str| match one(sql) {
        Statement::Query(q) => match q.body {
            SetExpr::Select(s) => match s.from {
                Some(TableRef::Table { name, system, .. }) => (system, name),
                other => panic!("{sql}: {other:?}"),
            },
            other => panic!("{sql}: {other:?}"),
        },
        other => panic!("{sql}: {other:?}"),
    };
    assert_eq!(from("SELECT * FROM public.t"), (None, "t".to_string()));
    assert_eq!(from("SELECT * FROM \"public\".\"T x\""), (None, "T x".to_string()));
    assert_eq!(from("SELECT * FROM zeptodb.public.t"), (None, "t".to_string()));
    assert_eq!(
        from("SELECT * FROM Information_Schema.Tables"),
        (Some(SystemSchema::InformationSchema), "tables".to_string())
    );
    assert_eq!(from("SELECT * FROM pg_catalog.pg_class c"), (Some(SystemSchema::PgCatalog), "pg_class".to_string()));
    match one("DROP TABLE public.t") {
        Statement::DropTable { name, .. } => assert_eq!(name, "t"),
        other => panic!("{other:?}"),
    }
    let err = |sql: &str| parse_statement(sql).expect_err(sql).to_string();
    let e = err("SELECT * FROM x.t");
    assert!(e.contains("schema 'x' does not exist") && e.ends_with("at line 1, column 15"), "{e}");
    assert!(err("SELECT * FROM zeptodb.public.t.x").contains("expected"), "four parts");
    assert!(err("INSERT INTO pg_catalog.pg_class VALUES (1)").contains("system catalog"));
    assert!(err("CREATE TABLE \"pg_catalog.x\" (a INT)").contains("may not start with a system schema"));
}

#[test]
fn copy_takes_both_ends_both_option_spellings_and_column_lists() {
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(k, x)| (k.to_string(), x.to_string())).collect::<Vec<_>>();
    let from = |sql: &str| match one(sql) {
        Statement::CopyFrom { table, columns, source, options, .. } => (table, columns, source, options),
        other => panic!("{sql}: {other:?}"),
    };
    let (table, columns, source, options) = from("COPY public.t (a, \"B\") FROM STDIN WITH (FORMAT csv, HEADER)");
    assert_eq!((table.as_str(), columns, source), ("t", vec!["a".to_string(), "B".to_string()], CopyEnd::Client));
    assert_eq!(options, pairs(&[("format", "csv"), ("header", "true")]));
    // psql's \copy passes the older words on as typed.
    let (_, _, _, options) = from("copy t from stdin csv header delimiter as '|' null 'NA' force not null a, b");
    assert_eq!(
        options,
        pairs(&[("format", "csv"), ("header", "true"), ("delimiter", "|"), ("null", "NA"), ("force_not_null", "a,b")])
    );
    let (_, _, source, options) = from("COPY t FROM '/data/x.csv' (FORCE_QUOTE *, FORCE_NULL (a, b))");
    assert_eq!(source, CopyEnd::File("/data/x.csv".into()));
    assert_eq!(options, pairs(&[("force_quote", "*"), ("force_null", "a,b")]));
    for sql in [
        "COPY t (a, b) TO STDOUT",
        "COPY (SELECT 1) TO STDOUT (FORMAT csv)",
        "COPY information_schema.tables TO STDOUT",
    ] {
        assert!(matches!(one(sql), Statement::CopyTo { target: CopyEnd::Client, .. }), "{sql}");
    }
    let err = |sql: &str| parse_statement(sql).expect_err(sql).to_string();
    assert!(err("COPY t FROM STDOUT").contains("STDIN"));
    assert!(err("COPY t FROM STDIN WITH").contains("COPY options"));
    assert!(err("COPY pg_catalog.pg_class FROM STDIN").contains("system catalog"));
    assert_eq!(one("COPY t FROM STDIN").access(), crate::access::Access::Write);
    assert_eq!(one("COPY t TO STDOUT").access(), crate::access::Access::Read);
    assert_eq!(one("COPY t TO '/tmp/x.csv'").access(), crate::access::Access::Admin);
}

#[test]
fn postgres_catalog_syntax_reads_as_plain_expressions() {
    let select = |sql: &str| match one(sql) {
        Statement::Query(q) => match q.body {
            SetExpr::Select(s) => s,
            other => panic!("{sql}: {other:?}"),
        },
        other => panic!("{sql}: {other:?}"),
    };
    let item = |sql: &str| match select(sql).items.remove(0) {
        SelectItem::Expr { expr, .. } => expr,
        other => panic!("{sql}: {other:?}"),
    };
    let func = |e: Expr| match e {
        Expr::Func(f) => (f.name.clone(), f.args.len()),
        other => panic!("{other:?}"),
    };
    // Object-id casts become calls; internal type names are ours.
    assert_eq!(func(item("SELECT 't'::regclass")), ("regclass".to_string(), 1));
    assert_eq!(func(item("SELECT c.oid::pg_catalog.regclass")), ("regclass".to_string(), 1));
    assert_eq!(func(item("SELECT CAST('int8' AS regtype)")), ("regtype".to_string(), 1));
    assert!(matches!(item("SELECT x::oid"), Expr::Cast { to: DataType::Int32, .. }));
    assert!(matches!(item("SELECT x::pg_catalog.text"), Expr::Cast { to: DataType::Varchar, .. }));
    assert!(matches!(item("SELECT x::name"), Expr::Cast { to: DataType::Varchar, .. }));
    // Functions by their schema, niladic functions, columns by schema and database.
    assert_eq!(func(item("SELECT pg_catalog.format_type(a, b)")), ("format_type".to_string(), 2));
    assert_eq!(func(item("SELECT (pg_catalog.current_schemas(true))[1]")), ("array_subscript".to_string(), 2));
    assert!(matches!(item("SELECT E'a\\nb'"), Expr::Lit(Literal::Str(s), _) if s == "a\nb"));
    assert_eq!(func(item("SELECT current_user")), ("current_user".to_string(), 0));
    assert!(matches!(item("SELECT pg_catalog.pg_class.relname"),
        Expr::Column { table: Some(t), name, .. } if t == "pg_class" && name == "relname"));
    assert!(matches!(item("SELECT zeptodb.public.t.x"), Expr::Column { table: Some(t), .. } if t == "t"));
    // Quantified comparisons: = ANY is an OR of equalities, <> ALL an AND; ANY of a subquery is IN.
    let w = |sql: &str| select(sql).where_.expect("a WHERE");
    assert!(matches!(w("SELECT 1 FROM t WHERE k = ANY (ARRAY['r', 'p'])"), Expr::Binary { op: BinaryOp::Or, .. }));
    assert!(matches!(w("SELECT 1 FROM t WHERE k <> ALL (ARRAY[1, 2])"), Expr::Binary { op: BinaryOp::And, .. }));
    assert!(matches!(w("SELECT 1 FROM t WHERE k = SOME (SELECT 1)"), Expr::InSubquery { negated: false, .. }));
    assert!(matches!(w("SELECT 1 FROM t WHERE k = ANY (ARRAY[])"), Expr::Lit(Literal::Bool(false), _)));
    // Regular expressions, in both spellings, and COLLATE dropped.
    let re = w("SELECT 1 FROM t WHERE n OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default");
    assert_eq!(func(re), ("regexp_matches".to_string(), 2));
    assert!(matches!(w("SELECT 1 FROM t WHERE n !~* 'x'"), Expr::Unary { op: UnaryOp::Not, .. }));
    assert!(matches!(w("SELECT 1 FROM t WHERE n LIKE 'pg/_%' ESCAPE '/'"), Expr::Like { .. }));
    let err = |sql: &str| parse_statement(sql).expect_err(sql).to_string();
    assert!(err("SELECT 1 FROM t WHERE k > ANY (SELECT 1)").contains("= ANY and <> ALL"));
    // Of any other array expression, a comparison with each of its items when the row is read.
    assert_eq!(func(w("SELECT 1 FROM t WHERE k = ANY (x)")), ("array_quantified".to_string(), 4));
    // Arrays: constructors, subscripts, casts, fields of composites, bitwise operators.
    let item = |sql: &str| select(sql).items.into_iter().next().expect("an item");
    let it = |sql: &str| match item(sql) {
        crate::ast::SelectItem::Expr { expr, .. } => func(expr),
        _ => panic!("{sql}: not an expression"),
    };
    assert_eq!(it("SELECT ARRAY[1, 2]"), ("array_value".to_string(), 2));
    assert_eq!(it("SELECT ARRAY(SELECT 1)"), ("array_query".to_string(), 1));
    assert_eq!(it("SELECT x::pg_catalog.int2[]"), ("array_cast".to_string(), 2));
    assert_eq!(it("SELECT (information_schema._pg_expandarray(k)).n"), ("field_of".to_string(), 2));
    assert_eq!(it("SELECT 1 | 2 & 3"), ("bit_and_op".to_string(), 2));
    assert_eq!(it("SELECT trim(both '\"' from s)"), ("trim".to_string(), 2));
    assert!(err("SELECT ARRAY(SELECT 1").contains("')'"));
    assert!(err("SELECT nope.t.x FROM t").contains("schema 'nope'"));
    assert!(err("SELECT 1 FROM t WHERE n OPERATOR(pg_catalog.+) 1").contains("comparison operator"));
}

/// The query of the view `sql` creates, and its text parsed on its own at the same offset
/// (spaces in front keep every position the same, `sql` being on one line).
fn view_query_and_its_text_reparsed(sql: &str) -> (Query, Query) {
    let Statement::CreateMaterializedView { query, sql: text, .. } = one(sql) else { panic!("{sql}: not a view") };
    let at = sql.find(&text).unwrap_or_else(|| panic!("{sql}: {text:?} is not in the statement"));
    let Statement::Query(back) = one(&format!("{}{text}", " ".repeat(at))) else { panic!("{text}: not a query") };
    (*query, *back)
}

#[test]
fn materialized_views_create_refresh_and_drop() {
    let q = "SELECT ts, sym, avg(px) AS px FROM trades WHERE px > 0 SAMPLE BY 1h ALIGN TO CALENDAR";
    for (sql, want_name, want_ine, want_text) in [
        (format!("CREATE MATERIALIZED VIEW v AS {q}"), "v", false, q),
        (format!("create materialized view if not exists public.\"My V\" as\n  {q}  ;"), "My V", true, q),
        (format!("CREATE MATERIALIZED VIEW v AS ( {q} )"), "v", false, q),
        (format!("CREATE MATERIALIZED VIEW v AS (\n{q}\n);  "), "v", false, q),
        ("CREATE MATERIALIZED VIEW v AS (SELECT 1) UNION (SELECT 2)".into(), "v", false, "(SELECT 1) UNION (SELECT 2)"),
        ("CREATE MATERIALIZED VIEW v AS ((SELECT 'a;b' AS x))".into(), "v", false, "(SELECT 'a;b' AS x)"),
    ] {
        match one(&sql) {
            Statement::CreateMaterializedView { name, if_not_exists, sql: text, pos, .. } => {
                assert_eq!((name.as_str(), if_not_exists, text.as_str()), (want_name, want_ine, want_text), "{sql}");
                assert_eq!(
                    &sql[pos.offset..pos.offset + 1],
                    if want_ine { "p" } else { "v" },
                    "{sql}: pos at the name"
                );
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
    let script = parse_statements("SELECT 'é';\nCREATE MATERIALIZED VIEW v AS SELECT \"ü\" FROM t -- why\n; SELECT 3")
        .expect("a script");
    match &script[1] {
        Statement::CreateMaterializedView { sql, .. } => assert_eq!(sql, "SELECT \"ü\" FROM t", "in a script"),
        other => panic!("{other:?}"),
    }
    let (query, back) = view_query_and_its_text_reparsed(&format!("CREATE MATERIALIZED VIEW v AS {q}"));
    assert_eq!(query, back, "the text parses back to the same query, positions included");
    let SetExpr::Select(s) = &back.body else { panic!("a select") };
    assert!(s.sample_by.is_some(), "SAMPLE BY kept");
    let (query, back) = view_query_and_its_text_reparsed(&format!("CREATE MATERIALIZED VIEW v AS ({q})"));
    assert_eq!(query, back, "AS (query): the text inside parses back the same");

    for (sql, want_name) in [
        ("REFRESH MATERIALIZED VIEW v", "v"),
        ("refresh materialized view public.\"V 2\" full", "V 2"),
        ("REFRESH MATERIALIZED VIEW v FULL;", "v"),
    ] {
        match one(sql) {
            Statement::RefreshMaterializedView { name, .. } => assert_eq!(name, want_name, "{sql}"),
            other => panic!("{sql}: {other:?}"),
        }
    }
    for (sql, want_name, want_ie) in
        [("DROP MATERIALIZED VIEW v", "v", false), ("drop materialized view if exists \"Vv\"", "Vv", true)]
    {
        match one(sql) {
            Statement::DropMaterializedView { name, if_exists, pos } => {
                assert_eq!((name.as_str(), if_exists), (want_name, want_ie), "{sql}");
                assert!(sql[pos.offset..].trim_start_matches('"').starts_with(want_name), "{sql}: pos at the name");
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
    use crate::access::Access;
    let access = |sql: &str| {
        let s = one(sql);
        (s.access(), s.target().map(|(t, _)| t.to_string()))
    };
    assert_eq!(access("CREATE MATERIALIZED VIEW v AS SELECT * FROM t"), (Access::Write, Some("v".into())));
    assert_eq!(access("REFRESH MATERIALIZED VIEW v"), (Access::Write, Some("v".into())));
    assert_eq!(access("DROP MATERIALIZED VIEW v"), (Access::Admin, Some("v".into())));
}

#[test]
fn materialized_view_errors_say_what_is_wrong_and_where() {
    let err = |sql: &str| parse_statement(sql).expect_err(sql);
    let e = err("CREATE MATERIALIZED VIEW v");
    assert_eq!(e.code(), "SQL_PARSE");
    assert!(e.to_string().contains("expected AS"), "{e}");
    let p = e.pos().expect("pos");
    assert_eq!((p.line, p.column, p.offset), (1, 27, 26), "at the end of input");
    let e = err("REFRESH MATERIALIZED VIEW v INCREMENTAL");
    assert!(e.to_string().contains("INCREMENTAL is not supported") && e.to_string().contains("[FULL]"), "{e}");
    assert_eq!(e.pos().map(|p| (p.line, p.column)), Some((1, 29)));
    let e = err("REFRESH MATERIALIZED VIEW v\n  RANGE FROM '2025-01-01' TO '2025-02-01'");
    assert!(e.to_string().contains("RANGE is not supported"), "{e}");
    assert_eq!(e.pos().map(|p| (p.line, p.column)), Some((2, 3)));
    assert!(err("CREATE MATERIALIZED VIEW v AS").to_string().contains("expected"));
    assert!(err("CREATE MATERIALIZED VIEW v AS (SELECT 1").to_string().contains("')'"));
    assert!(err("CREATE MATERIALIZED VIEW pg_catalog.v AS SELECT 1").to_string().contains("system catalog"));
    assert!(err("DROP MATERIALIZED VIEW IF v").to_string().contains("EXISTS"));
    let e = parse_statements_with_params(
        "CREATE MATERIALIZED VIEW v AS SELECT * FROM t WHERE x > $1",
        &[ParamValue::Int(1)],
    )
    .expect_err("a parameter");
    assert!(e.to_string().contains("cannot take parameters"), "{e}");
}

/// `parse_statements_with_params` with every token read before the parser starts (as the
/// parser read them before it read them as it goes).
fn parse_read_first(sql: &str, params: &[ParamValue]) -> Result<Vec<Statement>> {
    let interrupt = || Ok(());
    let mut toks = tokens::Tokens::new(Lexer::new(sql, &interrupt), params);
    toks.fill(usize::MAX);
    let mut p = Parser { toks, depth: 0, limits: ParseLimits::default(), expr_nesting: 0, elements: 0 };
    let parsed = p.script(sql, &interrupt);
    p.toks.finish(parsed)
}

/// Errors of the text ahead of where the parser stops still come out: a bad character, an
/// unterminated string, a parameter without a value, whatever the parser made of the end it
/// saw there; and a parameter given but never used.
#[test]
fn errors_ahead_of_the_parser_come_out() {
    let err = |sql: &str, params: &[ParamValue]| {
        let e = parse_statements_with_params(sql, params).expect_err(sql);
        (e.to_string(), e.pos().map(|p| p.offset))
    };
    let (m, at) = err("SELECT 1; SELECT 2 @", &[]);
    assert!(m.contains("unexpected character '@'") && at == Some(19), "{m}");
    let (m, at) = err("SELECT 1 FROM t; SELECT 'open", &[]);
    assert!(m.contains("unterminated string literal") && at == Some(24), "{m}");
    let (m, _) = err("SELECT ?, ?", &[ParamValue::Int(1)]);
    assert!(m.contains("no value for parameter $2"), "{m}");
    let (m, _) = err("SELECT ?", &[ParamValue::Int(1), ParamValue::Int(2)]);
    assert!(m.contains("2 parameters given but the statement uses 1"), "{m}");
    // A parse error before the bad text, further than the parser looks ahead, is the first.
    let (m, at) = err("SELECT 1 2 3 4 5 6 7 @", &[]);
    assert!(!m.contains("'@'") && at == Some(9), "{m}");
    let got = parse_statements_with_params("SELECT ?, $1", &[ParamValue::Int(1)]).expect_err("mixed");
    assert!(got.to_string().contains("mix of '?' and '$n'"), "{got}");
}

/// Reading the tokens as the parser goes decides every text as reading them all first does,
/// but for a text with a parse error before its lexer error, which now reports the parse error
/// (the first in the text): over random texts of statement pieces, bad characters, open
/// strings, comments, parameters, `trim(... FROM ...)` and materialized views (the two places
/// the parser looks ahead to a closing parenthesis).
#[test]
fn reading_as_the_parser_goes_decides_as_reading_first() {
    const PIECES: [&str; 34] = [
        "SELECT",
        "a",
        "1",
        "2.5",
        ",",
        "(",
        ")",
        "FROM",
        "t",
        "WHERE",
        "IN",
        "'s'",
        "'it''s'",
        "?",
        "$1",
        "$2",
        ";",
        "trim",
        "both",
        "from",
        "x",
        "[1, 2]",
        "--c\n",
        "/* c */",
        "\n",
        "+",
        "=",
        "AS",
        "CREATE MATERIALIZED VIEW v AS",
        "GROUP BY",
        "ORDER BY",
        "LIMIT",
        "E'\\n'",
        "NULL",
    ];
    const BAD: [&str; 4] = ["@", "'open", "/* open", "$0"];
    let mut rng = zepto_storage::rng::XorShift::new(0x5eed_7e57);
    let mut parse_errors_first = 0;
    for round in 0..20_000 {
        let n = 1 + rng.index(24);
        let mut words: Vec<&str> = (0..n).map(|_| PIECES[rng.index(PIECES.len())]).collect();
        if round % 3 == 0 {
            words.insert(rng.index(words.len() + 1), BAD[rng.index(BAD.len())]);
        }
        let sql = words.join(" ");
        let params: Vec<ParamValue> = (0..rng.index(3)).map(|i| ParamValue::Int(i as i64 - 1)).collect();
        let (now, first) = (parse_statements_with_params(&sql, &params), parse_read_first(&sql, &params));
        match (&now, &first) {
            (Err(a), Err(b)) if a != b => {
                let (pa, pb) = (a.pos().map(|p| p.offset), b.pos().map(|p| p.offset));
                assert!(pa < pb, "{sql:?}: {a} at {pa:?}, read first {b} at {pb:?}");
                parse_errors_first += 1;
            }
            _ => assert_eq!(now, first, "{sql:?}"),
        }
    }
    assert!(parse_errors_first > 0, "some texts have a parse error before their lexer error");
}

/// An `IN` list of integer literals only, or string literals only, is packed as it is read;
/// an item of another kind turns it back into a list of expressions, every literal at the
/// place it was written (errors point there).
#[test]
fn in_lists_of_one_literal_kind_are_packed() {
    let where_of = |sql: &str| match one(sql) {
        Statement::Query(q) => match q.body {
            SetExpr::Select(s) => s.where_.expect("a WHERE"),
            other => panic!("{sql}: {other:?}"),
        },
        other => panic!("{sql}: {other:?}"),
    };
    match where_of("SELECT 1 FROM t WHERE a IN (10, -2, 30)") {
        Expr::InValues(v) => {
            assert_eq!(v.values, Values::Ints(vec![10, -2, 30]));
            assert_eq!(v.pos.offset, 28);
        }
        other => panic!("{other:?}"),
    }
    match where_of("SELECT 1 FROM t WHERE a NOT IN ('x', 'it''s')") {
        Expr::InValues(v) => assert!(v.negated && v.values == Values::Strs(vec!["x".into(), "it's".into()])),
        other => panic!("{other:?}"),
    }
    for (sql, at) in
        [("SELECT 1 FROM t WHERE a IN (1, 2, b)", [28, 31]), ("SELECT 1 FROM t WHERE a IN (1,\n 'x')", [28, 32])]
    {
        match where_of(sql) {
            Expr::InList { list, .. } => {
                let offsets: Vec<usize> = list.iter().take(2).filter_map(|e| e.pos()).map(|p| p.offset).collect();
                assert_eq!(offsets, at, "{sql}");
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
    // Printed as the literals were: `(a IN (1, 2))`, as the unpacked list prints.
    assert_eq!(where_of("SELECT 1 FROM t WHERE a IN (1,2)").to_string(), "(a IN (1, 2))");
    assert_eq!(where_of("SELECT 1 FROM t WHERE a IN ('it''s')").to_string(), "(a IN ('it''s'))");
}
