//! Checkpoints: every table as of one LSN, in a directory of its own.
//!
//! ```text
//! <lsn, 20 digits>-<k, 5 digits>.arrow   table k (see table_file)
//! <lsn, 20 digits>.manifest              the list that makes the checkpoint exist
//! ```
//! Writing: each table file is written and fsynced; then the manifest is written under a
//! temporary name, fsynced and renamed into place (the rename, with its directory fsync, is the
//! atomic commit). Only then are older checkpoints and the WAL segments they cover deleted. A
//! crash at any step leaves either the old checkpoint with its whole log or the new one.
//!
//! Manifest (text, so an operator can read it):
//! ```text
//! zeptodb-checkpoint 1
//! lsn <last LSN included>
//! file <name> <bytes> <crc32 hex>        one per table
//! view\t<name>\t<base table>\t<query>     one per materialized view (fields escaped: \\ \t \n \r)
//! viewstate\t<name>\t<file>\t<bytes>\t<crc32 hex>   a view's partial states, as a table file
//! crc <crc32 hex of every line above>
//! ```
//! A view's rows are derived from its base table: its definition is kept, and its groups'
//! partial states when it had them (a stale view is rebuilt when first read after recovery).
//! Loading verifies every length and checksum before any table is used.

pub mod table_file;

use crate::DurableError;
use std::io::Write;
use zepto_storage::{Table, ViewCut, ViewDef};
use zepto_wal::{Lsn, Storage};

const HEADER: &str = "zeptodb-checkpoint 1";

/// The file name of the manifest of the checkpoint at `lsn` (sorts in LSN order).
pub fn manifest_name(lsn: Lsn) -> String {
    format!("{lsn:020}.manifest")
}

fn table_file_name(lsn: Lsn, k: usize) -> String {
    format!("{lsn:020}-{k:05}.arrow")
}

/// The LSN a checkpoint file (manifest or table file) belongs to.
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
    /// Tables written.
    pub tables: usize,
    /// Rows written.
    pub rows: usize,
    /// Bytes of files written.
    pub bytes: u64,
}

/// Write `tables` (a consistent cut at `lsn`) as checkpoint `lsn` and publish it. Does not
/// delete anything.
pub fn write(
    storage: &dyn Storage,
    lsn: Lsn,
    tables: Vec<std::sync::Arc<Table>>,
    views: &[ViewCut],
) -> Result<Written, DurableError> {
    let io = |what: &str, e: std::io::Error| DurableError::Io(format!("checkpoint {lsn}: {what}: {e}"));
    let mut total = Written { lsn, tables: tables.len(), rows: 0, bytes: 0 };
    let final_name = manifest_name(lsn);
    let tmp = format!("{final_name}.tmp");
    let existing = storage.list().map_err(|e| io("listing", e))?;
    if existing.contains(&final_name) {
        // Published by an attempt that reported a failure after its rename (the directory
        // fsync): it is complete, and rewriting its files now could leave it torn.
        total.rows = tables.iter().map(|t| t.row_count()).sum();
        return Ok(total);
    }
    // Files of this checkpoint's names can only be left by a crashed attempt at it.
    for name in existing.iter().filter(|n| file_lsn(n) == Some(lsn)) {
        storage.remove(name).map_err(|e| io(name, e))?;
    }
    let mut manifest = format!("{HEADER}\nlsn {lsn}\n");
    for (k, t) in tables.into_iter().enumerate() {
        let name = table_file_name(lsn, k);
        total.rows += t.row_count();
        let (bytes, crc) = write_file(storage, &name, t)?;
        manifest.push_str(&format!("file {name} {bytes} {crc:08x}\n"));
        total.bytes += bytes;
    }
    for (j, v) in views.iter().enumerate() {
        let d = &v.def;
        manifest.push_str(&format!("view\t{}\t{}\t{}\n", escape(d.name()), escape(d.base()), escape(d.sql())));
        if let Some(state) = &v.state {
            let name = table_file_name(lsn, total.tables + j);
            let (bytes, crc) = write_file(storage, &name, std::sync::Arc::new(state.clone()))?;
            manifest.push_str(&format!("viewstate\t{}\t{name}\t{bytes}\t{crc:08x}\n", escape(d.name())));
            total.bytes += bytes;
        }
    }
    manifest.push_str(&format!("crc {:08x}\n", crc32fast::hash(manifest.as_bytes())));
    storage.append(&tmp, manifest.as_bytes()).map_err(|e| io(&tmp, e))?;
    storage.sync(&tmp).map_err(|e| io(&tmp, e))?;
    storage.rename(&tmp, &final_name).map_err(|e| io(&final_name, e))?;
    Ok(total)
}

