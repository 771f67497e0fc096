//! The durable store: one WAL directory and one checkpoint directory behind a catalog.
//!
//! * [`Durable::open`] recovers: the newest checkpoint's tables, then the WAL records after
//!   its LSN; then it becomes the catalog's change log.
//! * Every change is encoded ([`crate::changes`]) and appended to the WAL before the catalog
//!   applies it.
//! * [`Durable::checkpoint`] takes a consistent cut of the catalog together with a WAL
//!   rotation (so the cut holds exactly the records up to the returned LSN), writes and
//!   publishes the checkpoint, then deletes older checkpoints and the WAL segments it covers.
//!   Writers are held only for the cut (`Arc` clones and one fsync); the files are written
//!   from the snapshots while ingestion goes on.

use crate::changes::{apply, encode};
use crate::checkpoint::{self, Written};
use crate::identity::DatabaseId;
use crate::DurableError;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use zepto_history::{sweep, write_history, ParquetHistory, SharedStore, Swept};
use zepto_storage::affinity::{self, Role};
use zepto_storage::feed::cursor::LogRead;
use zepto_storage::history::day_floor;
use zepto_storage::{Catalog, Change, ChangeLog, HistFile, StorageError};
use zepto_wal::{replay, Lsn, RecoveryMode, ReplayOptions, ReplayReport, Storage, SyncMode, Wal, WalError};

/// How the store logs, recovers, checkpoints and tiers.
#[derive(Debug, Clone)]
pub struct Options {
    /// When a logged change reaches the disk (before it is acknowledged: `Always`).
    pub sync: SyncMode,
    /// On WAL corruption: refuse to start, or recover to the point before it (the default).
    pub recovery: RecoveryMode,
    /// Checkpoint automatically once this many WAL bytes were written since the last one
    /// (0: only on request).
    pub checkpoint_bytes: u64,
    /// Move rows older than this (whole UTC days) to the Parquet history.
    pub tier_after_ns: Option<i64>,
    /// Move the oldest days to the Parquet history while tables hold more than this many bytes.
    pub memory_budget: Option<u64>,
    /// The cluster's shared storage, where history files named `shared:...` are read.
    pub shared: Option<SharedStore>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            sync: SyncMode::Always,
            recovery: RecoveryMode::PointInTime,
            checkpoint_bytes: 256 << 20,
            tier_after_ns: None,
            memory_budget: None,
            shared: None,
        }
    }
}

/// What recovery found.
#[derive(Debug, Clone, Default)]
pub struct Recovery {
    /// LSN of the checkpoint loaded (0: none).
    pub checkpoint_lsn: Lsn,
    /// Tables in that checkpoint.
    pub checkpoint_tables: usize,
    /// Rows in that checkpoint.
    pub checkpoint_rows: usize,
    /// Seconds loading it took.
    pub checkpoint_secs: f64,
    /// The WAL replay after the checkpoint.
    pub replay: ReplayReport,
    /// Seconds the replay took.
    pub replay_secs: f64,
    /// The history files the recovered tables name (all present), and files deleted because
    /// no table names them.
    pub history: Swept,
}

/// `, N unchanged tables' files (B bytes) kept` when a checkpoint kept any.
pub(crate) fn kept_note(w: &Written) -> String {
    if w.kept == 0 {
        return String::new();
    }
    format!(", {} unchanged tables' files ({} bytes) kept", w.kept, w.kept_bytes)
}

struct Last {
    lsn: Lsn,
    /// `Wal::bytes_written` when the last checkpoint's cut was taken.
    wal_bytes: u64,
    /// Bytes of the last checkpoint's files, kept ones included (0 before the first of this
    /// run): a table kept once is written in full when it next changes.
    size: u64,
}

/// The durable store: the catalog's change log (the WAL), its checkpoints and its Parquet
/// history.
pub struct Durable {
    wal: Wal,
    /// Where the log's segments are (read back for subscribers: `read_since`).
    wal_storage: Arc<dyn Storage>,
    checkpoints: Arc<dyn Storage>,
    checkpoint_bytes: u64,
    /// Held for a whole checkpoint: one at a time.
    last: Mutex<Last>,
    history: Arc<dyn Storage>,
    reader: Arc<ParquetHistory>,
    /// Held for a whole tiering: one at a time (file names come from the table's sequence).
    tiering: Mutex<()>,
    tier_after_ns: Option<i64>,
    memory_budget: Option<u64>,
    /// The data directory's id: a backup place takes backups of one database only.
    id: DatabaseId,
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable").field("checkpoint_bytes", &self.checkpoint_bytes).finish()
    }
}

