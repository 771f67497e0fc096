//! Checkpoints: every table as of one LSN, in a directory of its own.
//!
//! ```text
//! <lsn, 20 digits>-<k, 5 or more digits>.arrow   table k (see table_file)
//! <lsn, 20 digits>.manifest              the list that makes the checkpoint exist
//! ```
//! Writing: each table file is written and fsynced; then the manifest is written under a
//! temporary name, fsynced and renamed into place (the rename, with its directory fsync, is the
//! atomic commit). Only then are older checkpoints and the WAL segments they cover deleted. A
//! crash at any step leaves either the old checkpoint with its whole log or the new one.
//!
//! Incremental: a table whose content has not changed since the previous checkpoint in the same
//! directory (its [`Stamp`] is the one that checkpoint recorded, and the file is still there at
//! its length) is not written again: the new manifest names the previous checkpoint's file
//! ([`Reuse`]). So a file's name may carry an older checkpoint's LSN, and cleaning up keeps every
//! file the kept manifest names ([`remove_others`]).
//!
//! Manifest (text, so an operator can read it; [`manifest`] parses and renders it):
//! ```text
//! zeptodb-checkpoint 2
//! lsn <last LSN included>
//! file <name> <bytes> <crc32 hex> <stamp>   one per table (format 1: without the stamp)
//! view\t<name>\t<base table>\t<query>     one per materialized view (fields escaped: \\ \t \n \r)
//! viewstate\t<name>\t<file>\t<bytes>\t<crc32 hex>   a view's partial states, as a table file
//! crc <crc32 hex of every line above>
//! ```
//! A view's rows are derived from its base table: its definition is kept, and its groups'
//! partial states when it had them (a stale view is rebuilt when first read after recovery).
//! Loading verifies every length and checksum before any table is used.

pub mod manifest;
pub mod table_file;

use crate::DurableError;
use manifest::{FileEntry, Manifest};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use zepto_storage::{Stamp, StampedTable, Table, ViewCut, ViewDef};
use zepto_wal::{Lsn, Storage};

/// The file name of the manifest of the checkpoint at `lsn` (sorts in LSN order).
pub fn manifest_name(lsn: Lsn) -> String {
    format!("{lsn:020}.manifest")
}

fn table_file_name(lsn: Lsn, k: usize) -> String {
    format!("{lsn:020}-{k:05}.arrow")
}

/// The LSN a checkpoint file (manifest or table file) belongs to.
/// The LSN of the checkpoint whose manifest is named `name` (`None` for any other name).
pub fn manifest_lsn(name: &str) -> Option<Lsn> {
    file_lsn(name).filter(|&l| manifest_name(l) == name)
}

fn file_lsn(name: &str) -> Option<Lsn> {
    let digits = name.get(..20)?;
    digits.bytes().all(|b| b.is_ascii_digit()).then(|| digits.parse().ok()).flatten()
}

/// A table file being written: appends to the storage with a running CRC (buffered by a
/// `BufWriter` around it, so the storage sees megabyte appends).
struct FileSink<'a> {
    storage: &'a dyn Storage,
    name: String,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl Write for FileSink<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.storage.append(&self.name, data)?;
        self.crc.update(data);
        self.bytes += data.len() as u64;
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a checkpoint wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The LSN it covers: every change up to it is in the checkpoint.
    pub lsn: Lsn,
    /// Tables in it.
    pub tables: usize,
    /// Rows in them.
    pub rows: usize,
    /// Bytes of its files, kept ones included.
    pub bytes: u64,
    /// Tables whose file an earlier checkpoint wrote and this one names again (unchanged).
    pub kept: usize,
    /// Bytes of those files.
    pub kept_bytes: u64,
}

impl Written {
    /// Bytes this checkpoint wrote (its files less the kept ones).
    pub fn written_bytes(&self) -> u64 {
        self.bytes - self.kept_bytes
    }
}

/// Table files a checkpoint may name again instead of writing them: an earlier checkpoint's,
/// by the stamp of the content they hold (see the module docs).
#[derive(Debug, Default)]
pub struct Reuse {
    files: HashMap<Stamp, FileEntry>,
    /// Read a file back (length and checksum) before naming it again: a damaged file of a
    /// table that never changes would otherwise be named by every checkpoint after.
    verify: bool,
}

impl Reuse {
    /// Nothing to reuse: every table is written.
    pub fn none() -> Reuse {
        Reuse::default()
    }

    /// The files of `m` that `held` says are still there, whole (not read back).
    pub fn of(m: &Manifest, held: impl Fn(&FileEntry) -> bool) -> Reuse {
        let files = m.files.iter().filter(|f| held(f)).filter_map(|f| Some((f.stamp?, f.clone()))).collect();
        Reuse { files, verify: false }
    }