/// Write `t` as table file `name`, fsynced: its bytes and checksum.
fn write_file(storage: &dyn Storage, name: &str, t: std::sync::Arc<Table>) -> Result<(u64, u32), DurableError> {
    let io = |e: std::io::Error| DurableError::Io(format!("checkpoint file {name}: {e}"));
    let sink = FileSink { storage, name: name.to_string(), crc: Default::default(), bytes: 0 };
    let buffered = table_file::write_table(t, std::io::BufWriter::with_capacity(1 << 20, sink))?;
    let sink = buffered.into_inner().map_err(|e| io(e.into_error()))?;
    // An empty table still has a schema, so the file is never empty.
    storage.sync(name).map_err(io)?;
    Ok((sink.bytes, sink.crc.finalize()))
}

/// The newest published checkpoint's LSN and manifest name, if any.
pub fn newest(storage: &dyn Storage) -> Result<Option<(Lsn, String)>, DurableError> {
    let names = storage.list().map_err(|e| DurableError::Io(format!("listing checkpoints: {e}")))?;
    Ok(names
        .into_iter()
        .filter(|n| n.ends_with(".manifest"))
        .filter_map(|n| file_lsn(&n).filter(|&l| manifest_name(l) == n).map(|l| (l, n)))
        .max())
}

/// A loaded checkpoint: its tables and its views' definitions.
pub struct Loaded {
    /// Every table, rows included.
    pub tables: Vec<Table>,
    /// Every materialized view's definition, with its partial states when it had them.
    pub views: Vec<(ViewDef, Option<Table>)>,
}

/// Load checkpoint `lsn`: every table, verified. `progress(loaded, total)` after each table.
pub fn load(storage: &dyn Storage, lsn: Lsn, mut progress: impl FnMut(usize, usize)) -> Result<Loaded, DurableError> {
    let mname = manifest_name(lsn);
    let corrupt = |file: &str, reason: String| DurableError::Corrupt { file: file.to_string(), reason };
    let raw = storage.read(&mname).map_err(|e| DurableError::Io(format!("{mname}: {e}")))?;
    let text = String::from_utf8(raw).map_err(|_| corrupt(&mname, "not UTF-8".into()))?;
    let body_end = text.rfind("crc ").ok_or_else(|| corrupt(&mname, "no checksum line".into()))?;
    let (body, crc_line) = text.split_at(body_end);
    let want = crc_line.trim_end().strip_prefix("crc ").and_then(|h| u32::from_str_radix(h, 16).ok());
    if want != Some(crc32fast::hash(body.as_bytes())) {
        return Err(corrupt(&mname, "checksum mismatch".into()));
    }
    let mut lines = body.lines();
    let header = lines.next();
    if header != Some(HEADER) {
        return Err(match header.and_then(newer_format) {
            Some((n, ours)) => DurableError::Format(format!(
                "{mname} was written by a newer ZeptoDB (checkpoint format {n}; this build reads format {ours}): \
                 start that version or a later one, or restore a backup"
            )),
            None => corrupt(&mname, "not a version 1 checkpoint manifest".into()),
        });
    }
    if lines.next() != Some(format!("lsn {lsn}").as_str()) {
        return Err(corrupt(&mname, "its LSN line does not match its name".into()));
    }
    let (view_lines, file_lines): (Vec<&str>, Vec<&str>) = lines.partition(|l| l.starts_with("view"));
    let mut views: Vec<(ViewDef, Option<Table>)> = Vec::new();
    for l in &view_lines {
        let bad = || corrupt(&mname, format!("a malformed view line: {l}"));
        if let Some(def) = view_line(l) {
            views.push((def, None));
            continue;
        }
        let (name, file, bytes, crc) = state_line(l).ok_or_else(bad)?;
        let state = read_file(storage, file, bytes, crc)?;
        let slot = views.iter_mut().find(|(d, _)| d.name() == name).ok_or_else(bad)?;
        slot.1 = Some(state);
    }
    let files: Vec<(&str, u64, u32)> = file_lines
        .into_iter()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            match f.as_slice() {
                ["file", name, bytes, crc] => Some((*name, bytes.parse().ok()?, u32::from_str_radix(crc, 16).ok()?)),
                _ => None,
            }
        })
        .collect::<Option<_>>()
        .ok_or_else(|| corrupt(&mname, "a malformed line".into()))?;
    let mut tables = Vec::with_capacity(files.len());
    for (i, (name, bytes, crc)) in files.iter().enumerate() {
        tables.push(read_file(storage, name, *bytes, *crc)?);
        progress(i + 1, files.len());
    }
    Ok(Loaded { tables, views })
}

