//! A transaction's rows held until COMMIT (`zepto_sql::txn`, the PostgreSQL door's BEGIN):
//! INSERT and COPY FROM STDIN are checked at once and stored only by COMMIT, all tables in one
//! change; the transaction's own reads see them, other sessions only after COMMIT; dropped
//! rows are never seen; other writes run at once before rows are held and are refused after;
//! savepoints drop what was held after them.

use zepto_sql::access::TableAccess;
use zepto_sql::interrupt::RunContext;
use zepto_sql::parser::parse_statements;
use zepto_sql::txn::Txn;
use zepto_sql::{Engine, SqlError};

fn engine() -> Engine {
    let e = Engine::new();
    e.execute("CREATE TABLE a (ts TIMESTAMP, sym SYMBOL, n BIGINT)").expect("a");
    e.execute("CREATE TABLE b (ts TIMESTAMP, tenant_id VARCHAR, x DOUBLE)").expect("b");
    e
}

fn count(e: &Engine, t: &str) -> i64 {
    let r = e.execute(&format!("SELECT count(*) FROM {t}")).expect("count");
    zepto_sql::engine::first_value(&r).and_then(|v| v.as_i64()).expect("a count")
}

fn ok(e: &Engine, sql: &str) -> String {
    e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}")).status.unwrap_or_default()
}

#[test]
fn rows_wait_for_commit_and_go_with_rollback() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    assert_eq!(ok(&t, "INSERT INTO a VALUES (1, 'S1', 1), (2, 'S2', 2)"), "INSERT 2");
    assert_eq!(ok(&t, "INSERT INTO b VALUES (1, 'x', 1.5)"), "INSERT 1");
    assert_eq!((txn.held_rows(), count(&e, "a"), count(&e, "b")), (3, 0, 0), "held, unseen by others");
    assert_eq!((count(&t, "a"), count(&t, "b")), (2, 1), "seen by the transaction's own reads");
    assert!(txn.held_bytes() > 0);
    assert_eq!(t.commit().expect("commit"), 3);
    assert_eq!((count(&e, "a"), count(&e, "b"), txn.held_rows()), (2, 1, 0));
    // Dropped: never stored.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO a VALUES (3, 'S3', 3)");
    drop(t);
    drop(txn);
    assert_eq!(count(&e, "a"), 2);
    // A COPY FROM STDIN is held the same way.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    let s = parse_statements("COPY a FROM STDIN").expect("parses").remove(0);
    let mut c = t.copy_in(&s, None).expect("a COPY");
    c.feed(b"4\tS4\t4\n5\tS5\t5\n").expect("rows");
    assert_eq!(c.finish(&RunContext::unlimited()).expect("held").status.as_deref(), Some("COPY 2"));
    assert_eq!((count(&e, "a"), txn.held_rows()), (2, 2));
    assert_eq!(t.commit().expect("commit"), 2);
    assert_eq!(count(&e, "a"), 4);
}

#[test]
fn a_bad_row_is_refused_at_its_statement_and_holds_nothing() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    assert!(t.execute("INSERT INTO a VALUES (1, 'S1', 'one')").is_err());
    assert!(t.execute("INSERT INTO nope VALUES (1)").is_err());
    assert_eq!(txn.held_rows(), 0);
    // A tenant's session holds only its own rows.
    let scoped = e.with_access(TableAccess::all().with_tenant("x")).with_txn(Some(txn.clone()));
    let err = scoped.execute("INSERT INTO b VALUES (1, 'y', 1.0)").expect_err("another tenant's row");
    assert!(matches!(err, SqlError::PermissionDenied(_)), "{err}");
    ok(&scoped, "INSERT INTO b VALUES (1, 'x', 1.0)");
    assert_eq!(txn.held_rows(), 1);
}

