//! A transaction's rows held until COMMIT (`zepto_sql::txn`, the PostgreSQL door's BEGIN):
//! INSERT and COPY FROM STDIN are checked at once and stored only by COMMIT, all tables in one
//! change; DELETE and UPDATE are held too, and decided again at COMMIT in order with them; the
//! transaction's own reads see its changes, other sessions only after COMMIT; dropped changes
//! are never seen; other writes run at once before changes are held and are refused after;
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
fn other_writes_run_at_once_before_changes_are_held_and_are_refused_after() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&e, "CREATE TABLE c (ts TIMESTAMP, n BIGINT)");
    assert!(ok(&t, "ALTER TABLE c SET TTL 30 DAYS").starts_with("ALTER TABLE"));
    assert_eq!(txn.held_changes(), 0, "nothing held: other DDL at once");
    ok(&t, "INSERT INTO c VALUES (1, 1)");
    // Changes held: a statement that would have to follow them is refused, storing nothing
    // (CREATE TABLE and DROP TABLE are held too: tests/sql/txn_ddl.rs).
    for sql in [
        "ALTER TABLE c ADD COLUMN m BIGINT",
        "CREATE INDEX ic ON c USING HNSW (n)",
        "ALTER TABLE c SET TTL 30 DAYS",
        "CREATE MATERIALIZED VIEW mv AS SELECT sym, count(*) AS c FROM a GROUP BY sym",
        "CHECKPOINT",
    ] {
        let err = t.execute(sql).expect_err("refused beside held changes");
        assert!(matches!(err, SqlError::NotSupported(_)), "{sql}: {err}");
    }
    // One that changes only a table nothing is held for follows nothing held: it runs.
    assert_eq!(ok(&t, "ALTER TABLE b ADD COLUMN m BIGINT"), "ALTER TABLE");
    assert_eq!(rows(&e, "SELECT count(m) FROM b"), ["0"], "at once");
    // A held DELETE or UPDATE counts too.
    let txn = Txn::new();
    let u = e.with_txn(Some(txn.clone()));
    assert_eq!(ok(&u, "DELETE FROM a WHERE n = 1"), "DELETE 0");
    let err = u.execute("ALTER TABLE a ADD COLUMN m BIGINT").expect_err("refused beside a held DELETE");
    assert!(matches!(err, SqlError::NotSupported(_)), "{err}");
    drop(u);
    assert_eq!((count(&e, "c"), txn.held_changes()), (0, 1));
    assert!(t.execute("DELETE FROM a WHERE typo = 1").is_err(), "bound at once: an unknown column fails it");
    ok(&t, "SELECT count(*) FROM a");
    assert_eq!(t.commit().expect("commit"), 1);
    assert_eq!(count(&e, "c"), 1);
}

/// DELETE and UPDATE in a transaction are held as INSERT is: the transaction's reads see
/// them, others do not; ROLLBACK (or a savepoint rolled back) drops them; COMMIT applies them
/// with the rows held, in statement order, as one change (a DELETE reaches rows inserted
/// before it in the transaction; an UPDATE of the key or the time moves rows).
#[test]
fn deletes_and_updates_wait_for_commit_and_go_with_rollback() {
    let e = engine();
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 1), (2, 'S2', 2), (3, 'S1', 3), (4, 'S3', 4)");
    let all = "SELECT ts, sym, n FROM a ORDER BY ts";
    let stored = rows(&e, all);
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    assert_eq!(ok(&t, "DELETE FROM a WHERE sym = 'S1'"), "DELETE 2");
    assert_eq!(ok(&t, "UPDATE a SET n = n * 10"), "UPDATE 2");
    assert_eq!(rows(&t, all), ["1970-01-01 00:00:00.000000002,S2,20", "1970-01-01 00:00:00.000000004,S3,40"]);
    assert_eq!(rows(&e, all), stored, "others see what is stored");
    drop(t);
    drop(txn);
    assert_eq!(rows(&e, all), stored, "rolled back: nothing changed");
    // Savepoints drop the edits after them.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO a VALUES (5, 'S5', 5)");
    txn.savepoint("s");
    assert_eq!(ok(&t, "DELETE FROM a WHERE n >= 3"), "DELETE 3", "the held row too");
    txn.rollback_to("s").expect("s");
    assert_eq!(count(&t, "a"), 5);
    // In order: an UPDATE moves rows to another symbol and time, a DELETE reaches a held row.
    assert_eq!(ok(&t, "UPDATE a SET sym = 'S9', ts = ts + INTERVAL '100 seconds' WHERE sym = 'S1'"), "UPDATE 2");
    ok(&t, "INSERT INTO a VALUES (6, 'S6', 6)");
    assert_eq!(ok(&t, "DELETE FROM a WHERE n IN (2, 6)"), "DELETE 2");
    let by_sym = "SELECT sym, count(*), sum(n), max(ts) FROM a GROUP BY sym ORDER BY sym";
    let seen = rows(&t, by_sym);
    let ns = |k: u32| format!("1970-01-01 00:00:00.{k:09}");
    assert_eq!(
        seen,
        [format!("S3,1,4,{}", ns(4)), format!("S5,1,5,{}", ns(5)), "S9,2,4,1970-01-01 00:01:40.000000003".to_string()]
    );
    assert_eq!(rows(&e, all), stored);
    assert_eq!(t.commit().expect("commit"), 2 + 2 + 2, "appended, moved, deleted");
    assert_eq!(rows(&e, by_sym), seen, "stored as the transaction saw it");
}

