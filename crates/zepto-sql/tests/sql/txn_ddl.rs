//! `DROP TABLE` and `CREATE TABLE` in a transaction (`zepto_sql::txn`, the PostgreSQL door's
//! BEGIN): both are held until COMMIT, and an index made on a table the transaction made goes
//! with that table. The transaction's own
//! statements find the tables as its held changes leave them; others see the stored tables
//! until COMMIT stores everything as one change; ROLLBACK, a savepoint rolled back to, or a
//! session that ends first leaves the stored tables as they were: `BEGIN; DROP TABLE t;
//! ROLLBACK` keeps every row, and pandas' `to_sql(if_exists="replace")` (DROP, CREATE,
//! INSERTs) that fails halfway leaves the old table.

use zepto_sql::txn::Txn;
use zepto_sql::{Engine, SqlError};

fn engine() -> Engine {
    let e = Engine::new();
    ok(&e, "CREATE TABLE a (ts TIMESTAMP, sym SYMBOL, n BIGINT)");
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 1), (2, 'S2', 2), (3, 'S1', 3)");
    ok(&e, "CREATE TABLE b (ts TIMESTAMP, x DOUBLE)");
    e
}

fn ok(e: &Engine, sql: &str) -> String {
    e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}")).status.unwrap_or_default()
}

fn rows(e: &Engine, sql: &str) -> Vec<String> {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    let b = r.batch();
    (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join(",")).collect()
}

fn missing(e: &Engine, table: &str) -> bool {
    matches!(e.execute(&format!("SELECT * FROM {table}")), Err(SqlError::TableNotFound { .. }))
}

#[test]
fn a_drop_waits_for_commit_and_goes_with_rollback() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    assert_eq!(ok(&t, "DROP TABLE a"), "DROP TABLE");
    assert!(missing(&t, "a"), "gone for the transaction");
    assert!(matches!(t.execute("INSERT INTO a VALUES (4, 'S4', 4)"), Err(SqlError::TableNotFound { .. })));
    assert!(matches!(t.execute("DROP TABLE a"), Err(SqlError::TableNotFound { .. })));
    assert_eq!(ok(&t, "DROP TABLE IF EXISTS a"), "DROP TABLE");
    assert_eq!(rows(&e, "SELECT count(*) FROM a"), ["3"], "still there for others");
    ok(&e, "INSERT INTO a VALUES (4, 'S4', 4)");
    drop(t);
    drop(txn);
    assert_eq!(rows(&e, "SELECT count(*) FROM a"), ["4"], "a transaction that ends without COMMIT drops nothing");
    // Committed, the table goes, with the rows others stored meanwhile.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "DROP TABLE a");
    ok(&e, "INSERT INTO a VALUES (5, 'S5', 5)");
    assert_eq!(t.commit().expect("commit"), 0);
    assert!(missing(&e, "a"));
    // DROP TABLE IF EXISTS of nothing holds nothing.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    assert_eq!(ok(&t, "DROP TABLE IF EXISTS a"), "DROP TABLE");
    assert_eq!(txn.held_changes(), 0);
}

/// pandas' `to_sql(if_exists="replace")`: DROP, CREATE with other columns, INSERT, COMMIT.
#[test]
fn a_table_replaced_in_a_transaction_is_all_or_nothing() {
    let e = engine();
    let replace = |e: &Engine| {
        let txn = Txn::new();
        let t = e.with_txn(Some(txn.clone()));
        ok(&t, "DROP TABLE IF EXISTS a");
        assert_eq!(ok(&t, "CREATE TABLE a (ts TIMESTAMP, name VARCHAR, v DOUBLE)"), "CREATE TABLE");
        assert_eq!(ok(&t, "INSERT INTO a VALUES (10, 'x', 1.5), (11, 'y', 2.5)"), "INSERT 2");
        assert_eq!(rows(&t, "SELECT name, v FROM a ORDER BY ts"), ["x,1.5", "y,2.5"], "the transaction's own table");
        assert_eq!(rows(e, "SELECT count(*) FROM a"), ["3"], "others still read the old one");
        (txn, t)
    };
    // A failing row rolls everything back: the old table and its rows stay.
    let (txn, t) = replace(&e);
    assert!(t.execute("INSERT INTO a VALUES (12, 'z', 'not a number')").is_err());
    txn.fail();
    assert!(t.commit().is_err(), "a failed transaction stores nothing");
    assert_eq!(rows(&e, "SELECT sum(n) FROM a"), ["6"]);
    // Committed: the new table, its rows, in one change.
    let (_txn, t) = replace(&e);
    assert_eq!(t.commit().expect("commit"), 2);
    assert_eq!(rows(&e, "SELECT name, v FROM a ORDER BY ts"), ["x,1.5", "y,2.5"]);
    assert!(e.execute("SELECT n FROM a").is_err(), "the old columns are gone");
}

