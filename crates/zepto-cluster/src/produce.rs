//! `/write` on a cluster node: the batch is checked here as if it were stored
//! (`zepto_server::ingest::check`), cut into records by partition key, produced to Kafka, and
//! acknowledged once Kafka has every record (`acks=all`, idempotent producer: a retry inside
//! the client never writes a record twice). The nodes owning the partitions then store them,
//! exactly once ([`crate::consumer`]).
//!
//! Records are keyed by the rows' partition key and placed by Kafka's own default partitioner
//! (murmur2, as the Java client does), so a producer in any language that keys its records the
//! same way lands in the same partitions. Each record holds the rows of one key, at most
//! [`RECORD_BYTES`] of them: each record is stored all or nothing, a batch as a whole once
//! every record is. Line protocol keeps its lines, stamped with this node's clock where they
//! had no timestamp, so every node stores the same time; CSV, JSON lines and Arrow become
//! Arrow IPC records of the decoded rows.

use crate::{ClusterError, Config};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::time::{Duration, Instant};
use zepto_server::auth::Principal;
use zepto_server::error::ApiError;
use zepto_server::ingest::{self, Checked, WriteRequest};
use zepto_sql::Engine;
use zepto_storage::Column;

/// Most bytes of rows a record holds (Kafka's default largest message is 1 MB).
pub const RECORD_BYTES: usize = 512 << 10;

/// How long a batch may wait for Kafka's acknowledgements.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);

/// The node's producer.
pub struct Producer {
    inner: ThreadedProducer<Deliveries>,
    topic: String,
}

/// Reports each record's delivery to the request waiting for it.
struct Deliveries;

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = Box<SyncSender<Result<(), String>>>;

    fn delivery(&self, result: &DeliveryResult<'_>, to: Self::DeliveryOpaque) {
        let _ = to.send(result.as_ref().map(|_| ()).map_err(|(e, _)| e.to_string()));
    }
}

/// One record to produce: placed by its key, or on `partition` when given.
struct Record {
    key: String,
    partition: Option<i32>,
    body: Vec<u8>,
    headers: Vec<(&'static str, String)>,
}

impl Producer {
    /// A producer for `config`'s topic.
    pub fn new(config: &Config) -> Result<Producer, ClusterError> {
        let inner = config
            .client()
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("partitioner", "murmur2_random")
            .set("linger.ms", "2")
            .set("message.timeout.ms", ACK_TIMEOUT.as_millis().to_string())
            .create_with_context(Deliveries)
            .map_err(|e| ClusterError::Kafka(e.to_string()))?;
        Ok(Producer { inner, topic: config.topic().to_string() })
    }

    /// Ask the brokers for the topic, which creates it (with the broker's default partition
    /// count) when it does not exist yet, so that the first node finds partitions to own
    /// before anything was produced. An error (no broker yet) is only returned: the consumer
    /// keeps trying, and the first `/write` creates the topic too.
    pub fn ensure_topic(&self) -> Result<usize, ClusterError> {
        use rdkafka::producer::Producer as _;
        let md = self
            .inner
            .client()
            .fetch_metadata(Some(&self.topic), Duration::from_secs(5))
            .map_err(|e| ClusterError::Kafka(e.to_string()))?;
        Ok(md.topics().iter().map(|t| t.partitions().len()).sum())
    }

    /// Check `body` for `who`, produce it, and return its rows once Kafka has every record.
    pub fn write(&self, engine: &Engine, who: &Principal, req: &WriteRequest, body: &[u8]) -> Result<usize, ApiError> {
        let (rows, records) = match ingest::check(engine, who, req, body)? {
            Checked::Lines(lines) => (lines.len(), line_records(&lines, req, body)),
            Checked::Rows { table, names, columns, keys } => {
                let bad = |e: zepto_io::IoError| ApiError::internal(format!("encoding rows for Kafka: {e}"));
                (keys.len(), row_records(&table, &names, &columns, &keys).map_err(bad)?)
            }
        };
        self.produce_all(&records)
            .map_err(|msg| ApiError::new(hyper::StatusCode::SERVICE_UNAVAILABLE, "KAFKA", msg))?;
        Ok(rows)
    }

