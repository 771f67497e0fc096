//! Parquet files written on every core, from a result's chunks as the query made them.
//!
//! Rows go into row groups of at most [`ROW_GROUP_ROWS`] rows, in order; a row group takes a
//! window of a large chunk, or several small chunks. Each column chunk of a row group (its
//! Arrow form, Parquet encoding and zstd compression) is encoded on its own, so the (row
//! group, column) pairs of a wave of row groups, as many row groups as there are cores, are
//! shared among the cores (`zepto_storage::par`); the file writer then appends the wave's encoded column chunks
//! in order. Only the pieces being encoded exist in Arrow form: a write costs the result, a
//! few copies of one row group's column per thread (a window is sliced, small chunks joined,
//! then converted to Arrow), and one wave's compressed column chunks.
//!
//! The file is written to `<path>.tmp`, synced, and renamed over `path` only when complete.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::arrow::to_arrow;
use crate::chunks::{of_one_type, Chunk};
use crate::IoError;
use ::parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory};
use ::parquet::arrow::ArrowWriter;
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::properties::WriterProperties;
use ::parquet::file::writer::SerializedFileWriter;
use arrow_array::ArrayRef;
use arrow_schema::{Field, Schema, SchemaRef};
use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use zepto_storage::Column;

/// Most rows in one row group (the Parquet writer's own default).
const ROW_GROUP_ROWS: usize = 1 << 20;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// A failed write as an [`IoError`]: [`IoError::DiskFull`] when the disk is full, so callers
/// can say so (HTTP 507) instead of reporting an internal error.
pub(crate) fn write_failure(path: &Path, e: &(dyn std::error::Error + 'static)) -> IoError {
    if crate::is_disk_full(e) {
        return IoError::DiskFull { path: path.display().to_string(), message: e.to_string() };
    }
    IoError::File { path: path.display().to_string(), message: e.to_string() }
}

pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Rows `rows` of chunk `chunk`: one part of a row group.
#[derive(Debug, Clone)]
struct Piece {
    chunk: usize,
    rows: std::ops::Range<usize>,
}

/// Write `chunks` (a result's batches, columns named `names`) as one zstd-compressed Parquet
/// file at `path`, encoding on every core; the rows written.
///
/// Types: TIMESTAMP → `Timestamp(Nanosecond)` (no time zone), DATE → `Date32`, SYMBOL →
/// `Dictionary(Int32, Utf8)` (plain strings to readers without Arrow metadata, e.g. DuckDB),
/// VARCHAR → `LargeUtf8`, INTERVAL → `Int64` nanoseconds (Parquet has no duration type, so it
/// reads back as a BIGINT elsewhere), untyped NULL → Arrow `Null`. Each chunk has a column per
/// name; an untyped all-NULL column takes the type other chunks give it.
pub fn write_parquet(path: &Path, names: &[String], chunks: Vec<Chunk>) -> Result<usize, IoError> {
    write_groups(path, names, chunks, ROW_GROUP_ROWS)
}

/// [`write_parquet`] in row groups of at most `group_rows` rows.
pub(crate) fn write_groups(
    path: &Path,
    names: &[String],
    chunks: Vec<Chunk>,
    group_rows: usize,
) -> Result<usize, IoError> {
    let chunks = of_one_type(chunks);
    let first = chunks.front().map(|c| &c.0).filter(|cols| !cols.is_empty());
    let Some(first) = first else {
        return Err(IoError::Invalid("cannot write a Parquet file with no columns".into()));
    };
    for (cols, rows) in &chunks {
        check_chunk(names, cols, *rows)?;
    }
    let schema = arrow_schema(names, first)?;
    let groups = row_groups(&chunks, group_rows.max(1));
    let rows = chunks.iter().map(|c| c.1).sum();
    let threads = zepto_storage::par::threads();
    let tmp = tmp_path(path);
    let write = || -> Result<(), Failure> {
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(group_rows.max(1)))
            .build();
        let writer = ArrowWriter::try_new(File::create(&tmp)?, schema.clone(), Some(props))?;
        let (mut file, factory) = writer.into_serialized_writer()?;
        for (w, wave) in groups.chunks(threads).enumerate() {
            let encoded = encode_wave(&chunks, &schema, &factory, w * threads, wave)?;
            append_wave(&mut file, encoded)?;
        }
        file.finish()?;
        file.inner().sync_all()?;
        Ok(std::fs::rename(&tmp, path)?)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        write_failure(path, &*e)
    })?;
    Ok(rows)
}

/// Every column of the chunk is `rows` long (an untyped NULL column may be any length).
fn check_chunk(names: &[String], cols: &[Arc<Column>], rows: usize) -> Result<(), IoError> {
    if names.len() != cols.len() {
        return Err(IoError::Invalid(format!("{} column names for {} columns", names.len(), cols.len())));
    }
    for (name, c) in names.iter().zip(cols) {
        if c.data_type() != zepto_storage::DataType::Null && c.len() != rows {
            return Err(IoError::Invalid(format!("column '{name}' has {} rows, expected {rows}", c.len())));
        }
    }
    Ok(())
}