#[test]
fn other_writes_run_at_once_before_rows_are_held_and_are_refused_after() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "CREATE TABLE c (ts TIMESTAMP, n BIGINT)");
    assert_eq!(ok(&t, "DELETE FROM a WHERE n = 1"), "DELETE 0", "nothing held: at once");
    ok(&t, "INSERT INTO c VALUES (1, 1)");
    // Rows held: a change that would have to follow them is refused, and nothing is stored.
    for sql in ["DELETE FROM c WHERE n = 1", "DELETE FROM a WHERE typo = 1", "CREATE TABLE c (n BIGINT)"] {
        let err = t.execute(sql).expect_err("refused beside held rows");
        assert!(matches!(err, SqlError::NotSupported(_)), "{sql}: {err}");
    }
    assert_eq!((count(&e, "c"), txn.held_rows()), (0, 1));
    ok(&t, "SELECT count(*) FROM a");
    assert_eq!(t.commit().expect("commit"), 1);
    assert_eq!(count(&e, "c"), 1);
}

#[test]
fn savepoints_drop_what_was_held_after_them() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO a VALUES (1, 'S1', 1)");
    txn.savepoint("s1");
    ok(&t, "INSERT INTO a VALUES (2, 'S2', 2)");
    txn.savepoint("S2");
    ok(&t, "INSERT INTO b VALUES (2, 'x', 2.0)");
    txn.rollback_to("s2").expect("s2 exists");
    assert_eq!(txn.held_rows(), 2);
    txn.release("S1").expect("s1 exists");
    assert!(txn.rollback_to("s2").is_err(), "released with s1");
    // After an error the transaction refuses (the door asks `failed`) until it ends or rolls
    // back to a savepoint, which keeps the rows held before it.
    txn.savepoint("s3");
    ok(&t, "INSERT INTO a VALUES (4, 'S4', 4)");
    txn.fail();
    assert!(txn.failed());
    txn.rollback_to("s3").expect("s3 exists");
    assert!(!txn.failed(), "ROLLBACK TO goes on from a failure");
    assert_eq!(txn.held_rows(), 2, "the rows before s3 stay, the one after goes");
    ok(&t, "INSERT INTO a VALUES (3, 'S3', 3)");
    assert_eq!(t.commit().expect("commit"), 3);
    assert_eq!((count(&e, "a"), count(&e, "b")), (3, 0));
    // A failed transaction's COMMIT stores nothing.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO a VALUES (5, 'S5', 5)");
    txn.fail();
    assert!(t.commit().is_err());
    assert_eq!((count(&e, "a"), txn.held_rows()), (3, 0));
}

#[test]
fn a_commit_a_table_changed_under_stores_nothing() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO a VALUES (1, 'S1', 1)");
    ok(&t, "INSERT INTO b VALUES (1, 'x', 1.0)");
    // Another session drops b, then makes it again with other columns.
    e.execute("DROP TABLE b").expect("drop");
    e.execute("CREATE TABLE b (ts TIMESTAMP, s VARCHAR)").expect("again");
    let err = t.execute("SELECT count(*) FROM b").expect_err("its held rows no longer fit");
    assert!(err.to_string().contains("no longer fit"), "{err}");
    assert!(t.commit().is_err(), "b's rows no longer fit");
    assert_eq!((count(&e, "a"), count(&e, "b"), txn.held_rows()), (0, 0, 0), "all or nothing, then nothing held");
}

/// A cluster's tables go through its log at once (a held row's rule does not apply to them),
/// but a statement that changes more than rows is refused beside held rows there too: a
/// `CREATE TABLE` of a spread table was published at once, before the rows it followed.
#[test]
fn a_cluster_statement_beside_held_rows_is_refused_like_a_local_one() {
    let cluster = zepto_sql::local_cluster::LocalCluster::new(2, |t| !t.starts_with("local_"));
    let e = cluster.join("a", &Engine::new(), &[0, 1]);
    ok(&e, "CREATE TABLE local_a (ts TIMESTAMP, sym SYMBOL, n BIGINT)");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO local_a VALUES (1, 'S1', 1)");
    let err = t.execute("CREATE TABLE spread (ts TIMESTAMP, sym SYMBOL, x DOUBLE)").expect_err("refused");
    assert!(matches!(err, SqlError::NotSupported(_)), "{err}");
    assert!(e.execute("SELECT * FROM spread").is_err(), "nothing was published");
    assert_eq!(t.commit().expect("commit"), 1);
    assert_eq!(ok(&t, "CREATE TABLE spread (ts TIMESTAMP, sym SYMBOL, x DOUBLE)"), "CREATE TABLE");
    assert_eq!(count(&e, "local_a"), 1);
}