/// A held DELETE or UPDATE is decided again at COMMIT over the tables as they are then: a
/// row another session stored meanwhile that the WHERE matches is deleted too. A table made
/// again with other columns under an edit fails the COMMIT whole; one made again with the
/// same columns takes the edit. A materialized view is no target of DELETE, UPDATE or INSERT,
/// in a transaction or not.
#[test]
fn held_edits_are_decided_again_at_commit() {
    let e = engine();
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 1)");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO b VALUES (1, 'x', 1.0)");
    assert_eq!(ok(&t, "DELETE FROM a WHERE n < 10"), "DELETE 1");
    ok(&e, "INSERT INTO a VALUES (2, 'S2', 2), (3, 'S3', 30)");
    assert_eq!(t.commit().expect("commit"), 1 + 2);
    assert_eq!((rows(&e, "SELECT n FROM a"), count(&e, "b")), (vec!["30".to_string()], 1));
    // Changed under it: nothing of the transaction is stored.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO b VALUES (2, 'x', 2.0)");
    assert_eq!(ok(&t, "UPDATE a SET n = 0"), "UPDATE 1");
    ok(&e, "DROP TABLE a");
    ok(&e, "CREATE TABLE a (ts TIMESTAMP, sym SYMBOL, n DOUBLE)");
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 1.5)");
    assert!(t.commit().is_err(), "a's column changed type");
    assert_eq!((rows(&e, "SELECT n FROM a"), count(&e, "b")), (vec!["1.5".to_string()], 1));
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    assert_eq!(ok(&t, "DELETE FROM a"), "DELETE 1");
    ok(&e, "DROP TABLE a");
    ok(&e, "CREATE TABLE a (ts TIMESTAMP, sym SYMBOL, n DOUBLE)");
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 1.5), (2, 'S2', 2.5)");
    assert_eq!(t.commit().expect("the same columns"), 2);
    assert_eq!(count(&e, "a"), 0);
    // A materialized view is refused as a target, as outside a transaction, holding nothing.
    ok(&e, "CREATE MATERIALIZED VIEW v AS SELECT tenant_id, count(*) AS c FROM b GROUP BY tenant_id");
    assert!(e.execute("DELETE FROM v").is_err());
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    assert!(matches!(t.execute("DELETE FROM v"), Err(SqlError::TableNotFound { .. })));
    assert!(e.execute("INSERT INTO v VALUES ('x', 1)").is_err());
    let err = t.execute("INSERT INTO v VALUES ('x', 1)").expect_err("no rows held for a view");
    assert!(matches!(err, SqlError::TableNotFound { .. }), "{err}");
    assert_eq!(txn.held_changes(), 0);
}

/// A transaction's reads keep their copy of a table between statements while its snapshot
/// is the same, and make it again from the new snapshot after another session writes.
#[test]
fn a_transactions_view_follows_writes_of_others() {
    let e = engine();
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 1), (2, 'S2', 2)");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "UPDATE a SET n = n + 10");
    assert_eq!(rows(&t, "SELECT n FROM a ORDER BY ts"), ["11", "12"]);
    assert_eq!(rows(&t, "SELECT n FROM a ORDER BY ts"), ["11", "12"], "the kept copy");
    ok(&e, "INSERT INTO a VALUES (3, 'S3', 3)");
    assert_eq!(rows(&t, "SELECT n FROM a ORDER BY ts"), ["11", "12", "13"], "made again: the new row updated too");
    ok(&t, "DELETE FROM a WHERE n = 12");
    txn.savepoint("s");
    ok(&t, "DELETE FROM a WHERE n = 11");
    assert_eq!(rows(&t, "SELECT n FROM a ORDER BY ts"), ["13"]);
    txn.rollback_to("s").expect("s");
    assert_eq!(rows(&t, "SELECT n FROM a ORDER BY ts"), ["11", "13"], "rolled back to s");
    assert_eq!(t.commit().expect("commit"), 3 + 1);
    assert_eq!(rows(&e, "SELECT n FROM a ORDER BY ts"), ["11", "13"]);
}