    /// Rows of `table` (columns `names`), each with its routing key, as Arrow records; once
    /// Kafka has every record.
    pub fn publish_rows(
        &self,
        table: &str,
        names: &[String],
        columns: &[Column],
        keys: &[String],
    ) -> Result<(), String> {
        let records = row_records(table, names, columns, keys).map_err(|e| format!("encoding rows for Kafka: {e}"))?;
        self.produce_all(&records)
    }

    /// A statement every node runs ([`crate::record::STATEMENT`]), one record on every
    /// partition, so that each partition's owner meets it before any later record of its
    /// partition; once Kafka has every one.
    pub fn publish_statement(&self, sql: &str) -> Result<(), String> {
        let partitions = self.ensure_topic().map_err(|e| e.to_string())?;
        if partitions == 0 {
            return Err(format!("the topic {} has no partitions yet", self.topic));
        }
        let headers = vec![(crate::record::FORMAT, crate::record::STATEMENT.to_string())];
        let records: Vec<Record> = (0..partitions)
            .map(|p| Record {
                key: String::new(),
                partition: i32::try_from(p).ok(),
                body: sql.as_bytes().to_vec(),
                headers: headers.clone(),
            })
            .collect();
        self.produce_all(&records)
    }

    /// Produce `records` and wait for Kafka's acknowledgements; an error says how many were not.
    fn produce_all(&self, records: &[Record]) -> Result<(), String> {
        let (tx, rx) = sync_channel(records.len());
        let deadline = Instant::now() + ACK_TIMEOUT;
        let mut failed = Vec::new();
        let mut sent = 0;
        for r in records {
            match self.send(r, &tx, deadline) {
                Ok(()) => sent += 1,
                Err(e) => failed.push(e),
            }
        }
        for _ in 0..sent {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => failed.push(e),
                Err(_) => failed.push("no acknowledgement in time".into()),
            }
        }
        match failed.first() {
            None => Ok(()),
            Some(first) => Err(format!(
                "{} of {} Kafka records not acknowledged ({first}); the others were, and will be stored",
                failed.len(),
                records.len()
            )),
        }
    }

    /// Queue one record, waiting while the client's queue is full.
    fn send(&self, r: &Record, tx: &SyncSender<Result<(), String>>, deadline: Instant) -> Result<(), String> {
        let mut headers = OwnedHeaders::new();
        for (k, v) in &r.headers {
            headers = headers.insert(Header { key: k, value: Some(v.as_str()) });
        }
        let mut record = BaseRecord::with_opaque_to(&self.topic, Box::new(tx.clone()))
            .key(r.key.as_str())
            .payload(r.body.as_slice())
            .headers(headers);
        if let Some(p) = r.partition {
            record = record.partition(p);
        }
        loop {
            match self.inner.send(record) {
                Ok(()) => return Ok(()),
                Err((e, back)) if Instant::now() < deadline && e.to_string().contains("Queue full") => {
                    self.inner.poll(Duration::from_millis(10));
                    record = back;
                }
                Err((e, _)) => return Err(e.to_string()),
            }
        }
    }
}

/// The unit name of a precision, as the consumer's header takes it.
fn unit(p: i64) -> &'static str {
    match p {
        1_000 => "u",
        1_000_000 => "ms",
        1_000_000_000 => "s",
        60_000_000_000 => "m",
        3_600_000_000_000 => "h",
        _ => "n",
    }
}

/// Line-protocol records: the checked lines grouped by key, in order, stamped where needed.
/// Each line is copied by its byte span: binary values (protocol version 2) hold any byte,
/// newlines included.
fn line_records(lines: &[ingest::CheckedLine], req: &WriteRequest, body: &[u8]) -> Vec<Record> {
    let stamp = format!(" {}", req.now_ns / req.precision.0.max(1));
    let stamped = lines.iter().filter_map(|l| {
        let src = body.get(l.span.clone())?;
        let line = if l.timestamped { src.to_vec() } else { [src, stamp.as_bytes()].concat() };
        Some((l.key.as_str(), line))
    });
    let groups = group_by_key(stamped);
    let headers = vec![(crate::record::PRECISION, unit(req.precision.0).to_string())];
    let mut out = Vec::new();
    for (key, group) in groups {
        let mut body: Vec<u8> = Vec::new();
        for line in group {
            if !body.is_empty() && body.len() + line.len() + 1 > RECORD_BYTES {
                out.push(Record {
                    key: key.clone(),
                    partition: None,
                    body: std::mem::take(&mut body),
                    headers: headers.clone(),
                });
            }
            if !body.is_empty() {
                body.push(b'\n');
            }
            body.extend_from_slice(&line);
        }
        out.push(Record { key, partition: None, body, headers: headers.clone() });
    }
    out
}

