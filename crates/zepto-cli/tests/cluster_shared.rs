//! Shared history against a real Kafka broker: a node seals its partitions to shared storage
//! (a directory, and an S3-compatible server: gofakes3, built by `make s3`); Kafka then deletes those records (as retention would) and the node is killed;
//! a new node with an empty data directory takes every partition over from shared storage and
//! the log after it, and answers every row exactly once, old rows from shared Parquet files.
//! Without Kafka's jars or `java` (or the S3 server) a test says so and passes without
//! running, except under `make test` (ZEPTO_REQUIRE_KAFKA=1, ZEPTO_REQUIRE_S3=1), where that is
//! a failure.

mod common;

use common::kafka::{flush, send, wait_for, Broker};
use common::{get, post, Server};
use rdkafka::producer::BaseProducer;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

const PARTITIONS: usize = 4;
const TOPIC: &str = "shared";
const DAY: i64 = 86_400_000_000_000;

/// The first cell of a one-row answer; `None` while the node cannot answer yet.
fn answer(addr: &str, q: &str) -> Option<i64> {
    let r = post(addr, "/", q);
    match r.status {
        200 => Some(r.json()["data"][0][0].as_i64().unwrap_or(0)),
        404 if r.error_code() == "TABLE_NOT_FOUND" => Some(0),
        400 | 503 => {
            eprintln!("{q}: {} {}", r.status, r.text());
            None
        }
        s => panic!("{q}: {s} {}", r.text()),
    }
}

/// Where shared history goes, and the environment that reaches it.
struct Store {
    location: String,
    env: Vec<(String, String)>,
}

fn node(brokers: &str, id: &str, data: &Path, store: &Store) -> Server {
    let data = data.to_string_lossy();
    let env: Vec<(&str, &str)> = store.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Server::start_env(
        &[
            "--data-dir",
            &data,
            "--cluster",
            brokers,
            "--cluster-topic",
            TOPIC,
            "--node-id",
            id,
            "--shared-history",
            &store.location,
            "--seal-every",
            "1s",
            "--tier-after",
            "1d",
        ],
        &env,
    )
}

/// Records of 10 rows, ids `first..first + 10 * records`: every other record three days old
/// (history after a seal), the others from now (recent rows).
fn trades(p: &BaseProducer, first: usize, records: usize, now: i64) {
    for r in 0..records {
        let sym = format!("S{}", r % 8);
        let base = if r % 2 == 0 { now - 3 * DAY } else { now - DAY / 2 };
        let lines: Vec<String> = (0..10)
            .map(|i| {
                let id = first + r * 10 + i;
                format!("trades,sym={sym} id={id}i,price={}.5 {}", id % 97, base + id as i64)
            })
            .collect();
        send(p, TOPIC, &sym, lines.join("\n").as_bytes(), &[]);
    }
}

/// Every partition this node owns sealed at the offset it applied: `(partition, offset)`.
fn sealed(s: &Server) -> Option<Vec<(i32, i64)>> {
    let st = get(&s.addr, "/cluster").json();
    let parts = st["partitions"].as_array()?.clone();
    let all = parts.len() == PARTITIONS
        && parts.iter().all(|p| p["sealed_offset"].as_i64().is_some() && p["sealed_offset"] == p["applied_offset"]);
    all.then(|| {
        parts.iter().filter_map(|p| Some((p["partition"].as_i64()? as i32, p["sealed_offset"].as_i64()?))).collect()
    })
}

#[test]
fn a_node_takes_partitions_over_from_a_shared_directory_after_kafka_deleted_them() {
    let Some(broker) = Broker::start("shared", "127.0.0.1", PARTITIONS) else { return };
    let root = std::env::temp_dir().join(format!("zepto-cluster-shared-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let store = Store { location: root.join("shared").to_string_lossy().into_owned(), env: Vec::new() };
    take_over_after_kafka_forgot(&broker, &root, &store);
}

#[test]
fn a_node_takes_partitions_over_from_s3_after_kafka_deleted_them() {
    let Some(s3) = common::s3::FakeS3::start() else { return };
    let Some(broker) = Broker::start("shared-s3", "127.0.0.1", PARTITIONS) else { return };
    let root = std::env::temp_dir().join(format!("zepto-cluster-shared-s3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let env = s3.env();
    let store = Store { location: "s3://zepto/cluster".into(), env };
    take_over_after_kafka_forgot(&broker, &root, &store);
}

/// 1,000 rows through a node that seals them; Kafka deletes the sealed records and the node
/// is killed; 500 more rows; a new node with an empty data directory answers all 1,500.
fn take_over_after_kafka_forgot(broker: &Broker, root: &Path, store: &Store) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as i64).expect("a clock");
    let p = broker.producer();
    trades(&p, 0, 100, now);
    flush(&p);

    let a = node(&broker.addr, "a", &root.join("a"), store);
    wait_for("1,000 rows on a", 60, || answer(&a.addr, "SELECT count(*) FROM trades") == Some(1000));
    let mut seals = Vec::new();
    wait_for("every partition sealed", 60, || {
        seals = sealed(&a).unwrap_or_default();
        !seals.is_empty()
    });
    let old = "SELECT count(*) FROM trades WHERE timestamp < now() - INTERVAL '1' DAY";
    assert_eq!(answer(&a.addr, old), Some(500), "old rows answered from shared history");
    // Kafka forgets every sealed record, and the node dies.
    let upto: Vec<(i32, i64)> = seals.iter().map(|&(p, o)| (p, o + 1)).collect();
    broker.delete_records_before(TOPIC, &upto);
    drop(a); // kill -9
    trades(&p, 1000, 50, now);
    flush(&p);

    // A new node with nothing of its own.
    let b = node(&broker.addr, "b", &root.join("b"), store);
    wait_for("1,500 rows on b", 90, || answer(&b.addr, "SELECT count(*) FROM trades") == Some(1500));
    assert_eq!(answer(&b.addr, "SELECT count(DISTINCT id) FROM trades"), Some(1500), "no row twice");
    assert_eq!(answer(&b.addr, "SELECT sum(id) FROM trades"), Some((0..1500).sum()));
    assert_eq!(answer(&b.addr, old), Some(750));
    let local = std::fs::read_dir(root.join("b/history")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(local, 0, "the new node's history is the shared one");
    drop(b);
    let _ = std::fs::remove_dir_all(root);
}
