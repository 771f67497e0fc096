//! Distributed queries (`zepto_sql::plan::dist`) against one node holding every row: two engines
//! each hold *all* rows (as nodes keep rows of partitions a rebalance took away), own half of
//! 4 Kafka partitions, and carry fragments to each other through encoded requests and Arrow
//! IPC results ([`LocalCluster`]), as the Flight door does. Every query must answer as the single node does:
//! each row counted once, by its owner only. Data: random trades (NULL keys, NULL prices,
//! distinct times), quotes for ASOF, and a table without a partition key.

use std::sync::Arc;
use zepto_sql::local_cluster::LocalCluster;
use zepto_sql::Engine;

use crate::common;
use common::Rng;

fn rows(e: &Engine, sql: &str) -> Vec<String> {
    common::sorted_rows(e, sql, 6)
}

fn load(e: &Engine, seed: u64) {
    let mut rng = Rng::new(seed);
    for ddl in [
        "CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT, venue VARCHAR)",
        "CREATE TABLE quotes (ts TIMESTAMP, sym SYMBOL, bid DOUBLE)",
        "CREATE TABLE events (ts TIMESTAMP, kind VARCHAR, v DOUBLE)",
        "CREATE TABLE local_notes (ts TIMESTAMP, sym SYMBOL, n BIGINT)",
    ] {
        e.execute(ddl).expect("ddl");
    }
    let mut t = Vec::new();
    for i in 0..3000 {
        let sym = if rng.below(15) == 0 { "NULL".to_string() } else { format!("'S{}'", rng.below(23)) };
        let px = if rng.below(20) == 0 { "NULL".to_string() } else { format!("{}.5", rng.below(200)) };
        let venue = ["'X'", "'Y'", "NULL"][rng.below(3) as usize];
        t.push(format!(
            "({} , {sym}, {px}, {}, {venue})",
            1_700_000_000_000_000_000i64 + i * 1_000_003,
            rng.below(500)
        ));
    }
    e.execute(&format!("INSERT INTO trades VALUES {}", t.join(", "))).expect("trades");
    let q: Vec<String> = (0..1500)
        .map(|i| {
            format!("({}, 'S{}', {}.25)", 1_700_000_000_000_000_000i64 + i * 2_000_011, rng.below(23), rng.below(100))
        })
        .collect();
    e.execute(&format!("INSERT INTO quotes VALUES {}", q.join(", "))).expect("quotes");
    let ev: Vec<String> = (0..400)
        .map(|i| format!("({}, 'k{}', {}.0)", 1_700_000_000_000_000_000i64 + i, i % 7, rng.below(50)))
        .collect();
    e.execute(&format!("INSERT INTO events VALUES {}", ev.join(", "))).expect("events");
    e.execute("INSERT INTO local_notes VALUES (1, 'S1', 7)").expect("notes");
}

/// The single node, and two cluster nodes `a` (partitions 0, 1) and `b` (2, 3) of 4.
fn setup() -> (Engine, Engine, Engine, Arc<LocalCluster>) {
    let single = Engine::new();
    load(&single, 7);
    let cluster = LocalCluster::new(4, |t| !t.starts_with("local_"));
    let mut members = Vec::new();
    for (id, mine) in [("a", [0, 1]), ("b", [2, 3])] {
        let e = Engine::new();
        load(&e, 7);
        members.push(cluster.join(id, &e, &mine));
    }
    let b = members.pop().expect("b");
    let a = members.pop().expect("a");
    (single, a, b, cluster)
}