    /// The files of the newest checkpoint in `storage` before LSN `below`, each read back
    /// when a table would name it again. Anything unreadable means nothing is reused: reuse
    /// only saves work.
    pub fn newest(storage: &dyn Storage, below: Lsn) -> Reuse {
        let Ok(names) = storage.list() else { return Reuse::none() };
        let newest = names.iter().filter_map(|n| manifest_lsn(n)).filter(|&l| l < below).max();
        let m = newest.and_then(|lsn| read_manifest(storage, lsn).ok());
        m.map_or_else(Reuse::none, |m| Reuse { verify: true, ..Reuse::of(&m, |_| true) })
    }

    /// The file of `stamp`'s content, if it may be named again.
    fn take(&self, storage: &dyn Storage, stamp: Stamp) -> Option<&FileEntry> {
        let f = self.files.get(&stamp)?;
        (!self.verify || file_check(storage, &f.name) == Some((f.bytes, f.crc))).then_some(f)
    }
}

/// The length and CRC-32 of file `name` in `storage`, read through (a file on disk a
/// megabyte at a time), if it can be read.
fn file_check(storage: &dyn Storage, name: &str) -> Option<(u64, u32)> {
    use std::io::Read;
    let Some(path) = storage.path(name) else {
        let data = storage.read(name).ok()?;
        return Some((data.len() as u64, crc32fast::hash(&data)));
    };
    let mut file = std::fs::File::open(path).ok()?;
    let (mut crc, mut len, mut buf) = (crc32fast::Hasher::new(), 0u64, vec![0u8; 1 << 20]);
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            return Some((len, crc.finalize()));
        }
        crc.update(buf.get(..n)?);
        len += n as u64;
    }
}