/// The format number of a manifest header of a later format than this build's [`HEADER`], and
/// this build's.
fn newer_format(header: &str) -> Option<(u32, u32)> {
    let (prefix, ours) = HEADER.rsplit_once(' ')?;
    let ours: u32 = ours.parse().ok()?;
    let n: u32 = header.strip_prefix(prefix)?.trim_start().parse().ok()?;
    (n > ours).then_some((n, ours))
}

/// Table file `name`, its length and checksum verified.
fn read_file(storage: &dyn Storage, name: &str, bytes: u64, crc: u32) -> Result<Table, DurableError> {
    let corrupt = |reason: String| DurableError::Corrupt { file: name.to_string(), reason };
    let data = storage.read(name).map_err(|e| corrupt(format!("cannot be read: {e}")))?;
    if data.len() as u64 != bytes {
        return Err(corrupt(format!("{} bytes, the manifest says {bytes}", data.len())));
    }
    if crc32fast::hash(&data) != crc {
        return Err(corrupt("checksum mismatch".into()));
    }
    table_file::read_table(data).map_err(|e| corrupt(e.to_string()))
}

/// A `viewstate` line: the view, its file, bytes and checksum.
fn state_line(l: &str) -> Option<(String, &str, u64, u32)> {
    let f: Vec<&str> = l.split('\t').collect();
    match f.as_slice() {
        ["viewstate", name, file, bytes, crc] => {
            Some((unescape(name)?, *file, bytes.parse().ok()?, u32::from_str_radix(crc, 16).ok()?))
        }
        _ => None,
    }
}

/// A manifest field: backslash, tab and line ends escaped.
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n").replace('\r', "\\r")
}

fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            _ => return None,
        });
    }
    Some(out)
}

/// A `view` line's definition.
fn view_line(l: &str) -> Option<ViewDef> {
    let f: Vec<&str> = l.split('\t').collect();
    match f.as_slice() {
        ["view", name, base, sql] => ViewDef::new(&unescape(name)?, &unescape(base)?, &unescape(sql)?).ok(),
        _ => None,
    }
}

/// Delete every file that is not part of checkpoint `keep` (older checkpoints, files of
/// attempts that crashed before publishing). Manifests go first, so no older checkpoint is
/// ever seen half-deleted.
pub fn remove_others(storage: &dyn Storage, keep: Option<Lsn>) -> Result<usize, DurableError> {
    let io = |e: std::io::Error| DurableError::Io(format!("cleaning checkpoints: {e}"));
    let names = storage.list().map_err(io)?;
    // Only our own names: a stranger's file in the directory is left alone.
    let doomed = |n: &String| file_lsn(n).is_some() && (file_lsn(n) != keep || n.ends_with(".tmp"));
    let (manifests, rest): (Vec<&String>, Vec<&String>) =
        names.iter().filter(|n| doomed(n)).partition(|n| n.ends_with(".manifest"));
    for n in manifests.iter().chain(&rest) {
        storage.remove(n).map_err(io)?;
    }
    Ok(manifests.len() + rest.len())
}
