//! Online backups, and restoring one into a new data directory.
//!
//! A backup directory holds what a data directory's recovery needs and nothing else:
//! ```text
//! DEST/checkpoint/   one checkpoint (the manifest and table files of `checkpoint`)
//! DEST/history/      the Parquet history files its tables name
//! ```
//! [`Durable::backup`] cuts the catalog exactly as a checkpoint does (`consistent_cut`: writers
//! wait only while the tables' snapshots are taken and the log rotates, milliseconds), then
//! writes the tables from those snapshots while ingest goes on. A later backup into the same
//! place is incremental: history files are immutable and named once, so it copies only the
//! ones it does not hold yet, and a table unchanged since the previous backup (see
//! [`zepto_storage::Stamp`]) keeps that backup's file (`checkpoint::Reuse`). The new
//! checkpoint is published by its manifest's rename (an object store: its upload, last), and
//! only then are the previous backup's files it does not name removed: a backup killed at any
//! point leaves the previous one whole.
//!
//! [`restore`] checks a backup (every length and checksum) and lays it out as a new data
//! directory with an empty log; the server's recovery then loads it and logs on from the
//! backup's LSN.

use crate::checkpoint;
use crate::identity;
use crate::store::Durable;
use crate::DurableError;
use std::path::Path;
use zepto_storage::history::SHARED;
use zepto_storage::Catalog;
use zepto_wal::{DirStorage, Storage};

/// What a backup or a restore did.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The LSN the backup holds every change up to.
    pub lsn: u64,
    /// Tables.
    pub tables: usize,
    /// Rows in the tables (in memory; history rows are in the files).
    pub rows: usize,
    /// Bytes of table files written (a restore: copied).
    pub bytes: u64,
    /// Tables unchanged since the previous backup in the same place, whose files were kept.
    pub tables_kept: usize,
    /// History files copied (the rest were already there).
    pub history_copied: usize,
    /// History files the backup holds.
    pub history_files: usize,
}

impl Summary {
    /// A backup's: its checkpoint `written`, and its history files (`copied` of `held`).
    fn of(written: &checkpoint::Written, copied: usize, held: usize) -> Summary {
        let w = written;
        Summary {
            lsn: w.lsn,
            tables: w.tables,
            rows: w.rows,
            bytes: w.written_bytes(),
            tables_kept: w.kept,
            history_copied: copied,
            history_files: held,
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LSN {}: {} tables ({} unchanged, kept), {} rows, {} bytes of tables written; history files: {} copied, {} held",
            self.lsn,
            self.tables,
            self.tables_kept,
            self.rows,
            self.bytes,
            self.history_copied,
            self.history_files
        )
    }
}

fn io(what: &str, e: std::io::Error) -> DurableError {
    DurableError::Io(format!("{what}: {e}"))
}

fn open(dir: &Path, sub: &str) -> Result<DirStorage, DurableError> {
    let p = dir.join(sub);
    DirStorage::open(&p).map_err(|e| io(&p.display().to_string(), e))
}

/// Copy history file `name` from `from` to `to` (through the file system when both are
/// directories, so a large file never sits in memory), then sync it.
fn copy_file(from: &dyn Storage, to: &dyn Storage, name: &str) -> Result<(), DurableError> {
    let tmp = format!("{name}.copy");
    let _ = to.remove(&tmp);
    match (from.path(name), to.path(&tmp)) {
        (Some(src), Some(dst)) => {
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io(&parent.display().to_string(), e))?;
            }
            std::fs::copy(&src, &dst).map_err(|e| io(&format!("copying {}", src.display()), e))?;
        }
        _ => {
            let bytes = from.read(name).map_err(|e| io(name, e))?;
            to.append(&tmp, &bytes).map_err(|e| io(&tmp, e))?;
        }
    }
    to.sync(&tmp).map_err(|e| io(&tmp, e))?;
    to.rename(&tmp, name).map_err(|e| io(name, e))
}

/// The size of `name` in `s`, if it is there.
fn size_of(s: &dyn Storage, name: &str) -> Option<u64> {
    s.path(name).and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len())
}

