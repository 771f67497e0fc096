//! A node's consumer: one thread that polls the topic and applies each record of the
//! partitions Kafka assigned this node, exactly once.
//!
//! - **Assignment.** On every (incremental) assignment the node reads, from its own tables, the
//!   last offset it applied per partition ([`crate::offsets::applied`]) and starts each new
//!   partition right after it (from the beginning when it holds none). The group's committed
//!   offsets are written too, for Kafka's tools and lag monitors, but never read back.
//! - **Applying.** A record's rows and its offset are one logged change
//!   (`zepto_server::ingest::write_marked`); a record at or below the partition's applied
//!   offset is skipped. What one poll brings (up to 1,000 records) is applied in order, runs
//!   of line-protocol records as one change with one offset row per partition: one log write
//!   for many small records. A malformed record is refused whole: its offset is recorded (so it
//!   is not retried forever) with the record itself, kept in `zepto_kafka_rejected`
//!   ([`crate::rejected`]), and the error is logged and counted. A storage failure (a full
//!   disk) records nothing: the consumer goes back to that offset and tries again a second
//!   later.
//! - **Static membership.** The node's id is its group instance id: a node restarted within
//!   the session timeout (6 s) gets its partitions back at once, without a rebalance; a node
//!   that stays away loses them to the others after it.
//! - **Placement.** Queries find a row's owner by its routing key (its partition key's value,
//!   `""` without one) under Kafka's default partitioner (murmur2, as the Java client and
//!   `partitioner=murmur2_random` in librdkafka place keys). A record whose key that
//!   partitioner puts elsewhere, or without a key, is refused like a malformed one: its rows
//!   would be answered by no node, or by the wrong one.
//! - **Statements.** A record of format `sql` on every partition (a node published it) is a
//!   `CREATE TABLE IF NOT EXISTS` (or `ALTER TABLE ... ADD COLUMN IF NOT EXISTS`) every node
//!   runs when it meets it in any of its partitions, so that each partition's later records
//!   find the table; anything else is refused. Tables line protocol creates or widens here
//!   are told to the other nodes so ([`crate::schemas`]).
//! - **Fencing.** A node cut off long enough is fenced by the group (a fatal error of its
//!   client); it gives up its partitions and joins again with a new client.
//! - **Revocation** forgets the partition. Its rows stay in this node's tables, out of its
//!   answers (queries read only the partitions a node owns).

mod keep;

use crate::history::SharedHistory;
use crate::offsets;
use crate::produce::Producer;
use crate::record::{self, Body};
use crate::rejected;
use crate::schemas;
use crate::status::Shared;
use crate::{ClusterError, Config};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zepto_server::auth::Principal;
use zepto_server::error::ApiError;
use zepto_server::ingest::{self, IngestFormat, WriteRequest};
use zepto_sql::Engine;

/// How often the applied offsets are committed to the group.
const REFRESH: Duration = Duration::from_secs(1);

/// How often the rows of the offsets table below each partition's last are deleted.
const COMPACT: Duration = Duration::from_secs(60);

/// Most records applied as one batch.
const BATCH_RECORDS: usize = 1000;

/// Most bytes of records applied as one batch.
const BATCH_BYTES: usize = 16 << 20;

/// A record and what its headers say it holds (or why they say nothing), read once.
struct Parsed<'m, 'a> {
    m: &'m BorrowedMessage<'a>,
    req: Result<Body, String>,
}

impl Parsed<'_, '_> {
    /// The precision of a line-protocol record; `None` for any other (or malformed) one.
    fn ilp(&self) -> Option<i64> {
        match &self.req {
            Ok(Body::Write(r)) if r.format == IngestFormat::Ilp => Some(r.precision.0),
            _ => None,
        }
    }
}

/// What a record says, its placement checked (a statement, on every partition, is exempt).
fn parse(m: &BorrowedMessage<'_>, count: usize, now: i64) -> Result<Body, String> {
    match record::body(m.headers(), now)? {
        Body::Statement => Ok(Body::Statement),
        write => placed(m, count).map(|()| write),
    }
}

