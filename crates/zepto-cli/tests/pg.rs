//! The PostgreSQL door (`zeptodb serve --pg`) through real clients:
//! - `psql` (Debian's postgresql-client): the same answers as the HTTP door on the same rows,
//!   `\dt` and `\d` from the catalog, errors with SQLSTATE and a caret at their position,
//!   keys and roles as passwords, TLS;
//! - the PostgreSQL JDBC driver (`tests/pg/PgJdbc.java`, pgjdbc from Maven Central by `make
//!   pg-driver`): prepared statements with typed parameters, the named server-side statement
//!   and binary results pgjdbc switches to, a portal paged by a fetch size, a SQLSTATE, and
//!   CopyManager's COPY in and out, DatabaseMetaData's getSchemas, getTables and getColumns.
//!
//! Without a client a test says so and passes without running, except under `make test`
//! (ZEPTO_REQUIRE_PG_CLIENTS=1), where that is a failure.

mod common;

use common::{post, post_key, Server};
use std::process::{Command, Output};

const ADMIN: &str = "pg-admin-key-0123456789";

/// Whether `psql` runs here (or the test must fail, under `make test`).
fn have_psql() -> bool {
    if Command::new("psql").arg("--version").output().is_ok() {
        return true;
    }
    assert!(std::env::var_os("ZEPTO_REQUIRE_PG_CLIENTS").is_none(), "no psql: apt-get install postgresql-client");
    eprintln!("skipped: no psql (apt-get install postgresql-client)");
    false
}

/// The PostgreSQL address the server printed.
fn pg_port(s: &Server) -> String {
    let addr = s.printed_addr("PostgreSQL wire protocol on ");
    addr.rsplit(':').next().expect("port").to_string()
}