impl Durable {
    /// Recover `catalog` (empty, without a change log) from `wal` and `checkpoints`, then log
    /// its every change. `progress` gets a line now and then during a long recovery.
    pub fn open(
        wal: Arc<dyn Storage>,
        checkpoints: Arc<dyn Storage>,
        history: Arc<dyn Storage>,
        catalog: &Catalog,
        opts: Options,
        mut progress: impl FnMut(&str),
    ) -> Result<(Arc<Durable>, Recovery), DurableError> {
        let mut rec = Recovery::default();
        let mut reader = ParquetHistory::new(history.clone());
        if let Some(s) = opts.shared.clone() {
            reader = reader.with_shared(s);
        }
        let reader = Arc::new(reader);
        catalog.set_history_reader(reader.clone())?;
        let t0 = Instant::now();
        if let Some((lsn, _)) = checkpoint::newest(checkpoints.as_ref())? {
            let checkpoint::Loaded { tables, stamps, views } = checkpoint::load(checkpoints.as_ref(), lsn, |i, n| {
                if n >= 8 {
                    progress(&format!("loading checkpoint {lsn}: {i} of {n} tables"));
                }
            })?;
            rec.checkpoint_lsn = lsn;
            rec.checkpoint_tables = tables.len();
            for (t, stamp) in tables.into_iter().zip(stamps) {
                rec.checkpoint_rows += t.row_count();
                // Unchanged since, it keeps its file at the next checkpoint or backup.
                match stamp {
                    Some(s) => catalog.restore_stamped(t, s)?,
                    None => catalog.restore(t)?,
                }
            }
            // From their states when the checkpoint has them and an engine is attached (the
            // replayed appends then fold in); else built from their tables when first read.
            for (def, state) in views {
                catalog.restore_view(def, state)?;
            }
        }
        rec.checkpoint_secs = t0.elapsed().as_secs_f64();
        // Files of older checkpoints or of attempts that never published.
        checkpoint::remove_others(checkpoints.as_ref(), (rec.checkpoint_lsn > 0).then_some(rec.checkpoint_lsn))?;

        let t1 = Instant::now();
        let mut failure: Option<(Lsn, String)> = None;
        let mut n = 0u64;
        let ropts = ReplayOptions {
            mode: opts.recovery,
            after: rec.checkpoint_lsn,
            rows_of: Some(crate::changes::appended_rows),
        };
        rec.replay = replay(wal.as_ref(), ropts, |lsn, payload| {
            if failure.is_some() {
                return;
            }
            if let Err(e) = apply(catalog, payload) {
                failure = Some((lsn, e));
            }
            n += 1;
            if n.is_multiple_of(100_000) {
                progress(&format!("replaying the log: {n} records applied"));
            }
        })?;
        if let Some((lsn, e)) = failure {
            // A record that passed its checksum but cannot be applied is a bug or a format
            // mismatch: refuse to start rather than serve a database missing acknowledged rows.
            return Err(DurableError::Wal(WalError::Corrupt {
                file: String::new(),
                offset: lsn,
                reason: format!("record LSN {lsn} could not be applied: {e}"),
            }));
        }
        rec.replay_secs = t1.elapsed().as_secs_f64();
        rec.history = sweep(history.as_ref(), catalog)?;
        let timeline = crate::timeline::continued(checkpoints.as_ref(), opts.sync, rec.replay.corruption.is_some())?;
        let id = DatabaseId::of_directory(checkpoints.as_ref())?;
        catalog.feed().continue_from(timeline, rec.replay.last_lsn);
        let log = Wal::open_flusher(wal.clone(), opts.sync, rec.replay.next_lsn(), || affinity::pin(Role::Wal))?;
        let d = Arc::new(Durable {
            wal: log,
            wal_storage: wal,
            checkpoints,
            checkpoint_bytes: opts.checkpoint_bytes,
            last: Mutex::new(Last { lsn: rec.checkpoint_lsn, wal_bytes: 0, size: 0 }),
            history,
            reader,
            tiering: Mutex::new(()),
            tier_after_ns: opts.tier_after_ns,
            memory_budget: opts.memory_budget,
            id,
        });
        catalog.set_log(d.clone())?;
        Ok((d, rec))
    }

    /// `catalog`'s tables as of one LSN, cut as a checkpoint cuts them: writers wait only while
    /// the snapshots are taken and the log rotates.
    pub(crate) fn cut(
        &self,
        catalog: &Catalog,
    ) -> Result<(Vec<zepto_storage::StampedTable>, Vec<zepto_storage::ViewCut>, Lsn), DurableError> {
        let (tables, views, lsn) = catalog.consistent_cut(|| self.wal.rotate());
        Ok((tables, views, lsn?))
    }

    /// The data directory's id (`identity.rs`).
    pub fn database_id(&self) -> &DatabaseId {
        &self.id
    }

    /// Where the history files live.
    pub(crate) fn history_storage(&self) -> &dyn zepto_wal::Storage {
        self.history.as_ref()
    }