/// CREATE TABLE beside held changes is held: others do not see it before COMMIT; the
/// transaction inserts, deletes, updates and reads it; its layout (key, time, DEDUP) is the
/// one it was made with; `CREATE TABLE AS` is held the same way; a savepoint rolled back
/// drops what was made after it.
#[test]
fn a_table_made_beside_held_changes_waits_for_commit() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO b VALUES (1, 1.0)");
    ok(&t, "CREATE TABLE d (ts TIMESTAMP, sym SYMBOL, n BIGINT) DEDUP UPSERT KEYS (ts, sym)");
    assert!(missing(&e, "d"));
    assert!(matches!(t.execute("CREATE TABLE d (n BIGINT)"), Err(SqlError::TableExists(_))));
    assert_eq!(ok(&t, "CREATE TABLE IF NOT EXISTS d (n BIGINT)"), "CREATE TABLE");
    ok(&t, "INSERT INTO d VALUES (2, 'S1', 1), (1, 'S2', 2), (2, 'S1', 3)");
    assert_eq!(ok(&t, "UPDATE d SET n = n * 10 WHERE sym = 'S2'"), "UPDATE 1");
    assert_eq!(ok(&t, "DELETE FROM d WHERE n = 3"), "DELETE 1");
    ok(&t, "INSERT INTO d VALUES (3, 'S3', 4)");
    assert_eq!(ok(&t, "CREATE TABLE e2 AS SELECT sym, n FROM d WHERE n > 5"), "CREATE TABLE 1");
    txn.savepoint("s");
    ok(&t, "CREATE TABLE f (n BIGINT)");
    ok(&t, "DROP TABLE b");
    txn.rollback_to("s").expect("rolled back");
    assert!(missing(&t, "f"));
    let seen = ["1970-01-01 00:00:00.000000001,S2,20", "1970-01-01 00:00:00.000000003,S3,4"];
    assert_eq!(rows(&t, "SELECT * FROM d ORDER BY n DESC"), seen);
    t.commit().expect("commit");
    assert_eq!(rows(&e, "SELECT * FROM d ORDER BY n DESC"), seen);
    assert_eq!(rows(&e, "SELECT sym, n FROM e2"), ["S2,20"]);
    assert_eq!(rows(&e, "SELECT count(*) FROM b"), ["1"]);
    assert!(missing(&e, "f"));
    // The layout came along: a duplicate (ts, sym) replaces its row.
    ok(&e, "INSERT INTO d VALUES (1, 'S2', 7)");
    assert_eq!(rows(&e, "SELECT n FROM d WHERE sym = 'S2'"), ["7"]);
}

/// COMMIT decides again over the tables as they are then: a name another session took
/// meanwhile fails it whole, as does a table dropped meanwhile (unless `IF EXISTS`); a
/// table made and dropped again in the transaction leaves nothing.
#[test]
fn held_drops_and_creations_are_decided_again_at_commit() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO b VALUES (1, 1.0)");
    ok(&t, "CREATE TABLE d (n BIGINT)");
    ok(&e, "CREATE TABLE d (m VARCHAR)");
    assert!(matches!(t.commit(), Err(SqlError::TableExists(_))));
    assert_eq!(rows(&e, "SELECT count(*) FROM b"), ["0"], "nothing stored");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO b VALUES (1, 1.0)");
    ok(&t, "DROP TABLE d");
    ok(&e, "DROP TABLE d");
    assert!(matches!(t.commit(), Err(SqlError::TableNotFound { .. })));
    assert_eq!(rows(&e, "SELECT count(*) FROM b"), ["0"], "nothing stored");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "INSERT INTO b VALUES (1, 1.0)");
    ok(&t, "CREATE TABLE d (n BIGINT)");
    ok(&t, "INSERT INTO d VALUES (1)");
    ok(&t, "DROP TABLE IF EXISTS a");
    ok(&e, "DROP TABLE a");
    ok(&t, "DROP TABLE d");
    ok(&t, "CREATE TABLE d (s VARCHAR)");
    ok(&t, "INSERT INTO d VALUES ('kept')");
    assert_eq!(t.commit().expect("commit"), 2);
    assert_eq!(
        (rows(&e, "SELECT * FROM d"), rows(&e, "SELECT count(*) FROM b")),
        (vec!["kept".into()], vec!["1".into()])
    );
}