const QUERIES: &[&str] = &[
    "SELECT count(*) FROM trades",
    "SELECT sym, count(*), count(price), sum(size), avg(price), min(price), max(price) FROM trades GROUP BY sym",
    "SELECT sym, first(price), last(price), vwap(price, size) FROM trades GROUP BY sym",
    "SELECT venue, arg_min(price, ts), arg_max(sym, ts), max_by(size, ts) FROM trades GROUP BY venue",
    "SELECT xbar(INTERVAL '1 second', ts) AS b, sym, sum(size), max(price) FROM trades GROUP BY b, sym",
    "SELECT venue, count(*), sum(price) FROM trades WHERE size > 100 GROUP BY venue",
    "SELECT count(*), sum(price) FROM trades WHERE sym = 'S1'",
    "SELECT count(*) FROM trades WHERE sym IS NULL",
    "SELECT stddev_samp(price), var_pop(price) FROM trades",
    "SELECT sym, corr(price, size), regr_slope(price, size), regr_count(price, size) FROM trades GROUP BY sym",
    "SELECT covar_samp(size, price), regr_intercept(price, size), regr_r2(price, size) FROM trades",
    "SELECT sym, median(price) FROM trades GROUP BY sym",
    "SELECT count(DISTINCT sym) FROM trades",
    "SELECT * FROM trades WHERE price > 150",
    "SELECT ts, sym, price FROM trades ORDER BY ts DESC LIMIT 7",
    "SELECT sym, ts, row_number() OVER (PARTITION BY sym ORDER BY ts) FROM trades WHERE price < 20",
    "SELECT t.ts, t.sym, t.price, q.bid FROM trades t ASOF JOIN quotes q ON t.sym = q.sym AND t.ts >= q.ts",
    "SELECT * FROM trades LATEST ON ts PARTITION BY sym",
    "SELECT sym, count(*) FROM trades WHERE price > (SELECT avg(price) FROM trades) GROUP BY sym",
    "SELECT kind, count(*), sum(v) FROM events GROUP BY kind",
    "SELECT count(*) FROM events",
    "SELECT count(*), sum(size) FROM trades WHERE sym = 'nowhere'",
    "SELECT sym, count(*) FROM trades WHERE sym = 'nowhere' GROUP BY sym",
    // The system catalogs are built on the node asked, never gathered.
    "SELECT table_name, table_type FROM information_schema.tables",
    "SELECT table_name, count(*), max(ordinal_position) FROM information_schema.columns GROUP BY table_name",
];

#[test]
fn every_node_answers_as_one_node_does() {
    let (single, a, b, _cluster) = setup();
    for sql in QUERIES {
        let want = rows(&single, sql);
        assert_eq!(rows(&a, sql), want, "node a: {sql}");
        assert_eq!(rows(&b, sql), want, "node b: {sql}");
    }
    // SET cluster_scope = local: each node's own partitions, which together are every row.
    let local = |e: &Engine| {
        let s = e.settings().with("cluster_scope", "local", Default::default()).expect("setting");
        let r = e.with_settings(s).execute("SELECT count(*) FROM trades").expect("count");
        match zepto_sql::result::first_value(&r) {
            Some(zepto_storage::Value::Int64(n)) => n,
            v => panic!("count {v:?}"),
        }
    };
    let (ca, cb) = (local(&a), local(&b));
    assert!(ca > 0 && cb > 0 && ca + cb == 3000, "{ca} + {cb}");
    // A table the cluster does not spread is each node's own.
    assert_eq!(rows(&a, "SELECT count(*) FROM local_notes"), vec!["Int64(1)".to_string()]);
}

#[test]
fn explain_shows_the_split() {
    let (_, a, _, _cluster) = setup();
    let plan = rows(&a, "EXPLAIN SELECT sym, sum(size) FROM trades GROUP BY sym").join("\n");
    assert!(plan.contains("MergeAggregate"), "{plan}");
    assert!(plan.contains("Exchange") && plan.contains("b [2, 3]"), "{plan}");
    assert!(plan.contains("PartialAggregate"), "{plan}");
    let plan = rows(&a, "EXPLAIN SELECT * FROM trades WHERE price > 1").join("\n");
    assert!(plan.contains("Exchange") && !plan.contains("MergeAggregate"), "{plan}");
    // Joins and windows on the partition key run whole on every node, under the exchange.
    for (sql, op) in [
        (
            "EXPLAIN SELECT t.sym, t.price, q.bid FROM trades t ASOF JOIN quotes q ON t.sym = q.sym AND t.ts >= q.ts",
            "Asof",
        ),
        ("EXPLAIN SELECT sym, ts, row_number() OVER (PARTITION BY sym ORDER BY ts) FROM trades", "PartitionWindow"),
    ] {
        let r = a.execute(sql).expect("explain");
        let b = r.batch();
        let plan: Vec<String> = (0..b.rows).map(|i| common::cell(&b.columns[0], i, 6)).collect();
        let at = |word: &str| plan.iter().position(|l| l.contains(word));
        assert!(at("Exchange").is_some() && at("Exchange") < at(op), "{op} under the exchange: {plan:#?}");
    }
    // One key: only the node owning its partition is asked.
    let p = match zepto_sql::result::first_value(&a.execute("SELECT kafka_partition('S1', 4)").expect("p")) {
        Some(zepto_storage::Value::Int64(p)) => p,
        v => panic!("{v:?}"),
    };
    let plan = rows(&a, "EXPLAIN SELECT count(*) FROM trades WHERE sym = 'S1'").join("\n");
    let want = if p < 2 { "no other node".to_string() } else { format!("b [{p}]") };
    assert!(plan.contains(&want), "{want}: {plan}");
}