    /// Checkpoint `catalog` (the catalog this store logs for). `None` when nothing changed
    /// since the last checkpoint.
    pub fn checkpoint(&self, catalog: &Catalog) -> Result<Option<Written>, DurableError> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let (tables, views, cut) = catalog.consistent_cut(|| (self.wal.rotate(), self.wal.bytes_written()));
        let (lsn, wal_bytes) = (cut.0?, cut.1);
        if lsn == last.lsn {
            last.wal_bytes = wal_bytes;
            return Ok(None);
        }
        debug_assert!(lsn > last.lsn, "LSNs only grow");
        let reuse = checkpoint::Reuse::newest(self.checkpoints.as_ref(), lsn);
        let written = checkpoint::write(self.checkpoints.as_ref(), lsn, tables, &views, &reuse)?;
        let previous = last.lsn;
        *last = Last { lsn, wal_bytes, size: written.bytes };
        // Published: what it replaces can go. A failure here leaves extra files that the next
        // checkpoint or start removes; the data is safe either way. The log keeps the records
        // since the checkpoint before this one: recovery skips them, but a subscriber resuming
        // after a restart (which checkpoints on exit) reads them back (`read_since`).
        checkpoint::remove_others(self.checkpoints.as_ref(), Some(lsn))?;
        self.wal.remove_through(previous)?;
        Ok(Some(written))
    }

    /// Move `table`'s rows before `before` to history files: write them from a snapshot, then
    /// commit (log + apply) under the table lock. A table that changed under the writer in a
    /// way that makes the files wrong is retried. Returns the rows and files moved.
    pub fn tier(&self, catalog: &Catalog, table: &str, before: i64) -> Result<(usize, Vec<HistFile>), StorageError> {
        let _one = self.tiering.lock().unwrap_or_else(|e| e.into_inner());
        let mut attempt = 0;
        loop {
            let snap = catalog.snapshot(table)?;
            if snap.count_before(before).iter().all(|&n| n == 0) {
                return Ok((0, Vec::new()));
            }
            let w = write_history(self.history.as_ref(), &snap, before)?;
            match catalog.commit_tier(&snap, before, &w.counts, &w.files) {
                Ok(n) => return Ok((n, w.files)),
                // The files were never logged: deleted (a retry writes its own under names of
                // its own, so left, they would read as rows twice to a tool reading the
                // directory; one that fails leaves them to the next start's sweep).
                Err(StorageError::Conflict(why)) => {
                    for f in &w.files {
                        let _ = self.history.remove(&f.path);
                    }
                    if attempt == 5 {
                        return Err(StorageError::Conflict(why));
                    }
                    attempt += 1;
                }
                // Files left behind are deleted by the next start's sweep (never here: a log
                // write that reported failure may still have reached the disk).
                Err(e) => return Err(e),
            }
        }
    }

    /// Apply `table`'s retention as of `now`; the history files it drops are deleted once the
    /// change is durable. Returns the rows dropped from memory and the files dropped.
    pub fn retain(&self, catalog: &Catalog, table: &str, now: i64) -> Result<(usize, Vec<HistFile>), StorageError> {
        let (rows, files) = catalog.retain(table, now)?;
        if !files.is_empty() {
            // The record must be on disk before the files go, whatever the sync mode.
            self.wal.sync().map_err(|e| StorageError::Durability(e.to_string()))?;
            // Files in the cluster's shared storage are not this node's to delete.
            for f in files.iter().filter(|f| f.shared_path().is_none()) {
                self.reader.forget(&f.path);
                // A file that cannot be deleted now is deleted by the next start's sweep.
                let _ = self.history.remove(&f.path);
            }
        }
        Ok((rows, files))
    }

    /// The periodic housekeeping: retention of every table with a TTL, then tiering by age
    /// (`tier_after_ns`) and by memory (`memory_budget`: the oldest whole days move first,
    /// never the day holding a table's newest row). Returns one line per action taken.
    pub fn maintain(&self, catalog: &Catalog, now: i64) -> Result<Vec<String>, StorageError> {
        let mut done = Vec::new();
        let names = catalog.table_names();
        for name in &names {
            let (rows, files) = self.retain(catalog, name, now)?;
            if rows > 0 || !files.is_empty() {
                done.push(format!("retention of '{name}': {rows} rows and {} history files dropped", files.len()));
            }
        }
        if let Some(age) = self.tier_after_ns {
            let before = day_floor(now.saturating_sub(age));
            for name in &names {
                let (rows, files) = self.tier(catalog, name, before)?;
                if rows > 0 {
                    done.push(format!(
                        "'{name}': {rows} rows older than {age} ns moved to {} history files",
                        files.len()
                    ));
                }
            }
        }
        if let Some(budget) = self.memory_budget {
            loop {
                let snaps: Vec<_> = names.iter().filter_map(|n| catalog.snapshot(n).ok()).collect();
                let used: u64 = snaps.iter().map(|t| t.data_bytes() as u64).sum();
                if used <= budget {
                    break;
                }
                // Per table: its oldest and newest day in memory.
                let spans: Vec<(&str, i64, i64)> = snaps
                    .iter()
                    .filter_map(|t| {
                        let newest = t.partitions().iter().filter_map(|p| last_ts(t, p)).max()?;
                        Some((t.name(), day_floor(t.min_ts()?), day_floor(newest)))
                    })
                    .collect();
                // The oldest day in memory among tables that hold more than one day.
                let Some(day) = spans.iter().filter(|(_, lo, hi)| lo < hi).map(|&(_, lo, _)| lo).min() else { break };
                let before = day + zepto_storage::history::NS_PER_DAY;
                let mut moved = 0;
                for &(name, _, newest_day) in &spans {
                    if newest_day >= before {
                        moved += self.tier(catalog, name, before)?.0;
                    }
                }
                if moved == 0 {
                    break;
                }
                done.push(format!("memory {used} bytes over the budget of {budget}: {moved} rows moved to history"));
            }
        }
        Ok(done)
    }

    /// Whether enough was logged since the last checkpoint to write another: the setting's
    /// bytes, and at least half the last checkpoint's size. A checkpoint writes every changed
    /// table whole, so with a fixed step a table of 7 GB under a stream of ingest was written again
    /// every 256 MB of log (27x its log in checkpoints); with the step growing with the data,
    /// checkpoints write at most three times what is logged, and recovery replays at most
    /// half a checkpoint's worth of log.
    pub fn due(&self) -> bool {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let step = self.checkpoint_bytes.max(last.size / 2);
        self.checkpoint_bytes > 0 && self.wal.bytes_written().saturating_sub(last.wal_bytes) >= step
    }

    /// WAL bytes written since the last checkpoint.
    pub fn wal_bytes_since_checkpoint(&self) -> u64 {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        self.wal.bytes_written().saturating_sub(last.wal_bytes)
    }

    /// Check every `every` whether a checkpoint is [`due`](Durable::due) and write it; stops
    /// when the catalog is gone. `report` gets each outcome.
    pub fn spawn_auto_checkpoint(
        self: &Arc<Self>,
        catalog: Weak<Catalog>,
        every: Duration,
        mut report: impl FnMut(Result<Written, DurableError>) + Send + 'static,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let me = Arc::downgrade(self);
        std::thread::Builder::new().name("zepto-checkpoint".into()).spawn(move || {
            affinity::pin(Role::Wal);
            loop {
                std::thread::sleep(every);
                let (Some(cat), Some(me)) = (catalog.upgrade(), me.upgrade()) else { return };
                if me.due() {
                    match me.checkpoint(&cat) {
                        Ok(Some(w)) => report(Ok(w)),
                        Ok(None) => {}
                        Err(e) => report(Err(e)),
                    }
                }
            }
        })
    }
}

