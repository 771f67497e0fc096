//! Cluster nodes against a real Kafka broker (tests/kafka/broker.sh, jars from Maven Central
//! by `make kafka`): records produced with Kafka's own client become rows exactly once,
//! through a `kill -9` and a restart, with a malformed record refused and counted; `/write` on
//! a node goes through Kafka; two nodes of one group split the partitions and hold disjoint
//! rows, and either answers for all of them (over Arrow Flight); with three nodes, a query
//! never answers part of the rows while one is killed and its partitions move. Without the
//! jars or `java` the
//! test says so and passes without running, except under `make test`
//! (ZEPTO_REQUIRE_KAFKA=1), where that is a failure.

mod common;

use common::kafka::{flush, send, wait_for, Broker};
use common::{get, post, sql, Server};
use rdkafka::producer::BaseProducer;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const PARTITIONS: usize = 4;

/// The first cell of a one-row answer, as an integer (0 while the table does not exist);
/// `None` while the node cannot answer yet (it does not know the topic's partitions and their
/// owners, or they are moving).
fn answer(addr: &str, q: &str) -> Option<i64> {
    let r = post(addr, "/", q);
    let starting = |t: &str| {
        t.contains("no known partitions") || t.contains("no owner") || t.contains("(the cluster is rebalancing)")
    };
    match r.status {
        200 => Some(r.json()["data"][0][0].as_i64().unwrap_or(0)),
        404 if r.error_code() == "TABLE_NOT_FOUND" => Some(0),
        400 if starting(&r.text()) => None,
        s => panic!("{q}: {s} {}", r.text()),
    }
}

/// [`answer`], 0 while the node cannot answer yet (for polling).
fn count(addr: &str, q: &str) -> i64 {
    answer(addr, q).unwrap_or(0)
}

/// [`answer`] once the node can answer (partitions move under load: a query may be refused,
/// naming them, for a few seconds).
fn settled(addr: &str, q: &str) -> i64 {
    let mut got = None;
    wait_for(q, 30, || {
        got = answer(addr, q);
        got.is_some()
    });
    got.unwrap_or_default()
}

fn node(brokers: &str, topic: &str, id: &str, data: &str) -> Server {
    node_with(brokers, topic, id, data, &[])
}