#[test]
fn a_partition_without_owner_fails_the_query() {
    let (_, a, _, cluster) = setup();
    cluster.assign("b", &[2], &[2]);
    let err = a.execute("SELECT count(*) FROM trades").expect_err("partition 3 has no owner").to_string();
    assert!(err.contains("[3]") && err.contains("no owner"), "{err}");
    // Tables the cluster does not spread still answer.
    assert!(a.execute("SELECT count(*) FROM local_notes").is_ok());
}

#[test]
fn a_node_refuses_partitions_it_no_longer_owns() {
    let (single, a, _, cluster) = setup();
    // Partition 3 is leaving `b` for `a`: `b` gave it up, `a` has not got it yet and still
    // sees `b` owning it. `b` refuses to answer for it.
    cluster.assign("b", &[2], &[2, 3]);
    let err = a.execute("SELECT count(*) FROM trades").expect_err("a stale view").to_string();
    assert!(err.contains("node b") && err.contains("does not own partitions [3]"), "{err}");
    // Once `a` has it, the answer is whole again.
    cluster.assign("a", &[0, 1, 3], &[0, 1, 3]);
    cluster.assign("b", &[2], &[2]);
    let sql = "SELECT sym, count(*) FROM trades GROUP BY sym";
    assert_eq!(rows(&a, sql), rows(&single, sql));
    assert!(zepto_sql::plan::dist::fragment::Request::decode(&[]).is_err(), "empty bytes are no request");
}

#[test]
fn a_member_of_a_cluster_that_is_gone_answers_nothing() {
    let (_, a, _, cluster) = setup();
    drop(cluster);
    let err = a.execute("SELECT count(*) FROM trades").expect_err("no cluster, no answer").to_string();
    assert!(err.contains("gone"), "{err}");
}

#[test]
fn allow_partial_answers_without_the_missing_partitions_and_says_so() {
    let (single, a, _, cluster) = setup();
    let partial = |e: &Engine| {
        let s = e.settings().with("allow_partial", "on", Default::default()).expect("setting");
        e.with_settings(s)
    };
    let sql = "SELECT count(*) FROM trades";
    let all = rows(&single, sql);
    // Partition 3 has no owner: without it, and marked.
    cluster.assign("b", &[2], &[2]);
    let r = partial(&a).execute(sql).expect("a partial answer");
    assert_eq!(r.missing_partitions, vec![3]);
    let local3 = "SELECT count(*) FROM trades WHERE kafka_partition(coalesce(CAST(sym AS VARCHAR), ''), 4) <> 3";
    assert_eq!(rows(&single, local3), rows(&partial(&a), sql), "every row but partition 3's");
    // A node that refuses (it gave partition 3 up, `a` still sees it there): its partitions
    // are left out.
    cluster.assign("b", &[2], &[2, 3]);
    let r = partial(&a).execute(sql).expect("a partial answer");
    assert_eq!(r.missing_partitions, vec![2, 3]);
    // Whole again: nothing missing.
    cluster.assign("b", &[2, 3], &[2, 3]);
    let r = partial(&a).execute(sql).expect("whole");
    assert!(r.missing_partitions.is_empty());
    assert_eq!(rows(&partial(&a), sql), all);
}