/// Run psql with `password` and `extra` connection settings on `commands` (unaligned,
/// tuples only, `|` between fields).
fn psql(port: &str, password: &str, extra: &str, commands: &[&str]) -> Output {
    let conn = format!("host=127.0.0.1 port={port} user=quant dbname=zepto {extra}");
    let mut cmd = Command::new("psql");
    cmd.args([conn.as_str(), "-X", "-A", "-t", "-F", "|", "-v", "VERBOSITY=verbose"]);
    for c in commands {
        cmd.args(["-c", c]);
    }
    cmd.env("PGPASSWORD", password).env("PGCONNECT_TIMEOUT", "10").output().expect("runs psql")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The HTTP door's answer to `q` as psql prints it unaligned.
fn http_rows(addr: &str, q: &str) -> String {
    let r = post_key(addr, "/", ADMIN, q);
    assert_eq!(r.status, 200, "{}", r.text());
    let data = r.json()["data"].as_array().expect("rows").clone();
    let cell = |v: &serde_json::Value| match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    data.iter().map(|row| row.as_array().expect("row").iter().map(cell).collect::<Vec<_>>().join("|") + "\n").collect()
}

/// Generated trades, written through the HTTP door.
fn load(addr: &str) {
    let r =
        post_key(addr, "/", ADMIN, "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT, ok BOOLEAN)");
    assert_eq!(r.status, 200, "{}", r.text());
    let mut rows = Vec::new();
    let mut x: u64 = 7;
    for i in 0..2000u64 {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let price = if x.is_multiple_of(17) {
            "NULL".to_string()
        } else {
            format!("{}.{:02}", 1 + (x >> 40) % 500, (x >> 20) % 100)
        };
        let ts = 1_704_187_800_000_000_000u64 + i * 1_000_003_001;
        rows.push(format!("({ts}, 'S{}', {price}, {}, {})", (x >> 33) % 5, 1 + (x >> 12) % 900, x.is_multiple_of(3)));
    }
    let r = post_key(addr, "/", ADMIN, &format!("INSERT INTO t VALUES {}", rows.join(", ")));
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn psql_reads_what_http_reads_and_lists_tables() {
    if !have_psql() {
        return;
    }
    let s = Server::start(&["--api-key", ADMIN]);
    let port = pg_port(&s);
    load(&s.addr);
    for q in [
        "SELECT sym, count(*), sum(size), min(price), max(price), count(price) FROM t GROUP BY sym ORDER BY sym",
        "SELECT epoch_ns(ts), sym, price, size, ok FROM t WHERE size > 880 ORDER BY ts",
        "SELECT sym, last(price) FROM t GROUP BY sym ORDER BY sym",
        // The catalogs, the same through every door.
        "SELECT c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_class c \
         JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid WHERE c.relnamespace = 'public'::regnamespace \
         AND c.relname ~ '^t$' ORDER BY a.attnum",
        // What Grafana's PostgreSQL data source sends after expanding $__timeGroupAlias(ts, '1m')
        // and $__timeFilter(ts).
        "SELECT floor(extract(epoch from ts)/60)*60 AS \"time\", round(avg(price), 6) AS price FROM t \
         WHERE ts BETWEEN '2024-01-02T09:35:00Z' AND '2024-01-02T09:50:00Z' GROUP BY 1 ORDER BY 1",
    ] {
        let o = psql(&port, ADMIN, "", &[q]);
        assert!(o.status.success(), "{q}: {}", err(&o));
        let want = http_rows(&s.addr, q).replace("true", "t").replace("false", "f");
        assert_eq!(out(&o), want, "{q}");
    }
    // Timestamps as PostgreSQL prints them (microseconds).
    let o = psql(&port, ADMIN, "", &["SELECT ts FROM t ORDER BY ts LIMIT 2"]);
    assert_eq!(out(&o), "2024-01-02 09:30:00\n2024-01-02 09:30:01.000003\n");
    let o = psql(&port, ADMIN, "", &["\\dt"]);
    assert_eq!(out(&o), "public|t|table|zeptodb\n");
    // psql's other listings run on the engine's catalogs too.
    let o = psql(&port, ADMIN, "", &["\\dn", "\\l", "\\df"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).starts_with("public|zeptodb\nzeptodb|zeptodb|UTF8|C.UTF-8|C.UTF-8||libc|\n"), "{}", out(&o));
    // The `+` listings: a table's size is its columns in memory, as pg_size_pretty writes it.
    let o = psql(&port, ADMIN, "", &["\\dt+"]);
    assert!(o.status.success(), "{}", err(&o));
    let size = http_rows(&s.addr, "SELECT pg_size_pretty(pg_table_size('t'::regclass))");
    assert!(size.ends_with(" kB\n") || size.ends_with(" bytes\n"), "{size}");
    assert!(out(&o).starts_with("public|t|table|zeptodb|permanent|"), "{}", out(&o));
    assert!(out(&o).contains(&format!("|{}|", size.trim_end())), "{} has {size}", out(&o));
    let o = psql(&port, ADMIN, "", &["\\l+", "\\dn+", "\\di+"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("|pg_default|"), "{}", out(&o));
    // \d and \d+ of a table: its columns and its indexes, every query on the engine's catalogs
    // (psql's arrays from subqueries, `= ANY (column)`, `unnest` in FROM, `int2[]` casts).
    let o = psql(
        &port,
        ADMIN,
        "",
        &["CREATE TABLE e (id BIGINT, emb FLOAT[2])", "CREATE INDEX e_emb ON e USING hnsw (emb)"],
    );
    assert!(o.status.success(), "{}", err(&o));
    for (cmd, table) in [("\\d t", "t"), ("\\d+ t", "t"), ("\\d+ e", "e")] {
        let o = psql(&port, ADMIN, "", &[cmd]);
        assert!(o.status.success(), "{cmd}: {}", err(&o));
        let d = out(&o);
        let cols: &[&str] = if table == "t" {
            &["ts|timestamp without time zone", "sym|text", "price|double precision", "size|bigint", "ok|boolean"]
        } else {
            &["id|bigint", "emb|real[]"]
        };
        for col in cols {
            assert!(d.contains(col), "{cmd}: {col} in {d}");
        }
    }
    // The vector index is a relation of its own (tuples-only output has no \d footers).
    let o = psql(&port, ADMIN, "", &["\\di", "\\d e_emb"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).starts_with("public|e_emb|index|zeptodb|e\nemb|real[]|yes|emb\n"), "{}", out(&o));
}

#[test]
fn psql_errors_have_sqlstates_and_positions_and_keys_are_passwords() {
    if !have_psql() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("zepto-pg-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let out_k = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["keygen", "--name", "viewer", "--role", "reader"])
        .output()
        .expect("keygen");
    let entry = String::from_utf8(out_k.stdout).expect("utf8").trim().to_string();
    let reader = String::from_utf8(out_k.stderr).expect("utf8").rsplit(' ').next().expect("key").trim().to_string();
    let file = dir.join("keys.json");
    std::fs::write(&file, format!("{{\"keys\": [{entry}]}}")).expect("keys file");
    let s = Server::start_env(&["--keys-file", file.to_str().expect("path")], &[("ZEPTO_API_KEY", ADMIN)]);
    let port = pg_port(&s);
    load(&s.addr);
    let o = psql(&port, ADMIN, "", &["SELECT nosuch FROM t"]);
    assert!(!o.status.success());
    let e = err(&o);
    assert!(e.contains("ERROR:  42703: column 'nosuch' does not exist"), "{e}");
    assert!(e.contains("LINE 1: SELECT nosuch FROM t\n               ^"), "the caret under the column: {e}");
    // A script: session statements between others, each applied; an error's position counts
    // from the start of the script.
    let script = "BEGIN; INSERT INTO t VALUES (1, 'X', 1.0, 1, true); COMMIT; SELECT count(*) FROM t; SELECT zz FROM t";
    let o = psql(&port, ADMIN, "", &[script]);
    assert_eq!(out(&o), "BEGIN\nINSERT 0 1\nCOMMIT\n2001\n", "{}", err(&o));
    let e = err(&o);
    let line = e.lines().find(|l| l.starts_with("LINE 1:")).expect("the statement quoted");
    let caret = e.lines().skip_while(|l| !l.starts_with("LINE 1:")).nth(1).expect("a caret line");
    assert_eq!(caret.find('^'), line.find("zz"), "the caret under zz: {e}");
    let o = psql(&port, ADMIN, "", &["SELECT * FROM nowhere"]);
    assert!(err(&o).contains("ERROR:  42P01"), "{}", err(&o));
    // A reader may read, not write; a wrong key does not get in.
    let o = psql(&port, &reader, "", &["SELECT count(*) FROM t"]);
    assert_eq!(out(&o), "2001\n", "{}", err(&o));
    let o = psql(&port, &reader, "", &["INSERT INTO t VALUES (1, 'X', 1.0, 1, true)"]);
    assert!(err(&o).contains("ERROR:  42501"), "{}", err(&o));
    let o = psql(&port, "wrong-key", "", &["SELECT 1"]);
    assert!(!o.status.success() && err(&o).to_lowercase().contains("password authentication failed"), "{}", err(&o));
    // The server is unharmed.
    assert_eq!(out(&psql(&port, ADMIN, "", &["SELECT count(*) FROM t"])), "2001\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `n` generated rows of `t` in the CSV psql's `\copy ... csv` writes (PostgreSQL's text of
/// each value), in time order.
/// Table `t`, whose columns [`copy_csv`]'s rows fill, made through HTTP with `key` (none:
/// empty).
fn make_copy_table(addr: &str, key: &str) {
    let sql = "CREATE TABLE t (ts TIMESTAMP, sym VARCHAR, price DOUBLE, size BIGINT, ok BOOLEAN)";
    let r = if key.is_empty() { post(addr, "/", sql) } else { post_key(addr, "/", key, sql) };
    assert_eq!(r.status, 200, "{}", r.text());
}

fn copy_csv(n: u64) -> String {
    let mut out = String::from("ts,sym,price,size,ok\n");
    let mut x: u64 = 11;
    for i in 0..n {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let price =
            if x.is_multiple_of(13) { String::new() } else { format!("{}.{}", 1 + (x >> 40) % 500, 1 + (x >> 20) % 9) };
        let sym = ["A", "b,c", "with \"quote\"", "", "x y"][((x >> 33) % 5) as usize];
        let sym = match sym {
            "" => "\"\"".to_string(),
            s if s.contains([',', '"']) => format!("\"{}\"", s.replace('"', "\"\"")),
            s => s.to_string(),
        };
        let (secs, micros) = (i / 1000, i % 1000 * 7);
        let frac = if micros == 0 { String::new() } else { format!(".{micros:06}").trim_end_matches('0').to_string() };
        let ts = format!("2024-01-02 {:02}:{:02}:{:02}{frac}", 9 + secs / 3600, secs / 60 % 60, secs % 60);
        let ok = if x.is_multiple_of(3) { "t" } else { "f" };
        out.push_str(&format!("{ts},{sym},{price},{},{ok}\n", 1 + (x >> 12) % 900));
    }
    out
}

#[test]
fn psql_copies_both_ways_and_a_bad_line_stores_nothing() {
    if !have_psql() {
        return;
    }
    let s = Server::start(&["--api-key", ADMIN]);
    let port = pg_port(&s);
    let dir = common::fresh_dir("pg-copy");
    make_copy_table(&s.addr, ADMIN);
    let csv = copy_csv(20_000);
    let input = dir.join("in.csv");
    std::fs::write(&input, &csv).expect("input");
    let o = psql(&port, ADMIN, "", &[&format!("\\copy t from '{}' csv header", input.display())]);
    assert_eq!(out(&o), "COPY 20000\n", "{}", err(&o));
    // Out again in time order: the same bytes psql read.
    let output = dir.join("out.csv");
    let o = psql(
        &port,
        ADMIN,
        "",
        &[&format!("\\copy (SELECT * FROM t ORDER BY ts) to '{}' csv header", output.display())],
    );
    assert_eq!(out(&o), "COPY 20000\n", "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&output).expect("output"), csv);
    // The text format through psql's standard input, and a table's columns named.
    let mut text = Command::new("psql")
        .args([
            &format!("host=127.0.0.1 port={port} user=quant dbname=zepto"),
            "-X",
            "-c",
            "\\copy t (sym, size) from stdin",
        ])
        .env("PGPASSWORD", ADMIN)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("psql");
    use std::io::Write;
    text.stdin.take().expect("stdin").write_all(b"tab\\there\t1\n\\N\t2\n").expect("rows");
    let o = text.wait_with_output().expect("psql ends");
    assert_eq!(out(&o), "COPY 2\n", "{}", err(&o));
    let o = psql(&port, ADMIN, "", &["SELECT sym, size FROM t WHERE ts IS NULL ORDER BY size"]);
    assert_eq!(out(&o), "tab\there|1\n|2\n");
    // One bad value deep in the next load: an error naming its column, and not one row stored.
    let bad = csv.replacen(",t\n", ",maybe\n", 5_000).replacen(",maybe\n", ",t\n", 4_999);
    std::fs::write(&input, bad).expect("bad input");
    let o = psql(&port, ADMIN, "", &[&format!("\\copy t from '{}' csv header", input.display())]);
    let e = err(&o);
    assert!(!o.status.success() && e.contains("22P04") && e.contains("column ok"), "{e}");
    assert_eq!(out(&psql(&port, ADMIN, "", &["SELECT count(*) FROM t"])), "20002\n");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// BEGIN ... COMMIT stores an INSERT's and a COPY's rows at COMMIT, all at once; ROLLBACK, a
/// failed statement or a connection closed first stores none of them; savepoints drop what
/// came after them.
#[test]
fn psql_transactions_store_their_rows_at_commit_and_none_otherwise() {
    if !have_psql() {
        return;
    }
    let s = Server::start(&["--api-key", ADMIN]);
    let port = pg_port(&s);
    let dir = common::fresh_dir("pg-txn");
    make_copy_table(&s.addr, ADMIN);
    let input = dir.join("in.csv");
    std::fs::write(&input, copy_csv(100)).expect("input");
    let copy = format!("\\copy t from '{}' csv header", input.display());
    let count = || out(&psql(&port, ADMIN, "", &["SELECT count(*) FROM t"]));
    let run = |commands: &[&str]| psql(&port, ADMIN, "", commands);
    let insert = |sym: &str, size: u32| format!("INSERT INTO t (sym, size) VALUES ('{sym}', {size})");
    // Rolled back: nothing stored; the transaction's own reads see its rows (102) before.
    let body = ["BEGIN", "INSERT INTO t (sym, size) VALUES ('a', 1), ('b', 2)", &copy, "SELECT count(*) FROM t"];
    let o = run(&[&body[..], &["ROLLBACK"]].concat());
    assert_eq!(out(&o), "BEGIN\nINSERT 0 2\nCOPY 100\n102\nROLLBACK\n", "{}", err(&o));
    assert_eq!(count(), "0\n");
    // Committed: all of them; and in one script.
    let o = run(&[&body[..], &["COMMIT"]].concat());
    assert_eq!(out(&o), "BEGIN\nINSERT 0 2\nCOPY 100\n102\nCOMMIT\n", "{}", err(&o));
    assert_eq!(count(), "102\n");
    run(&[&format!("BEGIN; {}; COMMIT", insert("c", 3))]);
    assert_eq!(count(), "103\n");
    // A failed statement fails the transaction: what follows is refused, COMMIT rolls back.
    let (d, f) = (insert("d", 4), insert("f", 6));
    let o = run(&["BEGIN", &d, "INSERT INTO t (sym, size) VALUES ('e', 'five')", &f, "COMMIT"]);
    assert_eq!(out(&o), "BEGIN\nINSERT 0 1\nROLLBACK\n", "{}", err(&o));
    assert!(err(&o).contains("25P02"), "{}", err(&o));
    assert_eq!(count(), "103\n");
    // Nor does a savepoint set after the error escape it; a CREATE TABLE beside held rows is
    // held with them, and other DDL there refused, storing nothing.
    let o =
        run(&["BEGIN", &d, "INSERT INTO t (sym, size) VALUES ('e', 'five')", "SAVEPOINT s", "ROLLBACK TO s", "COMMIT"]);
    assert_eq!(out(&o), "BEGIN\nINSERT 0 1\nROLLBACK\n", "{}", err(&o));
    let o = run(&["BEGIN", &d, "CREATE TABLE u (n BIGINT)", "ROLLBACK WORK"]);
    assert_eq!(out(&o), "BEGIN\nINSERT 0 1\nCREATE TABLE\nROLLBACK\n", "{}", err(&o));
    assert!(err(&run(&["SELECT * FROM u"])).contains("42P01"), "rolled back: no table u");
    let o = run(&["BEGIN", &d, "ALTER TABLE t ADD COLUMN m BIGINT", "ROLLBACK WORK"]);
    assert_eq!(out(&o), "BEGIN\nINSERT 0 1\nROLLBACK\n", "{}", err(&o));
    assert!(err(&o).contains("0A000"), "{}", err(&o));
    assert_eq!(count(), "103\n");
    // Savepoints, and a failure undone by rolling back to one.
    let (g, h, i) = (insert("g", 7), insert("h", 8), insert("i", 9));
    let o = run(&["BEGIN", &g, "SAVEPOINT s", &h, "ROLLBACK TO SAVEPOINT s", &i, "RELEASE s", "COMMIT"]);
    assert_eq!(
        out(&o),
        "BEGIN\nINSERT 0 1\nSAVEPOINT\nINSERT 0 1\nROLLBACK\nINSERT 0 1\nRELEASE\nCOMMIT\n",
        "{}",
        err(&o)
    );
    let sizes = "SELECT sym FROM t WHERE ts IS NULL AND size >= 7 ORDER BY size";
    assert_eq!(out(&run(&[sizes])), "g\ni\n");
    // A connection closed inside a transaction stores nothing.
    run(&["BEGIN", &insert("j", 10)]);
    assert_eq!(count(), "105\n");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// DELETE and UPDATE in a transaction wait for COMMIT as INSERT does: ROLLBACK leaves every
/// row as it was (what `BEGIN; DELETE ...; ROLLBACK` is typed for), and COMMIT stores the
/// transaction's inserts, deletions and updates, rows moved in time included, as one change
/// that a server killed right after it (`kill -9`: no checkpoint) recovers whole from its log.
#[test]
fn psql_deletes_and_updates_wait_for_commit_and_survive_a_kill_after_it() {
    if !have_psql() {
        return;
    }
    let dir = common::fresh_dir("pg-txn-edits");
    let data = dir.join("data");
    let data = data.to_str().expect("utf-8 path");
    let s = Server::start(&["--api-key", ADMIN, "--data-dir", data]);
    let port = pg_port(&s);
    make_copy_table(&s.addr, ADMIN);
    let input = dir.join("in.csv");
    std::fs::write(&input, copy_csv(100)).expect("input");
    let o = psql(&port, ADMIN, "", &[&format!("\\copy t from '{}' csv header", input.display())]);
    assert_eq!(out(&o), "COPY 100\n", "{}", err(&o));
    let summary = "SELECT count(*), sum(size), count(price), max(ts) FROM t";
    let stored = out(&psql(&port, ADMIN, "", &[summary]));
    let o =
        psql(&port, ADMIN, "", &["BEGIN", "DELETE FROM t WHERE size % 2 = 0", "SELECT count(*) FROM t", "ROLLBACK"]);
    let deleted = out(&psql(&port, ADMIN, "", &["SELECT count(*) FROM t WHERE size % 2 = 0"]));
    let left = 100 - deleted.trim().parse::<i64>().expect("a count");
    assert_eq!(out(&o), format!("BEGIN\nDELETE {}\n{left}\nROLLBACK\n", 100 - left), "{}", err(&o));
    assert_eq!(out(&psql(&port, ADMIN, "", &[summary])), stored, "rolled back: every row as it was");
    let body = [
        "BEGIN",
        "INSERT INTO t (ts, sym, size) VALUES ('2030-01-01', 'late', 1000), ('2030-01-02', 'later', 1001)",
        "DELETE FROM t WHERE size % 2 = 0",
        "UPDATE t SET size = size + 1, ts = ts + INTERVAL '1 day' WHERE sym = 'x y'",
        "UPDATE t SET price = -1 WHERE price IS NULL",
    ];
    let o = psql(&port, ADMIN, "", &[&body[..], &[summary, "COMMIT"]].concat());
    let lines = out(&o);
    let seen = lines.lines().nth(5).expect("the summary inside").to_string();
    assert!(lines.ends_with("COMMIT\n") && seen != stored.trim(), "{lines}{}", err(&o));
    assert_eq!(out(&psql(&port, ADMIN, "", &[summary])).trim(), seen, "stored as the transaction saw it");
    assert_eq!(out(&psql(&port, ADMIN, "", &["SELECT count(*) FROM t WHERE price IS NULL"])), "0\n");
    // A partitioned table of 1,500 symbols and NULL keys, and one that replaces rows by key:
    // edits that move rows between partitions, delete some and update others in place.
    let setup = [
        "CREATE TABLE k (ts TIMESTAMP, sym SYMBOL, n BIGINT)",
        "INSERT INTO k SELECT CAST(g AS TIMESTAMP), CASE WHEN g % 97 = 0 THEN NULL ELSE 'K' || \
         CAST(g % 1500 AS VARCHAR) END, g FROM generate_series(1, 4000) AS s(g)",
        "CREATE TABLE d (ts TIMESTAMP, sym SYMBOL, n BIGINT) DEDUP UPSERT KEYS (ts, sym)",
        "INSERT INTO d SELECT CAST(g % 50 AS TIMESTAMP), 'D' || CAST(g % 7 AS VARCHAR), g FROM generate_series(1, 300) AS s(g)",
    ];
    psql(&port, ADMIN, "", &setup);
    let edits = [
        "BEGIN",
        "UPDATE k SET sym = 'moved', ts = ts + INTERVAL '1 hour' WHERE n % 5 = 0",
        "DELETE FROM k WHERE n % 7 = 0 OR sym IS NULL",
        "UPDATE k SET n = -n WHERE sym IN ('K1', 'K2', 'moved')",
        "INSERT INTO k VALUES ('1970-01-01 00:00:01', NULL, 1), ('1970-01-01 00:00:02', 'K3', 2)",
        "INSERT INTO d VALUES (1, 'D1', 1000), (2, 'D9', 1001)",
        "UPDATE d SET n = n * 2 WHERE sym = 'D2'",
        "DELETE FROM d WHERE n > 290",
        "COMMIT",
    ];
    let o = psql(&port, ADMIN, "", &edits);
    assert!(out(&o).ends_with("COMMIT\n"), "{}{}", out(&o), err(&o));
    let dump = |port: &str| {
        let k = out(&psql(port, ADMIN, "", &["SELECT CAST(ts AS BIGINT), sym, n FROM k ORDER BY ts, sym, n"]));
        let d = out(&psql(port, ADMIN, "", &["SELECT CAST(ts AS BIGINT), sym, n FROM d ORDER BY ts, sym, n"]));
        (k, d)
    };
    let committed = dump(&port);
    assert!(committed.0.lines().count() > 3000 && committed.0.contains("|moved|"), "{}", committed.0.len());
    drop(s); // SIGKILL: the COMMITs live in the log only
    let s = Server::start(&["--api-key", ADMIN, "--data-dir", data]);
    let port = pg_port(&s);
    assert_eq!(out(&psql(&port, ADMIN, "", &[summary])).trim(), seen, "recovered whole");
    assert!(dump(&port) == committed, "the partitioned and the deduplicated tables recovered row for row");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `DROP TABLE` in a transaction is held until COMMIT and `CREATE TABLE` beside held changes
/// too: `BEGIN; DROP TABLE r; ROLLBACK` keeps every row, a replace (pandas' `to_sql` with
/// `if_exists="replace"`: DROP, CREATE, INSERTs) that fails halfway leaves the old table,
/// and a committed one is stored as one logged change that survives `kill -9`.
#[test]
fn psql_drops_and_replaces_wait_for_commit_and_survive_a_kill_after_it() {
    if !have_psql() {
        return;
    }
    let dir = common::fresh_dir("pg-txn-ddl");
    let data = dir.join("data");
    let data = data.to_str().expect("utf-8 path");
    let s = Server::start(&["--api-key", ADMIN, "--data-dir", data]);
    let port = pg_port(&s);
    let setup = [
        "CREATE TABLE r (ts TIMESTAMP, sym SYMBOL, n BIGINT)",
        "INSERT INTO r SELECT CAST(g AS TIMESTAMP), 'R' || CAST(g % 300 AS VARCHAR), g FROM generate_series(1, 3000) AS s(g)",
    ];
    psql(&port, ADMIN, "", &setup);
    let summary = "SELECT count(*), sum(n), count(DISTINCT sym) FROM r";
    let stored = out(&psql(&port, ADMIN, "", &[summary]));
    assert_eq!(stored, "3000|4501500|300\n");
    let o = psql(&port, ADMIN, "", &["BEGIN", "DROP TABLE r", "ROLLBACK"]);
    assert_eq!(out(&o), "BEGIN\nDROP TABLE\nROLLBACK\n", "{}", err(&o));
    assert_eq!(out(&psql(&port, ADMIN, "", &[summary])), stored, "rolled back: the table and its rows");
    // A table made first in a transaction goes with its ROLLBACK, its index too.
    let made = ["BEGIN", "CREATE TABLE vec (id BIGINT, v FLOAT[2])", "CREATE INDEX vec_v ON vec USING hnsw (v)"];
    let o = psql(&port, ADMIN, "", &[&made[..], &["INSERT INTO vec VALUES (1, [0, 1])", "ROLLBACK"]].concat());
    assert!(
        out(&o).ends_with(
            "CREATE INDEX
INSERT 0 1
ROLLBACK
"
        ),
        "{}{}",
        out(&o),
        err(&o)
    );
    let indexes = "SELECT tablename, indexname FROM pg_indexes ORDER BY 1, 2";
    assert_eq!(out(&psql(&port, ADMIN, "", &[indexes])), "", "rolled back: no table, no index");
    let replace = [
        "BEGIN",
        "DROP TABLE IF EXISTS r",
        "CREATE TABLE r (ts TIMESTAMP, name VARCHAR, v DOUBLE)",
        "INSERT INTO r SELECT CAST(g AS TIMESTAMP), 'v' || CAST(g AS VARCHAR), g / 4.0 FROM generate_series(1, 500) AS s(g)",
    ];
    let o =
        psql(&port, ADMIN, "", &[&replace[..], &["INSERT INTO r VALUES (1, 'x', 'not a number')", "COMMIT"]].concat());
    assert!(out(&o).ends_with("INSERT 0 500\nROLLBACK\n"), "{}{}", out(&o), err(&o));
    assert_eq!(out(&psql(&port, ADMIN, "", &[summary])), stored, "a failed replace leaves the old table");
    let o = psql(&port, ADMIN, "", &[&replace[..], &["SELECT count(*), sum(v) FROM r", "COMMIT"]].concat());
    assert!(out(&o).ends_with("INSERT 0 500\n500|31312.5\nCOMMIT\n"), "{}{}", out(&o), err(&o));
    let replaced = "SELECT count(*), sum(v), min(name) FROM r";
    assert_eq!(out(&psql(&port, ADMIN, "", &[replaced])), "500|31312.5|v1\n");
    // Steps the log holds that memory skips: rows and a delete on a table dropped later in
    // the transaction, a table made and dropped again, a DEDUP table made with its rows.
    psql(&port, ADMIN, "", &["CREATE TABLE gone (ts TIMESTAMP, n BIGINT)", "INSERT INTO gone VALUES (1, 1)"]);
    // An index name freed by a drop later in the transaction than the table that takes it.
    psql(&port, ADMIN, "", &["CREATE TABLE old_vec (v FLOAT[2])", "CREATE INDEX shared_ix ON old_vec USING hnsw (v)"]);
    let o = psql(
        &port,
        ADMIN,
        "",
        &[
            "BEGIN",
            "INSERT INTO gone VALUES (2, 2)",
            "DELETE FROM gone WHERE n = 1",
            "DROP TABLE gone",
            "CREATE TABLE brief (n BIGINT)",
            "INSERT INTO brief VALUES (1)",
            "DROP TABLE brief",
            "CREATE TABLE d (ts TIMESTAMP, sym SYMBOL, n BIGINT) DEDUP UPSERT KEYS (ts, sym)",
            "INSERT INTO d VALUES (1, 'A', 1), (1, 'A', 2), (2, 'B', 3)",
            made[1],
            "DROP TABLE old_vec",
            made[2],
            "CREATE INDEX shared_ix ON vec USING hnsw (v)",
            "INSERT INTO vec VALUES (1, [0, 1]), (2, [1, 0])",
            "COMMIT",
        ],
    );
    assert!(out(&o).ends_with("INSERT 0 2\nCOMMIT\n"), "{}{}", out(&o), err(&o));
    let tables = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1";
    let state = |port: &str| {
        let d = out(&psql(port, ADMIN, "", &["SELECT CAST(ts AS BIGINT), sym, n FROM d ORDER BY ts"]));
        let near = "SELECT id FROM vec ORDER BY array_cosine_distance(v, [0.9, 0.1]) LIMIT 1";
        let vec = out(&psql(port, ADMIN, "", &[indexes, near]));
        (out(&psql(port, ADMIN, "", &[tables])), d, out(&psql(port, ADMIN, "", &[replaced])), vec)
    };
    let committed = state(&port);
    assert_eq!(committed.0, "d\nr\nvec\n");
    assert_eq!(committed.1, "1|A|2\n2|B|3\n");
    assert_eq!(committed.3, "vec|shared_ix\nvec|vec_v\n2\n");
    drop(s); // SIGKILL: the COMMITs live in the log only
    let s = Server::start(&["--api-key", ADMIN, "--data-dir", data]);
    let port = pg_port(&s);
    assert_eq!(state(&port), committed, "recovered as committed");
    psql(&port, ADMIN, "", &["INSERT INTO d VALUES (2, 'B', 4)"]);
    assert_eq!(out(&psql(&port, ADMIN, "", &["SELECT n FROM d WHERE sym = 'B'"])), "4\n", "DEDUP kept");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A COPY FROM STDIN holds its rows until CopyDone, drawing on the server's budget of client
/// data in memory (`--max-inflight-body-mb`): one that would overdraw it fails with SQLSTATE
/// 53200 and stores nothing, and its share comes back (a small COPY and an HTTP write pass
/// after it), so streaming COPYs cannot grow the server's memory past the budget.
#[test]
fn a_copy_over_the_servers_budget_of_client_data_fails_whole_and_gives_its_share_back() {
    if !have_psql() {
        return;
    }
    let s = Server::start(&["--api-key", ADMIN, "--max-body-mb", "1", "--max-inflight-body-mb", "2"]);
    let port = pg_port(&s);
    let dir = common::fresh_dir("pg-copy-budget");
    make_copy_table(&s.addr, ADMIN);
    let input = dir.join("big.csv");
    std::fs::write(&input, copy_csv(200_000)).expect("input");
    let o = psql(&port, ADMIN, "", &[&format!("\\copy t from '{}' csv header", input.display())]);
    let e = err(&o);
    assert!(!o.status.success() && e.contains("53200") && e.contains("--max-inflight-body-mb"), "{e}");
    assert_eq!(out(&psql(&port, ADMIN, "", &["SELECT count(*) FROM t"])), "0\n");
    std::fs::write(&input, copy_csv(2_000)).expect("small input");
    let o = psql(&port, ADMIN, "", &[&format!("\\copy t from '{}' csv header", input.display())]);
    assert_eq!(out(&o), "COPY 2000\n", "{}", err(&o));
    let r = post_key(&s.addr, "/", ADMIN, "INSERT INTO t (ts, size) VALUES (1, 7)");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(out(&psql(&port, ADMIN, "", &["SELECT count(*) FROM t"])), "2001\n");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// PostgreSQL's protocol by hand, for what no client sends on purpose: one message (`kind`
/// byte, length, `body`).
fn pg_message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// Read messages from `s` until one of kind `until`: the kinds seen.
fn pg_read_until(s: &mut std::net::TcpStream, until: u8) -> Vec<u8> {
    use std::io::Read;
    let mut kinds = Vec::new();
    loop {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).expect("a message");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        s.read_exact(&mut body).expect("its body");
        kinds.push(head[0]);
        if head[0] == until {
            return kinds;
        }
    }
}

/// A client that leaves a COPY FROM STDIN by sending a query instead of CopyDone (the
/// protocol ends the COPY with an error) gives back the COPY's share of the server's budget
/// then, not when it disconnects: a COPY that needs most of the budget passes while the
/// first connection stays open.
#[test]
fn a_copy_left_for_a_query_gives_its_share_back() {
    if !have_psql() {
        return;
    }
    use std::io::Write;
    let s = Server::start(&["--max-body-mb", "2", "--max-inflight-body-mb", "4"]);
    let port = pg_port(&s);
    make_copy_table(&s.addr, "");
    let mut c = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).expect("connects");
    let mut startup = 196_608u32.to_be_bytes().to_vec();
    startup.extend_from_slice(b"user\0quant\0database\0zepto\0\0");
    let mut first = (startup.len() as u32 + 4).to_be_bytes().to_vec();
    first.extend_from_slice(&startup);
    c.write_all(&first).expect("startup");
    pg_read_until(&mut c, b'Z');
    c.write_all(&pg_message(b'Q', b"COPY t FROM STDIN WITH (FORMAT csv, HEADER true)\0")).expect("COPY");
    assert_eq!(pg_read_until(&mut c, b'G'), vec![b'G'], "CopyInResponse");
    // 60k rows: about 2.5 MiB decoded, most of the 4 MiB budget.
    c.write_all(&pg_message(b'd', copy_csv(60_000).as_bytes())).expect("CopyData");
    c.write_all(&pg_message(b'Q', b"SELECT 1\0")).expect("a query instead of CopyDone");
    assert!(pg_read_until(&mut c, b'Z').contains(&b'E'), "the COPY ends with an error");
    c.write_all(&pg_message(b'Q', b"SELECT 1\0")).expect("the next query");
    let kinds = pg_read_until(&mut c, b'Z');
    assert!(!kinds.contains(&b'E'), "the connection goes on: {kinds:?}");
    // The first connection stays open; a COPY as large passes beside it.
    let dir = common::fresh_dir("pg-copy-left");
    let input = dir.join("in.csv");
    std::fs::write(&input, copy_csv(60_000)).expect("input");
    let o = psql(&port, "", "", &[&format!("\\copy t from '{}' csv header", input.display())]);
    assert_eq!(out(&o), "COPY 60000\n", "{}", err(&o));
    drop(c);
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A server with a self-signed certificate and key `ADMIN`, its PostgreSQL door on `pg`; the
/// certificate's directory to remove after.
fn tls_server(name: &str, pg: &str) -> (Server, std::path::PathBuf) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("self-signed cert");
    let dir = common::fresh_dir(name);
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("cert");
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).expect("key");
    let (c, k) = (cert_path.to_str().expect("path"), key_path.to_str().expect("path"));
    (Server::start_env(&["--tls-cert", c, "--tls-key", k, "--pg", pg], &[("ZEPTO_API_KEY", ADMIN)]), dir)
}

#[test]
fn psql_over_tls() {
    if !have_psql() {
        return;
    }
    let (s, dir) = tls_server("pg-tls", "127.0.0.1:0");
    let port = pg_port(&s);
    let o = psql(&port, ADMIN, "sslmode=require", &["SELECT 41 + 1"]);
    assert_eq!(out(&o), "42\n", "{}", err(&o));
    // sslmode=require fails unless the server speaks TLS; plain connections over loopback
    // still work (the key never leaves the host).
    let o = psql(&port, ADMIN, "sslmode=disable", &["SELECT 1"]);
    assert_eq!(out(&o), "1\n", "{}", err(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// With TLS configured, a plain connection from another host is refused before its key is
/// asked for (FATAL 28000), as PostgreSQL's `hostssl`; over TLS the same address connects.
/// "Another host" is this machine's own address on its network interface (the one a
/// connection out would leave from), which is not loopback.
#[test]
fn keys_from_other_hosts_cross_only_over_tls() {
    if !have_psql() {
        return;
    }
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
    probe.connect("192.0.2.1:9").expect("a route off this host (no packet is sent)");
    let here = probe.local_addr().expect("the interface's address").ip();
    assert!(!here.is_loopback(), "{here}");
    let (s, dir) = tls_server("pg-tls-far", "0.0.0.0:0");
    let port = pg_port(&s);
    let o = psql(&port, ADMIN, &format!("host={here} sslmode=disable"), &["SELECT 1"]);
    let e = err(&o);
    assert!(!o.status.success() && e.contains("over TLS only") && e.contains("sslmode=require"), "{e}");
    let o = psql(&port, ADMIN, &format!("host={here} sslmode=require"), &["SELECT 2"]);
    assert_eq!(out(&o), "2\n", "{}", err(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn connections_past_the_limit_are_refused_as_postgresql_does_and_slots_come_back() {
    if !have_psql() {
        return;
    }
    let s = Server::start(&["--api-key", ADMIN, "--max-connections", "2"]);
    let port = pg_port(&s);
    // Two clients that connect and say nothing hold both slots.
    let held: Vec<std::net::TcpStream> =
        (0..2).map(|_| std::net::TcpStream::connect(format!("127.0.0.1:{port}")).expect("connects")).collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let o = psql(&port, ADMIN, "sslmode=disable", &["SELECT 1"]);
    assert!(!o.status.success());
    // psql prints a connection's FATAL without its SQLSTATE (53300, too_many_connections).
    assert!(err(&o).contains("FATAL:  too many connections"), "{}", err(&o));
    drop(held);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let o = psql(&port, ADMIN, "sslmode=disable", &["SELECT 1"]);
        if out(&o) == "1\n" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "a slot came back: {}", err(&o));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// pgjdbc's jar, if Maven fetched it (`make pg-driver`), and `java`.
fn pgjdbc() -> Option<std::path::PathBuf> {
    let required = std::env::var_os("ZEPTO_REQUIRE_PG_CLIENTS").is_some();
    let home = std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default());
    let jar = home.join(".m2/repository/org/postgresql/postgresql/42.7.8/postgresql-42.7.8.jar");
    if !jar.exists() || Command::new("java").arg("-version").output().is_err() {
        assert!(!required, "no pgjdbc jar or no java: make pg-driver (Maven)");
        eprintln!("skipped: no pgjdbc jar or no java (make pg-driver)");
        return None;
    }
    Some(jar)
}

#[test]
fn jdbc_prepares_binds_pages_and_reports_sqlstates() {
    let Some(jar) = pgjdbc() else { return };
    let s = Server::start(&["--api-key", ADMIN]);
    let port = pg_port(&s);
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("java")
        .current_dir(&root)
        .args(["-Duser.timezone=UTC", "-cp", jar.to_str().expect("path"), "tests/pg/PgJdbc.java", &port, ADMIN])
        .output()
        .expect("runs java");
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    assert_eq!(
        out(&o),
        "product PostgreSQL 16\n\
         row 2024-01-02 09:30:06.25|S0|106.5|60\n\
         row 2024-01-02 09:30:07.25|S1|107.5|70\n\
         row 2024-01-02 09:30:08.25|S2|108.5|80\n\
         row 2024-01-02 09:30:09.25|S0|109.5|90\n\
         paged 10 450\n\
         copy 100000 100000 true\n\
         schemas information_schema pg_catalog public\n\
         tables public.jc public.jd\n\
         columns ts:timestamp:93:1 sym:text:12:2 price:float8:8:3 size:int8:-5:4\n\
         keys\n\
         indexes jd\n\
         indexes jv jv_emb:emb:1:true:null\n\
         error 42703\n"
    );
    let q = "SELECT count(*), sum(size), min(epoch_ns(ts)) FROM jd";
    assert_eq!(http_rows(&s.addr, q), "10|450|1704187800250000000\n", "what JDBC wrote, as HTTP reads it");
}

/// The PostgreSQL door shares the server's query slots (`--max-queries`): while an HTTP
/// statement holds the only one, a psql statement waits `--queue-timeout` and is refused with
/// SQLSTATE 53000; a query that reads few rows takes the quick lane and answers; once the
/// slot is free, psql's statement runs.
#[test]
fn psql_statements_share_the_query_slots() {
    use std::io::Write;
    if !have_psql() {
        return;
    }
    const SLOW: &str = "SELECT count(*) FROM trades a JOIN trades b ON a.price < b.price - 1000000 AND a.size > b.size";
    let args = ["--demo", "--rows", "50000", "--max-queries", "1", "--queue-timeout", "0.3"];
    let s = Server::start_env(&args, &[("ZEPTO_API_KEY", ADMIN)]);
    let port = pg_port(&s);
    let running = |n: usize| {
        let auth = format!("Bearer {ADMIN}");
        let m = common::request(&s.addr, "GET", "/metrics", &[("Authorization", &auth)], b"").text();
        m.contains(&format!("zepto_queries_running {n}"))
    };
    let mut slow = std::net::TcpStream::connect(&s.addr).expect("connects");
    let req = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ADMIN}\r\nContent-Length: {}\r\n\r\n{SLOW}",
        SLOW.len()
    );
    slow.write_all(req.as_bytes()).expect("writes");
    let t0 = std::time::Instant::now();
    while !running(1) {
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "the slow query never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = psql(&port, ADMIN, "", &["CREATE TABLE x (a BIGINT)"]);
    assert!(!o.status.success(), "ran beside a full slot: {}", out(&o));
    assert!(err(&o).contains("ERROR:  53000") && err(&o).contains("--queue-timeout"), "{}", err(&o));
    // SQL over 64 KiB is parsed under a slot too (a syntax error here would otherwise be
    // found at once, 42601).
    let list = (0..20_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let o = psql(&port, ADMIN, "", &[&format!("SELECT count(*) FROM trades WHERE size IN ({list}")]);
    assert!(err(&o).contains("ERROR:  53000"), "a long script waits for a slot to be parsed: {}", err(&o));
    let small = "SELECT count(*) FROM (SELECT * FROM trades WHERE sym = 'S090') t \
                 JOIN (SELECT * FROM quotes WHERE sym = 'S090') q ON t.ts <= q.ts";
    let o = psql(&port, ADMIN, "", &[small]);
    assert!(o.status.success(), "the quick lane: {}", err(&o));
    assert_eq!(out(&o), http_rows(&s.addr, small));
    drop(slow); // cancels the slow query
    let t0 = std::time::Instant::now();
    loop {
        let o = psql(&port, ADMIN, "", &["CREATE TABLE x (a BIGINT)"]);
        if o.status.success() {
            break;
        }
        assert!(err(&o).contains("ERROR:  53000"), "only a busy slot may precede its return: {}", err(&o));
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "the slot never came back");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A script over 64 KiB (a long `IN` list) is parsed and run under one query slot, as the HTTP
/// door runs one: the same answers as over HTTP; in a script, the pieces before a long one
/// that errors applied, and the error's SQLSTATE and position.
#[test]
fn psql_runs_a_long_script_as_http_does() {
    if !have_psql() {
        return;
    }
    let s = Server::start_env(&[], &[("ZEPTO_API_KEY", ADMIN)]);
    let port = pg_port(&s);
    load(&s.addr);
    let list = (0..20_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let q = format!("SELECT sym, count(*), sum(size) FROM t WHERE size IN ({list}) GROUP BY sym ORDER BY sym");
    assert!(q.len() > 64 << 10, "long enough to be parsed under a slot");
    let o = psql(&port, ADMIN, "", &[&q]);
    assert_eq!(out(&o), http_rows(&s.addr, &q), "{}", err(&o));
    let script = format!(
        "INSERT INTO t VALUES (1, 'X', 1.0, 1, true); SET threads = 1; SELECT nosuch FROM t WHERE size IN ({list})"
    );
    let o = psql(&port, ADMIN, "", &[&script]);
    assert!(err(&o).contains("ERROR:  42703"), "an error in a long piece: {}", err(&o));
    let e = err(&o);
    let line = e.lines().find(|l| l.starts_with("LINE 1:")).expect("the statement quoted");
    assert!(line.contains("nosuch"), "its position counts from the start of the script: {e}");
    assert_eq!(out(&o), "INSERT 0 1\nSET\n", "{}", err(&o));
    assert_eq!(http_rows(&s.addr, "SELECT count(*) FROM t WHERE sym = 'X'"), "1\n");
}
