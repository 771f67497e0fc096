//! Sealing: the owner of a partition writes its shard of every table to shared storage and
//! publishes a manifest at the offset it has applied (see the module docs of `history`).
//!
//! It runs on the consumer thread between batches, so no record of the partition is applied
//! meanwhile: the tables' snapshots and the applied offset describe one moment.

use super::manifest::{tag, FileEntry, Manifest, TableEntry};
use super::{check_no_local_history, cluster_tables, partition_dir, segment, shard_keys, SharedHistory};
use crate::ClusterError;
use std::sync::Arc;
use zepto_history::write::day_dir;
use zepto_history::{encode_rows, Encoded, Rows};
use zepto_sql::Engine;
use zepto_storage::history::day_floor;
use zepto_storage::{HistFile, Shard, StorageError, Table};

/// Where a seal writes: the partition's directory, the partition (of `count`), and the tag
/// naming this seal's files (`<offset>-<node>`).
struct Place {
    dir: String,
    p: i32,
    count: i32,
    tag: String,
}

/// One table's part of a seal, before the manifest is published.
struct Sealed {
    snap: Arc<Table>,
    keys: Vec<String>,
    null_key: bool,
    history: Vec<HistFile>,
}

/// Seal partition `p` (of `count`) of `topic` as of `offset`, the last record applied: write
/// its shard of every table, publish the manifest, then move the history rows out of memory.
/// Returns the manifest.
#[allow(clippy::too_many_arguments)]
pub(crate) fn seal(
    engine: &Engine,
    sh: &SharedHistory,
    topic: &str,
    node: &str,
    p: i32,
    count: i32,
    offset: i64,
    now_ns: i64,
) -> Result<Manifest, ClusterError> {
    let before = sh.tier_after_ns.map_or(i64::MIN, |a| day_floor(now_ns.saturating_sub(a)));
    let mut manifest = Manifest::new(topic, p, count, offset, node, now_ns);
    let mut sealed = Vec::new();
    for name in cluster_tables(engine) {
        let snap = match engine.catalog().snapshot(&name) {
            Ok(s) => s,
            Err(StorageError::TableNotFound(_)) => continue,
            Err(e) => return Err(ClusterError::Storage(e.to_string())),
        };
        check_no_local_history(&snap)?;
        let at = Place { dir: partition_dir(topic, p), p, count, tag: format!("{offset:020}-{}", tag(node)) };
        let (entry, s) = seal_table(sh, snap, &at, before)?;
        manifest.tables.push(entry);
        sealed.push(s);
    }
    manifest.publish(&sh.store)?;
    for s in sealed.into_iter().filter(|s| !s.history.is_empty()) {
        let shard = Shard { keys: &s.keys, null_key: s.null_key };
        let files: Vec<_> = s.history.iter().map(shared_file).collect();
        // A table changed meanwhile (a statement run on this node alone) keeps its rows in
        // memory: the manifest published stays true, and the next seal writes them again.
        match engine.catalog().commit_tier_shard(&s.snap, shard, before, &files) {
            Ok(_) | Err(StorageError::Conflict(_)) => {}
            Err(e) => return Err(ClusterError::Storage(e.to_string())),
        }
    }
    Ok(manifest)
}

/// Write one table's shard: history files (rows before `before`) and recent files (the rest).
fn seal_table(
    sh: &SharedHistory,
    snap: Arc<Table>,
    at: &Place,
    before: i64,
) -> Result<(TableEntry, Sealed), ClusterError> {
    let (keys, null_key) = shard_keys(&snap, at.p, at.count);
    let slots = snap.shard_slots(Shard { keys: &keys, null_key });
    let (dir, tag) = (format!("{}/{}", at.dir, segment(snap.name())), &at.tag);
    let storage = |e: StorageError| ClusterError::Storage(e.to_string());
    let history = match (before > i64::MIN, snap.ts_col()) {
        (true, Some(_)) => encode_rows(&snap, &slots, Rows::Before(before), |day, k| {
            format!("{dir}/{}/h-{tag}-{k}.parquet", day_dir(day))
        })
        .map_err(storage)?,
        _ => Vec::new(),
    };
    let recent = encode_rows(&snap, &slots, Rows::From(before), |_, k| format!("{dir}/recent/r-{tag}-{k}.parquet"))
        .map_err(storage)?;
    let history = put_all(sh, history)?;
    let recent = put_all(sh, recent)?;
    // The shard's files of earlier seals (the table's history holds every partition's).
    let mine = format!("{}/", at.dir);
    let mut files: Vec<FileEntry> =
        snap.history().files.iter().filter_map(FileEntry::of).filter(|f| f.path.starts_with(&mine)).collect();
    files.extend(history.iter().map(entry));
    let cols = &snap.schema().columns;
    let table = TableEntry {
        name: snap.name().to_string(),
        create: crate::schemas::create(&snap),
        columns: cols.iter().map(|c| (c.name.clone(), c.data_type.sql_name().into_owned())).collect(),
        keys: keys.clone(),
        null_key,
        history: files,
        recent: recent.iter().map(entry).collect(),
    };
    Ok((table, Sealed { snap, keys, null_key, history }))
}

/// Write each encoded file to the store (its bytes moved, not copied); returns the files.
fn put_all(sh: &SharedHistory, encoded: Vec<Encoded>) -> Result<Vec<HistFile>, ClusterError> {
    let storage = |e: StorageError| ClusterError::Storage(e.to_string());
    encoded.into_iter().map(|e| sh.store.put(&e.file.path, e.bytes).map(|()| e.file).map_err(storage)).collect()
}

/// A file written to the store, as a manifest lists it.
fn entry(f: &HistFile) -> FileEntry {
    FileEntry { path: f.path.clone(), rows: f.rows, bytes: f.bytes, min_ts: f.min_ts, max_ts: f.max_ts }
}

/// A file written to the store, as a table's history names it (`shared:<path>`).
fn shared_file(f: &HistFile) -> HistFile {
    entry(f).hist_file()
}