/// The newest non-NULL timestamp of a partition (NULLs sort first, so it is the last row's).
fn last_ts(t: &zepto_storage::Table, p: &zepto_storage::Partition) -> Option<i64> {
    let c = t.ts_col()?;
    let n = p.len();
    (n > 0 && p.is_valid(c, n - 1)).then(|| p.i64_values(c).map(|v| v[n - 1])).flatten()
}

/// Whether a backup location is an object store (`s3://bucket/prefix`) rather than a
/// directory.
pub fn is_object_store(location: &str) -> bool {
    location.starts_with("s3://")
}

impl ChangeLog for Durable {
    fn tier(&self, catalog: &Catalog, table: &str, before: i64) -> Result<String, StorageError> {
        let t0 = Instant::now();
        let (rows, files) = Durable::tier(self, catalog, table, before)?;
        let bytes: u64 = files.iter().map(|f| f.bytes).sum();
        Ok(format!(
            "moved {rows} rows of '{table}' to {} history files ({bytes} bytes) in {:.3} s",
            files.len(),
            t0.elapsed().as_secs_f64()
        ))
    }

    fn retain(&self, catalog: &Catalog, table: &str, now: i64) -> Result<String, StorageError> {
        let (rows, files) = Durable::retain(self, catalog, table, now)?;
        Ok(format!("retention of '{table}': {rows} rows and {} history files dropped", files.len()))
    }

