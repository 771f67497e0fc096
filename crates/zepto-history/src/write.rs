//! Tiering's write half: the rows of a table snapshot before a cut become Parquet files, one
//! per UTC day, each published atomically (temporary name, fsync, rename, directory fsync).
//!
//! Inside a file, rows are sorted by partition key (as a string, NULL first) and then by time,
//! and row groups hold at most [`ROW_GROUP_ROWS`] rows: a row group's min/max statistics then
//! cover few keys and a short time span, which is what pruning needs. Snappy compression:
//! cheap to decode, and what DuckDB and Spark write by default.

use crate::io_err;
use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use std::collections::BTreeMap;
use std::sync::Arc;
use zepto_storage::history::{day_floor, NS_PER_DAY};
use zepto_storage::{Column, DataType, HistFile, StorageError, Table};
use zepto_wal::Storage;

/// Rows per row group: large enough for fast scans, small enough to prune.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;

/// What tiering wrote: the files, and per partition slot the rows they took (the check the
/// commit repeats under the table lock).
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// Rows written per input partition, in input order.
    pub counts: Vec<usize>,
    /// The files written (to be named by the table in the same change).
    pub files: Vec<HistFile>,
}

/// A day directory name: `date=YYYY-MM-DD`.
pub fn day_dir(day_start: i64) -> String {
    let days = day_start.div_euclid(NS_PER_DAY);
    format!("date={}", zepto_storage::time::format_date(days as i32))
}

/// One history file encoded in memory, not yet published: its description and bytes.
#[derive(Debug)]
pub struct Encoded {
    /// The file as a table's history names it (`path` as the caller's naming gave it).
    pub file: HistFile,
    /// The Parquet bytes.
    pub bytes: Vec<u8>,
}

/// Write `snap`'s rows with a timestamp before `before` as history files of `snap`, named from
/// its history's next sequence number. Nothing in the catalog changes: the caller commits the
/// files ([`zepto_storage::Catalog::commit_tier`]) or leaves them for the startup sweep.
pub fn write_history(storage: &dyn Storage, snap: &Table, before: i64) -> Result<Written, StorageError> {
    if snap.ts_col().is_none() {
        return Err(StorageError::Invalid(format!("table '{}' has no designated timestamp to tier by", snap.name())));
    }
    let counts = snap.count_before(before);
    let slots: Vec<usize> = (0..counts.len()).filter(|&s| counts[s] > 0).collect();
    let table_dir = snap.name().to_ascii_lowercase();
    let next = snap.history().next_seq;
    // The sequence restarts with a table made again, and a restored copy goes on from its
    // backup's: the tag keeps every file's name its own, so that no copy of a file (a
    // backup's, say) is ever taken for another's.
    let tag = zepto_storage::rng::fresh_u64();
    let name =
        |day: i64, k: usize| format!("{table_dir}/{}/part-{:06}-{tag:016x}.parquet", day_dir(day), next + k as u64);
    let mut files = Vec::new();
    for e in encode_rows(snap, &slots, Rows::Before(before), name)? {
        publish(storage, &e.file.path, &e.bytes)?;
        files.push(e.file);
    }
    Ok(Written { counts, files })
}

/// Which rows of a partition [`encode_rows`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// Those with a timestamp before the cut (one file per UTC day).
    Before(i64),
    /// All the others: a timestamp at or after the cut, or NULL; every row of a table without
    /// a designated timestamp (one file, named for day 0).
    From(i64),
}

/// The `rows` of partition slots `slots` of `snap` as Parquet files (`name(day start, k)`
/// names the `k`-th), rows in (key, time) order. A file's time span is the whole range when
/// the table has no designated timestamp.
pub fn encode_rows(
    snap: &Table,
    slots: &[usize],
    rows: Rows,
    name: impl Fn(i64, usize) -> String,
) -> Result<Vec<Encoded>, StorageError> {
    let days = day_pieces(snap, slots, rows);
    let names: Vec<String> = snap.schema().columns.iter().map(|c| c.name.clone()).collect();
    let parts = snap.partitions();
    let mut out = Vec::with_capacity(days.len());
    for (k, (day, pieces)) in days.into_iter().enumerate() {
        let n: usize = pieces.iter().map(|&(_, a, b)| b - a).sum();
        let cols: Vec<Column> = (0..names.len())
            .map(|c| {
                // Straight from where the rows live (a pack of small partitions, or their own).
                let slices: Vec<Column> = pieces
                    .iter()
                    .map(|&(s, a, b)| {
                        let (col, at) = parts[s].source(c);
                        col.slice(at + a, b - a)
                    })
                    .collect();
                let refs: Vec<&Column> = slices.iter().collect();
                Column::concat(&refs)
            })
            .collect();
        let (min_ts, max_ts) = match snap.ts_col() {
            Some(t) => (0..n)
                .filter(|&i| cols[t].is_valid(i))
                .filter_map(|i| cols[t].as_i64_slice().map(|ts| ts[i]))
                .fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t))),
            None => (i64::MIN, i64::MAX),
        };
        let path = name(day, k);
        let bytes = encode(&names, &cols, n).map_err(|e| io_err(&path, e))?;
        let file = HistFile { path, rows: n as u64, bytes: bytes.len() as u64, min_ts, max_ts };
        out.push(Encoded { file, bytes });
    }
    Ok(out)
}

