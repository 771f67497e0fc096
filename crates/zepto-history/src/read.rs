//! Tiering's read half: [`ParquetHistory`] answers "the rows of this table's history that a
//! scan needs" by pruning twice before decoding anything:
//!
//! 1. files: each file's time span is table state, so files outside the scan's time range are
//!    never opened;
//! 2. row groups: the footer's min/max statistics of the timestamp and key columns (footers
//!    are parsed once and cached) drop row groups outside the time range or holding none of the
//!    scan's keys.
//!
//! Only the columns the scan reads are decoded (projection). Files on disk are read through
//! the file handle (only the byte ranges of the chosen column chunks); in-memory storage (tests)
//! through its bytes.

use crate::io_err;
use crate::SharedStore;
use bytes::Bytes;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::statistics::Statistics;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::sync::{Arc, Mutex};
use zepto_storage::{
    ColumnData, ColumnDef, HistoryChunk, HistoryPlan, HistoryReader, HistoryUnit, StorageError, Table,
};
use zepto_wal::Storage;

/// The catalog's reader of history files in one storage (the data directory's `history/`).
pub struct ParquetHistory {
    storage: Arc<dyn Storage>,
    /// The cluster's shared storage, for files named `shared:...`.
    shared: Option<SharedStore>,
    footers: Mutex<HashMap<String, Arc<ParquetMetaData>>>,
}

impl std::fmt::Debug for ParquetHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetHistory").finish_non_exhaustive()
    }
}

/// A file's bytes: the open file, an object in the shared store read by ranges (the footer,
/// then only the column chunks a read needs), or a copy for other storage (tests' memory).
enum Source {
    File(File),
    Remote { store: SharedStore, path: String, len: u64 },
    Mem(Bytes),
}

impl Length for Source {
    fn len(&self) -> u64 {
        match self {
            Source::File(f) => f.len(),
            Source::Remote { len, .. } => *len,
            Source::Mem(b) => b.len() as u64,
        }
    }
}

impl ChunkReader for Source {
    type T = Box<dyn Read + Send>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(match self {
            Source::File(f) => Box::new(f.get_read(start)?),
            Source::Remote { len, .. } => {
                let rest = usize::try_from(len.saturating_sub(start)).unwrap_or(usize::MAX);
                Box::new(std::io::Cursor::new(self.get_bytes(start, rest)?))
            }
            Source::Mem(b) => Box::new(b.get_read(start)?),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self {
            Source::File(f) => f.get_bytes(start, length),
            Source::Remote { store, path, .. } => store
                .get_range(path, start..start.saturating_add(length as u64))
                .map_err(|e| parquet::errors::ParquetError::External(Box::new(e))),
            Source::Mem(b) => b.get_bytes(start, length),
        }
    }
}

/// Leaf column index of `name` in a flat file (case-insensitive, as reading matches columns).
fn leaf(meta: &ParquetMetaData, name: &str) -> Option<usize> {
    meta.file_metadata().schema_descr().columns().iter().position(|c| c.name().eq_ignore_ascii_case(name))
}

impl ParquetHistory {
    /// The history kept in `storage` (Parquet footers are cached as files are first read).
    pub fn new(storage: Arc<dyn Storage>) -> ParquetHistory {
        ParquetHistory { storage, shared: None, footers: Mutex::new(HashMap::new()) }
    }

    /// This reader, reading files named `shared:<path>` from `shared` (the cluster's shared
    /// storage; see [`zepto_storage::history::SHARED`]).
    pub fn with_shared(mut self, shared: SharedStore) -> ParquetHistory {
        self.shared = Some(shared);
        self
    }

    /// `path`, whose length is `len` (as the table recorded it).
    fn open(&self, path: &str, len: u64) -> Result<Source, StorageError> {
        let Some(name) = path.strip_prefix(zepto_storage::history::SHARED) else {
            return match self.storage.path(path) {
                Some(p) => File::open(&p).map(Source::File).map_err(|e| io_err(path, e)),
                None => self.storage.read(path).map(|b| Source::Mem(Bytes::from(b))).map_err(|e| io_err(path, e)),
            };
        };
        let Some(store) = &self.shared else {
            return Err(io_err(path, "the file is in the cluster's shared storage, and this node has none"));
        };
        match store.local_path(name) {
            Some(p) => File::open(&p).map(Source::File).map_err(|e| io_err(path, e)),
            None => Ok(Source::Remote { store: store.clone(), path: name.to_string(), len }),
        }
    }

    fn footer(&self, path: &str, len: u64, src: Option<&Source>) -> Result<Arc<ParquetMetaData>, StorageError> {
        if let Some(m) = self.footers.lock().unwrap_or_else(|e| e.into_inner()).get(path) {
            return Ok(m.clone());
        }
        let opened;
        let src = match src {
            Some(s) => s,
            None => {
                opened = self.open(path, len)?;
                &opened
            }
        };
        let m = Arc::new(ParquetMetaDataReader::new().parse_and_finish(src).map_err(|e| io_err(path, e))?);
        self.footers.lock().unwrap_or_else(|e| e.into_inner()).insert(path.to_string(), m.clone());
        Ok(m)
    }

    /// Forget a file's cached footer (it was deleted).
    pub fn forget(&self, path: &str) {
        self.footers.lock().unwrap_or_else(|e| e.into_inner()).remove(path);
    }