impl Durable {
    /// Back `catalog` (the catalog this store logs for) up into directory `dest` (see the
    /// module docs).
    pub fn backup(&self, catalog: &Catalog, dest: &Path) -> Result<Summary, DurableError> {
        let ckpt = open(dest, "checkpoint")?;
        let hist = open(dest, "history")?;
        let owner = identity::read_place(&ckpt)?;
        identity::check_place(owner.as_deref(), self.database_id(), &dest.display().to_string())?;
        if identity::is_data_directory(&ckpt)? {
            return Err(DurableError::Io(format!(
                "{} is a database's data directory, not a backup place: back up into a new place",
                dest.display()
            )));
        }
        let (tables, views, lsn) = self.cut(catalog)?;
        let mut names: Vec<(String, u64)> = Vec::new();
        for (t, _) in &tables {
            for f in t.history().files.iter().filter(|f| !f.path.starts_with(SHARED)) {
                names.push((f.path.clone(), f.bytes));
            }
        }
        // A file is named once: in a place written before places had owners, one of the name
        // and another size there is another database's, never copied over. In this database's
        // own place it is a damaged copy of ours: copied again.
        let held: Vec<Option<u64>> = names.iter().map(|(n, _)| size_of(&hist, n)).collect();
        let stranger = |((n, b), h): (&(String, u64), &Option<u64>)| h.filter(|s| s != b).map(|s| (n.clone(), *b, s));
        if let Some((name, bytes, there)) = names.iter().zip(&held).filter(|_| owner.is_none()).find_map(stranger) {
            return Err(DurableError::Io(format!(
                "{}: history file {name} there is {there} bytes, this database's {bytes}: the place holds \
                 another database's backups; back up into a new place",
                dest.display()
            )));
        }
        let mut copied = 0;
        for ((name, bytes), held) in names.iter().zip(&held) {
            if *held != Some(*bytes) {
                copy_file(self.history_storage(), &hist, name)?;
                copied += 1;
            }
        }
        let reuse = checkpoint::Reuse::newest(&ckpt, lsn);
        let written = checkpoint::write(&ckpt, lsn, tables, &views, &reuse)?;
        checkpoint::remove_others(&ckpt, Some(lsn))?;
        let keep: std::collections::HashSet<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
        for stale in hist.list().map_err(|e| io("listing the backup's history", e))? {
            if !keep.contains(stale.as_str()) {
                hist.remove(&stale).map_err(|e| io(&stale, e))?;
            }
        }
        if owner.is_none() {
            identity::claim_place(&ckpt, self.database_id())?;
        }
        Ok(Summary::of(&written, copied, names.len()))
    }
}

/// Lay the backup in `src` out as a new data directory `dir` (missing or empty), after
/// checking every file of it.
pub fn restore(src: &Path, dir: &Path) -> Result<Summary, DurableError> {
    if dir.exists() && std::fs::read_dir(dir).map_err(|e| io(&dir.display().to_string(), e))?.next().is_some() {
        return Err(DurableError::Io(format!(
            "{} is not empty: restore into a new data directory (the backup is never merged into one)",
            dir.display()
        )));
    }
    let from_ckpt = open(src, "checkpoint")?;
    let from_hist = open(src, "history")?;
    let Some((lsn, manifest)) = checkpoint::newest(&from_ckpt)? else {
        return Err(DurableError::Io(format!("{} holds no backup (no checkpoint manifest)", src.display())));
    };
    // Every table file's length and checksum, and the tables themselves, before anything is
    // written: a damaged backup is refused whole.
    let tables = checkpoint::load(&from_ckpt, lsn, |_, _| {})?.tables;
    let named = checkpoint::read_manifest(&from_ckpt, lsn)?;
    let ckpt = open(dir, "checkpoint")?;
    let hist = open(dir, "history")?;
    open(dir, "wal")?;
    let mut summary = Summary {
        lsn,
        tables: tables.len(),
        rows: tables.iter().map(|t| t.row_count()).sum(),
        bytes: 0,
        tables_kept: 0,
        history_copied: 0,
        history_files: 0,
    };
    for t in &tables {
        for f in t.history().files.iter().filter(|f| !f.path.starts_with(SHARED)) {
            if size_of(&from_hist, &f.path) != Some(f.bytes) {
                return Err(DurableError::Io(format!("the backup lacks history file {} ({} bytes)", f.path, f.bytes)));
            }
            copy_file(&from_hist, &hist, &f.path)?;
            summary.history_copied += 1;
            summary.history_files += 1;
        }
    }
    // The files the manifest names: an unchanged table's may carry an earlier backup's LSN.
    for name in named.names() {
        copy_file(&from_ckpt, &ckpt, name)?;
        summary.bytes += size_of(&ckpt, name).unwrap_or(0);
    }
    // The manifest last: the directory holds a checkpoint only once every file is in place.
    copy_file(&from_ckpt, &ckpt, &manifest)?;
    Ok(summary)
}