/// The file's Arrow schema: each column's Arrow type, as the first chunk converts.
fn arrow_schema(names: &[String], cols: &[Arc<Column>]) -> Result<SchemaRef, IoError> {
    let fields = names
        .iter()
        .zip(cols)
        .map(|(name, c)| {
            let empty = c.slice(0, 0);
            let a = to_arrow(&empty, 0).map_err(|e| IoError::Invalid(format!("column '{name}': {e}")))?;
            Ok(Field::new(name.clone(), a.data_type().clone(), true))
        })
        .collect::<Result<Vec<_>, IoError>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// The chunks' rows cut into row groups of at most `group_rows` rows, in order (none when
/// there are no rows).
fn row_groups(chunks: &VecDeque<Chunk>, group_rows: usize) -> Vec<Vec<Piece>> {
    let mut groups: Vec<Vec<Piece>> = Vec::new();
    let mut current: Vec<Piece> = Vec::new();
    let mut filled = 0;
    for (k, (_, rows)) in chunks.iter().enumerate() {
        let mut at = 0;
        while at < *rows {
            let take = (group_rows - filled).min(rows - at);
            current.push(Piece { chunk: k, rows: at..at + take });
            (at, filled) = (at + take, filled + take);
            if filled == group_rows {
                groups.push(std::mem::take(&mut current));
                filled = 0;
            }
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    groups
}

/// Column `j` of a row group in Arrow: the rows of its pieces.
fn group_column(chunks: &VecDeque<Chunk>, pieces: &[Piece], j: usize) -> Result<ArrayRef, String> {
    let part = |p: &Piece| -> Result<Option<Column>, String> {
        let (cols, rows) = chunks.get(p.chunk).ok_or("a piece of no chunk")?;
        let c = cols.get(j).ok_or("a column of no chunk")?;
        let whole = p.rows.start == 0 && p.rows.end == *rows;
        Ok((!whole || c.len() != *rows).then(|| slice_or_nulls(c, p.rows.clone())))
    };
    match pieces {
        [] => Err("a row group without rows".into()),
        [p] => match part(p)? {
            Some(c) => to_arrow(&c, p.rows.len()),
            None => {
                let c = chunks.get(p.chunk).and_then(|(cols, _)| cols.get(j)).ok_or("no column")?;
                to_arrow(c, p.rows.len())
            }
        },
        _ => {
            let parts: Vec<Column> = pieces
                .iter()
                .map(|p| {
                    let c = chunks.get(p.chunk).and_then(|(cols, _)| cols.get(j)).ok_or("no column")?;
                    Ok(slice_or_nulls(c, p.rows.clone()))
                })
                .collect::<Result<_, String>>()?;
            let refs: Vec<&Column> = parts.iter().collect();
            let rows = pieces.iter().map(|p| p.rows.len()).sum();
            to_arrow(&Column::concat(&refs), rows)
        }
    }
}

/// Rows `rows` of `c`; of an untyped NULL column (any length), that many NULLs.
fn slice_or_nulls(c: &Column, rows: std::ops::Range<usize>) -> Column {
    if c.data_type() == zepto_storage::DataType::Null {
        return Column::nulls(zepto_storage::DataType::Null, rows.len());
    }
    c.slice(rows.start, rows.len())
}

/// One column chunk to encode: row group `group` (index in the wave), column `column`, with
/// the writers of its Parquet leaves.
struct Job {
    group: usize,
    column: usize,
    writers: Vec<ArrowColumnWriter>,
}

/// Encode row groups `groups` (the first numbered `first` in the file), their column chunks
/// shared among the cores ([`zepto_storage::par::try_map`], which credits what the helpers
/// allocated to the calling thread): per row group, its encoded column chunks in order.
fn encode_wave(
    chunks: &VecDeque<Chunk>,
    schema: &SchemaRef,
    factory: &ArrowRowGroupWriterFactory,
    first: usize,
    groups: &[Vec<Piece>],
) -> Result<Vec<Vec<ArrowColumnChunk>>, Failure> {
    let mut jobs = Vec::new();
    for g in 0..groups.len() {
        let writers = factory.create_column_writers(first + g)?;
        // One leaf per column: the columns written are flat, or a list of one primitive.
        if writers.len() != schema.fields().len() {
            return Err(format!("{} Parquet leaves for {} columns", writers.len(), schema.fields().len()).into());
        }
        for (j, w) in writers.into_iter().enumerate() {
            jobs.push(Mutex::new(Some(Job { group: g, column: j, writers: vec![w] })));
        }
    }
    let encoded = zepto_storage::par::try_map(&jobs, |slot| {
        let job = slot.lock().unwrap_or_else(|e| e.into_inner()).take().ok_or("a column chunk taken twice")?;
        encode(chunks, schema, groups, job)
    })?;
    let mut out: Vec<Vec<ArrowColumnChunk>> = groups.iter().map(|_| Vec::new()).collect();
    for (chunks, job) in encoded.into_iter().zip(0..) {
        let g = job / schema.fields().len();
        out.get_mut(g).ok_or("a column chunk of no row group")?.extend(chunks);
    }
    Ok(out)
}

/// Encode one column chunk.
fn encode(
    chunks: &VecDeque<Chunk>,
    schema: &SchemaRef,
    groups: &[Vec<Piece>],
    job: Job,
) -> Result<Vec<ArrowColumnChunk>, String> {
    let pieces = groups.get(job.group).ok_or("no such row group")?;
    let field = schema.fields().get(job.column).ok_or("no such column")?;
    let array = group_column(chunks, pieces, job.column).map_err(|e| format!("column '{}': {e}", field.name()))?;
    let leaves = compute_leaves(field, &array).map_err(|e| e.to_string())?;
    if leaves.len() != job.writers.len() {
        return Err(format!("{} Parquet leaves for {} writers", leaves.len(), job.writers.len()));
    }
    let mut writers = job.writers;
    for (w, leaf) in writers.iter_mut().zip(&leaves) {
        w.write(leaf).map_err(|e| e.to_string())?;
    }
    drop((leaves, array));
    writers.into_iter().map(|w| w.close().map_err(|e| e.to_string())).collect()
}

/// Append a wave's row groups to the file, in order.
fn append_wave(file: &mut SerializedFileWriter<File>, groups: Vec<Vec<ArrowColumnChunk>>) -> Result<(), Failure> {
    for chunks in groups {
        let mut rg = file.next_row_group()?;
        for c in chunks {
            c.append_to_row_group(&mut rg)?;
        }
        rg.close()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet::read_parquet;
    use ::parquet::file::reader::{FileReader, SerializedFileReader};
    use zepto_storage::{ColumnBuilder, ColumnData, ColumnDef, DataType, Value};

    /// A chunk of `rows` rows from `start`: a timestamp, a symbol of its own dictionary (or an
    /// untyped NULL column), and a string with NULLs.
    fn chunk(start: usize, rows: usize, syms: bool) -> Chunk {
        let mut ts = ColumnBuilder::new(DataType::Timestamp, rows);
        let mut sym = ColumnBuilder::new(DataType::Symbol, rows);
        let mut note = ColumnBuilder::new(DataType::Varchar, rows);
        for i in start..start + rows {
            ts.push_value(&Value::Timestamp(i as i64)).expect("push");
            sym.push_str(&format!("s{}", i % 7)).expect("push");
            if i % 3 == 0 {
                note.push_null();
            } else {
                note.push_str(&format!("n{i}")).expect("push");
            }
        }
        let sym = if syms { sym.finish() } else { Column::from_data(ColumnData::Null(rows)) };
        (vec![Arc::new(ts.finish()), Arc::new(sym), Arc::new(note.finish())], rows)
    }

    /// Chunks of 25, 1, 0 and 40 rows (the last with an untyped NULL symbol column; each
    /// symbol column its own dictionary) in row groups of 10: 7 row groups, every row back in
    /// order, whichever thread encoded which column chunk.
    #[test]
    fn chunks_become_row_groups_in_order() {
        let names: Vec<String> = ["ts", "sym", "note"].map(String::from).to_vec();
        let defs: Vec<ColumnDef> =
            [("ts", DataType::Timestamp), ("sym", DataType::Symbol), ("note", DataType::Varchar)]
                .map(|(n, t)| ColumnDef { name: n.into(), data_type: t })
                .to_vec();
        let chunks = vec![chunk(0, 25, true), chunk(25, 1, true), chunk(26, 0, true), chunk(26, 40, false)];
        for run in 0..3 {
            let p = std::env::temp_dir().join(format!("zepto-io-{}-groups-{run}.parquet", std::process::id()));
            assert_eq!(write_groups(&p, &names, chunks.clone(), 10).expect("writes"), 66);
            let file = SerializedFileReader::new(File::open(&p).expect("open")).expect("a Parquet file");
            let sizes: Vec<i64> = file.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
            assert_eq!(sizes, [10, 10, 10, 10, 10, 10, 6]);
            let back = read_parquet(&p, &defs).expect("reads");
            for i in 0..66 {
                assert_eq!(back[0].get(i), Value::Timestamp(i as i64), "row {i}");
                let sym = if i < 26 { Value::Str(format!("s{}", i % 7)) } else { Value::Null };
                assert_eq!(back[1].get(i), sym, "row {i}");
                let note = if i % 3 == 0 { Value::Null } else { Value::Str(format!("n{i}")) };
                assert_eq!(back[2].get(i), note, "row {i}");
            }
            std::fs::remove_file(&p).expect("cleanup");
        }
        let p = std::env::temp_dir().join(format!("zepto-io-{}-bad.parquet", std::process::id()));
        let e = write_groups(&p, &names[..2], chunks, 10).expect_err("a name short");
        assert!(e.to_string().contains("2 column names for 3 columns"), "{e}");
        assert!(!p.exists() && !tmp_path(&p).exists(), "nothing written");
    }
}