/// A table a materialized view reads cannot be dropped, in a transaction or not: refused at
/// the statement, and at COMMIT when the view came since.
#[test]
fn a_table_with_a_view_is_not_dropped() {
    let e = engine();
    ok(&e, "CREATE MATERIALIZED VIEW v AS SELECT sym, count(*) AS c FROM a GROUP BY sym");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    let said = |r: Result<(), SqlError>| r.expect_err("refused").to_string();
    assert!(said(t.execute("DROP TABLE a").map(drop)).contains("has materialized views (v)"));
    assert!(said(t.execute("DROP TABLE v").map(drop)).contains("DROP MATERIALIZED VIEW v"));
    ok(&t, "DROP TABLE b");
    ok(&e, "CREATE MATERIALIZED VIEW w AS SELECT count(*) AS c FROM b");
    assert!(said(t.commit().map(drop)).contains("has materialized views (w)"));
    assert_eq!(rows(&e, "SELECT c FROM w"), ["0"]);
}

/// A change log that keeps what it is given: each record's changes, by kind and table; told
/// to, it refuses every record that appends rows.
#[derive(Default)]
struct Spy(std::sync::Mutex<Vec<Vec<String>>>, std::sync::atomic::AtomicBool);

impl zepto_storage::ChangeLog for Spy {
    fn log(&self, changes: &[zepto_storage::Change<'_>]) -> Result<u64, zepto_storage::StorageError> {
        use zepto_storage::Change as C;
        let rows = changes.iter().any(|c| matches!(c, C::Append { .. }));
        if rows && self.1.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(zepto_storage::StorageError::Durability("the disk is full".into()));
        }
        let said = changes
            .iter()
            .map(|c| match c {
                C::CreateTable { name, .. } => format!("create {name}"),
                C::DropTable { name } => format!("drop {name}"),
                C::Append { table, columns } => format!("append {table} {}", columns[0].len()),
                C::Delete { table, .. } => format!("delete {table}"),
                other => format!("{other:?}").chars().take(20).collect(),
            })
            .collect();
        let mut records = self.0.lock().expect("records");
        records.push(said);
        Ok(records.len() as u64)
    }
    fn checkpoint(&self, _: &zepto_storage::Catalog) -> Result<String, zepto_storage::StorageError> {
        Ok(String::new())
    }
    fn tier(&self, _: &zepto_storage::Catalog, _: &str, _: i64) -> Result<String, zepto_storage::StorageError> {
        Ok(String::new())
    }
    fn retain(&self, _: &zepto_storage::Catalog, _: &str, _: i64) -> Result<String, zepto_storage::StorageError> {
        Ok(String::new())
    }
}

/// `CREATE TABLE AS` and a COMMIT that drops and makes tables are each one logged record (a
/// crash sees all of it or none); a record the log refuses leaves the tables as they were.
#[test]
fn tables_made_and_replaced_are_one_logged_change() {
    let catalog = std::sync::Arc::new(zepto_storage::Catalog::new());
    let spy = std::sync::Arc::new(Spy::default());
    catalog.set_log(spy.clone()).expect("a log");
    let e = Engine::with_catalog(catalog);
    ok(&e, "CREATE TABLE a (ts TIMESTAMP, sym SYMBOL, n BIGINT)");
    ok(&e, "INSERT INTO a VALUES (1, 'S1', 1), (2, 'S2', 2)");
    assert_eq!(ok(&e, "CREATE TABLE c AS SELECT sym, n FROM a"), "CREATE TABLE 2");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "DROP TABLE c");
    ok(&t, "CREATE TABLE c (s VARCHAR)");
    ok(&t, "INSERT INTO c VALUES ('x')");
    ok(&t, "DELETE FROM a WHERE n = 1");
    t.commit().expect("commit");
    let records = spy.0.lock().expect("records").clone();
    assert_eq!(records[2..], [vec!["create c", "append c 2"], vec!["drop c", "create c", "append c 1", "delete a"]]);
    // Rows refused by the log: nothing changes (not even a table made empty).
    spy.1.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(e.execute("CREATE TABLE d AS SELECT n FROM a").is_err());
    assert!(missing(&e, "d"));
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "DROP TABLE a");
    ok(&t, "CREATE TABLE a (s VARCHAR)");
    ok(&t, "INSERT INTO a VALUES ('y')");
    assert!(t.commit().is_err());
    assert_eq!((rows(&e, "SELECT n FROM a"), rows(&e, "SELECT s FROM c")), (vec!["2".into()], vec!["x".into()]));
}

