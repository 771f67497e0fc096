//! `COPY ... FROM STDIN` and `TO STDOUT` on the engine's side (the PostgreSQL door carries the
//! bytes): rows fed in any pieces are stored whole at the end, in the listed columns; a bad
//! line, a passed memory limit, a key without the table or a tenant's foreign rows store
//! nothing; without a client stream the statement is refused by name.

use zepto_sql::access::TableAccess;
use zepto_sql::interrupt::RunContext;
use zepto_sql::parser::parse_statements;
use zepto_sql::{Engine, SqlError};
use zepto_storage::Value;

fn engine() -> Engine {
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, tenant_id VARCHAR)").expect("table");
    e
}

fn statement(sql: &str) -> zepto_sql::parser::ast::Statement {
    parse_statements(sql).expect("parses").remove(0)
}

/// Run `sql` (a COPY FROM STDIN) with `data` fed in pieces of `step` bytes.
fn copy(e: &Engine, sql: &str, data: &str, step: usize, limit: Option<usize>) -> Result<String, SqlError> {
    let mut c = e.copy_in(&statement(sql), limit)?;
    for piece in data.as_bytes().chunks(step.max(1)) {
        c.feed(piece)?;
    }
    Ok(c.finish(&RunContext::unlimited())?.status.unwrap_or_default())
}

fn count(e: &Engine) -> Value {
    e.execute("SELECT count(*) FROM t").expect("count").batch().columns[0].get(0)
}

#[test]
fn rows_fed_in_any_pieces_land_whole_in_the_listed_columns() {
    let e = engine();
    let mut data = String::from("n,ts,sym\n");
    for i in 0..5_000 {
        data.push_str(&format!("{i},2024-01-02 09:30:{:02}.{:06},S{}\n", i % 60, i, i % 7));
    }
    for (k, step) in [1usize, 7, 4096, usize::MAX].into_iter().enumerate() {
        let status = copy(&e, "COPY t (n, ts, sym) FROM STDIN WITH (FORMAT csv, HEADER)", &data, step, None);
        assert_eq!(status.expect("copied"), "COPY 5000");
        assert_eq!(count(&e), Value::Int64(5_000 * (k as i64 + 1)));
    }
    let r = e.execute("SELECT sum(n), count(px), count(DISTINCT sym) FROM t").expect("sums").batch();
    let row: Vec<Value> = r.columns.iter().map(|c| c.get(0)).collect();
    assert_eq!(row, vec![Value::Int128(4 * 4999 * 5000 / 2), Value::Int64(0), Value::Int64(7)]);
    // The text format, PostgreSQL's default, with its NULL and escapes; the older options.
    let status = copy(&e, "COPY t FROM STDIN", "2024-01-03 00:00:00\ta\\tb\t\\N\t1\t\\N\n", 3, None);
    assert_eq!(status.expect("text"), "COPY 1");
    let status = copy(&e, "COPY t (sym, n) FROM STDIN CSV DELIMITER '|' NULL 'NA'", "x|NA\n", 2, None);
    assert_eq!(status.expect("older options"), "COPY 1");
    // A vector in PostgreSQL's array text, as COPY TO writes it, reads back.
    e.execute("CREATE TABLE v (x FLOAT[3])").expect("table");
    assert_eq!(copy(&e, "COPY v FROM STDIN", "{1,2.5,-3}\n[4, 5, 6]\n", 4, None).expect("vectors"), "COPY 2");
    let got = e.execute("SELECT x FROM v").expect("rows").batch();
    assert_eq!(got.columns[0].get(0), Value::Vector(vec![1.0, 2.5, -3.0]));
    let got = e.execute("SELECT sym, px, n FROM t WHERE ts = '2024-01-03 00:00:00'").expect("row").batch();
    assert_eq!(got.columns[0].get(0), Value::Str("a\tb".into()));
    assert_eq!(got.columns[1].get(0), Value::Null);
}