pub use crate::store::is_object_store;

/// A scratch directory of this process's own, removed when dropped.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(what: &str) -> Result<Scratch, DurableError> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("zepto-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).map_err(|e| io(&p.display().to_string(), e))?;
        Ok(Scratch(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `from`'s file `name` stored as `key`: from disk in parts when it is a local file
/// (`SharedStore::put_file`), else read whole.
fn put_stored(
    store: &zepto_history::SharedStore,
    key: &str,
    from: &dyn zepto_wal::Storage,
    name: &str,
) -> Result<(), DurableError> {
    match from.path(name) {
        Some(file) => store.put_file(key, &file).map_err(store_err),
        None => store.put(key, from.read(name).map_err(|e| io(name, e))?).map_err(store_err),
    }
}

fn store_err(e: zepto_storage::StorageError) -> DurableError {
    DurableError::Io(e.to_string())
}

impl Durable {
    /// Back `catalog` up into an object store (`s3://bucket/prefix`, configured as the shared
    /// history is: `AWS_*`), laid out as a directory backup is: history objects it lacks are
    /// uploaded first, then the checkpoint's table files that changed since the previous backup
    /// there, then its manifest, which publishes it; only then are the previous backup's
    /// objects it does not name deleted. A file goes up from disk in parts when it is large
    /// (`SharedStore::put_file`: never whole in memory, and past S3's 5 GiB limit on one PUT).
    pub fn backup_to_store(
        &self,
        catalog: &Catalog,
        store: &zepto_history::SharedStore,
    ) -> Result<Summary, DurableError> {
        let owner = store.get(identity::PLACE).map_err(store_err)?;
        identity::check_place(owner.as_deref(), self.database_id(), store.location())?;
        let (tables, views, lsn) = self.cut(catalog)?;
        let history_held: std::collections::HashSet<String> =
            store.list("history").map_err(store_err)?.into_iter().collect();
        let mut names = Vec::new();
        for (t, _) in &tables {
            names.extend(t.history().files.iter().filter(|f| !f.path.starts_with(SHARED)).map(|f| f.path.clone()));
        }
        let mut copied = 0;
        for name in &names {
            let key = format!("history/{name}");
            if !history_held.contains(&key) {
                put_stored(store, &key, self.history_storage(), name)?;
                copied += 1;
            }
        }
        let old: Vec<String> = store.list("checkpoint").map_err(store_err)?;
        let manifests = StoreManifests::read(store, &old);
        let (written, keep) = match manifests.0.iter().find(|m| m.lsn == lsn) {
            // An earlier backup of this same cut, published: nothing to upload.
            Some(m) => (same_cut(m, &tables), manifest_keys(m)),
            None => upload_checkpoint(store, lsn, tables, &views, &manifests, &old)?,
        };
        for stale in old.iter().filter(|k| !keep.contains(*k)) {
            store.delete(stale).map_err(store_err)?;
        }
        let keep: std::collections::HashSet<String> = names.iter().map(|n| format!("history/{n}")).collect();
        for stale in history_held.iter().filter(|k| !keep.contains(*k)) {
            store.delete(stale).map_err(store_err)?;
        }
        if owner.is_none() {
            store.put(identity::PLACE, format!("{}\n", self.database_id()).into_bytes()).map_err(store_err)?;
        }
        Ok(Summary::of(&written, copied, names.len()))
    }
}

/// Write checkpoint `lsn` of `tables` into a scratch directory (naming again the files of the
/// store's newest earlier backup for unchanged tables) and upload its new files, then its
/// manifest: what it wrote, and every object it names.
fn upload_checkpoint(
    store: &zepto_history::SharedStore,
    lsn: u64,
    tables: Vec<zepto_storage::StampedTable>,
    views: &[zepto_storage::ViewCut],
    manifests: &StoreManifests,
    old: &[String],
) -> Result<(checkpoint::Written, std::collections::HashSet<String>), DurableError> {
    let scratch = Scratch::new("backup")?;
    let local = DirStorage::open(&scratch.0).map_err(|e| io("scratch", e))?;
    let written = checkpoint::write(&local, lsn, tables, views, &manifests.reuse(lsn, old))?;
    let (manifest, files): (Vec<String>, Vec<String>) =
        local.list().map_err(|e| io("scratch", e))?.into_iter().partition(|n| n.ends_with(".manifest"));
    // An object a manifest there names is never overwritten (a later backup of another
    // history): refused before anything is uploaded.
    if let Some(n) = files.iter().find(|n| manifests.names(n)) {
        return Err(DurableError::Io(format!(
            "checkpoint/{n} belongs to another backup in this store (a later one of another history): \
             back up into an empty prefix"
        )));
    }
    for name in files.iter().chain(&manifest) {
        put_stored(store, &format!("checkpoint/{name}"), &local, name)?;
    }
    Ok((written, manifest_keys(&checkpoint::read_manifest(&local, lsn)?)))
}

/// A published manifest's object and every object it names.
fn manifest_keys(m: &checkpoint::manifest::Manifest) -> std::collections::HashSet<String> {
    let own = checkpoint::manifest_name(m.lsn);
    m.names().chain([own.as_str()]).map(|n| format!("checkpoint/{n}")).collect()
}

/// What a backup of a cut an earlier backup `m` already holds wrote: nothing, every table kept.
fn same_cut(m: &checkpoint::manifest::Manifest, tables: &[zepto_storage::StampedTable]) -> checkpoint::Written {
    let bytes = m.files.iter().map(|f| f.bytes).sum();
    checkpoint::Written {
        lsn: m.lsn,
        tables: tables.len(),
        rows: tables.iter().map(|(t, _)| t.row_count()).sum(),
        bytes,
        kept: tables.len(),
        kept_bytes: bytes,
    }
}

/// The backups' manifests an object store holds (those that can be read).
struct StoreManifests(Vec<checkpoint::manifest::Manifest>);

impl StoreManifests {
    /// Every manifest among the checkpoint objects `keys`.
    fn read(store: &zepto_history::SharedStore, keys: &[String]) -> StoreManifests {
        let manifests = keys
            .iter()
            .filter_map(|k| k.strip_prefix("checkpoint/"))
            .filter_map(|n| Some((checkpoint::manifest_lsn(n)?, n)))
            .filter_map(|(lsn, n)| {
                let raw = store.get(&format!("checkpoint/{n}")).ok()??;
                checkpoint::manifest::Manifest::parse(n, lsn, raw).ok()
            })
            .collect();
        StoreManifests(manifests)
    }

    /// What a backup at LSN `lsn` may name again: the newest earlier backup's table files
    /// still among `keys` (an object store checks what it stores).
    fn reuse(&self, lsn: u64, keys: &[String]) -> checkpoint::Reuse {
        let Some(m) = self.0.iter().filter(|m| m.lsn < lsn).max_by_key(|m| m.lsn) else {
            return checkpoint::Reuse::none();
        };
        let held: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        checkpoint::Reuse::of(m, |f| held.contains(format!("checkpoint/{}", f.name).as_str()))
    }

    /// Whether a manifest names table file `name`.
    fn names(&self, name: &str) -> bool {
        self.0.iter().any(|m| m.names().any(|n| n == name))
    }
}

/// [`restore`] from an object store: the backup is downloaded first, then checked and laid
/// out as from a directory.
pub fn restore_from_store(store: &zepto_history::SharedStore, dir: &Path) -> Result<Summary, DurableError> {
    let scratch = Scratch::new("restore")?;
    for key in store.list("").map_err(store_err)? {
        if !(key.starts_with("checkpoint/") || key.starts_with("history/")) {
            continue;
        }
        let path = scratch.0.join(&key);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(&parent.display().to_string(), e))?;
        }
        if !store.get_file(&key, &path).map_err(store_err)? {
            return Err(DurableError::Io(format!("{key} went away")));
        }
    }
    restore(&scratch.0, dir)
}