/// `CREATE TABLE` in a transaction is held as PostgreSQL's is, the first statement too:
/// ROLLBACK takes it away. `CREATE INDEX` of the new table goes into it as held, and COMMIT
/// makes the table, its index and its rows as one logged change; then the index answers.
#[test]
fn a_table_made_first_goes_with_rollback_and_takes_its_indexes() {
    let catalog = std::sync::Arc::new(zepto_storage::Catalog::new());
    let spy = std::sync::Arc::new(Spy::default());
    catalog.set_log(spy.clone()).expect("a log");
    let e = Engine::with_catalog(catalog);
    let make = |e: &Engine| {
        let txn = Txn::new();
        let t = e.with_txn(Some(txn.clone()));
        assert_eq!(ok(&t, "CREATE TABLE m (id BIGINT, v FLOAT[3])"), "CREATE TABLE");
        assert_eq!(ok(&t, "CREATE INDEX m_v ON m USING hnsw (v) WITH (metric = 'l2')"), "CREATE INDEX");
        assert_eq!(ok(&t, "CREATE INDEX IF NOT EXISTS m_v ON m USING hnsw (v)"), "CREATE INDEX");
        ok(&t, "INSERT INTO m VALUES (1, [1, 0, 0]), (2, [0, 1, 0]), (3, [0, 0, 1])");
        assert!(missing(e, "m"), "others do not see it");
        let listed = "SELECT tablename, indexname FROM pg_indexes WHERE tablename = 'm'";
        assert_eq!((rows(&t, listed), rows(e, listed)), (vec!["m,m_v".to_string()], vec![]));
        (txn, t)
    };
    let (txn, t) = make(&e);
    assert!(t.execute("CREATE INDEX m_v ON m USING hnsw (v)").is_err(), "the name is taken");
    assert!(t.execute("CREATE INDEX m_id ON m USING hnsw (id)").is_err(), "no vector column");
    drop((t, txn));
    assert!(missing(&e, "m"), "a transaction that ends without COMMIT makes nothing");
    assert!(spy.0.lock().expect("records").is_empty(), "nothing logged");
    let (txn, t) = make(&e);
    // An index made after a savepoint goes with a rollback to it.
    txn.savepoint("s");
    ok(&t, "CREATE INDEX m_v2 ON m USING hnsw (v)");
    let listed = "SELECT indexname FROM pg_indexes WHERE tablename = 'm' ORDER BY 1";
    assert_eq!(rows(&t, listed), ["m_v", "m_v2"]);
    txn.rollback_to("s").expect("rolled back");
    assert_eq!(rows(&t, listed), ["m_v"]);
    t.commit().expect("commit");
    let records = spy.0.lock().expect("records").clone();
    assert_eq!(records.len(), 1, "one record: {records:?}");
    // The index last: a name a held drop frees is free there on replay.
    assert_eq!((records[0][0].as_str(), records[0][1].as_str()), ("create m", "append m 3"));
    assert!(records[0][2].starts_with("CreateIndex"), "{records:?}");
    let near = "SELECT id FROM m ORDER BY array_distance(v, [0.1, 0.9, 0.0]) LIMIT 1";
    assert_eq!(rows(&e, near), ["2"]);
    assert!(rows(&e, &format!("EXPLAIN {near}")).join("\n").contains("AnnTopN"), "the index answers");
    // A table made, indexed and dropped again logs no index (replay would find its name taken).
    let t = e.with_txn(Some(Txn::new()));
    ok(&t, "CREATE TABLE brief (v FLOAT[3])");
    assert!(t.execute("CREATE INDEX m_v ON brief USING hnsw (v)").is_err(), "m_v is m's");
    let t = e.with_txn(Some(Txn::new()));
    ok(&t, "CREATE TABLE brief (v FLOAT[3])");
    ok(&t, "CREATE INDEX brief_v ON brief USING hnsw (v)");
    ok(&t, "DROP TABLE brief");
    t.commit().expect("commit");
    let last = spy.0.lock().expect("records").last().cloned().expect("a record");
    assert_eq!(last, ["create brief", "drop brief"]);
    assert_eq!(rows(&e, "SELECT indexname FROM pg_indexes WHERE tablename = 'm'"), ["m_v"]);
}

