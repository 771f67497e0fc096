//! Names with schemas (`public.t`, `"public"."t"`, `zeptodb.public.t`) wherever a table name
//! goes, and the system catalogs (`information_schema`, `pg_catalog`) as tables: filtered,
//! joined and grouped like any table, holding only what the session's grants let it read,
//! and agreeing with the tables' own schemas over randomly generated tables.

use zepto_sql::{Engine, TableAccess};

use crate::common;
use common::Rng;

fn ok(e: &Engine, sql: &str) -> zepto_sql::QueryResult {
    e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"))
}

/// The result's rows, one tab-separated line each.
fn lines(e: &Engine, sql: &str) -> Vec<String> {
    let r = ok(e, sql);
    let b = r.batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("\t")).collect()
}

fn error(e: &Engine, sql: &str) -> (String, String) {
    match e.execute(sql) {
        Ok(_) => panic!("{sql}: expected an error"),
        Err(err) => (err.code().to_string(), err.to_string()),
    }
}

#[test]
fn tables_answer_to_their_qualified_names_everywhere() {
    let e = Engine::new();
    ok(&e, "CREATE TABLE public.trades (ts TIMESTAMP, sym SYMBOL, px DOUBLE)");
    ok(&e, "INSERT INTO \"public\".\"trades\" VALUES (1, 'A', 1.5), (2, 'B', 2.5)");
    ok(&e, "INSERT INTO zeptodb.public.trades SELECT ts, sym, px FROM public.trades");
    for name in ["trades", "public.trades", "\"public\".\"trades\"", "zeptodb.public.trades", "ZEPTODB.PUBLIC.TRADES"] {
        assert_eq!(lines(&e, &format!("SELECT count(*) FROM {name}")), ["4"], "{name}");
    }
    assert_eq!(lines(&e, "SELECT t.px FROM public.trades AS t WHERE t.sym = 'A'"), ["1.5", "1.5"]);
    ok(&e, "UPDATE public.trades SET px = 0 WHERE sym = 'B'");
    ok(&e, "DELETE FROM public.trades WHERE px = 0");
    ok(&e, "ALTER TABLE public.trades ADD COLUMN n INT");
    assert_eq!(lines(&e, "SELECT count(n), count(*) FROM public.trades"), ["0\t2"]);
    ok(&e, "CREATE TABLE public.copy AS SELECT * FROM public.trades");
    ok(&e, "DROP TABLE public.copy");
    assert!(!e.catalog().exists("copy"));
}

#[test]
fn bad_qualified_names_are_refused_where_they_are() {
    let e = Engine::new();
    ok(&e, "CREATE TABLE t (x INT)");
    let (code, msg) = error(&e, "SELECT * FROM nope.t");
    assert_eq!(code, "SQL_PLAN");
    assert!(msg.contains("schema 'nope' does not exist") && msg.contains("column 15"), "{msg}");
    let (_, msg) = error(&e, "SELECT * FROM other.public.t");
    assert!(msg.contains("database 'other' does not exist"), "{msg}");
    for write in [
        "INSERT INTO information_schema.tables VALUES (1)",
        "CREATE TABLE pg_catalog.x (y INT)",
        "DROP TABLE information_schema.columns",
        "DELETE FROM pg_catalog.pg_tables",
    ] {
        let (code, msg) = error(&e, write);
        assert_eq!(code, "PERMISSION_DENIED", "{write}");
        assert!(msg.contains("system catalog"), "{write}: {msg}");
    }
    assert_eq!(error(&e, "SELECT * FROM information_schema.nope").0, "TABLE_NOT_FOUND");
    assert_eq!(lines(&e, "SELECT count(*) FROM t"), ["0"], "nothing changed");
}

#[test]
fn catalogs_are_tables_a_query_filters_joins_and_groups() {
    let e = Engine::new();
    ok(&e, "CREATE TABLE b (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT)");
    ok(&e, "CREATE TABLE a (x INT)");
    // A user table named like a catalog's table is another table.
    ok(&e, "CREATE TABLE tables (y INT)");
    assert_eq!(
        lines(&e, "SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public'"),
        ["a\tBASE TABLE", "b\tBASE TABLE", "tables\tBASE TABLE"]
    );
    let q = "SELECT t.table_name, count(*), max(c.ordinal_position) \
             FROM information_schema.tables t JOIN information_schema.columns c \
             ON t.table_name = c.table_name AND t.table_schema = c.table_schema \
             WHERE t.table_schema = 'public' GROUP BY t.table_name ORDER BY t.table_name";
    assert_eq!(lines(&e, q), ["a\t1\t1", "b\t4\t4", "tables\t1\t1"]);
    assert_eq!(
        lines(
            &e,
            "SELECT column_name, ordinal_position, data_type, udt_name, is_nullable \
             FROM information_schema.columns WHERE table_name = 'b' ORDER BY ordinal_position"
        ),
        [
            "ts\t1\ttimestamp without time zone\ttimestamp\tYES",
            "sym\t2\ttext\ttext\tYES",
            "px\t3\tdouble precision\tfloat8\tYES",
            "n\t4\tbigint\tint8\tYES",
        ]
    );
    let schemas = "SELECT schema_name FROM information_schema.schemata ORDER BY schema_name";
    assert_eq!(lines(&e, schemas), ["information_schema", "pg_catalog", "public"]);
    assert_eq!(lines(&e, "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname = 'public'"), ["public"]);
    let q = "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'public' ORDER BY 1";
    assert_eq!(lines(&e, q), ["a", "b", "tables"]);
    // The catalogs list themselves, as PostgreSQL's do.
    let q = "SELECT count(*) FROM information_schema.columns WHERE table_name = 'columns' \
             AND table_schema = 'information_schema'";
    assert_eq!(lines(&e, q), ["18"]);
    let plan = lines(&e, "EXPLAIN SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'");
    assert!(plan.join("\n").contains("information_schema.tables"), "{plan:?}");
}

