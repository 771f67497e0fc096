//! A node's consumer: one thread that polls the topic and applies each record of the
//! partitions Kafka assigned this node, exactly once.
//!
//! - **Assignment.** On every (incremental) assignment the node reads, from its own tables, the
//!   last offset it applied per partition ([`crate::offsets::applied`]) and starts each new
//!   partition right after it (from the beginning when it holds none). The group's committed
//!   offsets are written too, for Kafka's tools and lag monitors, but never read back.
//! - **Applying.** A record's rows and its offset are one logged change
//!   (`zepto_server::ingest::write_marked`); a record at or below the partition's applied
//!   offset is skipped. A malformed record is refused whole: its offset alone is recorded (so
//!   it is not retried forever), the error is logged and counted. A storage failure (a full
//!   disk) records nothing: the consumer goes back to that offset and tries again a second
//!   later.
//! - **Revocation** forgets the partition. Its rows stay in this node's tables for now: moving
//!   them, and answering only for owned partitions, come with distributed queries.

use crate::offsets;
use crate::record;
use crate::status::{PartitionState, Shared};
use crate::{ClusterError, Config};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientConfig, ClientContext, Offset, TopicPartitionList};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zepto_server::auth::Principal;
use zepto_server::ingest::{self, IngestFormat, WriteRequest};
use zepto_sql::Engine;

/// How often the partitions' high watermarks are asked for and the applied offsets committed.
const REFRESH: Duration = Duration::from_secs(1);

fn kafka(e: KafkaError) -> ClusterError {
    ClusterError::Kafka(e.to_string())
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Join `config`'s group and start the thread applying the records of the partitions Kafka
/// assigns, until `stop` is set. Fails when the client cannot be made (bad settings); an
/// unreachable broker is not an error here: the consumer keeps trying, and the status shows
/// the last error.
pub(crate) fn spawn(
    engine: Engine,
    config: &Config,
    shared: Shared,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, ClusterError> {
    let context = Context { engine: engine.clone(), topic: config.topic().to_string(), shared: shared.clone() };
    let consumer: BaseConsumer<Context> = ClientConfig::new()
        .set("bootstrap.servers", config.brokers())
        .set("group.id", config.group())
        .set("client.id", config.node_id())
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("partition.assignment.strategy", "cooperative-sticky")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "1000")
        .create_with_context(context)
        .map_err(kafka)?;
    consumer.subscribe(&[config.topic()]).map_err(kafka)?;
    let worker = Worker { consumer, engine, topic: config.topic().to_string(), shared };
    std::thread::Builder::new()
        .name("zepto-kafka".into())
        .spawn(move || worker.run(&stop))
        .map_err(|e| ClusterError::Config(format!("cannot start the consumer thread: {e}")))
}

/// The consumer thread's state.
struct Worker {
    consumer: BaseConsumer<Context>,
    engine: Engine,
    topic: String,
    shared: Shared,
}

impl Worker {
    fn run(self, stop: &AtomicBool) {
        let mut refreshed = Instant::now();
        while !stop.load(Ordering::Acquire) {
            match self.consumer.poll(Duration::from_millis(100)) {
                None => {}
                Some(Err(e)) => self.shared.update(|s| s.last_error = Some(e.to_string())),
                Some(Ok(m)) => self.apply(&m),
            }
            if refreshed.elapsed() >= REFRESH {
                self.refresh();
                refreshed = Instant::now();
            }
        }
        self.refresh();
        // Dropping the consumer closes it: it leaves the group, whose other members then get
        // this node's partitions.
    }

    /// Apply one record (see the module docs).
    fn apply(&self, m: &BorrowedMessage<'_>) {
        let (partition, offset) = (m.partition(), m.offset());
        let applied = self.shared.update(|s| s.partitions.get(&partition).and_then(|p| p.applied));
        if applied.is_some_and(|a| offset <= a) {
            return;
        }
        let now = now_ns();
        let outcome = offsets::mark(m.topic(), partition, offset, now).and_then(|mark| {
            let body = m.payload().unwrap_or_default();
            let write = |req: &WriteRequest, body: &[u8]| {
                ingest::write_marked(&self.engine, &Principal::anonymous_admin(), req, body, Some(&mark))
            };
            match record::request(m.headers(), now)
                .map_err(|e| (400, e))
                .and_then(|req| write(&req, body).map_err(|e| (e.status.as_u16(), e.message)))
            {
                Ok(rows) => Ok(Applied::Rows(rows)),
                Err((status, why)) if status < 500 => {
                    let empty = WriteRequest {
                        format: IngestFormat::Ilp,
                        table: None,
                        precision: zepto_server::ingest::ilp::Precision::NANOS,
                        now_ns: now,
                    };
                    write(&empty, b"").map_err(|e| ClusterError::Storage(e.message))?;
                    Ok(Applied::Refused(why))
                }
                Err((_, why)) => Err(ClusterError::Storage(why)),
            }
        });
        self.settle(m, outcome);
    }

    /// Account for one record's outcome; after a storage failure, go back to it.
    fn settle(&self, m: &BorrowedMessage<'_>, outcome: Result<Applied, ClusterError>) {
        let (topic, partition, offset) = (m.topic(), m.partition(), m.offset());
        let at = format!("{topic}[{partition}]@{offset}");
        match outcome {
            Ok(applied) => {
                self.shared.update(|s| {
                    s.partitions.entry(partition).or_default().applied = Some(offset);
                    match applied {
                        Applied::Rows(rows) => {
                            s.records_applied += 1;
                            s.rows_applied += rows as u64;
                        }
                        Applied::Refused(why) => {
                            eprintln!("zeptodb: cluster: record {at} refused, nothing stored: {why}");
                            s.records_rejected += 1;
                            s.last_error = Some(format!("record {at}: {why}"));
                        }
                    }
                });
                let _ = self.consumer.store_offset(topic, partition, offset + 1);
            }
            Err(e) => {
                eprintln!("zeptodb: cluster: record {at} not applied, retrying in 1 s: {e}");
                self.shared.update(|s| s.last_error = Some(format!("record {at}: {e}")));
                std::thread::sleep(Duration::from_secs(1));
                if let Err(e) = self.consumer.seek(topic, partition, Offset::Offset(offset), Duration::from_secs(5)) {
                    self.shared.update(|s| s.last_error = Some(format!("seek back to {at}: {e}")));
                }
            }
        }
    }

    /// Ask for the owned partitions' high watermarks, and commit the applied offsets to the
    /// group (for Kafka's tools; the node itself resumes from its tables).
    fn refresh(&self) {
        let owned: Vec<i32> = self.shared.update(|s| s.partitions.keys().copied().collect());
        for p in owned {
            if let Ok((_, high)) = self.consumer.fetch_watermarks(&self.topic, p, Duration::from_millis(500)) {
                self.shared.update(|s| {
                    if let Some(st) = s.partitions.get_mut(&p) {
                        st.high_watermark = Some(high);
                    }
                });
            }
        }
        let _ = self.consumer.commit_consumer_state(CommitMode::Async);
    }
}

/// What became of a record.
enum Applied {
    /// Its rows were stored (how many).
    Rows(usize),
    /// It was malformed (why): only its offset was stored.
    Refused(String),
}

/// The consumer's callbacks: assignments start where the node's tables end.
struct Context {
    engine: Engine,
    topic: String,
    shared: Shared,
}

impl ClientContext for Context {}

impl ConsumerContext for Context {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        let cooperative = matches!(consumer.rebalance_protocol(), RebalanceProtocol::Cooperative);
        let result = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => self.assign(consumer, tpl, cooperative),
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => self.revoke(consumer, tpl, cooperative),
            other => {
                self.shared.update(|s| {
                    s.partitions.clear();
                    s.last_error = Some(format!("rebalance failed: {other:?}"));
                });
                consumer.unassign()
            }
        };
        self.shared.update(|s| {
            s.rebalances += 1;
            if let Err(e) = result {
                s.last_error = Some(format!("rebalance: {e}"));
            }
        });
    }
}