    fn log(&self, changes: &[Change<'_>]) -> Result<u64, StorageError> {
        let payload = encode(changes)?;
        self.wal.append_owned(payload).map_err(|e| match e {
            WalError::NoSpace(m) => StorageError::DiskFull(m),
            e => StorageError::Durability(e.to_string()),
        })
    }

    fn read_since(
        &self,
        catalog: &Catalog,
        table: &str,
        after: u64,
        upto: u64,
        max_bytes: usize,
    ) -> Result<LogRead, StorageError> {
        let mut events = Vec::new();
        let mut failed = None;
        let read = zepto_wal::read_since(self.wal_storage.as_ref(), after, upto, max_bytes, |lsn, payload| {
            if failed.is_none() {
                match crate::changes::feed_events(catalog, lsn, payload, table) {
                    Ok(e) => events.extend(e),
                    Err(e) => failed = Some(format!("record {lsn}: {e}")),
                }
            }
        })
        .map_err(|e| StorageError::Durability(e.to_string()))?;
        if let Some(e) = failed {
            return Err(StorageError::Durability(e));
        }
        Ok(match read {
            zepto_wal::Since::Read { through } => LogRead::Events { events, through },
            zepto_wal::Since::Gone { oldest } => LogRead::Gone { oldest },
        })
    }

    fn oldest_held(&self) -> Result<Option<u64>, StorageError> {
        zepto_wal::oldest(self.wal_storage.as_ref()).map_err(|e| StorageError::Durability(e.to_string()))
    }

    fn checkpoint(&self, catalog: &Catalog) -> Result<String, StorageError> {
        let t0 = Instant::now();
        match Durable::checkpoint(self, catalog) {
            Ok(Some(w)) => Ok(format!(
                "checkpoint at LSN {}: {} tables, {} rows, {} bytes written{} in {:.3} s",
                w.lsn,
                w.tables,
                w.rows,
                w.written_bytes(),
                kept_note(&w),
                t0.elapsed().as_secs_f64()
            )),
            Ok(None) => Ok("checkpoint: nothing changed since the last one".into()),
            Err(e) => Err(StorageError::Durability(e.to_string())),
        }
    }

    fn backup(&self, catalog: &Catalog, dest: &str) -> Result<String, StorageError> {
        let t0 = Instant::now();
        let s = if is_object_store(dest) {
            let store = zepto_history::SharedStore::open(dest)?;
            self.backup_to_store(catalog, &store)
        } else {
            Durable::backup(self, catalog, std::path::Path::new(dest))
        }
        .map_err(|e| StorageError::Durability(e.to_string()))?;
        Ok(format!("backup to {dest} at {s} in {:.3} s", t0.elapsed().as_secs_f64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{Column, ColumnBuilder, ColumnDef, DataType, Schema, Table, TableOptions, Value};
    use zepto_wal::MemStorage;

    fn col(dt: DataType, vals: &[Value]) -> Column {
        let mut b = ColumnBuilder::new(dt, vals.len());
        for v in vals {
            b.push_value(v).expect("a value of the column type");
        }
        b.finish()
    }

    /// Everything observable about a catalog: layouts, partitions in order, rows in order.
    fn dump(c: &Catalog) -> Vec<String> {
        let mut out = Vec::new();
        for name in c.table_names() {
            let t = c.snapshot(&name).expect("table");
            out.push(format!(
                "{name} {:?} key={:?} ts={:?} rows={} indexes={:?}",
                t.schema().columns,
                t.key_col(),
                t.ts_col(),
                t.row_count(),
                t.indexes()
            ));
            for p in t.partitions() {
                out.push(format!("partition {:?}", p.key().map(|k| t.dict().get(k).to_string())));
                for i in 0..p.len() {
                    let row: Vec<String> = p.columns().iter().map(|c| format!("{:?}", c.get(i))).collect();
                    out.push(row.join("|"));
                }
            }
        }
        out
    }

    fn open(wal: &MemStorage, ck: &MemStorage, cat: &Catalog) -> Result<(Arc<Durable>, Recovery), DurableError> {
        let opts = Options { checkpoint_bytes: 0, ..Options::default() };
        Durable::open(Arc::new(wal.clone()), Arc::new(ck.clone()), Arc::new(MemStorage::new()), cat, opts, |_| {})
    }

    fn schema(defs: &[(&str, DataType)]) -> Schema {
        Schema { columns: defs.iter().map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t }).collect() }
    }

    fn every_type_table(live: &Catalog) {
        use Value::*;
        let s = schema(&[
            ("ts", DataType::Timestamp),
            ("sym", DataType::Symbol),
            ("px", DataType::Float64),
            ("n", DataType::Int32),
            ("big", DataType::Int64),
            ("f", DataType::Float32),
            ("ok", DataType::Bool),
            ("note", DataType::Varchar),
            ("d", DataType::Date),
            ("venue", DataType::Symbol),
        ]);
        live.create(Table::new("t", s, &TableOptions::default()).expect("table"), false).expect("create");
        let long = "é".repeat(50_000);
        let batch = vec![
            col(DataType::Timestamp, &[Timestamp(5), Timestamp(1), Null, Timestamp(i64::MAX)]),
            col(DataType::Varchar, &[Str("B".into()), Str("A".into()), Null, Str("B".into())]),
            col(DataType::Float64, &[Float64(1.5), Null, Float64(-0.0), Float64(f64::NAN)]),
            col(DataType::Int32, &[Int32(i32::MIN), Int32(7), Null, Int32(0)]),
            col(DataType::Int64, &[Null, Int64(i64::MAX), Int64(-1), Int64(3)]),
            col(DataType::Float32, &[Float32(0.25), Null, Float32(f32::INFINITY), Float32(1.0)]),
            col(DataType::Bool, &[Bool(true), Bool(false), Null, Bool(true)]),
            col(DataType::Varchar, &[Str(String::new()), Str(long), Null, Str("x".into())]),
            col(DataType::Date, &[Date(19_724), Null, Date(-1), Date(0)]),
            col(DataType::Varchar, &[Str("XNAS".into()), Null, Str("A".into()), Str("XNYS".into())]),
        ];
        live.append("t", batch).expect("append");
    }

    /// A batch coded against its table's dictionary (as the ingest doors build them) is
    /// logged with the strings its rows use, not the table's thousands, and replays to the
    /// same rows.
    #[test]
    fn a_batch_in_the_tables_dictionary_logs_only_its_own_strings() {
        let (wal, ck) = (MemStorage::new(), MemStorage::new());
        let live = Catalog::new();
        let (_d, _) = open(&wal, &ck, &live).expect("open");
        let s = schema(&[("ts", DataType::Timestamp), ("sym", DataType::Symbol), ("v", DataType::Int64)]);
        live.create(Table::new("t", s, &TableOptions::default()).expect("table"), false).expect("create");
        let n = 5_000;
        let syms: Vec<Value> = (0..n).map(|i| Value::Str(format!("series-{i:05}"))).collect();
        let ts: Vec<Value> = (0..n).map(|i| Value::Timestamp(i as i64)).collect();
        let v: Vec<Value> = (0..n).map(|i| Value::Int64(i as i64)).collect();
        let cols = vec![col(DataType::Timestamp, &ts), col(DataType::Varchar, &syms), col(DataType::Int64, &v)];
        live.append("t", cols).expect("append");
        let bytes =
            |w: &MemStorage| -> usize { w.list().expect("list").iter().map(|f| w.read(f).expect("read").len()).sum() };
        let before = bytes(&wal);
        let layout = live.layout("t").expect("layout");
        let mut sym = ColumnBuilder::symbols_in(layout.dict.clone(), 3);
        let known = sym.push_symbol("series-04321").expect("known");
        sym.push_symbol("a-new-one").expect("new");
        sym.push_code(known).expect("again");
        let more = vec![
            col(DataType::Timestamp, &[Value::Timestamp(9_000), Value::Timestamp(9_001), Value::Timestamp(9_002)]),
            sym.finish(),
            col(DataType::Int64, &[Value::Int64(-1), Value::Int64(-2), Value::Int64(-3)]),
        ];
        let coded = matches!(more[1].data(), zepto_storage::ColumnData::Symbol { dict, .. } if dict.lineage() == layout.dict.lineage());
        assert!(coded, "the builder codes against the table's dictionary");
        live.append("t", more).expect("append");
        let logged = bytes(&wal) - before;
        assert!(logged < 2_000, "a 3-row batch logged {logged} bytes");
        let r = Catalog::new();
        open(&wal.crash(|_, _| 0), &ck.crash(|_, _| 0), &r).expect("recovers");
        assert_eq!(dump(&r), dump(&live));
        let t = live.snapshot("t").expect("t");
        assert_eq!(t.row_count(), n + 3);
        let p = t.partitions().iter().find(|p| p.key().is_some_and(|k| t.dict().get(k) == "a-new-one"));
        assert_eq!(p.map(|p| p.len()), Some(1), "the new string is a partition of its own");
    }

    #[test]
    fn every_change_and_type_survives_restarts_through_log_and_checkpoint() {
        let (wal, ck) = (MemStorage::new(), MemStorage::new());
        let live = Catalog::new();
        let (d, _) = open(&wal, &ck, &live).expect("open");
        every_type_table(&live);
        live.add_column("t", ColumnDef { name: "extra".into(), data_type: DataType::Symbol }).expect("add");
        let index = |name: &str| {
            let opts = vec![("metric".to_string(), "cosine".to_string()), ("m".to_string(), "8".to_string())];
            zepto_storage::IndexDef::new(name, "extra", "hnsw", opts).expect("an index")
        };
        assert!(live.create_index("t", index("kept"), false).expect("created"));
        live.create_index("t", index("dropped"), false).expect("created");
        assert!(live.create_index("t", index("KEPT"), false).is_err(), "names are unique");
        assert!(!live.create_index("t", index("kept"), true).expect("if not exists"));
        assert!(live.drop_index("Dropped", false).expect("dropped"));
        assert!(!live.drop_index("dropped", true).expect("if exists"));
        let empty = schema(&[("x", DataType::Int64)]);
        live.create(Table::new("gone", empty.clone(), &TableOptions::default()).expect("t"), false).expect("create");
        live.drop_table("gone", false).expect("drop");
        live.create(Table::new("empty", empty, &TableOptions::default()).expect("t"), false).expect("create");
        // Corrections: the first row of the first partition goes, the next one gets a new price.
        live.modify("t", |t| {
            let sel = vec![(0u32, vec![0u32])];
            live.log(&[Change::Delete { table: "t", rows: &sel }])?.apply(|| t.delete_rows(&sel))?;
            let values = vec![col(DataType::Float64, &[Value::Float64(99.5)])];
            live.log(&[Change::Update { table: "t", rows: &sel, columns: &[2], values: &values }])?
                .apply(|| t.update_rows(&sel, &[2], values))
        })
        .expect("corrections");

        // 1. From the log alone.
        let r1 = Catalog::new();
        let (_, rec) = open(&wal.crash(|_, _| 0), &ck.crash(|_, _| 0), &r1).expect("recovers");
        assert_eq!((rec.checkpoint_lsn, rec.replay.records), (0, 11));
        assert_eq!(dump(&r1), dump(&live));

        // 2. From a checkpoint: the log it covers is gone.
        let w = d.checkpoint(&live).expect("checkpoint").expect("something to write");
        assert_eq!((w.lsn, w.tables, w.rows), (11, 2, 3));
        assert_eq!(
            wal.list().expect("list").len(),
            2,
            "the fresh segment, and the covered one until the next checkpoint"
        );
        assert!(d.checkpoint(&live).expect("again").is_none(), "nothing new");
        let r2 = Catalog::new();
        let (_, rec) = open(&wal.crash(|_, _| 0), &ck.crash(|_, _| 0), &r2).expect("recovers");
        assert_eq!((rec.checkpoint_lsn, rec.checkpoint_rows, rec.replay.records), (11, 3, 0));
        assert_eq!(r2.indexes().len(), 1, "the kept index came back from the checkpoint");
        assert_eq!(dump(&r2), dump(&live));

        // 3. Checkpoint plus a log tail, twice over.
        let more = |c: &Catalog, ts: i64| {
            let t = c.snapshot("t").expect("t");
            let cols = t
                .schema()
                .columns
                .iter()
                .map(|d| match d.data_type {
                    DataType::Timestamp => col(DataType::Timestamp, &[Value::Timestamp(ts)]),
                    DataType::Symbol => col(DataType::Varchar, &[Value::Str(format!("S{ts}"))]),
                    dt => Column::nulls(dt, 1),
                })
                .collect();
            c.append("t", cols).expect("append");
        };
        more(&live, 3);
        more(&live, 2);
        d.checkpoint(&live).expect("checkpoint");
        more(&live, 0);
        let r3 = Catalog::new();
        let (_, rec) = open(&wal.crash(|_, _| 0), &ck.crash(|_, _| 0), &r3).expect("recovers");
        assert_eq!((rec.checkpoint_lsn, rec.replay.records), (13, 1));
        assert_eq!(dump(&r3), dump(&live));
        assert_eq!(ck.list().expect("list").iter().filter(|n| n.ends_with(".manifest")).count(), 1);
    }

    /// The automatic checkpoint's step is the setting, or half the last checkpoint's size
    /// when that is more: a large table is not written again for every small step of log.
    #[test]
    fn the_checkpoint_step_grows_with_the_last_checkpoint() {
        let (wal, ck) = (MemStorage::new(), MemStorage::new());
        let live = Catalog::new();
        let opts = Options { checkpoint_bytes: 1024, ..Options::default() };
        let (d, _) =
            Durable::open(Arc::new(wal), Arc::new(ck), Arc::new(MemStorage::new()), &live, opts, |_| {}).expect("open");
        live.create(Table::new("t", schema(&[("x", DataType::Int64)]), &TableOptions::default()).expect("t"), false)
            .expect("create");
        let rows = |n: i64| vec![col(DataType::Int64, &(0..n).map(Value::Int64).collect::<Vec<_>>())];
        live.append("t", rows(100_000)).expect("append");
        assert!(d.due(), "800 KB logged, over the 1 KiB setting");
        let size = d.checkpoint(&live).expect("checkpoint").expect("written").bytes;
        assert!(size > 800_000, "{size}");
        live.append("t", rows(1_000)).expect("append");
        assert!(d.wal_bytes_since_checkpoint() > 1024);
        assert!(!d.due(), "8 KB logged is over the setting but under half the last checkpoint");
        while d.wal_bytes_since_checkpoint() < size / 2 {
            live.append("t", rows(10_000)).expect("append");
        }
        assert!(d.due(), "half the last checkpoint logged");
    }

    #[test]
    fn a_refused_change_is_not_applied() {
        let (wal, ck) = (MemStorage::new(), MemStorage::new());
        let live = Catalog::new();
        open(&wal, &ck, &live).expect("open");
        let s = schema(&[("x", DataType::Int64)]);
        live.create(Table::new("t", s, &TableOptions::default()).expect("t"), false).expect("create");
        wal.fail_sync_after(0);
        let e = live.append("t", vec![col(DataType::Int64, &[Value::Int64(1)])]).expect_err("not durable");
        assert!(matches!(e, StorageError::Durability(_)), "{e:?}");
        assert_eq!(live.snapshot("t").expect("t").row_count(), 0, "nothing applied");
        assert!(live.drop_table("t", false).is_err(), "refused while fsync fails");
        wal.fail_sync_after(usize::MAX);
        // A full disk: refused as such, nothing applied, and writes resume once space is freed.
        wal.set_disk_full(true);
        let one = || vec![col(DataType::Int64, &[Value::Int64(7)])];
        let e = live.append("t", one()).expect_err("disk full");
        assert!(matches!(e, StorageError::DiskFull(_)), "{e:?}");
        assert_eq!(live.snapshot("t").expect("t").row_count(), 0, "nothing applied");
        wal.set_disk_full(false);
        live.append("t", one()).expect("space again, no restart");
        let again = Catalog::new();
        let (_, rec) = open(&wal.crash(|_, _| 0), &ck.crash(|_, _| 0), &again).expect("recovers");
        assert_eq!((rec.replay.torn, rec.replay.corruption), (None, None));
        assert_eq!(dump(&again), dump(&live));
    }

    #[test]
    fn damaged_checkpoints_and_missing_log_are_refused_by_name() {
        let (wal, ck) = (MemStorage::new(), MemStorage::new());
        let live = Catalog::new();
        let (d, _) = open(&wal, &ck, &live).expect("open");
        every_type_table(&live);
        d.checkpoint(&live).expect("checkpoint");
        let data = ck.list().expect("list").into_iter().find(|n| n.ends_with(".arrow")).expect("a table file");
        let bad = ck.crash(|_, _| 0);
        bad.corrupt(&data, 100);
        let e = open(&wal.crash(|_, _| 0), &bad, &Catalog::new()).expect_err("refused");
        assert_eq!(e, DurableError::Corrupt { file: data, reason: "checksum mismatch".into() });
        let manifest = checkpoint::manifest_name(2);
        let bad = ck.crash(|_, _| 0);
        bad.corrupt(&manifest, 30);
        let e = open(&wal.crash(|_, _| 0), &bad, &Catalog::new()).expect_err("refused");
        assert!(e.to_string().contains(&manifest), "{e}");
        // A manifest of a later format (its checksum right): refused as such, not as damage.
        let newer = ck.crash(|_, _| 0);
        let text = String::from_utf8(newer.read(&manifest).expect("manifest")).expect("text");
        let body =
            text[..text.rfind("crc ").expect("crc line")].replacen("zeptodb-checkpoint 2", "zeptodb-checkpoint 3", 1);
        newer.truncate(&manifest, 0).expect("truncate");
        newer
            .append(&manifest, format!("{body}crc {:08x}\n", crc32fast::hash(body.as_bytes())).as_bytes())
            .expect("write");
        let e = open(&wal.crash(|_, _| 0), &newer, &Catalog::new()).expect_err("refused");
        assert!(e.to_string().contains("written by a newer ZeptoDB (checkpoint format 3"), "{e}");
        // A checkpoint without its log (a lost checkpoint directory) cannot be completed once
        // a second checkpoint removed the log the first covers.
        live.drop_table("t", false).expect("a change");
        d.checkpoint(&live).expect("second checkpoint");
        let e = open(&wal.crash(|_, _| 0), &MemStorage::new(), &Catalog::new()).expect_err("refused");
        assert!(e.to_string().contains("records are missing"), "{e}");
    }

    /// Run a fixed workload (changes with checkpoints between) with the disks dying after
    /// `budget` operations; return what was acknowledged, as changes replayed into a model.
    fn workload(wal: &MemStorage, ck: &MemStorage, budget: usize) -> (Vec<Vec<String>>, bool) {
        wal.fail_after_ops(Some(budget));
        let live = Catalog::new();
        let model = Catalog::new();
        // States the recovered catalog may be in: the acknowledged one, or one change further
        // (a change whose record was written but whose fsync failed: not acknowledged, yet on disk).
        let mut states = vec![dump(&model)];
        let Ok((d, _)) = open(wal, ck, &live) else { return (states, false) };
        let s = schema(&[("ts", DataType::Timestamp), ("sym", DataType::Symbol), ("v", DataType::Int64)]);
        let mut all_ok = true;
        for step in 0..12i64 {
            type Step = Box<dyn Fn(&Catalog) -> Result<(), StorageError>>;
            let s = s.clone();
            let change: Step = match step {
                0 => Box::new(move |c| {
                    c.create(Table::new("t", s.clone(), &TableOptions::default())?, false).map(|_| ())
                }),
                5 => Box::new(|c| c.add_column("t", ColumnDef { name: "w".into(), data_type: DataType::Float64 })),
                8 => Box::new(move |c| {
                    c.create(Table::new("u", s.clone(), &TableOptions::default())?, false).map(|_| ())
                }),
                10 => Box::new(|c| c.drop_table("u", false).map(|_| ())),
                // Corrections: every third row of the first partition deleted, then the
                // second row of every partition given a new value.
                6 => Box::new(|c| {
                    c.modify("t", |t| {
                        let n = t.partitions()[0].len() as u32;
                        let sel = vec![(0u32, (0..n).step_by(3).collect::<Vec<u32>>())];
                        c.log(&[Change::Delete { table: "t", rows: &sel }])?.apply(|| t.delete_rows(&sel).map(|_| ()))
                    })
                }),
                9 => Box::new(|c| {
                    c.modify("t", |t| {
                        let sel: Vec<(u32, Vec<u32>)> = (0..t.partitions().len() as u32)
                            .filter(|&s| t.partitions()[s as usize].len() > 1)
                            .map(|s| (s, vec![1]))
                            .collect();
                        let values = vec![col(DataType::Int64, &vec![Value::Int64(-7); sel.len()])];
                        c.log(&[Change::Update { table: "t", rows: &sel, columns: &[2], values: &values }])?
                            .apply(|| t.update_rows(&sel, &[2], values).map(|_| ()))
                    })
                }),
                k => Box::new(move |c| {
                    let t = c.snapshot("t")?;
                    let n = 3 + k as usize;
                    let cols = t
                        .schema()
                        .columns
                        .iter()
                        .map(|d| match d.data_type {
                            DataType::Timestamp => col(
                                DataType::Timestamp,
                                &(0..n).map(|i| Value::Timestamp((i as i64 * 7 + k) % 11)).collect::<Vec<_>>(),
                            ),
                            DataType::Symbol => col(
                                DataType::Varchar,
                                &(0..n).map(|i| Value::Str(format!("s{}", i % 3))).collect::<Vec<_>>(),
                            ),
                            DataType::Int64 => col(
                                DataType::Int64,
                                &(0..n).map(|i| Value::Int64(k * 100 + i as i64)).collect::<Vec<_>>(),
                            ),
                            dt => Column::nulls(dt, n),
                        })
                        .collect();
                    c.append("t", cols).map(|_| ())
                }),
            };
            let mut next = Catalog::new();
            for name in model.table_names() {
                next.restore(Table::clone(&model.snapshot(&name).expect("t"))).expect("copy");
            }
            change(&mut next).expect("the model accepts every change");
            if change(&live).is_ok() {
                change(&model).expect("model");
                states = vec![dump(&model)];
            } else {
                all_ok = false;
                states.push(dump(&next));
                break;
            }
            if step % 4 == 3 && d.checkpoint(&live).is_err() {
                all_ok = false;
                // The checkpoint failed: the process goes on (a later change fails too).
            }
        }
        (states, all_ok)
    }

    #[test]
    fn a_crash_at_every_step_of_logging_and_checkpointing_loses_nothing_acknowledged() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut completed = false;
        for budget in 0..400 {
            let wal = MemStorage::new();
            let ck = wal.sibling();
            let (states, all_ok) = workload(&wal, &ck, budget);
            for keep_some in [false, true] {
                let mut keep = |_: &str, unsynced: usize| if keep_some { (rnd() as usize) % (unsynced + 1) } else { 0 };
                let (w2, c2) = (wal.crash(&mut keep), ck.crash(&mut keep));
                let rec = Catalog::new();
                open(&w2, &c2, &rec).unwrap_or_else(|e| panic!("budget {budget}: recovery failed: {e}"));
                let got = dump(&rec);
                assert!(states.contains(&got), "budget {budget}: recovered {got:#?}\nexpected one of {states:#?}");
            }
            if all_ok {
                completed = true;
                break;
            }
        }
        assert!(completed, "the workload never ran to the end: raise the budget limit");
    }

    #[test]
    fn appends_racing_drop_and_create_never_land_in_a_dropped_table() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (wal, ck) = (MemStorage::new(), MemStorage::new());
        let live = Arc::new(Catalog::new());
        let opts = Options { checkpoint_bytes: 0, sync: SyncMode::None, ..Options::default() };
        let (_d, _) = Durable::open(
            Arc::new(wal.clone()),
            Arc::new(ck.clone()),
            Arc::new(MemStorage::new()),
            &live,
            opts,
            |_| {},
        )
        .expect("open");
        let s = schema(&[("x", DataType::Int64)]);
        live.create(Table::new("t", s.clone(), &TableOptions::default()).expect("t"), false).expect("create");
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let (c, stop) = (live.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut ok = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        ok += c.append("t", vec![col(DataType::Int64, &[Value::Int64(1)])]).is_ok() as u64;
                    }
                    ok
                })
            })
            .collect();
        for _ in 0..20_000 {
            live.drop_table("t", false).expect("drop");
            live.create(Table::new("t", s.clone(), &TableOptions::default()).expect("t"), false).expect("create");
        }
        stop.store(true, Ordering::Relaxed);
        let acked: u64 = writers.into_iter().map(|h| h.join().expect("writer")).sum();
        let rec = Catalog::new();
        open(&wal.crash(|_, n| n), &ck.crash(|_, _| 0), &rec)
            .unwrap_or_else(|e| panic!("after {acked} acknowledged appends, recovery refused: {e}"));
        assert_eq!(dump(&rec), dump(&live), "after {acked} acknowledged appends");
    }

    #[test]
    fn a_published_checkpoint_is_never_rewritten() {
        let ck = MemStorage::new();
        let live = Catalog::new();
        every_type_table(&live);
        let (tables, _, ()) = live.consistent_cut(|| ());
        checkpoint::write(&ck, 5, tables.clone(), &[], &checkpoint::Reuse::none()).expect("first");
        let before: Vec<Vec<u8>> = ck.list().expect("list").iter().map(|n| ck.read(n).expect("read")).collect();
        // A retry at the same LSN (its first attempt reported a failure after publishing)
        // touches nothing: every changing operation would fail now.
        ck.fail_after_ops(Some(0));
        checkpoint::write(&ck, 5, tables, &[], &checkpoint::Reuse::none()).expect("retry is a no-op");
        let after: Vec<Vec<u8>> = ck.list().expect("list").iter().map(|n| ck.read(n).expect("read")).collect();
        assert_eq!(before, after);
    }
}
