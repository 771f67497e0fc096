//! A data directory as one handle, for every door that keeps tables durable (the server, the
//! CLI, the Python package): lock it (one process per directory), recover what is there (the
//! newest checkpoint in `DIR/checkpoint`, then the write-ahead log in `DIR/wal`, checked
//! against the Parquet history in `DIR/history`), then log every change before it is
//! acknowledged, checkpoint as the log grows, and, when asked, apply retention (TTL) and move
//! old days to the history every few seconds. Progress and problems go to the caller's log.

use crate::{Durable, Options};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use zepto_storage::Catalog;
use zepto_wal::{Corruption, DirStorage, RecoveryMode, SyncMode};

/// Where progress lines go (one line per call, without a trailing newline).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// How a directory is opened. `Default` is the server's: fsync before acknowledging,
/// point-in-time recovery, a checkpoint every 256 MiB of log, no tiering, no background
/// maintenance.
#[derive(Debug, Clone, Default)]
pub struct DirOptions {
    /// `always` (the default), `interval=<ms>` or `none`.
    pub sync: Option<String>,
    /// On WAL corruption: refuse to start, or recover to the point before it (the default).
    pub recovery: RecoveryMode,
    /// Checkpoint once the log holds this many MiB (256 when `None`).
    pub checkpoint_mb: Option<u64>,
    /// When rows move to the Parquet history.
    pub tiering: Tiering,
    /// The cluster's shared storage, where history files named `shared:...` are read.
    pub shared: Option<zepto_history::SharedStore>,
}

/// When rows move to the Parquet history (see [`Options`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tiering {
    /// Move rows older than this (whole UTC days).
    pub after_ns: Option<i64>,
    /// Move the oldest days while tables hold more than this many MiB.
    pub memory_budget_mb: Option<u64>,
    /// Run retention and tiering every few seconds (the server; not one-shot `sql`).
    pub background: bool,
}

/// An open data directory: its durable store, what recovery cut off (if anything), and the
/// lock that keeps other processes out until the handle is dropped.
pub struct DataDir {
    durable: Arc<Durable>,
    corruption: Option<Corruption>,
    _lock: File,
}

impl DataDir {
    /// Make `catalog` durable in `dir`: lock it, recover what is there into `catalog`, then log
    /// to it, with a background checkpoint thread (and maintenance, if asked).
    pub fn open(catalog: &Arc<Catalog>, dir: &Path, opts: &DirOptions, log: Log) -> Result<DataDir, String> {
        let mode = match opts.sync.as_deref() {
            None => SyncMode::Always,
            Some(s) => {
                SyncMode::parse(s).ok_or_else(|| format!("sync mode '{s}' is not always, interval=<ms> or none"))?
            }
        };
        let lock = lock_dir(dir)?;
        let storage = |sub: &str| -> Result<Arc<DirStorage>, String> {
            let p = dir.join(sub);
            DirStorage::open(&p).map(Arc::new).map_err(|e| format!("{}: {e}", p.display()))
        };
        let (wal, ckpt, history) = (storage("wal")?, storage("checkpoint")?, storage("history")?);
        let options = Options {
            sync: mode,
            recovery: opts.recovery,
            checkpoint_bytes: opts.checkpoint_mb.unwrap_or(256).saturating_mul(1 << 20),
            tier_after_ns: opts.tiering.after_ns,
            memory_budget: opts.tiering.memory_budget_mb.map(|m| m.saturating_mul(1 << 20)),
            shared: opts.shared.clone(),
        };
        let progress = log.clone();
        let (durable, rec) =
            Durable::open(wal, ckpt, history, catalog, options, move |m| progress(&format!("{m} ..."))).map_err(
                |e| {
                    format!(
                        "recovery from {} failed: {e} (with point-in-time WAL recovery, the default, a damaged \
                     log is cut at the damage and kept aside)",
                        dir.display()
                    )
                },
            )?;
        report(&rec, catalog, &log);
        let ckpt_log = log.clone();
        durable
            .spawn_auto_checkpoint(Arc::downgrade(catalog), Duration::from_millis(500), move |r| match r {
                Ok(w) => ckpt_log(&format!(
                    "checkpoint at LSN {}: {} tables, {} rows, {} bytes written{}",
                    w.lsn,
                    w.tables,
                    w.rows,
                    w.written_bytes(),
                    crate::store::kept_note(&w)
                )),
                Err(e) => ckpt_log(&format!("checkpoint failed (the log keeps everything): {e}")),
            })
            .map_err(|e| format!("starting the checkpoint thread: {e}"))?;
        if opts.tiering.background {
            spawn_maintenance(&durable, catalog, log)?;
        }
        Ok(DataDir { durable, corruption: rec.replay.corruption, _lock: lock })
    }