/// A session scoped to a tenant may not index a table with `tenant_id`, one its transaction
/// made included.
#[test]
fn a_scoped_session_does_not_index_a_tenant_table_it_made() {
    let e = engine();
    let scoped = e.with_access(zepto_sql::access::TableAccess::all().with_tenant("x"));
    let txn = Txn::new();
    let t = scoped.with_txn(Some(txn.clone()));
    ok(&t, "CREATE TABLE tv (tenant_id VARCHAR, v FLOAT[2])");
    let err = t.execute("CREATE INDEX tv_v ON tv USING hnsw (v)").expect_err("refused");
    assert!(matches!(err, SqlError::PermissionDenied(_)), "{err}");
}

/// An index name another session took while the transaction held its own fails COMMIT whole;
/// a dropped table's index does not show on the table made again under its name.
#[test]
fn held_index_names_are_checked_again_at_commit() {
    let e = Engine::new();
    ok(&e, "CREATE TABLE old (v FLOAT[2])");
    ok(&e, "CREATE INDEX old_v ON old USING hnsw (v)");
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "CREATE TABLE n (v FLOAT[2])");
    ok(&t, "CREATE INDEX n_v ON n USING hnsw (v)");
    ok(&e, "CREATE TABLE other (v FLOAT[2])");
    ok(&e, "CREATE INDEX n_v ON other USING hnsw (v)");
    assert!(t.commit().is_err(), "another table holds n_v by now");
    assert!(missing(&e, "n"));
    // Dropped and made again: the old index goes with the old table, its name free again.
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "DROP TABLE old");
    ok(&t, "CREATE TABLE old (v FLOAT[2], w FLOAT[2])");
    let listed = "SELECT indexname FROM pg_indexes WHERE tablename = 'old'";
    assert_eq!(rows(&t, listed), Vec::<String>::new());
    assert_eq!(rows(&t, "SELECT relhasindex FROM pg_class WHERE relname = 'old'"), ["false"]);
    ok(&t, "CREATE INDEX old_v ON old USING hnsw (w)");
    t.commit().expect("commit");
    assert_eq!(rows(&e, "SELECT indexdef FROM pg_indexes WHERE tablename = 'old'").len(), 1);
    assert!(rows(&e, "SELECT indexdef FROM pg_indexes WHERE tablename = 'old'")[0].contains("(w)"));
}

/// The system catalogs, `SHOW TABLES` and `DESCRIBE` list the tables as the transaction finds
/// them (SQLAlchemy's `has_table` before a `CREATE TABLE` reads `pg_class`): a held drop is
/// gone, a held creation there; other sessions see the stored tables.
#[test]
fn the_catalogs_show_the_tables_a_transaction_holds() {
    let e = engine();
    let txn = Txn::new();
    let t = e.with_txn(Some(txn.clone()));
    ok(&t, "DROP TABLE b");
    ok(&t, "CREATE TABLE nb (s VARCHAR, k BIGINT)");
    let listed = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1";
    assert_eq!((rows(&t, listed), rows(&e, listed)), (vec!["a".into(), "nb".into()], vec!["a".into(), "b".into()]));
    let classes = "SELECT relname FROM pg_class WHERE relname IN ('a', 'b', 'nb') ORDER BY 1";
    assert_eq!(rows(&t, classes), ["a", "nb"]);
    let columns =
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'nb' ORDER BY ordinal_position";
    assert_eq!((rows(&t, columns), rows(&e, columns)), (vec!["s".into(), "k".into()], vec![]));
    assert_eq!(rows(&t, "SHOW TABLES"), ["a", "nb"]);
    assert_eq!(rows(&t, "DESCRIBE nb").len(), 2);
    assert!(matches!(t.execute("DESCRIBE b"), Err(SqlError::TableNotFound { .. })));
    t.commit().expect("commit");
    assert_eq!(rows(&e, listed), ["a", "nb"]);
}

/// A session scoped to a tenant may drop a table without `tenant_id`; if the table has one by
/// COMMIT (another session added it), COMMIT refuses, dropping nothing.
#[test]
fn a_tenant_drop_is_checked_again_at_commit() {
    let e = engine();
    let scoped = e.with_access(zepto_sql::access::TableAccess::all().with_tenant("x"));
    let txn = Txn::new();
    let t = scoped.with_txn(Some(txn.clone()));
    ok(&t, "DROP TABLE b");
    ok(&e, "ALTER TABLE b ADD COLUMN tenant_id VARCHAR");
    assert!(matches!(t.commit(), Err(SqlError::PermissionDenied(_))));
    assert_eq!(rows(&e, "SELECT count(*) FROM b"), ["0"], "still there");
}