    /// Row groups of `meta` that may hold rows in `[lo, hi]` with a key among `keys`.
    fn row_groups(table: &Table, meta: &ParquetMetaData, keys: Option<&[String]>, lo: i64, hi: i64) -> Vec<usize> {
        let col_name = |c: Option<usize>| c.and_then(|i| table.schema().columns.get(i)).map(|d| d.name.as_str());
        let ts = col_name(table.ts_col()).and_then(|n| leaf(meta, n));
        let key = col_name(table.key_col()).and_then(|n| leaf(meta, n));
        let mut keep = Vec::new();
        for (i, rg) in meta.row_groups().iter().enumerate() {
            if let Some(Statistics::Int64(s)) = ts.and_then(|c| rg.column(c).statistics()) {
                if let (Some(&min), Some(&max)) = (s.min_opt(), s.max_opt()) {
                    if max < lo || min > hi {
                        continue;
                    }
                }
            }
            if let (Some(keys), Some(Statistics::ByteArray(s))) = (keys, key.and_then(|c| rg.column(c).statistics())) {
                if let (Some(min), Some(max)) = (s.min_opt(), s.max_opt()) {
                    let (min, max) = (min.data(), max.data());
                    if !keys.iter().any(|k| min <= k.as_bytes() && k.as_bytes() <= max) {
                        continue;
                    }
                }
            }
            keep.push(i);
        }
        keep
    }
}

impl HistoryReader for ParquetHistory {
    fn units(
        &self,
        table: &Table,
        keys: Option<&[String]>,
        lo: i64,
        hi: i64,
    ) -> Result<Vec<HistoryUnit>, StorageError> {
        let mut units = Vec::new();
        for (i, f) in table.history().files.iter().enumerate() {
            if f.max_ts < lo || f.min_ts > hi {
                continue;
            }
            let meta = self.footer(&f.path, f.bytes, None)?;
            for g in Self::row_groups(table, &meta, keys, lo, hi) {
                let rows = usize::try_from(meta.row_group(g).num_rows()).unwrap_or(0);
                units.push(HistoryUnit { file: i, row_group: g, rows });
            }
        }
        Ok(units)
    }

    fn read_unit(&self, table: &Table, columns: &[usize], unit: &HistoryUnit) -> Result<HistoryChunk, StorageError> {
        let internal = |m: String| StorageError::Internal(format!("table '{}': {m}", table.name()));
        let f =
            table.history().files.get(unit.file).ok_or_else(|| internal(format!("no history file {}", unit.file)))?;
        let defs: Vec<ColumnDef> = columns
            .iter()
            .map(|&c| table.schema().columns.get(c).cloned().ok_or_else(|| internal(format!("no column {c}"))))
            .collect::<Result<_, _>>()?;
        let key_pos = table.key_col().and_then(|k| columns.iter().position(|&c| c == k));
        let src = self.open(&f.path, f.bytes)?;
        let meta = self.footer(&f.path, f.bytes, Some(&src))?;
        if unit.row_group >= meta.num_row_groups() {
            return Err(internal(format!("{} has no row group {}", f.path, unit.row_group)));
        }
        let cols = zepto_io::parquet::read_parquet_parts(src, meta, &defs, Some(vec![unit.row_group]), &f.path)
            .map_err(|e| io_err(&f.path, e))?;
        Ok(key_runs(cols, key_pos))
    }

    fn plan(&self, table: &Table, keys: Option<&[String]>, lo: i64, hi: i64) -> Result<HistoryPlan, StorageError> {
        let mut p = HistoryPlan { files_total: table.history().files.len(), ..Default::default() };
        for f in &table.history().files {
            let meta = self.footer(&f.path, f.bytes, None)?;
            p.row_groups_total += meta.num_row_groups();
            if f.max_ts < lo || f.min_ts > hi {
                continue;
            }
            let g = Self::row_groups(table, &meta, keys, lo, hi).len();
            if g > 0 {
                p.files += 1;
                p.row_groups += g;
            }
        }
        Ok(p)
    }
}

/// One file's rows (sorted by key) with their runs of one key each.
fn key_runs(columns: Vec<zepto_storage::Column>, key_pos: Option<usize>) -> HistoryChunk {
    let n = columns.first().map_or(0, |c| c.len());
    let mut runs = Vec::new();
    match key_pos.map(|k| (&columns[k], columns[k].data())) {
        Some((kc, ColumnData::Symbol { codes, dict })) => {
            let key_of = |i: usize| kc.is_valid(i).then(|| codes[i]);
            let mut start = 0;
            while start < n {
                let k = key_of(start);
                let end =
                    start + codes[start..].iter().enumerate().take_while(|&(j, _)| key_of(start + j) == k).count();
                runs.push((k.map(|c| dict.get(c).to_string()), start..end));
                start = end;
            }
        }
        _ if n > 0 => runs.push((None, 0..n)),
        _ => {}
    }
    HistoryChunk { columns, runs }
}

/// Every row of a whole Parquet file in memory, as columns `defs` (matched by name; a column
/// the file lacks reads as NULL): how a node loads the recent rows of a shared snapshot.
pub fn read_file(bytes: Vec<u8>, defs: &[ColumnDef], what: &str) -> Result<Vec<zepto_storage::Column>, StorageError> {
    let src = Bytes::from(bytes);
    let meta = Arc::new(ParquetMetaDataReader::new().parse_and_finish(&src).map_err(|e| io_err(what, e))?);
    zepto_io::parquet::read_parquet_parts(src, meta, defs, None, what).map_err(|e| io_err(what, e))
}