/// Arrow IPC records of the decoded rows, grouped by key.
fn row_records(
    table: &str,
    names: &[String],
    columns: &[Column],
    keys: &[String],
) -> Result<Vec<Record>, zepto_io::IoError> {
    let groups = group_by_key(keys.iter().enumerate().map(|(row, key)| (key.as_str(), row as u32)));
    let row_bytes = columns.iter().map(Column::data_bytes).sum::<usize>() / keys.len().max(1);
    let per_record = (RECORD_BYTES / row_bytes.max(1)).max(1);
    let headers = vec![(crate::record::FORMAT, "arrow".to_string()), (crate::record::TABLE, table.to_string())];
    let mut out = Vec::new();
    for (key, rows) in groups {
        for chunk in rows.chunks(per_record) {
            let cols: Vec<Column> = columns.iter().map(|c| c.take(chunk)).collect();
            let refs: Vec<&Column> = cols.iter().collect();
            let body = zepto_io::ipc::write_ipc_stream(names, &refs, chunk.len())?;
            out.push(Record { key: key.clone(), partition: None, body, headers: headers.clone() });
        }
    }
    Ok(out)
}

/// The items grouped by key, groups in the order their keys first appear, items in input order.
fn group_by_key<'k, T>(items: impl Iterator<Item = (&'k str, T)>) -> Vec<(String, Vec<T>)> {
    let mut groups: Vec<(String, Vec<T>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (key, item) in items {
        let i = *at.entry(key).or_insert_with(|| {
            groups.push((key.to_string(), Vec::new()));
            groups.len() - 1
        });
        if let Some((_, g)) = groups.get_mut(i) {
            g.push(item);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::{group_by_key, line_records};
    use zepto_server::auth::Principal;
    use zepto_server::ingest::ilp::{parse, Precision};
    use zepto_server::ingest::{self, Checked, IngestFormat, WriteRequest};

    /// Line-protocol lines reach Kafka as their bytes: a protocol version 2 array holds a
    /// newline byte and doubles hold any byte; a line without a timestamp gets the request's.
    #[test]
    fn line_records_copy_binary_values_whole() {
        let mut body = b"emb,doc=a px==\x10".to_vec();
        body.extend_from_slice(&1.5f64.to_le_bytes());
        body.extend_from_slice(b",v==\x0e\x0a\x01\x02\0\0\0");
        body.extend_from_slice(&[2.0f64.to_le_bytes(), 0.25f64.to_le_bytes()].concat());
        body.extend_from_slice(b" 5n\r\nemb,doc=b px==\x10");
        body.extend_from_slice(&f64::from_bits(0x0a20_0a20_0a20_0a20).to_le_bytes());
        body.extend_from_slice(b"\n");
        let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 9 };
        let engine = zepto_sql::Engine::new();
        let Ok(Checked::Lines(lines)) = ingest::check(&engine, &Principal::anonymous_admin(), &req, &body) else {
            panic!("a valid batch")
        };
        let records = line_records(&lines, &req, &body);
        let sent: Vec<_> =
            parse(&body, Precision::NANOS).expect("parses").into_iter().map(|p| (p.fields, p.timestamp)).collect();
        let mut got = Vec::new();
        for r in &records {
            got.extend(
                parse(&r.body, Precision::NANOS).expect("a record parses").into_iter().map(|p| (p.fields, p.timestamp)),
            );
        }
        assert_eq!(got.len(), 2);
        assert_eq!((&got[0], &got[1].0), (&sent[0], &sent[1].0));
        assert_eq!(got[1].1, Some(9));
    }

    #[test]
    fn groups_keep_first_seen_order() {
        let g = group_by_key([("b", 1), ("a", 2), ("b", 3), ("c", 4), ("a", 5)].into_iter());
        assert_eq!(g, vec![("b".to_string(), vec![1, 3]), ("a".to_string(), vec![2, 5]), ("c".to_string(), vec![4])]);
    }
}