/// [`node`] with `extra` arguments.
fn node_with(brokers: &str, topic: &str, id: &str, data: &str, extra: &[&str]) -> Server {
    let mut args = vec!["--data-dir", data, "--cluster", brokers, "--cluster-topic", topic, "--node-id", id];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn status(s: &Server) -> serde_json::Value {
    get(&s.addr, "/cluster").json()
}

/// ILP records of 10 rows each: trades of 8 symbols, ids `first..first + 10 * records`.
fn trades(p: &BaseProducer, topic: &str, first: usize, records: usize) {
    for r in 0..records {
        let sym = format!("S{}", r % 8);
        let lines: Vec<String> = (0..10)
            .map(|i| {
                let id = first + r * 10 + i;
                format!("trades,sym={sym} id={id}i,price={}.5 {}", id % 97, 1_700_000_000_000_000_000i64 + id as i64)
            })
            .collect();
        send(p, topic, &sym, lines.join("\n").as_bytes(), &[]);
    }
}

#[test]
fn records_become_rows_once_each_through_kill_9_and_a_restart() {
    let Some(broker) = Broker::start("once", "127.0.0.1", PARTITIONS) else { return };
    let dir = std::env::temp_dir().join(format!("zepto-cluster-once-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.to_string_lossy().to_string();
    let p = broker.producer();
    trades(&p, "ticks", 0, 200);
    send(&p, "ticks", "S1", b"trades,sym=S1 price=oops 1\n", &[]);
    // A field two producers start with two types, under keys of other partitions: whichever
    // comes second does not fit the column the first made.
    send(&p, "ticks", "S1", b"fresh,sym=S1 f=1i 1\n", &[]);
    send(&p, "ticks", "S2", b"fresh,sym=S2 f=\"one\" 2\n", &[]);
    send(
        &p,
        "ticks",
        "q",
        b"{\"sym\": \"S0\", \"ts\": 5, \"bid\": 1.5}\n",
        &[("zepto-format", "jsonl"), ("zepto-table", "quotes")],
    );
    flush(&p);

    let a = node(&broker.addr, "ticks", "a", &data);
    let s = status(&a);
    assert_eq!(s["node_id"], "a");
    wait_for("2,000 rows", 60, || count(&a.addr, "SELECT count(*) FROM trades") == 2000);
    wait_for("the refused records counted", 30, || status(&a)["records_rejected"].as_i64() == Some(3));
    // Each kept whole, with its reason: nothing Kafka acknowledged is lost.
    let kept = "SELECT count(*) FROM zepto_kafka_rejected";
    assert_eq!(count(&a.addr, kept), 3);
    let oops = "SELECT count(*) FROM zepto_kafka_rejected WHERE payload = 'trades,sym=S1 price=oops 1\n' \
                AND kafka_key = 'S1' AND reason LIKE '%price%' AND NOT payload_base64";
    assert_eq!(count(&a.addr, oops), 1);
    let json = "SELECT count(*) FROM zepto_kafka_rejected \
                WHERE headers LIKE '%{\"name\":\"zepto-table\",\"value\":\"quotes\"}%' AND NOT kafka_key_base64";
    assert_eq!(count(&a.addr, json), 1);
    let fresh = "SELECT count(*) FROM fresh";
    let fresh_kept = "SELECT count(*) FROM zepto_kafka_rejected WHERE payload LIKE 'fresh,%'";
    assert_eq!((count(&a.addr, fresh), count(&a.addr, fresh_kept)), (1, 1));
    let s = status(&a);
    assert_eq!(s["partitions"].as_array().map(Vec::len), Some(PARTITIONS), "{s}");
    assert!(s["last_error"].as_str().is_some_and(|e| e.contains("record ticks[")), "{s}");
    // The JSON record names a table that does not exist: refused, like the bad ILP line.
    // Every record's offset is recorded (the last of each partition says where to resume).
    let resume =
        "SELECT sum(m) FROM (SELECT max(kafka_offset) + 1 AS m FROM zepto_kafka_offsets GROUP BY kafka_partition)";
    // 204 records produced, and the statement records telling the tables it made to other
    // nodes: every record of every partition is applied, up to the high watermarks.
    let caught_up = || {
        let s = status(&a);
        let parts = s["partitions"].as_array().cloned().unwrap_or_default();
        let all = parts.len() == PARTITIONS && parts.iter().all(|p| p["lag"].as_i64() == Some(0));
        all.then(|| parts.iter().filter_map(|p| p["high_watermark"].as_i64()).sum::<i64>())
    };
    let mut high = 0;
    wait_for("every record applied and its offset recorded", 30, || {
        high = caught_up().unwrap_or(-1);
        answer(&a.addr, resume) == Some(high)
    });
    assert!(high >= 204, "{high}");

    // More records while the node runs, then kill -9 part-way and restart on the same data.
    trades(&p, "ticks", 2000, 300);
    flush(&p);
    wait_for("some of the new rows", 60, || count(&a.addr, "SELECT count(*) FROM trades") > 2000);
    drop(a); // kill -9
    trades(&p, "ticks", 5000, 100);
    flush(&p);
    let b = node(&broker.addr, "ticks", "a", &data);
    wait_for("all 6,000 rows", 60, || count(&b.addr, "SELECT count(*) FROM trades") >= 6000);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(settled(&b.addr, "SELECT count(*) FROM trades"), 6000);
    assert_eq!(settled(&b.addr, "SELECT count(DISTINCT id) FROM trades"), 6000, "no row twice");
    assert_eq!(count(&b.addr, kept), 3, "the refused records kept through kill -9, once each");
    wait_for("no lag", 60, || {
        let s = status(&b);
        s["partitions"].as_array().is_some_and(|ps| ps.iter().all(|p| p["lag"].as_i64() == Some(0)))
    });
    let metrics = get(&b.addr, "/metrics").text();
    let lags: Vec<&str> = metrics.lines().filter(|l| l.starts_with("zepto_cluster_partition_lag{")).collect();
    assert_eq!(lags.len(), PARTITIONS, "{metrics}");
    assert!(lags.iter().all(|l| l.ends_with(" 0")), "{lags:?}");
    assert!(metrics.contains("zepto_cluster_records{outcome=\"applied\"}"), "{metrics}");
    b.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_nodes_of_one_group_split_the_partitions() {
    let Some(broker) = Broker::start("split", "127.0.0.1", PARTITIONS) else { return };
    let p = broker.producer();
    // Make the topic exist with its partitions before the nodes join.
    trades(&p, "split", 0, 8);
    flush(&p);
    let dirs: Vec<PathBuf> = ["x", "y"]
        .iter()
        .map(|n| std::env::temp_dir().join(format!("zepto-cluster-{n}-{}", std::process::id())))
        .collect();
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
    // x has every door open (HTTP, PostgreSQL, Flight SQL, FIX, line protocol over TCP, the
    // cluster's Flight): at the end, both stop on SIGTERM with exit 0 and no panic
    // (`Server::stop` checks).
    std::fs::create_dir_all(&dirs[0]).expect("dir");
    let fix_cfg = dirs[0].join("fix.json");
    std::fs::write(&fix_cfg, r#"{"sender_comp_id": "ZEPTO", "target_comp_ids": ["FEED"]}"#).expect("FIX config");
    let x_data = dirs[0].join("data").to_string_lossy().to_string();
    let fix_cfg = fix_cfg.to_string_lossy();
    let doors =
        ["--flight-sql", "127.0.0.1:0", "--fix", "127.0.0.1:0", "--fix-config", &fix_cfg, "--ilp-tcp", "127.0.0.1:0"];
    let x = node_with(&broker.addr, "split", "x", &x_data, &doors);
    let y = node(&broker.addr, "split", "y", &dirs[1].to_string_lossy());
    let owned = |s: &Server| -> Vec<i64> {
        status(s)["partitions"]
            .as_array()
            .map(|ps| ps.iter().filter_map(|p| p["partition"].as_i64()).collect())
            .unwrap_or_default()
    };
    wait_for("both nodes to own partitions", 60, || {
        let (a, b) = (owned(&x), owned(&y));
        !a.is_empty() && !b.is_empty() && a.len() + b.len() == PARTITIONS && a.iter().all(|p| !b.contains(p))
    });
    // Either node lists both members and what each owns, as the group coordinator says.
    wait_for("the members seen from x", 30, || {
        let members = status(&x)["members"].as_array().cloned().unwrap_or_default();
        let mut ids: Vec<String> = members.iter().filter_map(|m| m["node_id"].as_str().map(str::to_string)).collect();
        ids.sort();
        let mut parts: Vec<i64> = members
            .iter()
            .flat_map(|m| m["partitions"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p.as_i64())
            .collect();
        parts.sort();
        ids == ["x", "y"] && parts == (0..PARTITIONS as i64).collect::<Vec<_>>()
    });
    // Written through one node's door: the rows land on whichever node owns their partition.
    let lines: Vec<String> = (80..4080)
        .map(|id| format!("trades,sym=S{} id={id}i,price={}.5 {}", id % 8, id % 97, 1_700_000_000_000_000_000i64 + id))
        .collect();
    let r = post(&x.addr, "/write", &lines.join("\n"));
    assert_eq!(r.status, 200, "{}", r.text());
    // Each node's own rows (`cluster_scope = local`: its partitions, no other node asked).
    let ids = |s: &Server| -> Vec<i64> {
        let v = sql(&s.addr, "SET cluster_scope = local; SELECT id FROM trades WHERE id >= 80 ORDER BY id");
        v["data"].as_array().map(|r| r.iter().filter_map(|c| c[0].as_i64()).collect()).unwrap_or_default()
    };
    wait_for("every new row on one node or the other", 60, || ids(&x).len() + ids(&y).len() >= 4000);
    let (a, b) = (ids(&x), ids(&y));
    assert_eq!(a.len() + b.len(), 4000, "each row on exactly one node");
    assert!(a.iter().all(|i| b.binary_search(i).is_err()), "no row on both nodes");
    assert!(!a.is_empty() && !b.is_empty(), "both nodes hold rows");
    // A node says which partition a symbol's rows go to, and whether it owns it: the node
    // that does holds the rows.
    let where_is = get(&y.addr, "/cluster?key=S3").json();
    let p3 = where_is["key"]["partition"].as_i64().expect("a partition");
    let on_y = owned(&y).contains(&p3);
    assert_eq!(where_is["key"]["here"], on_y, "{where_is}");
    assert_eq!(b.iter().any(|i| i % 8 == 3), on_y, "S3's rows are where its partition is owned");
    // Each node holds exactly the symbols Kafka's partitioner sends to its partitions, which
    // kafka_partition() computes in SQL.
    for s in [&x, &y] {
        let mine = owned(s);
        let q = format!("SELECT DISTINCT kafka_partition(sym, {PARTITIONS}) FROM trades WHERE id >= 80");
        let v = sql(&s.addr, &format!("SET cluster_scope = local; {q}"));
        let parts: Vec<i64> =
            v["data"].as_array().map(|r| r.iter().filter_map(|c| c[0].as_i64()).collect()).unwrap_or_default();
        assert!(!parts.is_empty() && parts.iter().all(|p| mine.contains(p)), "{parts:?} not all in {mine:?}");
    }
    // Asked as a whole, either node answers for every row, each once: its own partitions
    // here, the other's over Arrow Flight, a GROUP BY as partial states merged.
    for s in [&x, &y] {
        assert_eq!(settled(&s.addr, "SELECT count(*) FROM trades WHERE id >= 80"), 4000);
        assert_eq!(settled(&s.addr, "SELECT count(DISTINCT id) FROM trades WHERE id >= 80"), 4000);
        let v = sql(&s.addr, "SELECT sym, count(*), sum(id) FROM trades WHERE id >= 80 GROUP BY sym ORDER BY sym");
        let rows = v["data"].as_array().cloned().unwrap_or_default();
        assert_eq!(rows.len(), 8, "{v}");
        for (k, r) in rows.iter().enumerate() {
            let want: i64 = (80..4080).filter(|i| i % 8 == k as i64).sum();
            assert_eq!((r[1].as_i64(), r[2].as_i64()), (Some(500), Some(want)), "{r}");
        }
    }
    let plan = sql(&x.addr, "EXPLAIN SELECT sym, sum(price) FROM trades GROUP BY sym").to_string();
    assert!(plan.contains("MergeAggregate") && plan.contains("Exchange") && plan.contains("y ["), "{plan}");
    // Line protocol over TCP goes the same way: ids 100000.. stored by the nodes owning their partitions.
    let tcp: String = (100_000..100_080)
        .map(|id| {
            format!("trades,sym=S{} id={id}i,price={}.5 {}\n", id % 8, id % 97, 1_700_000_000_000_000_000i64 + id)
        })
        .collect();
    let mut c = std::net::TcpStream::connect(x.printed_addr("ILP over TCP on ")).expect("connects");
    std::io::Write::write_all(&mut c, tcp.as_bytes()).expect("writes");
    drop(c);
    wait_for("the TCP lines on one node or the other", 60, || {
        settled(&x.addr, "SELECT count(*) FROM trades WHERE id >= 100000") == 80
    });
    let ids = |s: &Server| count(&s.addr, "SET cluster_scope = local; SELECT count(*) FROM trades WHERE id >= 100000");
    assert_eq!(ids(&x) + ids(&y), 80, "each TCP line on one node");
    x.stop();
    y.stop();
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
}

/// `/write` on a node goes through Kafka: checked first (a bad batch is refused whole and
/// produces nothing), acknowledged once Kafka has it, then stored by the nodes owning its
/// partitions; lines without a timestamp are stamped once, by the node that took them; JSON
/// lines reach Kafka as Arrow records of the decoded rows.
#[test]
fn write_on_a_node_goes_through_kafka() {
    let Some(broker) = Broker::start("write", "127.0.0.1", PARTITIONS) else { return };
    let dir = std::env::temp_dir().join(format!("zepto-cluster-write-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let n = node(&broker.addr, "w", "n", &dir.to_string_lossy());
    let body: Vec<String> =
        (0..300).map(|i| format!("ticks,sym=S{} id={i}i,px={}.25 {}", i % 7, i, 1_000 + i)).collect();
    let r = post(&n.addr, "/write", &body.join("\n"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["rows_written"], 300);
    let r = post(&n.addr, "/write?precision=s", "ticks,sym=S1 id=300i,px=1\nticks,sym=S2 id=301i,px=2 5");
    assert_eq!(r.status, 200, "{}", r.text());
    wait_for("302 rows", 60, || count(&n.addr, "SELECT count(*) FROM ticks") == 302);
    // Stamped by the node that took the batch (now, in whole seconds), the other as sent.
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs() as i64;
    let stamped = count(&n.addr, "SELECT epoch_ns(timestamp) FROM ticks WHERE id = 300");
    assert!((stamped / 1_000_000_000 - now_s).abs() < 120 && stamped % 1_000_000_000 == 0, "{stamped}");
    assert_eq!(settled(&n.addr, "SELECT epoch_ns(timestamp) FROM ticks WHERE id = 301"), 5_000_000_000);
    let records = status(&n)["records_applied"].as_i64().expect("records");
    assert!(records >= 7, "one record per symbol at least: {records}");

    // A bad batch: refused whole, nothing produced.
    let r = post(&n.addr, "/write", "ticks,sym=S1 id=400i 1\nticks,sym=S2 id=\"text\" 2");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["line"], 2);
    // JSON lines into a table made with SQL (every node needs it): Arrow records in Kafka.
    sql(&n.addr, "CREATE TABLE q (sym SYMBOL, ts TIMESTAMP, bid DOUBLE) TIMESTAMP(ts) PARTITION BY sym");
    let lines: Vec<String> =
        (0..50).map(|i| format!("{{\"sym\": \"Q{}\", \"ts\": {i}, \"bid\": {i}.5}}", i % 3)).collect();
    let r = post(&n.addr, "/write?format=jsonl&table=q", &lines.join("\n"));
    assert_eq!(r.status, 200, "{}", r.text());
    wait_for("50 quotes", 60, || count(&n.addr, "SELECT count(*) FROM q") == 50);
    assert_eq!(settled(&n.addr, "SELECT CAST(sum(bid) * 10 AS BIGINT) FROM q"), 12500);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(settled(&n.addr, "SELECT count(*) FROM ticks"), 302, "the bad batch stored nothing");
    assert_eq!(status(&n)["records_rejected"], 0);
    n.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A count, or the error a node answered with.
fn try_count(addr: &str, q: &str) -> Result<i64, String> {
    let r = post(addr, "/", q);
    match r.status {
        200 => r.json()["data"][0][0].as_i64().ok_or_else(|| r.text()),
        _ => Err(r.text()),
    }
}

/// Three nodes, rows written through each node's door; one node is killed. Until its
/// partitions have moved and been replayed, queries fail with an error naming them; every
/// answer is whole (each acknowledged row once), and whole answers are back within seconds.
#[test]
fn answers_stay_whole_while_a_killed_nodes_partitions_move() {
    let Some(broker) = Broker::start("kill3", "127.0.0.1", PARTITIONS) else { return };
    let p = broker.producer();
    trades(&p, "kill3", 0, 8);
    flush(&p);
    let dirs: Vec<PathBuf> = ["a", "b", "c"]
        .iter()
        .map(|n| std::env::temp_dir().join(format!("zepto-kill3-{n}-{}", std::process::id())))
        .collect();
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
    let mut nodes: Vec<Server> = ["a", "b", "c"]
        .iter()
        .zip(&dirs)
        .map(|(id, d)| node(&broker.addr, "kill3", id, &d.to_string_lossy()))
        .collect();
    let total = "SELECT count(*) FROM trades";
    wait_for("the first 80 rows through every node", 60, || nodes.iter().all(|n| try_count(&n.addr, total) == Ok(80)));
    // 1,000 rows through each node's door, acknowledged once Kafka has them.
    for (k, n) in nodes.iter().enumerate() {
        let lines: Vec<String> = (0..1000)
            .map(|i| {
                let id = 1000 * (k + 1) + i;
                format!("trades,sym=S{} id={id}i,price=1.5 {}", id % 8, 1_700_000_000_000_000_000i64 + id as i64)
            })
            .collect();
        let r = post(&n.addr, "/write", &lines.join("\n"));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    wait_for("3,080 rows from every node", 60, || nodes.iter().all(|n| try_count(&n.addr, total) == Ok(3080)));
    let c = nodes.pop().expect("c");
    drop(c); // kill -9
    let t0 = Instant::now();
    let (mut errors, mut whole) = (Vec::new(), None);
    while t0.elapsed() < Duration::from_secs(60) {
        match try_count(&nodes[0].addr, "SELECT count(*), sum(id) FROM trades") {
            Ok(n) => {
                assert_eq!(n, 3080, "an answer is whole or an error, never part of the rows");
                if whole.is_none() && try_count(&nodes[1].addr, total) == Ok(3080) {
                    whole = Some(t0.elapsed());
                    break;
                }
            }
            Err(e) => errors.push(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let whole = whole.expect("whole answers again after the kill");
    eprintln!(
        "cluster: whole answers {:.1} s after kill -9 ({} refused queries meanwhile)",
        whole.as_secs_f64(),
        errors.len()
    );
    assert!(whole < Duration::from_secs(30), "{whole:?}");
    for e in &errors {
        assert!(e.contains("no owner") || e.contains("node c") || e.contains("replaying"), "a clear error: {e}");
    }
    let ids = sql(&nodes[1].addr, "SELECT count(DISTINCT id), sum(id) FROM trades")["data"][0].clone();
    let want: i64 = (0..80).chain(1000..4000).sum();
    assert_eq!((ids[0].as_i64(), ids[1].as_i64()), (Some(3080), Some(want)), "each row once");
    for n in nodes {
        n.stop();
    }
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
}

/// Nodes `x` and `y` of one group on `topic` (data under `dirs`), once both answer for the
/// first 80 trades.
fn two_nodes(broker: &Broker, p: &BaseProducer, topic: &str) -> (Server, Server, Vec<PathBuf>) {
    trades(p, topic, 0, 8);
    flush(p);
    let dirs: Vec<PathBuf> = ["x", "y"]
        .iter()
        .map(|n| std::env::temp_dir().join(format!("zepto-{topic}-{n}-{}", std::process::id())))
        .collect();
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
    let x = node(&broker.addr, topic, "x", &dirs[0].to_string_lossy());
    let y = node(&broker.addr, topic, "y", &dirs[1].to_string_lossy());
    let total = "SELECT count(*) FROM trades";
    wait_for("80 rows seen from both", 60, || count(&x.addr, total) == 80 && count(&y.addr, total) == 80);
    (x, y, dirs)
}

/// Statements on a node go through Kafka: CREATE TABLE reaches the other node (a statement
/// record on every partition), INSERT and COPY store their rows on the nodes owning them,
/// statements Kafka cannot carry are refused, and a statement record that is not a CREATE
/// TABLE is refused and counted.
#[test]
fn statements_on_a_node_reach_every_node() {
    let Some(broker) = Broker::start("ddl", "127.0.0.1", PARTITIONS) else { return };
    let p = broker.producer();
    let (x, y, dirs) = two_nodes(&broker, &p, "ddl");
    sql(&x.addr, "CREATE TABLE fills (ts TIMESTAMP, sym SYMBOL, qty BIGINT)");
    let known = |s: &Server| post(&s.addr, "/", "SELECT count(*) FROM fills").status == 200;
    wait_for("y to learn the table from Kafka", 30, || known(&y));
    let values: Vec<String> = (0..120).map(|i| format!("({i}, 'F{}', {i})", i % 9)).collect();
    let r = sql(&y.addr, &format!("INSERT INTO fills VALUES {}", values.join(", ")));
    assert_eq!(r["data"][0][0], "INSERT 120", "{r}");
    let csv: String = (120..150).map(|i| format!("{i},F{},{i}\n", i % 9)).collect();
    let r = post(&x.addr, "/write?format=csv&table=fills", &format!("ts,sym,qty\n{csv}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let q = "SELECT count(*) * 1000000 + sum(qty) FROM fills";
    let want = 150 * 1_000_000 + (0..150).sum::<i64>();
    wait_for("150 fills from both", 60, || count(&x.addr, q) == want && count(&y.addr, q) == want);
    let r = post(&x.addr, "/", "DELETE FROM fills WHERE qty > 3");
    assert_eq!((r.status, r.error_code().as_str()), (501, "NOT_SUPPORTED"), "{}", r.text());
    // A statement record from another producer that is not CREATE TABLE: refused, counted.
    // The nodes' tables of kept records were made by hand with other columns: the record's
    // offset alone is stored, and its partition goes on.
    for s in [&x, &y] {
        sql(&s.addr, "CREATE TABLE zepto_kafka_rejected (ts TIMESTAMP, reason BIGINT)");
    }
    let refused = |s: &Server| status(s)["records_rejected"].as_i64().unwrap_or(0);
    let before = refused(&x) + refused(&y);
    send(&p, "ddl", "", b"DROP TABLE fills", &[("zepto-format", "sql")]);
    flush(&p);
    wait_for("the DROP record refused", 30, || refused(&x) + refused(&y) == before + 1);
    assert_eq!(settled(&x.addr, q), want, "nothing dropped");
    let lost = [&x, &y].iter().filter_map(|s| status(s)["last_error"].as_str().map(str::to_string)).collect::<Vec<_>>();
    assert!(lost.iter().any(|e| e.contains("NOT kept")), "{lost:?}");
    let r = sql(&x.addr, "INSERT INTO fills VALUES (999, 'F1', 1000)");
    assert_eq!(r["data"][0][0], "INSERT 1", "{r}");
    wait_for("a later row stored", 60, || count(&y.addr, "SELECT count(*) FROM fills") == 151);
    x.stop();
    y.stop();
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
}

/// A table line protocol creates on the node storing its rows (and a field it adds later) is
/// told to the other node, which then answers for it (asking the owner for the rows) instead
/// of saying the table does not exist.
#[test]
fn tables_line_protocol_creates_are_known_on_every_node() {
    let Some(broker) = Broker::start("told", "127.0.0.1", PARTITIONS) else { return };
    let p = broker.producer();
    let (x, y, dirs) = two_nodes(&broker, &p, "told");
    let mine = |s: &Server| -> Vec<i64> {
        status(s)["partitions"]
            .as_array()
            .map(|ps| ps.iter().filter_map(|p| p["partition"].as_i64()).collect())
            .unwrap_or_default()
    };
    let xs = mine(&x);
    // Keys whose partitions x owns: their rows are stored on x only.
    let keys: Vec<String> = (0..200)
        .map(|i| format!("K{i}"))
        .filter(|k| xs.contains(&count(&x.addr, &format!("SELECT kafka_partition('{k}', {PARTITIONS})"))))
        .take(3)
        .collect();
    assert_eq!(keys.len(), 3, "x owns {xs:?}");
    for (i, k) in keys.iter().enumerate() {
        send(&p, "told", k, format!("fresh,sym={k} v={i}i {}", 1000 + i).as_bytes(), &[]);
    }
    flush(&p);
    wait_for("y to answer for a table only x stores", 60, || count(&y.addr, "SELECT count(*) FROM fresh") == 3);
    send(&p, "told", &keys[0], format!("fresh,sym={} v=7i,w=2.5 2000", keys[0]).as_bytes(), &[]);
    flush(&p);
    let widened = || {
        let r = post(&y.addr, "/", "SELECT CAST(sum(w) * 10 AS BIGINT) FROM fresh");
        r.status == 200 && r.json()["data"][0][0].as_i64() == Some(25)
    };
    wait_for("y to know the new field", 60, widened);
    assert_eq!(status(&x)["records_rejected"], 0);
    assert_eq!(status(&y)["records_rejected"], 0);

    // One field started with two types at once, under a key of each node: whichever way the
    // race goes, no line is lost (stored, or kept whole where it was refused), and the
    // conflict shows (a line kept, or the other node's CREATE refused and kept).
    let ys = mine(&y);
    let owned_by = |ps: &[i64]| {
        (0..400)
            .map(|i| format!("R{i}"))
            .find(|k| ps.contains(&count(&x.addr, &format!("SELECT kafka_partition('{k}', {PARTITIONS})"))))
            .expect("a key of each node")
    };
    let (kx, ky) = (owned_by(&xs), owned_by(&ys));
    let rows = |s: &Server| status(s)["rows_applied"].as_i64().unwrap_or(0);
    let applied = || rows(&x) + rows(&y);
    let stored_before = applied();
    send(&p, "told", &kx, format!("race,sym={kx} f=1i 1").as_bytes(), &[]);
    send(&p, "told", &ky, format!("race,sym={ky} f=\"one\" 2").as_bytes(), &[]);
    flush(&p);
    let kept = |like: &str| {
        let q = format!("SELECT count(*) FROM zepto_kafka_rejected WHERE payload LIKE '{like}'");
        [&x, &y].iter().map(|s| answer(&s.addr, &q).unwrap_or(0)).sum::<i64>()
    };
    wait_for("both lines stored or kept, the conflict shown", 60, || {
        let lines = kept("race,%");
        applied() - stored_before + lines == 2 && (lines > 0 || kept("CREATE TABLE IF NOT EXISTS%race%") > 0)
    });
    x.stop();
    y.stop();
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
}