    /// The durable store (the catalog's change log).
    pub fn durable(&self) -> &Arc<Durable> {
        &self.durable
    }

    /// What point-in-time recovery cut off when this directory was opened, if anything.
    pub fn corruption(&self) -> Option<&Corruption> {
        self.corruption.as_ref()
    }

    /// At a clean exit: checkpoint what changed, so the next start loads it instead of
    /// replaying the log.
    pub fn close(&self, catalog: &Catalog, log: &dyn Fn(&str)) {
        match self.durable.checkpoint(catalog) {
            Ok(Some(w)) => log(&format!("checkpoint at LSN {} on exit ({} rows)", w.lsn, w.rows)),
            Ok(None) => {}
            Err(e) => log(&format!("checkpoint on exit failed (the log keeps everything): {e}")),
        }
    }
}

/// What recovery found, a line per fact.
fn report(rec: &crate::Recovery, catalog: &Catalog, log: &Log) {
    if rec.checkpoint_lsn > 0 {
        log(&format!(
            "loaded checkpoint {} ({} tables, {} rows) in {:.2} s",
            rec.checkpoint_lsn, rec.checkpoint_tables, rec.checkpoint_rows, rec.checkpoint_secs
        ));
    }
    if rec.replay.records > 0 {
        log(&format!(
            "replayed {} log records after it in {:.2} s ({} rows in all now)",
            rec.replay.records,
            rec.replay_secs,
            total_rows(catalog)
        ));
    }
    if rec.history.files > 0 {
        log(&format!("history: {} Parquet files, {} rows", rec.history.files, rec.history.rows));
    }
    if !rec.history.removed.is_empty() {
        log(&format!(
            "deleted {} history files no table names (a tiering cut short, or dropped data)",
            rec.history.removed.len()
        ));
    }
    if let Some((file, offset)) = &rec.replay.torn {
        log(&format!("cut a torn last write in {file} at offset {offset} (never acknowledged with sync always)"));
    }
    if let Some(c) = &rec.replay.corruption {
        log(&format!("ERROR: {}", corruption_message(c)));
    }
}

/// What point-in-time recovery dropped, in one line: where, what, how much, and where the
/// damaged log was kept.
pub fn corruption_message(c: &Corruption) -> String {
    format!(
        "WAL corruption in {} at offset {}: {}; recovered to the record before it and dropped {} \
         record(s) ({} bytes of log; {} row(s) in the intact records among them; the damaged \
         record's own rows cannot be counted). The dropped log is kept as {} (use \
         --wal-recovery strict to refuse to start instead)",
        c.file,
        c.offset,
        c.reason,
        c.records_dropped,
        c.bytes_dropped,
        c.intact_rows_dropped,
        c.kept.join(", ")
    )
}

/// Every 5 s: retention, then tiering by age and by memory budget.
fn spawn_maintenance(durable: &Arc<Durable>, catalog: &Arc<Catalog>, log: Log) -> Result<(), String> {
    let (me, cat) = (Arc::downgrade(durable), Arc::downgrade(catalog));
    std::thread::Builder::new()
        .name("zepto-maintain".into())
        .spawn(move || {
            zepto_storage::affinity::pin(zepto_storage::affinity::Role::Wal);
            loop {
                std::thread::sleep(Duration::from_secs(5));
                let (Some(d), Some(c)) = (me.upgrade(), cat.upgrade()) else { return };
                match d.maintain(&c, zepto_storage::time::now_ns()) {
                    Ok(lines) => lines.iter().for_each(|l| log(l)),
                    Err(e) => log(&format!("history maintenance failed (retried in 5 s): {e}")),
                }
            }
        })
        .map(|_| ())
        .map_err(|e| format!("starting the maintenance thread: {e}"))
}

/// One process per data directory: a second one would replay, cut "torn" tails and delete
/// segments under the first. The lock lasts as long as the returned file is open.
fn lock_dir(dir: &Path) -> Result<File, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("LOCK");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(format!("{} is in use by another zeptodb process (one process per data directory)", dir.display()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(format!("locking {}: {e}", path.display())),
    }
}

fn total_rows(catalog: &Catalog) -> usize {
    catalog.table_names().iter().filter_map(|n| catalog.snapshot(n).ok()).map(|t| t.row_count()).sum()
}