/// Whether record `m` sits where Kafka's default partitioner puts its key among `count`
/// partitions (see the module docs); why not, if it does not.
fn placed(m: &BorrowedMessage<'_>, count: usize) -> Result<(), String> {
    let Some(key) = m.key() else {
        return Err("a record without a key: key records by their rows' partition key ('' for none)".into());
    };
    let n = i64::try_from(count).unwrap_or(i64::MAX);
    let want = zepto_sql::eval::partitioner::kafka_partition(key, n);
    if want == i64::from(m.partition()) {
        return Ok(());
    }
    Err(format!(
        "record key '{}' belongs to partition {want} under Kafka's default partitioner (murmur2), it came on \
         partition {}: produce with that partitioner (partitioner=murmur2_random in librdkafka clients)",
        String::from_utf8_lossy(key),
        m.partition()
    ))
}

/// The records of `batch` in runs applied together: consecutive line-protocol records of one
/// precision form a run; any other record is a run of its own.
fn runs<'p, 'm, 'a>(batch: &'p [Parsed<'m, 'a>]) -> Vec<Vec<&'p Parsed<'m, 'a>>> {
    let mut out: Vec<Vec<&Parsed<'_, '_>>> = Vec::new();
    let mut open: Option<i64> = None;
    for p in batch {
        let ilp = p.ilp();
        match (ilp, open, out.last_mut()) {
            (Some(x), Some(y), Some(run)) if x == y => run.push(p),
            _ => out.push(vec![p]),
        }
        open = ilp;
    }
    out
}

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
    producer: Arc<Producer>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, ClusterError> {
    let pending = Pending::default();
    let consumer = join(&engine, config, &shared, &pending)?;
    let topic = config.topic().to_string();
    let (schemas, publisher) = schema_publisher(producer, stop.clone())?;
    let worker = Worker {
        consumer,
        engine,
        config: config.clone(),
        topic,
        shared,
        schemas,
        publisher: Some(publisher),
        pending,
        sealed: HashMap::new(),
        last_seal: Instant::now(),
        last_retry: Instant::now(),
    };
    std::thread::Builder::new()
        .name("zepto-kafka".into())
        .spawn(move || {
            zepto_storage::affinity::pin(zepto_storage::affinity::Role::Ingest);
            worker.run(&stop)
        })
        .map_err(|e| ClusterError::Config(format!("cannot start the consumer thread: {e}")))
}

/// A consumer of `config`'s group, subscribed to its topic.
fn join(
    engine: &Engine,
    config: &Config,
    shared: &Shared,
    pending: &Pending,
) -> Result<BaseConsumer<Context>, ClusterError> {
    let context = Context {
        engine: engine.clone(),
        topic: config.topic().to_string(),
        shared: shared.clone(),
        history: config.shared_history().cloned(),
        pending: pending.clone(),
    };
    let consumer: BaseConsumer<Context> = config
        .client()
        .set("group.id", config.group())
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("partition.assignment.strategy", "cooperative-sticky")
        .set("group.instance.id", config.node_id())
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "1000")
        .create_with_context(context)
        .map_err(kafka)?;
    consumer.subscribe(&[config.topic()]).map_err(kafka)?;
    Ok(consumer)
}

/// The consumer thread's state.
struct Worker {
    consumer: BaseConsumer<Context>,
    engine: Engine,
    config: Config,
    topic: String,
    shared: Shared,
    /// Schema statements for the other nodes, published in order by one thread
    /// ([`schema_publisher`]).
    schemas: mpsc::Sender<String>,
    /// That thread, joined when the consumer stops.
    publisher: Option<JoinHandle<()>>,
    /// Partitions assigned but not yet taken (their take-over failed; retried).
    pending: Pending,
    /// Per partition, the offset this node last sealed it at.
    sealed: HashMap<i32, i64>,
    last_seal: Instant,
    last_retry: Instant,
}

/// Partitions Kafka assigned that the node could not take yet (shared history unreachable,
/// the partition count unknown): the consumer tries again every few seconds.
type Pending = Arc<Mutex<BTreeSet<i32>>>;

/// How often pending partitions are tried again.
const RETRY: Duration = Duration::from_secs(2);

