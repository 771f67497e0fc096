//! A Parquet file read with its rows grouped by a table's partition key, for a bulk load
//! (`grouped.rs` says why). Each column gets a reader of its own, on its own core.
//!
//! (Splitting one column from several runs of row groups at once, each writing its own
//! stretch of every group, was measured twice. With zeroed buffers, a 10M-row load was
//! 0.1-0.2 s slower, the zeroing costing more than the better balance gained. With stretches
//! written once, uninitialized until then (2026-12-02): no change beyond the noise on two
//! cores, for the benchmark's trades and quotes and for a table of one value column. A split
//! is bound by page faults on its fresh buffers (about one per 4 KiB written, a third of a
//! load's time on a VM), not by how many cores run it.)
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::grouped::{into_groups, split_columns, Splitter};
use crate::parquet::{file_err, open_reader, projected, read_with, Opened, ReadFail, Sizes};
use crate::{Check, IoError};
use ::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use std::fs::File;
use std::path::Path;
use zepto_storage::{Column, ColumnDef, DataType, KeyGroups};

/// [`crate::parquet::read_parquet_checked`], with the rows grouped by the value of column
/// `schema[key]` (a SYMBOL column, the table's partition key; module docs). Rows keep file
/// order within a group; groups are in order of first row. `Ok(None)` when the file has no
/// such column (read it whole).
pub fn read_parquet_grouped(
    path: &Path,
    schema: &[ColumnDef],
    key: usize,
    check: Check,
) -> Result<Option<Vec<Vec<Column>>>, IoError> {
    let Some(key_def) = schema.get(key).filter(|d| d.data_type == DataType::Symbol) else { return Ok(None) };
    let file = File::open(path).map_err(|e| file_err(path, e))?;
    let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| file_err(path, e))?;
    let source = crate::arrow::match_columns(meta.schema().fields(), schema, "Parquet file")?;
    if source.get(key).is_none_or(Option::is_none) {
        return Ok(None);
    }
    let keys = read_with(file, meta.clone(), std::slice::from_ref(key_def), None, Sizes::DEFAULT, check)
        .map_err(|e| e.in_file(path))?
        .pop()
        .ok_or_else(lost)?;
    let Some(groups) = KeyGroups::of(keys) else { return Ok(None) };
    let read = Load { path, meta: &meta, groups: &groups, check };
    let columns: Vec<usize> = (0..schema.len()).filter(|&i| source.get(i).is_some_and(Option::is_some)).collect();
    let split = |i: usize| read.split_column(schema.get(i).ok_or_else(lost)?);
    let by_column = split_columns(schema.len(), &columns, key, &groups, split)?;
    let out = into_groups(schema, &groups, by_column);
    Ok(Some(out))
}

fn lost() -> IoError {
    IoError::Invalid("a column read returned no column".into())
}

/// What the columns of a grouped read share.
struct Load<'r> {
    path: &'r Path,
    meta: &'r ArrowReaderMetadata,
    groups: &'r KeyGroups,
    check: Check<'r>,
}

impl Load<'_> {
    /// A reader of column `def`.
    fn open(&self, def: &ColumnDef) -> Result<Opened, ReadFail> {
        let file = std::fs::File::open(self.path).map_err(|e| ReadFail::Io(e.to_string()))?;
        open_reader(file, self.meta.clone(), std::slice::from_ref(def), None, Sizes::DEFAULT)
    }

    /// Column `def` split among the groups as it is decoded.
    fn split_column(&self, def: &ColumnDef) -> Result<Vec<Column>, IoError> {
        let Opened { reader, source, roots, .. } = self.open(def).map_err(|e| e.in_file(self.path))?;
        let k = source.first().copied().flatten().ok_or_else(lost)?;
        let mut split = Splitter::new(def, self.groups, None, Sizes::DEFAULT.batch_rows);
        for batch in reader {
            let batch = batch.map_err(|e| file_err(self.path, e))?;
            split.push(projected(&roots, &batch, k)?.as_ref())?;
            (self.check)().map_err(IoError::Stopped)?;
        }
        split.finish()
    }
}