#[test]
fn a_session_sees_only_the_tables_it_may_read() {
    let all = Engine::new();
    ok(&all, "CREATE TABLE mine (x INT)");
    ok(&all, "CREATE TABLE theirs (secret VARCHAR)");
    let granted = all.with_access(TableAccess::only(["mine"]));
    let listed = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'";
    assert_eq!(lines(&granted, listed), ["mine"]);
    let cols = "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public'";
    assert_eq!(lines(&granted, cols), ["x"]);
    let q = "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'public'";
    assert_eq!(lines(&granted, q), ["mine"]);
    let q = "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON c.relnamespace = n.oid \
             WHERE n.nspname = 'public'";
    assert_eq!(lines(&granted, q), ["mine"]);
    let q = "SELECT count(*) FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON a.attrelid = c.oid \
             WHERE c.relname = 'theirs'";
    assert_eq!(lines(&granted, q), ["0"]);
    assert_eq!(lines(&all, listed), ["mine", "theirs"]);
}

/// `pg_table_size` and its kin answer the bytes of a table's columns in memory, growing with
/// its rows, for the tables a session may read (NULL for another's); `pg_database_size` sums
/// them; `pg_size_pretty` writes sizes as PostgreSQL 16 does.
#[test]
fn sizes_of_tables_and_the_database() {
    let all = Engine::new();
    ok(&all, "CREATE TABLE mine (x BIGINT)");
    ok(&all, "CREATE TABLE theirs (y BIGINT)");
    ok(&all, "INSERT INTO mine SELECT * FROM generate_series(1, 1000)");
    let size = |e: &Engine, f: &str, t: &str| lines(e, &format!("SELECT {f}('{t}'::regclass)"));
    let mine: i64 = size(&all, "pg_table_size", "mine")[0].parse().expect("a number");
    assert!((8_000..16_000).contains(&mine), "{mine}");
    ok(&all, "INSERT INTO mine SELECT * FROM generate_series(1, 9000)");
    let grown: i64 = size(&all, "pg_relation_size", "mine")[0].parse().expect("a number");
    assert!(grown >= 10 * mine - 1_000, "{mine} then {grown}");
    assert_eq!(size(&all, "pg_total_relation_size", "mine"), [grown.to_string()]);
    assert_eq!(size(&all, "pg_indexes_size", "mine"), ["0"]);
    assert_eq!(size(&all, "pg_table_size", "pg_catalog.pg_class"), ["0"]);
    assert_eq!(lines(&all, "SELECT pg_table_size(1)"), ["NULL"]);
    let by_oid = "SELECT sum(pg_table_size(c.oid)) FROM pg_catalog.pg_class c WHERE c.relnamespace = 2200";
    let total = lines(&all, by_oid);
    assert_eq!(lines(&all, "SELECT pg_database_size('zeptodb')"), total);
    assert_eq!(lines(&all, "SELECT pg_database_size(d.oid) FROM pg_catalog.pg_database d"), total);
    assert_eq!(lines(&all, "SELECT pg_database_size('other')"), ["NULL"]);
    let granted = all.with_access(TableAccess::only(["theirs"]));
    assert_eq!(
        lines(&granted, &format!("SELECT pg_table_size({})", lines(&all, "SELECT 'mine'::regclass::oid")[0])),
        ["NULL"]
    );
    let pretty = "SELECT pg_size_pretty(x) FROM (VALUES (0), (10239), (10240), (1000000), (1048576), (20971520),                   (-10240), (NULL), (9223372036854775807)) v(x)";
    let want = ["0 bytes", "10239 bytes", "10 kB", "977 kB", "1024 kB", "20 MB", "-10 kB", "NULL", "8192 PB"];
    assert_eq!(lines(&all, pretty), want);
}