/// The set of waiting partitions (a poisoned lock still holds a good set).
fn lock(p: &Pending) -> MutexGuard<'_, BTreeSet<i32>> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// The thread publishing the schema statements sent to the returned channel, one after another
/// in the order they came, each until Kafka takes it ([`publish_until_taken`]): a column added
/// after a table was made must not reach the other nodes before the table does, even when
/// Kafka was away for both. It ends once the channel's sender is dropped and every statement
/// sent is taken, or when `stop` is set while Kafka refuses one: the statements not taken are
/// then said on stderr.
fn schema_publisher(
    producer: Arc<Producer>,
    stop: Arc<AtomicBool>,
) -> Result<(mpsc::Sender<String>, JoinHandle<()>), ClusterError> {
    let (tx, rx) = mpsc::channel::<String>();
    let mut pause = move |d: Duration| {
        let until = Instant::now() + d;
        while !stop.load(Ordering::Acquire) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
        false
    };
    let handle = std::thread::Builder::new()
        .name("zepto-schemas".into())
        .spawn(move || {
            while let Ok(s) = rx.recv() {
                if !publish_until_taken(std::slice::from_ref(&s), |s| producer.publish_statement(s), &mut pause) {
                    for lost in std::iter::once(s).chain(rx.try_iter()) {
                        eprintln!("zeptodb: cluster: stopping; the other nodes were not told '{lost}'");
                    }
                    return;
                }
            }
        })
        .map_err(|e| ClusterError::Config(format!("cannot start the schema publisher thread: {e}")))?;
    Ok((tx, handle))
}

/// The first pause before a schema statement Kafka refused is sent again; it doubles up to
/// [`SCHEMA_RETRY_MAX`].
const SCHEMA_RETRY_FIRST: Duration = Duration::from_millis(250);
const SCHEMA_RETRY_MAX: Duration = Duration::from_secs(30);

/// `stmts` published in order, each sent again after a pause (doubling from
/// [`SCHEMA_RETRY_FIRST`] to [`SCHEMA_RETRY_MAX`]) until `publish` succeeds: the other nodes
/// must learn of a table this one made even when Kafka was away when it was made, else their
/// queries of it fail (TABLE_NOT_FOUND, COLUMN_NOT_FOUND) for good. The statements are
/// `IF NOT EXISTS`, so one taken twice does no harm. Each failure is said on stderr, the first
/// and then about every [`SCHEMA_RETRY_MAX`]. `pause` waits, or says to give up (false: the
/// node is stopping); false then, with the statements not taken.
fn publish_until_taken(
    stmts: &[String],
    mut publish: impl FnMut(&str) -> Result<(), String>,
    mut pause: impl FnMut(Duration) -> bool,
) -> bool {
    for s in stmts {
        let mut wait = SCHEMA_RETRY_FIRST;
        let mut tries = 0u32;
        while let Err(e) = publish(s) {
            if tries == 0 || wait == SCHEMA_RETRY_MAX {
                eprintln!("zeptodb: cluster: telling the other nodes '{s}' failed ({e}); trying again");
            }
            tries += 1;
            if !pause(wait) {
                return false;
            }
            wait = (wait * 2).min(SCHEMA_RETRY_MAX);
        }
    }
    true
}

impl Worker {
    fn run(mut self, stop: &AtomicBool) {
        let (mut refreshed, mut compacted) = (Instant::now(), Instant::now());
        while !stop.load(Ordering::Acquire) {
            let batch = self.gather();
            self.apply_batch(&batch);
            drop(batch);
            if refreshed.elapsed() >= REFRESH {
                self.refresh();
                refreshed = Instant::now();
            }
            if compacted.elapsed() >= COMPACT {
                if let Err(e) = offsets::compact(&self.engine, &self.topic) {
                    self.shared.update(|s| s.last_error = Some(e.to_string()));
                }
                compacted = Instant::now();
            }
            if let Some((code, why)) = self.consumer.client().fatal_error() {
                self.rejoin(&format!("{code:?}: {why}"));
            }
            self.keep_history();
        }
        self.refresh();
        // What is queued goes out before the node stops (while Kafka takes it; the rest is said
        // on stderr).
        drop(self.schemas);
        if let Some(h) = self.publisher.take() {
            let _ = h.join();
        }
        // Dropping the consumer closes it (a static member keeps its partitions for the
        // session timeout, so a quick restart takes them back without a rebalance).
    }