/// Every file the published manifests in `storage` name (those that can be read).
fn named_files(storage: &dyn Storage, names: &[String]) -> std::collections::HashSet<String> {
    names
        .iter()
        .filter_map(|n| manifest_lsn(n))
        .filter_map(|lsn| read_manifest(storage, lsn).ok())
        .flat_map(|m| m.names().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// Write `tables` (a consistent cut at `lsn`, each with its stamp) as checkpoint `lsn` and
/// publish it, naming the file of `reuse` for a table whose stamp it holds. Does not delete
/// anything.
pub fn write(
    storage: &dyn Storage,
    lsn: Lsn,
    tables: Vec<StampedTable>,
    views: &[ViewCut],
    reuse: &Reuse,
) -> Result<Written, DurableError> {
    let io = |what: &str, e: std::io::Error| DurableError::Io(format!("checkpoint {lsn}: {what}: {e}"));
    let mut total = Written { lsn, tables: tables.len(), rows: 0, bytes: 0, kept: 0, kept_bytes: 0 };
    let final_name = manifest_name(lsn);
    let tmp = format!("{final_name}.tmp");
    let existing = storage.list().map_err(|e| io("listing", e))?;
    if existing.contains(&final_name) {
        // Published by an attempt that reported a failure after its rename (the directory
        // fsync): it is complete, and rewriting its files now could leave it torn.
        total.rows = tables.iter().map(|(t, _)| t.row_count()).sum();
        return Ok(total);
    }
    // A name this checkpoint writes that a published manifest names: the directory holds a
    // later checkpoint of another history (a backup of a restored copy, say). Refused before
    // anything changes, so that one stays whole.
    let named = named_files(storage, &existing);
    let width = tables.len() + views.len();
    if let Some(n) = (0..width).map(|k| table_file_name(lsn, k)).find(|n| named.contains(n)) {
        return Err(DurableError::Io(format!(
            "checkpoint {lsn}: {n} belongs to a later checkpoint in this directory (another history): \
             write this one into an empty directory"
        )));
    }
    // Other files of this checkpoint's names can only be left by a crashed attempt at it.
    for name in existing.iter().filter(|n| file_lsn(n) == Some(lsn) && !named.contains(*n)) {
        storage.remove(name).map_err(|e| io(name, e))?;
    }
    let mut m = Manifest::new(lsn);
    for (k, (t, stamp)) in tables.into_iter().enumerate() {
        total.rows += t.row_count();
        let entry = match reuse.take(storage, stamp) {
            Some(kept) => {
                total.kept += 1;
                total.kept_bytes += kept.bytes;
                kept.clone()
            }
            None => write_file(storage, table_file_name(lsn, k), t, Some(stamp))?,
        };
        total.bytes += entry.bytes;
        m.files.push(entry);
    }
    for (j, v) in views.iter().enumerate() {
        let state = match &v.state {
            Some(state) => {
                let f = write_file(storage, table_file_name(lsn, total.tables + j), Arc::new(state.clone()), None)?;
                total.bytes += f.bytes;
                Some(f)
            }
            None => None,
        };
        m.views.push((v.def.clone(), state));
    }
    storage.append(&tmp, m.render().as_bytes()).map_err(|e| io(&tmp, e))?;
    storage.sync(&tmp).map_err(|e| io(&tmp, e))?;
    storage.rename(&tmp, &final_name).map_err(|e| io(&final_name, e))?;
    Ok(total)
}

/// Write `t` as table file `name`, fsynced: its entry in the manifest.
fn write_file(
    storage: &dyn Storage,
    name: String,
    t: Arc<Table>,
    stamp: Option<Stamp>,
) -> Result<FileEntry, DurableError> {
    let io = |e: std::io::Error| DurableError::Io(format!("checkpoint file {name}: {e}"));
    let sink = FileSink { storage, name: name.clone(), crc: Default::default(), bytes: 0 };
    let buffered = table_file::write_table(t, std::io::BufWriter::with_capacity(1 << 20, sink))?;
    let sink = buffered.into_inner().map_err(|e| io(e.into_error()))?;
    // An empty table still has a schema, so the file is never empty.
    storage.sync(&name).map_err(io)?;
    Ok(FileEntry { bytes: sink.bytes, crc: sink.crc.finalize(), stamp, name })
}

/// The newest published checkpoint's LSN and manifest name, if any.
pub fn newest(storage: &dyn Storage) -> Result<Option<(Lsn, String)>, DurableError> {
    let names = storage.list().map_err(|e| DurableError::Io(format!("listing checkpoints: {e}")))?;
    Ok(names.into_iter().filter(|n| n.ends_with(".manifest")).filter_map(|n| manifest_lsn(&n).map(|l| (l, n))).max())
}

/// The manifest of checkpoint `lsn`, its checksum verified.
pub fn read_manifest(storage: &dyn Storage, lsn: Lsn) -> Result<Manifest, DurableError> {
    let name = manifest_name(lsn);
    let raw = storage.read(&name).map_err(|e| DurableError::Io(format!("{name}: {e}")))?;
    Manifest::parse(&name, lsn, raw)
}

/// A loaded checkpoint: its tables and its views' definitions.
pub struct Loaded {
    /// Every table, rows included.
    pub tables: Vec<Table>,
    /// Each table's stamp as the manifest recorded it (none in format 1).
    pub stamps: Vec<Option<Stamp>>,
    /// Every materialized view's definition, with its partial states when it had them.
    pub views: Vec<(ViewDef, Option<Table>)>,
}

/// Load checkpoint `lsn`: every table, verified. `progress(loaded, total)` after each table.
pub fn load(storage: &dyn Storage, lsn: Lsn, mut progress: impl FnMut(usize, usize)) -> Result<Loaded, DurableError> {
    let m = read_manifest(storage, lsn)?;
    let mut views = Vec::with_capacity(m.views.len());
    for (def, state) in m.views {
        let state = state.map(|f| read_file(storage, &f)).transpose()?;
        views.push((def, state));
    }
    let mut tables = Vec::with_capacity(m.files.len());
    for (i, f) in m.files.iter().enumerate() {
        tables.push(read_file(storage, f)?);
        progress(i + 1, m.files.len());
    }
    let stamps = m.files.iter().map(|f| f.stamp).collect();
    Ok(Loaded { tables, stamps, views })
}

/// Table file `f`, its length and checksum verified.
fn read_file(storage: &dyn Storage, f: &FileEntry) -> Result<Table, DurableError> {
    let corrupt = |reason: String| DurableError::Corrupt { file: f.name.clone(), reason };
    let data = storage.read(&f.name).map_err(|e| corrupt(format!("cannot be read: {e}")))?;
    if data.len() as u64 != f.bytes {
        return Err(corrupt(format!("{} bytes, the manifest says {}", data.len(), f.bytes)));
    }
    if crc32fast::hash(&data) != f.crc {
        return Err(corrupt("checksum mismatch".into()));
    }
    table_file::read_table(data).map_err(|e| corrupt(e.to_string()))
}

/// Delete every file that is not part of checkpoint `keep` (older checkpoints, files of
/// attempts that crashed before publishing), keeping every file its manifest names, an older
/// checkpoint's included. Manifests go first, so no older checkpoint is ever seen
/// half-deleted. An unreadable `keep` manifest deletes nothing.
pub fn remove_others(storage: &dyn Storage, keep: Option<Lsn>) -> Result<usize, DurableError> {
    let io = |e: std::io::Error| DurableError::Io(format!("cleaning checkpoints: {e}"));
    let names = storage.list().map_err(io)?;
    let kept: std::collections::HashSet<String> = match keep {
        Some(lsn) => {
            let m = read_manifest(storage, lsn)?;
            m.names().map(str::to_string).chain([manifest_name(lsn)]).collect()
        }
        None => Default::default(),
    };
    // Only our own names: a stranger's file in the directory is left alone.
    let doomed = |n: &String| file_lsn(n).is_some() && !kept.contains(n);
    let (manifests, rest): (Vec<&String>, Vec<&String>) =
        names.iter().filter(|n| doomed(n)).partition(|n| n.ends_with(".manifest"));
    for n in manifests.iter().chain(&rest) {
        storage.remove(n).map_err(io)?;
    }
    Ok(manifests.len() + rest.len())
}