/// Day start → pieces (slot, row range) of `slots`, slots in key order (NULL key first, then
/// by string). [`Rows::From`] puts every piece under day 0.
fn day_pieces(snap: &Table, slots: &[usize], rows: Rows) -> BTreeMap<i64, Vec<(usize, usize, usize)>> {
    let dict = snap.dict();
    let parts = snap.partitions();
    let mut order: Vec<usize> = slots.to_vec();
    order.sort_by(|&a, &b| parts[a].key().map(|k| dict.get(k)).cmp(&parts[b].key().map(|k| dict.get(k))));
    let mut days: BTreeMap<i64, Vec<(usize, usize, usize)>> = BTreeMap::new();
    for &s in &order {
        let p = &parts[s];
        // The rows before the cut (none without a designated timestamp).
        let (cut, before) = match rows {
            Rows::Before(t) | Rows::From(t) => (t, matches!(rows, Rows::Before(_))),
        };
        let r = match snap.ts_col() {
            Some(t) => p.ts_range(t, i64::MIN, cut.saturating_sub(1)),
            None => 0..0,
        };
        if !before {
            for (a, b) in [(0, r.start), (r.end, p.len())] {
                if b > a {
                    days.entry(0).or_default().push((s, a, b));
                }
            }
            continue;
        }
        let Some(ts_col) = snap.ts_col() else { continue };
        let ts = p.i64_values(ts_col).unwrap_or(&[]);
        let mut i = r.start;
        while i < r.end {
            let day = day_floor(ts[i]);
            let next = day.saturating_add(NS_PER_DAY);
            let j = i + ts[i..r.end].partition_point(|&t| t < next);
            debug_assert!(j > i);
            days.entry(day).or_default().push((s, i, j));
            i = j;
        }
    }
    days
}

/// One Parquet file in memory.
fn encode(names: &[String], cols: &[Column], rows: usize) -> Result<Vec<u8>, String> {
    let mut fields = Vec::with_capacity(cols.len());
    let mut arrays = Vec::with_capacity(cols.len());
    for (name, c) in names.iter().zip(cols) {
        let a = zepto_io::arrow::to_arrow(c, rows).map_err(|e| format!("column '{name}': {e}"))?;
        fields.push(Field::new(name.clone(), a.data_type().clone(), true));
        arrays.push(a);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())?;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_statistics_enabled(EnabledStatistics::Chunk);
    // Timestamps (sorted within a key) as deltas: no dictionary, which nanosecond times overflow
    // anyway before falling back to plain. Measured on 10M trades: the file's timestamp column
    // shrank from 8.9 to 4.0 MiB per million rows and decoded ~9x faster (25 vs 225 ms).
    for (name, c) in names.iter().zip(cols) {
        if c.data_type() == DataType::Timestamp {
            let path = ColumnPath::new(vec![name.clone()]);
            props = props
                .set_column_encoding(path.clone(), Encoding::DELTA_BINARY_PACKED)
                .set_column_dictionary_enabled(path, false);
        }
    }
    let props = props.build();
    let mut w = ArrowWriter::try_new(Vec::new(), schema, Some(props)).map_err(|e| e.to_string())?;
    w.write(&batch).map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())
}

/// Write `bytes` under a temporary name, fsync, rename into place (which fsyncs the directory).
fn publish(storage: &dyn Storage, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
    let tmp = format!("{path}.tmp");
    // A temporary file left by a crash would be appended to: start clean.
    match storage.remove(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(&tmp, e)),
        _ => {}
    }
    storage.append(&tmp, bytes).map_err(|e| io_err(&tmp, e))?;
    storage.sync(&tmp).map_err(|e| io_err(&tmp, e))?;
    storage.rename(&tmp, path).map_err(|e| io_err(path, e))
}