fn rows(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = r.batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join(",")).collect()
}

/// The transaction's own reads see the rows it holds, through every way a table is read
/// (scans, aggregates by partition, joins, subqueries correlated or not, LATEST ON, INSERT ...
/// SELECT), as PostgreSQL's do; other sessions see only what is stored, and the memo of the
/// last rows is not left holding rows that were never stored.
#[test]
fn the_transaction_reads_its_own_rows_and_nobody_else_does() {
    let e = engine();
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 10), (2, 'S2', 20)");
    let latest = "SELECT sym, n FROM a LATEST ON ts PARTITION BY sym ORDER BY sym";
    assert_eq!(rows(&e, latest), ["S1,10", "S2,20"]);
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO a VALUES (3, 'S1', 11), (4, 'S3', 30)");
    ok(&t, "INSERT INTO a VALUES (5, 'S3', 31)");
    let by_sym = "SELECT sym, count(*), sum(n) FROM a GROUP BY sym ORDER BY sym";
    assert_eq!(rows(&t, by_sym), ["S1,2,21", "S2,1,20", "S3,2,61"]);
    assert_eq!(rows(&e, by_sym), ["S1,1,10", "S2,1,20"]);
    assert_eq!(rows(&t, latest), ["S1,11", "S2,20", "S3,31"]);
    assert_eq!(rows(&e, latest), ["S1,10", "S2,20"], "the memo of the last rows holds no held row");
    // Joins and subqueries read the held rows too.
    let asof =
        "SELECT x.ts, y.n FROM a x ASOF JOIN a y ON x.sym = y.sym AND x.ts >= y.ts WHERE x.sym = 'S3' ORDER BY x.ts";
    assert_eq!(rows(&t, asof).len(), 2);
    let sub = "SELECT count(*) FROM a WHERE n IN (SELECT n FROM a WHERE sym = 'S3')";
    assert_eq!(rows(&t, sub), ["2"]);
    let correlated = "SELECT sym, n FROM a o WHERE n = (SELECT max(n) FROM a i WHERE i.sym = o.sym) ORDER BY sym";
    assert_eq!(rows(&t, correlated), ["S1,11", "S2,20", "S3,31"]);
    // INSERT ... SELECT reads them, and holds what it makes.
    assert_eq!(ok(&t, "INSERT INTO a SELECT ts + INTERVAL '1 second', sym, n + 1 FROM a WHERE sym = 'S3'"), "INSERT 2");
    assert_eq!(rows(&t, "SELECT count(*) FROM a"), ["7"]);
    // A savepoint rolled back takes its rows out of the transaction's reads.
    txn.savepoint("s");
    ok(&t, "INSERT INTO b VALUES (1, 'x', 1.5)");
    assert_eq!(count(&t, "b"), 1);
    txn.rollback_to("s").expect("s");
    assert_eq!((count(&t, "b"), count(&t, "a")), (0, 7));
    assert_eq!(count(&e, "a"), 2);
    assert_eq!(t.commit().expect("commit"), 5);
    assert_eq!(rows(&e, by_sym), rows(&t, by_sym));
    assert_eq!(rows(&e, "SELECT count(*) FROM a"), ["7"]);
}

/// Under `DEDUP UPSERT KEYS` a held row replaces the stored row of its key in the
/// transaction's reads, as it will when stored.
#[test]
fn held_rows_replace_stored_ones_under_dedup_in_the_transactions_reads() {
    let e = Engine::new();
    ok(&e, "CREATE TABLE d (ts TIMESTAMP, sym SYMBOL, n BIGINT) DEDUP UPSERT KEYS (ts, sym)");
    ok(&e, "INSERT INTO d VALUES (1, 'S1', 1), (2, 'S1', 2)");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO d VALUES (2, 'S1', 20), (3, 'S1', 3)");
    assert_eq!(rows(&t, "SELECT n FROM d ORDER BY ts"), ["1", "20", "3"]);
    assert_eq!(rows(&e, "SELECT n FROM d ORDER BY ts"), ["1", "2"]);
}
