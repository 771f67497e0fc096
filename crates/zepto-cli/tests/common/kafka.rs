//! A real Kafka broker for the cluster tests (tests/kafka/broker.sh, jars from Maven Central
//! by `make kafka`), and producing to it with Kafka's own client. Without the jars or `java`
//! a test says so and passes without running, except under `make test`
//! (ZEPTO_REQUIRE_KAFKA=1), where that is a failure.

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::ClientConfig;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A broker of its own for one test, stopped when dropped.
pub struct Broker {
    dir: PathBuf,
    pub addr: String,
}

impl Broker {
    /// A fresh broker on `host` whose topics get `partitions` partitions, or `None` (test
    /// skipped) when Kafka's jars or java are missing.
    pub fn start(name: &str, host: &str, partitions: usize) -> Option<Broker> {
        let required = std::env::var_os("ZEPTO_REQUIRE_KAFKA").is_some();
        let lib = root().join("target/kafka/lib");
        let java = Command::new("java").arg("-version").output().is_ok();
        if !lib.is_dir() || !java {
            assert!(!required, "no Kafka broker: make kafka (Maven and java)");
            eprintln!("skipped: no Kafka jars in target/kafka/lib (make kafka) or no java");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("zepto-kafka-{name}-{}", std::process::id()));
        // A port found free can be taken by another test's server before the JVM binds it
        // (a CI run lost a broker that way): then again on other ports.
        for attempt in 1.. {
            let port = free_port_pair(host);
            let out = Command::new(root().join("tests/kafka/broker.sh"))
                .args(["start", &dir.to_string_lossy(), &port.to_string()])
                .env("KAFKA_PARTITIONS", partitions.to_string())
                .env("KAFKA_HOST", host)
                .output()
                .expect("runs broker.sh");
            if out.status.success() {
                return Some(Broker { dir, addr: format!("{host}:{port}") });
            }
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            let taken = log.contains("Address already in use");
            assert!(taken && attempt < 3, "broker did not start: {}", String::from_utf8_lossy(&out.stderr));
            let _ = Command::new(root().join("tests/kafka/broker.sh")).args(["stop", &dir.to_string_lossy()]).output();
        }
        unreachable!("the loop returns or fails")
    }

    /// Delete the records of `topic` before each `(partition, offset)` (what retention does).
    #[allow(dead_code)]
    pub fn delete_records_before(&self, topic: &str, offsets: &[(i32, i64)]) {
        use rdkafka::admin::{AdminClient, AdminOptions};
        use rdkafka::client::DefaultClientContext;
        let admin: AdminClient<DefaultClientContext> =
            ClientConfig::new().set("bootstrap.servers", &self.addr).create().expect("an admin client");
        let mut tpl = rdkafka::TopicPartitionList::new();
        for &(p, o) in offsets {
            tpl.add_partition_offset(topic, p, rdkafka::Offset::Offset(o)).expect("an offset");
        }
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        let done = futures::executor::block_on(admin.delete_records(&tpl, &opts)).expect("records deleted");
        for e in done.elements() {
            assert!(e.error().is_ok(), "deleting records of {topic}[{}]: {:?}", e.partition(), e.error());
        }
    }

    pub fn producer(&self) -> BaseProducer {
        ClientConfig::new()
            .set("bootstrap.servers", &self.addr)
            .set("enable.idempotence", "true")
            // Kafka's default (Java) partitioner, which nodes expect records to be placed by.
            .set("partitioner", "murmur2_random")
            .set("acks", "all")
            .set("linger.ms", "5")
            .create()
            .expect("a producer")
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = Command::new(root().join("tests/kafka/broker.sh")).args(["stop", &self.dir.to_string_lossy()]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A port on `host` whose successor is free too (the broker's controller listens there).
pub fn free_port_pair(host: &str) -> u16 {
    loop {
        let a = std::net::TcpListener::bind((host, 0)).expect("a port");
        let p = a.local_addr().expect("addr").port();
        if p < u16::MAX && std::net::TcpListener::bind((host, p + 1)).is_ok() {
            return p;
        }
    }
}

/// Send one record to `topic`, keyed (so Kafka's partitioner places it), with headers.
pub fn send(p: &BaseProducer, topic: &str, key: &str, body: &[u8], headers: &[(&str, &str)]) {
    let mut h = OwnedHeaders::new();
    for (k, v) in headers {
        h = h.insert(Header { key: k, value: Some(*v) });
    }
    let mut rec = BaseRecord::to(topic).key(key).payload(body).headers(h);
    loop {
        match p.send(rec) {
            Ok(()) => return,
            Err((e, back)) => {
                assert!(format!("{e}").contains("Queue full"), "send: {e}");
                p.poll(Duration::from_millis(50));
                rec = back;
            }
        }
    }
}

pub fn flush(p: &BaseProducer) {
    p.flush(Duration::from_secs(30)).expect("every record acknowledged by the broker");
}

pub fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(secs), "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// ILP lines of trades of 8 symbols (`S{id % 8}`), one per id, price and time from the id.
pub fn trade_lines(ids: std::ops::Range<usize>) -> Vec<String> {
    ids.map(|id| {
        format!("trades,sym=S{} id={id}i,price={}.5 {}", id % 8, id % 97, 1_700_000_000_000_000_000i64 + id as i64)
    })
    .collect()
}