/// Statements on a member go through the cluster's log: CREATE TABLE reaches every node,
/// INSERT's rows are stored by every node and answered once (by their owners), statements the
/// log cannot carry are refused naming the escape, which runs them on this node alone.
#[test]
fn statements_on_a_member_go_through_the_log() {
    let (single, a, b, _cluster) = setup();
    let ddl = "CREATE TABLE fills (ts TIMESTAMP, sym SYMBOL, qty BIGINT)";
    a.execute(ddl).expect("create through a");
    single.execute(ddl).expect("create on the single node");
    assert!(b.catalog().exists("fills"), "b learned the table from the log");
    let again = a.execute(ddl).expect_err("a table that exists");
    assert_eq!(again.code(), "TABLE_EXISTS");
    a.execute("CREATE TABLE IF NOT EXISTS fills (ts TIMESTAMP, sym SYMBOL, qty BIGINT)").expect("if not exists");
    let values: Vec<String> = (0..200).map(|i| format!("({i}, 'S{}', {i})", i % 13)).collect();
    let insert = format!("INSERT INTO fills VALUES {}", values.join(", "));
    let r = b.execute(&insert).expect("insert through b");
    assert_eq!(r.status.as_deref(), Some("INSERT 200"));
    single.execute(&insert).expect("insert on the single node");
    let from_select = "INSERT INTO fills SELECT ts, sym, size FROM trades WHERE size < 50";
    a.execute(from_select).expect("insert ... select through a");
    single.execute(from_select).expect("insert ... select on the single node");
    for q in
        ["SELECT sym, count(*), sum(qty) FROM fills GROUP BY sym", "SELECT count(*), count(DISTINCT ts) FROM fills"]
    {
        let want = rows(&single, q);
        assert_eq!(rows(&a, q), want, "{q} on a");
        assert_eq!(rows(&b, q), want, "{q} on b");
    }
    for s in [
        "DELETE FROM fills WHERE qty > 5",
        "UPDATE fills SET qty = 0",
        "DROP TABLE fills",
        "ALTER TABLE fills ADD COLUMN note VARCHAR",
        "CREATE TABLE copy AS SELECT * FROM fills",
    ] {
        let e = a.execute(s).expect_err(s);
        assert_eq!(e.code(), "NOT_SUPPORTED", "{s}: {e}");
        assert!(e.to_string().contains("cluster_scope = local"), "{s}: {e}");
    }
    assert!(!a.catalog().exists("copy"), "a refused CREATE TABLE AS creates nothing");
    // A table the cluster does not spread is this node's own.
    a.execute("CREATE TABLE local_scratch (ts TIMESTAMP, n BIGINT)").expect("a local table");
    assert!(!b.catalog().exists("local_scratch"), "a node's own table stays its own");
    a.execute("DELETE FROM local_scratch").expect("statements on a node's own table run");
    // The escape: this node's copy only.
    let r = a.execute("SET cluster_scope = local; DELETE FROM fills WHERE qty > 5");
    assert!(r.is_ok(), "{:?}", r.err());
}

/// A query that reads other nodes' partitions is never judged small by the rows of this node's
/// share (the doors would run it inline or on the quick lane while it waits on the network);
/// one over a table the cluster does not spread is, as on a single node.
#[test]
fn a_query_over_other_nodes_is_not_small() {
    let (single, a, _b, _cluster) = setup();
    let parse = |sql: &str| match zepto_sql::parser::parse_statement(sql).expect("parses") {
        zepto_sql::parser::ast::Statement::Query(q) => q,
        s => panic!("not a query: {s:?}"),
    };
    let sql = "SELECT count(*) FROM trades WHERE sym = 'S1'";
    let q = parse(sql);
    assert!(single.prepare(&q).expect("plans").scan_rows().is_some_and(|n| n > 0), "one node: small");
    assert_eq!(a.prepare(&q).expect("plans").scan_rows(), None, "a cluster node: {sql}");
    let local = parse("SELECT * FROM local_notes");
    assert_eq!(a.prepare(&local).expect("plans").scan_rows(), Some(1), "a table the cluster does not spread");
}