impl Context {
    /// Take the partitions of `tpl`, each from right after its last applied offset.
    fn assign(
        &self,
        consumer: &BaseConsumer<Context>,
        tpl: &mut TopicPartitionList,
        cooperative: bool,
    ) -> Result<(), KafkaError> {
        let applied = match offsets::applied(&self.engine, &self.topic) {
            Ok(a) => a,
            Err(e) => {
                // Without its offsets the node cannot know where to start: take nothing, and
                // say why (Kafka gives the partitions to the other members after a timeout).
                self.shared.update(|s| s.last_error = Some(format!("assignment refused: {e}")));
                return Ok(());
            }
        };
        let parts: Vec<(String, i32)> = tpl.elements().iter().map(|e| (e.topic().to_string(), e.partition())).collect();
        for (topic, p) in &parts {
            let start = match (topic == &self.topic).then(|| applied.get(p)).flatten() {
                Some(&o) => Offset::Offset(o + 1),
                None => Offset::Beginning,
            };
            tpl.set_partition_offset(topic, *p, start)?;
        }
        if cooperative {
            consumer.incremental_assign(tpl)?;
        } else {
            consumer.assign(tpl)?;
        }
        self.shared.update(|s| {
            for (_, p) in &parts {
                s.partitions.insert(*p, PartitionState { applied: applied.get(p).copied(), high_watermark: None });
            }
        });
        Ok(())
    }

    /// Give up the partitions of `tpl`.
    fn revoke(
        &self,
        consumer: &BaseConsumer<Context>,
        tpl: &mut TopicPartitionList,
        cooperative: bool,
    ) -> Result<(), KafkaError> {
        let parts: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
        self.shared.update(|s| s.partitions.retain(|p, _| !parts.contains(p)));
        if cooperative {
            consumer.incremental_unassign(tpl)
        } else {
            consumer.unassign()
        }
    }
}