#[test]
fn a_bad_line_or_a_passed_limit_stores_nothing() {
    let e = engine();
    let mut data = String::new();
    for i in 0..3_000 {
        data.push_str(&format!("2024-01-02 09:30:00\tS\t{}\t{i}\t\\N\n", if i == 2_500 { "x" } else { "1.5" }));
    }
    let err = copy(&e, "COPY t FROM STDIN", &data, 1000, None).expect_err("a bad value");
    assert!(err.to_string().contains("line 2501, column px"), "{err}");
    assert_eq!(count(&e), Value::Int64(0));
    let err = copy(&e, "COPY t FROM STDIN", "2024-01-02 09:30:00\tS\n", 100, None).expect_err("a short line");
    assert!(err.to_string().contains("line 1"), "{err}");
    let big = data.replace("\tx\t", "\t2\t").repeat(40);
    let err = copy(&e, "COPY t FROM STDIN", &big, 1 << 16, Some(1 << 20)).expect_err("over the limit");
    assert!(matches!(err, SqlError::ResourcesExhausted(ref m) if m.contains("nothing was stored")), "{err}");
    assert_eq!(count(&e), Value::Int64(0));
}

#[test]
fn a_copy_is_checked_as_any_write_and_needs_a_client_stream() {
    let e = engine();
    let other = e.with_access(TableAccess::only(["u"]));
    assert!(other.copy_in(&statement("COPY t FROM STDIN"), None).is_err(), "a key without the table");
    let scoped = e.with_access(TableAccess::all().with_tenant("a"));
    let line = |tenant: &str| format!("2024-01-02 09:30:00\tS\t1\t1\t{tenant}\n");
    let err = copy(&scoped, "COPY t FROM STDIN", &(line("a") + &line("b")), 10, None).expect_err("b's row");
    assert!(err.to_string().contains('b'), "{err}");
    assert_eq!(count(&e), Value::Int64(0));
    assert_eq!(copy(&scoped, "COPY t FROM STDIN", &line("a"), 10, None).expect("a's row"), "COPY 1");
    for (sql, what) in [("COPY t FROM STDIN", "FROM STDIN"), ("COPY t TO STDOUT", "TO STDOUT")] {
        let err = e.execute(sql).expect_err("no client stream");
        assert!(matches!(&err, SqlError::NotSupported(m) if m.contains(what)), "{err}");
    }
    let err = e.copy_in(&statement("COPY t (n, nope) FROM STDIN"), None).expect_err("an unknown column");
    assert!(err.to_string().contains("nope"), "{err}");
    let err = e.copy_in(&statement("COPY t FROM STDIN (FORMAT binary)"), None).expect_err("binary");
    assert!(err.to_string().contains("binary"), "{err}");
    let err = parse_statements("COPY information_schema.tables FROM STDIN").expect_err("a catalog");
    assert!(err.to_string().contains("system catalog"), "{err}");
}

#[test]
fn copy_to_stdout_gives_the_rows_and_how_to_write_them() {
    let e = engine();
    e.execute("INSERT INTO t VALUES ('2024-01-02 09:30:00', 'a,b', 1.5, 1, NULL)").expect("row");
    let (r, opts) = e
        .copy_out(&RunContext::unlimited(), &statement("COPY t (sym, n) TO STDOUT (FORMAT csv, HEADER)"))
        .expect("rows");
    assert_eq!(r.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["sym", "n"]);
    let mut out = Vec::new();
    opts.push_header(&["sym".into(), "n".into()], &mut out);
    opts.push_field(Some(b"a,b"), 0, &mut out);
    opts.push_field(None, 1, &mut out);
    opts.end_row(&mut out);
    assert_eq!(String::from_utf8(out).expect("utf-8"), "sym,n\n\"a,b\",\n");
    let r = e.copy_out(
        &RunContext::unlimited(),
        &statement("COPY (SELECT table_name FROM information_schema.tables WHERE table_schema = 'public') TO STDOUT"),
    );
    let r = r.expect("a catalog").0;
    assert_eq!(r.batch().rows, 1);
}
