//! `--data-dir DIR [--sync MODE]`: recover the tables from the write-ahead log in `DIR/wal`,
//! then log every change there before it is acknowledged.
//!
//! Not yet (issue #5): checkpoints (so the whole log is replayed at every start) and the
//! Parquet history.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use zepto_sql::Engine;
use zepto_wal::changes::{recover, WalChangeLog};
use zepto_wal::{DirStorage, ReplayOptions, SyncMode, Wal};

/// Make `engine` durable in `dir`: replay what is there, then log to it.
pub fn open(engine: &Engine, dir: &str, sync: Option<&str>, repair: bool) -> Result<(), String> {
    let mode = match sync {
        None => SyncMode::Always,
        Some(s) => SyncMode::parse(s).ok_or_else(|| format!("--sync: '{s}' is not always, interval=<ms> or none"))?,
    };
    let wal_dir = Path::new(dir).join("wal");
    let storage = Arc::new(DirStorage::open(&wal_dir).map_err(|e| format!("{}: {e}", wal_dir.display()))?);
    let t0 = Instant::now();
    let report = recover(storage.as_ref(), engine.catalog(), ReplayOptions { repair }, |n| {
        eprintln!("zeptodb: recovering: {n} log records applied ...");
    })
    .map_err(|e| {
        format!("recovery from {} failed: {e} (start with --repair-wal to cut the log there)", wal_dir.display())
    })?;
    if report.records > 0 {
        let rows: usize = engine
            .catalog()
            .table_names()
            .iter()
            .filter_map(|n| engine.catalog().snapshot(n).ok())
            .map(|t| t.row_count())
            .sum();
        eprintln!(
            "zeptodb: recovered {} log records ({rows} rows) from {} in {:.2} s",
            report.records,
            wal_dir.display(),
            t0.elapsed().as_secs_f64()
        );
    }
    if let Some((file, offset)) = &report.torn {
        eprintln!(
            "zeptodb: cut a torn last write in {file} at offset {offset} (never acknowledged with --sync always)"
        );
    }
    if let Some((file, offset, reason)) = &report.repaired {
        eprintln!("zeptodb: --repair-wal cut the log in {file} at offset {offset}: {reason}");
    }
    let wal = Wal::open(storage, mode, report.next_lsn()).map_err(|e| e.to_string())?;
    engine.catalog().set_log(Arc::new(WalChangeLog { wal })).map_err(|e| e.to_string())
}
