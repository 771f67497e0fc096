//! `--data-dir DIR [--sync MODE] [--checkpoint-mb N] [--tier-after AGE] [--memory-budget-mb N]`:
//! recover the tables from `DIR` (the newest checkpoint in `DIR/checkpoint`, then the
//! write-ahead log in `DIR/wal`, checked against the Parquet history in `DIR/history`), then
//! log every change before it is acknowledged, checkpoint as the log grows, and every few
//! seconds apply retention (TTL) and move old days to the history.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use zepto_durable::{Durable, Options};
use zepto_sql::Engine;
use zepto_wal::{DirStorage, RecoveryMode, SyncMode};

/// Make `engine` durable in `dir`: recover what is there, then log to it. Also returns the
/// corruption point-in-time recovery cut off, if any.
pub fn open(
    engine: &Engine,
    dir: &str,
    sync: Option<&str>,
    recovery: RecoveryMode,
    checkpoint_mb: Option<u64>,
    tiering: Tiering,
) -> Result<(Arc<Durable>, Option<zepto_wal::Corruption>), String> {
    let mode = match sync {
        None => SyncMode::Always,
        Some(s) => SyncMode::parse(s).ok_or_else(|| format!("--sync: '{s}' is not always, interval=<ms> or none"))?,
    };
    lock_dir(Path::new(dir))?;
    let storage = |sub: &str| -> Result<Arc<DirStorage>, String> {
        let p = Path::new(dir).join(sub);
        DirStorage::open(&p).map(Arc::new).map_err(|e| format!("{}: {e}", p.display()))
    };
    let (wal, ckpt, history) = (storage("wal")?, storage("checkpoint")?, storage("history")?);
    let opts = Options {
        sync: mode,
        recovery,
        checkpoint_bytes: checkpoint_mb.unwrap_or(256).saturating_mul(1 << 20),
        tier_after_ns: tiering.after_ns,
        memory_budget: tiering.memory_budget_mb.map(|m| m.saturating_mul(1 << 20)),
    };
    let (durable, rec) = Durable::open(wal, ckpt, history, engine.catalog(), opts, |m| eprintln!("zeptodb: {m} ..."))
        .map_err(|e| {
        format!(
            "recovery from {dir} failed: {e} (with --wal-recovery point-in-time, the default, a damaged \
             log is cut at the damage and kept aside)"
        )
    })?;
    if rec.checkpoint_lsn > 0 {
        eprintln!(
            "zeptodb: loaded checkpoint {} ({} tables, {} rows) in {:.2} s",
            rec.checkpoint_lsn, rec.checkpoint_tables, rec.checkpoint_rows, rec.checkpoint_secs
        );
    }
    if rec.replay.records > 0 {
        eprintln!(
            "zeptodb: replayed {} log records after it in {:.2} s ({} rows in all now)",
            rec.replay.records,
            rec.replay_secs,
            total_rows(engine)
        );
    }
    if rec.history.files > 0 {
        eprintln!("zeptodb: history: {} Parquet files, {} rows", rec.history.files, rec.history.rows);
    }
    if !rec.history.removed.is_empty() {
        eprintln!(
            "zeptodb: deleted {} history files no table names (a tiering cut short, or dropped data)",
            rec.history.removed.len()
        );
    }
    if let Some((file, offset)) = &rec.replay.torn {
        eprintln!(
            "zeptodb: cut a torn last write in {file} at offset {offset} (never acknowledged with --sync always)"
        );
    }
    if let Some(c) = &rec.replay.corruption {
        eprintln!("zeptodb: ERROR: {}", corruption_message(c));
    }
    durable
        .spawn_auto_checkpoint(Arc::downgrade(engine.catalog()), Duration::from_millis(500), |r| match r {
            Ok(w) => eprintln!(
                "zeptodb: checkpoint at LSN {}: {} tables, {} rows, {} bytes",
                w.lsn, w.tables, w.rows, w.bytes
            ),
            Err(e) => eprintln!("zeptodb: checkpoint failed (the log keeps everything): {e}"),
        })
        .map_err(|e| format!("starting the checkpoint thread: {e}"))?;
    if tiering.background {
        spawn_maintenance(&durable, engine)?;
    }
    Ok((durable, rec.replay.corruption))
}

/// What point-in-time recovery dropped, in one line: where, what, how much, and where the
/// damaged log was kept.
pub fn corruption_message(c: &zepto_wal::Corruption) -> String {
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

/// When rows move to the Parquet history (see `Options`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tiering {
    pub after_ns: Option<i64>,
    pub memory_budget_mb: Option<u64>,
    /// Run retention and tiering every few seconds (the server; not one-shot `sql`).
    pub background: bool,
}

/// Every 5 s: retention, then tiering by age and by memory budget.
fn spawn_maintenance(durable: &Arc<Durable>, engine: &Engine) -> Result<(), String> {
    let (me, cat) = (Arc::downgrade(durable), Arc::downgrade(engine.catalog()));
    std::thread::Builder::new()
        .name("zepto-maintain".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_secs(5));
            let (Some(d), Some(c)) = (me.upgrade(), cat.upgrade()) else { return };
            match d.maintain(&c, zepto_storage::time::now_ns()) {
                Ok(lines) => lines.iter().for_each(|l| eprintln!("zeptodb: {l}")),
                Err(e) => eprintln!("zeptodb: history maintenance failed (retried in 5 s): {e}"),
            }
        })
        .map(|_| ())
        .map_err(|e| format!("starting the maintenance thread: {e}"))
}

/// One process per data directory: a second one would replay, cut "torn" tails and delete
/// segments under the first. The lock lives as long as the process (the file is never closed).
fn lock_dir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("LOCK");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    match f.try_lock() {
        Ok(()) => {
            std::mem::forget(f);
            Ok(())
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(format!("{} is in use by another zeptodb process (one process per data directory)", dir.display()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(format!("locking {}: {e}", path.display())),
    }
}

fn total_rows(engine: &Engine) -> usize {
    let cat = engine.catalog();
    cat.table_names().iter().filter_map(|n| cat.snapshot(n).ok()).map(|t| t.row_count()).sum()
}

/// At a clean exit: checkpoint what changed, so the next start loads it instead of replaying.
pub fn close(durable: &Durable, engine_catalog: &zepto_storage::Catalog) {
    match durable.checkpoint(engine_catalog) {
        Ok(Some(w)) => eprintln!("zeptodb: checkpoint at LSN {} on exit ({} rows)", w.lsn, w.rows),
        Ok(None) => {}
        Err(e) => eprintln!("zeptodb: checkpoint on exit failed (the log keeps everything): {e}"),
    }
}