/// A small generator: statements of random kinds over random rows; whether table `a2` exists.
struct Gen(u64, bool);

impl Gen {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    /// A step: one statement, or tables made and dropped (`a2` made from `a`, or `a` made
    /// again from `a2`).
    fn step(&mut self) -> Vec<String> {
        match self.next(8) {
            0 => {
                self.1 = true;
                let n = self.next(20);
                vec![
                    "DROP TABLE IF EXISTS a2".into(),
                    format!("CREATE TABLE a2 AS SELECT ts, sym, n FROM a WHERE n > {n}"),
                ]
            }
            1 if self.1 => vec![
                "DROP TABLE a".into(),
                "CREATE TABLE a (ts TIMESTAMP, sym SYMBOL, n BIGINT)".into(),
                format!("INSERT INTO a SELECT ts, sym, n + {} FROM a2", self.next(5)),
            ],
            _ => vec![self.statement()],
        }
    }

    fn statement(&mut self) -> String {
        let sym = |g: &mut Gen| format!("S{}", g.next(4));
        match self.next(6) {
            0 | 1 => {
                let rows: Vec<String> = (0..1 + self.next(4))
                    .map(|_| format!("({}, '{}', {})", self.next(50), sym(self), self.next(20)))
                    .collect();
                format!("INSERT INTO a VALUES {}", rows.join(", "))
            }
            2 => format!("DELETE FROM a WHERE n > {} AND sym <> '{}'", 5 + self.next(15), sym(self)),
            3 => format!("UPDATE a SET n = n + {} WHERE ts < CAST({} AS TIMESTAMP)", self.next(5), self.next(50)),
            4 => format!(
                "UPDATE a SET sym = '{}', ts = ts + INTERVAL '1 second' WHERE n % 3 = {}",
                sym(self),
                self.next(3)
            ),
            _ => {
                let (lo, hi) = (self.next(25), 25 + self.next(25));
                format!("DELETE FROM a WHERE ts BETWEEN CAST({lo} AS TIMESTAMP) AND CAST({hi} AS TIMESTAMP)")
            }
        }
    }
}

/// Both tables' rows (`None`: no such table, between a DROP and a CREATE).
fn both(e: &Engine) -> [Option<Vec<String>>; 2] {
    ["a", "a2"].map(|t| {
        let sql = format!("SELECT ts, sym, n FROM {t} ORDER BY ts, sym, n");
        e.execute(&sql).ok().map(|_| rows(e, &sql))
    })
}

/// Generated: statements run in a transaction answer, read and finally store what the same
/// statements run one by one outside a transaction do; rolled back, they store nothing
/// (`a2` aside: a `CREATE TABLE` while nothing is held applies at once).
#[test]
fn a_transaction_ends_where_the_same_statements_end_outside_one() {
    let all = "SELECT ts, sym, n FROM a ORDER BY ts, sym, n";
    for seed in 1..=40u64 {
        let mut g = Gen(seed, false);
        let (plain, inside) = (engine(), engine());
        let start = g.statement().replace("DELETE FROM a", "SELECT * FROM a").replace("UPDATE a", "SELECT * FROM a");
        for e in [&plain, &inside] {
            ok(e, "INSERT INTO a VALUES (1, 'S0', 1), (7, 'S1', 12), (20, 'S2', 19), (33, 'S3', 6)");
            let _ = e.execute(&start);
        }
        let before = rows(&inside, all);
        let txn = Txn::new();
        let t = inside.with_txn(Some(txn.clone()));
        for _ in 0..12 {
            for sql in g.step() {
                assert_eq!(ok(&t, &sql), ok(&plain, &sql), "seed {seed}: {sql}");
                assert_eq!(both(&t), both(&plain), "seed {seed}: read after {sql}");
            }
        }
        assert_eq!(rows(&inside, all), before, "seed {seed}: others see nothing before COMMIT");
        if seed % 4 == 0 {
            drop(t);
            drop(txn);
            assert_eq!(rows(&inside, all), before, "seed {seed}: rolled back");
            continue;
        }
        t.commit().unwrap_or_else(|err| panic!("seed {seed}: commit: {err}"));
        assert_eq!(both(&inside), both(&plain), "seed {seed}: stored at COMMIT");
    }
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