/// Random tables of random column types: `information_schema.columns` says exactly what each
/// table's `CREATE TABLE` said, in order, and `DESCRIBE` agrees.
#[test]
fn columns_agree_with_random_tables() {
    const TYPES: [(&str, &str, &str); 9] = [
        ("BOOLEAN", "boolean", "bool"),
        ("INTEGER", "integer", "int4"),
        ("BIGINT", "bigint", "int8"),
        ("REAL", "real", "float4"),
        ("DOUBLE", "double precision", "float8"),
        ("TIMESTAMP", "timestamp without time zone", "timestamp"),
        ("DATE", "date", "date"),
        ("VARCHAR", "text", "text"),
        ("SYMBOL", "text", "text"),
    ];
    let mut rng = Rng::new(0x5157_e4ca);
    let e = Engine::new();
    let mut want = Vec::new();
    for t in 0..12 {
        let n = 1 + rng.below(8) as usize;
        let cols: Vec<(String, usize)> =
            (0..n).map(|c| (format!("c{c}_{}", rng.below(1000)), rng.below(9) as usize)).collect();
        let defs: Vec<String> = cols.iter().map(|(name, k)| format!("{name} {}", TYPES[*k].0)).collect();
        ok(&e, &format!("CREATE TABLE t{t:02} ({})", defs.join(", ")));
        for (i, (name, k)) in cols.iter().enumerate() {
            want.push(format!("t{t:02}\t{name}\t{}\t{}\t{}", i + 1, TYPES[*k].1, TYPES[*k].2));
        }
    }
    let got = lines(
        &e,
        "SELECT table_name, column_name, ordinal_position, data_type, udt_name FROM information_schema.columns \
         WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    );
    assert_eq!(got, want);
    // pg_catalog tells the same through its ids: pg_class joined to pg_attribute, pg_type and
    // pg_namespace (as psql, pgjdbc and SQLAlchemy join them) lists the same columns and types,
    // every column's type is one pg_type has, and every table one pg_class row.
    let through_ids = lines(
        &e,
        "SELECT c.relname, a.attname, a.attnum, t.typname FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
         JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid \
         JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
         WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 ORDER BY c.relname, a.attnum",
    );
    let want: Vec<String> = want
        .iter()
        .map(|w| {
            let f: Vec<&str> = w.split('\t').collect();
            format!("{}\t{}\t{}\t{}", f[0], f[1], f[2], f[4])
        })
        .collect();
    assert_eq!(through_ids, want);
    let q = "SELECT count(*) FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
             WHERE t.oid IS NULL";
    assert_eq!(lines(&e, q), ["0"], "every column's type is in pg_type");
    let q = "SELECT count(*), count(DISTINCT oid) FROM pg_catalog.pg_class";
    let counts = lines(&e, q);
    let tables = lines(&e, "SELECT count(*) FROM information_schema.tables");
    assert_eq!(counts, [format!("{}\t{}", tables[0], tables[0])], "one row and one id per table");
    let natts = "SELECT c.relname, c.relnatts, count(*) FROM pg_catalog.pg_class c \
                 JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid GROUP BY c.relname, c.relnatts \
                 HAVING c.relnatts <> count(*)";
    assert!(lines(&e, natts).is_empty(), "relnatts counts each table's attributes");
}

#[test]
fn set_returning_calls_expand_rows_after_grouping_and_say_so_in_explain() {
    let e = Engine::new();
    ok(&e, "CREATE TABLE t (k SYMBOL, x INTEGER)");
    ok(&e, "INSERT INTO t VALUES ('a', 3), ('a', 1), ('b', 2), ('c', NULL)");
    // array_agg's items keep their type through unnest; generate_subscripts counts them.
    assert_eq!(
        lines(&e, "SELECT k, unnest(array_agg(x ORDER BY x)) + 1, generate_subscripts(array_agg(x), 1) FROM t GROUP BY k ORDER BY 1, 3"),
        ["a\t2\t1", "a\t4\t2", "b\t3\t1", "c\tNULL\t1"]
    );
    let plan = lines(&e, "EXPLAIN SELECT unnest(indkey) FROM pg_catalog.pg_index").join("\n");
    assert!(plan.contains("ProjectSet [unnest(INTEGER)]") && plan.contains("Scan pg_catalog.pg_index"), "{plan}");
    let (code, msg) = error(&e, "SELECT k FROM t WHERE unnest('{1}') = '1'");
    assert!(code == "SQL_PLAN" && msg.contains("only allowed in the select list"), "{msg}");
    let (_, msg) = error(&e, "SELECT generate_subscripts('{1}') FROM t");
    assert!(msg.contains("takes 2 to 3 argument(s)"), "{msg}");
    let (_, msg) = error(&e, "SELECT unnest(x) FROM t");
    assert!(msg.contains("must be VARCHAR (an array)"), "{msg}");
    let (_, msg) = error(&e, "SELECT unnest('{1,{2}}') FROM t");
    assert!(msg.contains("multidimensional arrays are not supported"), "{msg}");
    // Catalog arrays: indoption[k] is a number, array_to_string reads vector text too.
    assert_eq!(
        lines(&e, "SELECT array_to_string('1 2 3', '+'), ('{x,y}')[2], current_setting('default_table_access_method')"),
        ["1+2+3\ty\theap"]
    );
}