    /// After a fatal client error (Kafka fenced this member: it was cut off long enough for
    /// the group to move on), give up every partition and join the group again with a new
    /// client: Kafka then gives the node a share, each partition resumed from the node's own
    /// offsets. A client that cannot be made is tried again a second later.
    fn rejoin(&mut self, why: &str) {
        eprintln!("zeptodb: cluster: the Kafka client failed ({why}): joining the group again");
        self.shared.update(|s| {
            s.partitions.clear();
            s.last_error = Some(format!("rejoining the group after: {why}"));
        });
        lock(&self.pending).clear();
        match join(&self.engine, &self.config, &self.shared, &self.pending) {
            Ok(c) => self.consumer = c,
            Err(e) => {
                self.shared.update(|s| s.last_error = Some(format!("rejoining the group: {e}")));
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }

    /// What one poll waits for (at most 100 ms), with every record already fetched behind
    /// it, up to [`BATCH_RECORDS`] records or [`BATCH_BYTES`] bytes.
    fn gather(&self) -> Vec<BorrowedMessage<'_>> {
        let (mut out, mut bytes, mut wait) = (Vec::new(), 0, Duration::from_millis(100));
        while out.len() < BATCH_RECORDS && bytes < BATCH_BYTES {
            match self.consumer.poll(wait) {
                None => break,
                Some(Err(e)) => {
                    self.shared.update(|s| s.last_error = Some(e.to_string()));
                    break;
                }
                Some(Ok(m)) => {
                    bytes += m.payload_len();
                    out.push(m);
                    wait = Duration::ZERO;
                }
            }
        }
        out
    }

    /// The topic's partition count: what the watch thread last saw, else asked now (0 when
    /// the brokers cannot say: the batch is then applied later).
    fn partition_count(&self) -> usize {
        let known = self.shared.update(|s| s.partition_count);
        if known > 0 {
            return known;
        }
        let asked = self.consumer.fetch_metadata(Some(&self.topic), Duration::from_secs(5));
        let n = asked.map_or(0, |md| md.topics().iter().map(|t| t.partitions().len()).sum::<usize>());
        self.shared.update(|s| s.partition_count = s.partition_count.max(n));
        n
    }

    /// A record of a partition this node still owns, past the last offset applied.
    fn wanted(&self, m: &BorrowedMessage<'_>) -> bool {
        self.shared
            .update(|s| s.partitions.get(&m.partition()).is_some_and(|p| p.applied.is_none_or(|a| m.offset() > a)))
    }

    /// Apply a batch in order: runs of line-protocol records as one logged change (their
    /// bodies joined, one offset row per partition), every other record alone. A run with a
    /// malformed record is applied again record by record, so only that one is refused. After
    /// a storage failure a partition's later records wait for the retry.
    fn apply_batch(&self, batch: &[BorrowedMessage<'_>]) {
        let now = now_ns();
        let count = self.partition_count();
        if count == 0 {
            // Where keys belong is unknown: apply nothing, come back to these records.
            let mut firsts: Vec<&BorrowedMessage<'_>> = Vec::new();
            for m in batch.iter().filter(|m| self.wanted(m)) {
                if !firsts.iter().any(|f| f.partition() == m.partition()) {
                    firsts.push(m);
                }
            }
            for m in firsts {
                self.settle(m, Err(ClusterError::Kafka("the topic's partition count is not known yet".into())));
            }
            return;
        }
        let fresh: Vec<Parsed<'_, '_>> =
            batch.iter().filter(|m| self.wanted(m)).map(|m| Parsed { m, req: parse(m, count, now) }).collect();
        let mut stalled: HashSet<i32> = HashSet::new();
        for run in runs(&fresh) {
            let run: Vec<&Parsed<'_, '_>> = run.into_iter().filter(|p| !stalled.contains(&p.m.partition())).collect();
            if let (true, Some(Ok(Body::Write(req)))) = (run.len() > 1, run.first().map(|p| &p.req)) {
                // On an error the run is applied again record by record below, so that a bad
                // record is refused alone.
                if let Ok(rows) = self.apply_run(req, &run) {
                    for (i, p) in run.iter().enumerate() {
                        self.settle(p.m, Ok(Applied::Rows(if i == 0 { rows } else { 0 })));
                    }
                    continue;
                }
            }
            for p in run {
                if stalled.contains(&p.m.partition()) {
                    continue;
                }
                let outcome = self.apply(p);
                if outcome.is_err() {
                    stalled.insert(p.m.partition());
                }
                self.settle(p.m, outcome);
            }
        }
    }

    /// Several line-protocol records of one precision (`req`) as one batch, with the last
    /// offset of each partition among them. Any error leaves everything unchanged.
    fn apply_run(&self, req: &WriteRequest, run: &[&Parsed<'_, '_>]) -> Result<usize, ClusterError> {
        let before = schemas::shapes(&self.engine);
        let applied = self.apply_run_as_one(req, run);
        self.tell_schema_changes(&before);
        applied
    }

    /// After line protocol: tell every node the tables it created or widened here
    /// ([`crate::schemas`]), through the node's schema publisher (the consumer does not wait
    /// for Kafka).
    fn tell_schema_changes(&self, before: &schemas::Shapes) {
        for s in schemas::changes(&self.engine, before) {
            if let Err(e) = self.schemas.send(s) {
                eprintln!("zeptodb: cluster: the schema publisher has stopped; not told: '{}'", e.0);
            }
        }
    }

    /// [`Worker::apply_run`]'s records as one logged change.
    fn apply_run_as_one(&self, req: &WriteRequest, run: &[&Parsed<'_, '_>]) -> Result<usize, ClusterError> {
        let mut last: Vec<(i32, i64)> = Vec::new();
        let mut body = Vec::new();
        for Parsed { m, .. } in run {
            match last.iter_mut().find(|(p, _)| *p == m.partition()) {
                Some(l) => l.1 = l.1.max(m.offset()),
                None => last.push((m.partition(), m.offset())),
            }
            body.extend_from_slice(m.payload().unwrap_or_default());
            body.push(b'\n');
        }
        let marks = last
            .iter()
            .map(|&(p, o)| offsets::mark(&self.topic, p, o, req.now_ns))
            .collect::<Result<Vec<_>, ClusterError>>()?;
        ingest::write_marked(&self.engine, &Principal::anonymous_admin(), req, &body, &marks)
            .map_err(|e| ClusterError::Storage(e.message))
    }

    /// Apply one record (see the module docs).
    fn apply(&self, p: &Parsed<'_, '_>) -> Result<Applied, ClusterError> {
        let (m, now) = (p.m, now_ns());
        let mark = offsets::mark(m.topic(), m.partition(), m.offset(), now)?;
        let marks = std::slice::from_ref(&mark);
        let body = m.payload().unwrap_or_default();
        let write = |req: &WriteRequest, body: &[u8]| {
            ingest::write_marked(&self.engine, &Principal::anonymous_admin(), req, body, marks)
        };
        let empty = WriteRequest {
            format: IngestFormat::Ilp,
            table: None,
            precision: zepto_server::ingest::ilp::Precision::NANOS,
            now_ns: now,
        };
        let outcome = match &p.req {
            Err(e) => Err((400, e.clone())),
            Ok(Body::Write(req)) if req.format == IngestFormat::Ilp => {
                let before = schemas::shapes(&self.engine);
                let r = write(req, body).map_err(|e| (e.status.as_u16(), e.message));
                self.tell_schema_changes(&before);
                r
            }
            Ok(Body::Write(req)) => write(req, body).map_err(|e| (e.status.as_u16(), e.message)),
            // The statement, then its offset alone: running it again after a crash between
            // the two changes nothing (it creates a table only if none exists).
            Ok(Body::Statement) => {
                self.run_statement(body).and_then(|()| write(&empty, b"").map_err(|e| (e.status.as_u16(), e.message)))
            }
        };
        match outcome {
            Ok(rows) => Ok(Applied::Rows(rows)),
            Err((status, why)) if status < 500 => {
                // Kept whole beside its offset: Kafka acknowledged it to its producer.
                let kept = rejected::Refused::of(m).mark(now, &why)?;
                let marks = [mark.clone(), kept];
                match ingest::write_marked(&self.engine, &Principal::anonymous_admin(), &empty, b"", &marks) {
                    Ok(_) => Ok(Applied::Refused { why, kept: true }),
                    // The table of kept records will not take the row (made with other columns
                    // by hand): the offset alone, said loudly, rather than a partition stopped.
                    Err(e) if e.status.as_u16() < 500 => {
                        write(&empty, b"").map_err(|e| ClusterError::Storage(e.message))?;
                        let why = format!("{why}; and NOT kept: {}: {}", rejected::TABLE, e.message);
                        Ok(Applied::Refused { why, kept: false })
                    }
                    Err(e) => Err(ClusterError::Storage(e.message)),
                }
            }
            Err((_, why)) => Err(ClusterError::Storage(why)),
        }
    }

    /// Run a statement record on this node's own engine: a `CREATE TABLE IF NOT EXISTS`,
    /// nothing else. An error as an HTTP status (below 500: the record is refused) and why.
    fn run_statement(&self, body: &[u8]) -> Result<(), (u16, String)> {
        let sql = std::str::from_utf8(body).map_err(|e| (400, format!("a statement record is not UTF-8: {e}")))?;
        let stmt = zepto_sql::parser::parse_statement(sql).map_err(|e| (400, e.to_string()))?;
        match &stmt {
            zepto_sql::parser::ast::Statement::CreateTable(ct) if ct.if_not_exists => {
                self.same_types(&ct.name, ct.columns.iter().map(|(c, t)| (c.as_str(), *t)))?
            }
            zepto_sql::parser::ast::Statement::AlterAddColumn {
                if_not_exists: true, table, column, data_type, ..
            } => self.same_types(table, [(column.as_str(), *data_type)].into_iter())?,
            _ => {
                let why =
                    "a statement record may only be CREATE TABLE IF NOT EXISTS or ALTER TABLE ADD COLUMN IF NOT EXISTS";
                return Err((400, why.into()));
            }
        }
        self.engine.execute_statement(&stmt).map(drop).map_err(|e| {
            let e = ApiError::from(e);
            (e.status.as_u16(), e.message)
        })
    }

    /// Refuse a column (of a table made or widened) another node made with another type than
    /// this node's (line protocol on two nodes at once): `IF NOT EXISTS` would pass it over
    /// unseen; the record kept ([`crate::rejected`]) tells the operator the nodes differ.
    /// SYMBOL and VARCHAR (a tag and a string field) take the same values: not refused.
    fn same_types<'c>(
        &self,
        table: &str,
        mut told: impl Iterator<Item = (&'c str, zepto_storage::DataType)>,
    ) -> Result<(), (u16, String)> {
        let Ok(t) = self.engine.catalog().snapshot(table) else { return Ok(()) };
        let here = |column: &str| t.schema().index_of(column).map(|i| t.schema().columns[i].data_type);
        let clash = told.find_map(|(column, told)| match here(column) {
            Some(here) if here != told && !(here.is_string() && told.is_string()) => Some((column, here, told)),
            _ => None,
        });
        match clash {
            Some((column, here, told)) => Err((
                409,
                format!(
                    "column '{column}' of table '{table}' is {here} on this node, {told} on the node that told it: \
                     two nodes made it from line protocol at once; its values that do not fit are kept in {}",
                    rejected::TABLE
                ),
            )),
            None => Ok(()),
        }
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
                        Applied::Refused { why, kept } => {
                            let fate = if kept { format!("kept in {}", rejected::TABLE) } else { "LOST".into() };
                            eprintln!("zeptodb: cluster: record {at} refused, {fate}: {why}");
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

    /// Commit the applied offsets to the group (for Kafka's tools; the node itself resumes
    /// from its tables).
    fn refresh(&self) {
        let _ = self.consumer.commit_consumer_state(CommitMode::Async);
    }
}

/// What became of a record.
enum Applied {
    /// Its rows were stored (how many).
    Rows(usize),
    /// It was malformed (why): kept in [`rejected::TABLE`] with its offset, or, when that
    /// table refused it too (`kept` false), only its offset stored.
    Refused { why: String, kept: bool },
}

/// The consumer's callbacks: assignments start where the node's tables end.
struct Context {
    engine: Engine,
    topic: String,
    shared: Shared,
    history: Option<SharedHistory>,
    pending: Pending,
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
    /// Take the partitions of `tpl`, each from right after its last applied offset (or after
    /// its shared history, taken over first, when that is further). A partition that cannot
    /// be taken now waits in `pending`.
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
        let count = self.shared.update(|s| s.partition_count);
        let mut taken = TopicPartitionList::new();
        let mut states = Vec::new();
        for e in tpl.elements() {
            let p = e.partition();
            if e.topic() != self.topic {
                taken.add_partition_offset(e.topic(), p, Offset::Beginning)?;
                continue;
            }
            match keep::start(&self.engine, self.history.as_ref(), &self.topic, p, count, applied.get(&p).copied()) {
                Ok(from) => {
                    taken.add_partition_offset(
                        &self.topic,
                        p,
                        from.map_or(Offset::Beginning, |o| Offset::Offset(o + 1)),
                    )?;
                    states.push((p, from));
                }
                Err(e) => self.wait(p, &e),
            }
        }
        if cooperative {
            consumer.incremental_assign(&taken)?;
        } else {
            consumer.assign(&taken)?;
        }
        let shared_history = self.history.is_some();
        self.shared.update(|s| {
            for (p, from) in states {
                s.partitions.insert(p, keep::owned(from, shared_history));
            }
        });
        Ok(())
    }

    /// Partition `p` cannot be taken now (why): it waits for the consumer's next try.
    fn wait(&self, p: i32, why: &ClusterError) {
        eprintln!("zeptodb: cluster: partition {p} not taken yet, trying again in {RETRY:?}: {why}");
        lock(&self.pending).insert(p);
        self.shared.update(|s| s.last_error = Some(format!("partition {p}: {why}")));
    }

    /// Give up the partitions of `tpl`.
    fn revoke(
        &self,
        consumer: &BaseConsumer<Context>,
        tpl: &mut TopicPartitionList,
        cooperative: bool,
    ) -> Result<(), KafkaError> {
        let parts: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
        lock(&self.pending).retain(|p| !parts.contains(p));
        self.shared.update(|s| s.partitions.retain(|p, _| !parts.contains(p)));
        if cooperative {
            consumer.incremental_unassign(tpl)
        } else {
            consumer.unassign()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statements go out in order, each sent again after pauses that double up to the cap
    /// until it is taken; none is dropped.
    #[test]
    fn a_schema_statement_is_sent_until_kafka_takes_it() {
        let stmts = ["CREATE TABLE IF NOT EXISTS a (x BIGINT)".to_string(), "ALTER TABLE a ADD y".to_string()];
        let (mut sent, mut pauses) = (Vec::new(), Vec::new());
        let mut refusals = 9;
        let taken = publish_until_taken(
            &stmts,
            |s| {
                sent.push(s.to_string());
                if s == stmts[0] && refusals > 0 {
                    refusals -= 1;
                    return Err("broker down".into());
                }
                Ok(())
            },
            |d| {
                pauses.push(d);
                true
            },
        );
        assert!(taken);
        assert_eq!(sent.len(), 11);
        assert!(sent[..10].iter().all(|s| *s == stmts[0]) && sent[10] == stmts[1], "{sent:?}");
        let ms: Vec<u128> = pauses.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
        // Stopping while Kafka is away gives up: nothing after the refused statement is sent.
        let mut sent = Vec::new();
        let taken = publish_until_taken(
            &stmts,
            |s| {
                sent.push(s.to_string());
                Err("broker down".into())
            },
            |_| false,
        );
        assert!(!taken);
        assert_eq!(sent, [stmts[0].clone()]);
    }
}
