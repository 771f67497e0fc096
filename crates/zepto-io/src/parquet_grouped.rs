//! A Parquet file read with its rows grouped by a table's partition key, for a bulk load.
//!
//! Read whole, a file's columns would each be held once as decoded and again as split among
//! the partitions: every value written and page-faulted twice. Here the key column is read
//! first and grouped ([`KeyGroups`]); every other column is then split among the groups batch
//! by batch as it is decoded, into buffers sized exactly up front, so no column is ever whole.
//!
//! The columns are split on every core, one column to a core at a time. (Splitting one
//! column from several runs of row groups at once, each writing its own stretch of every
//! group, was measured too: a 10M-row load was 0.1-0.2 s slower, the zeroed buffers it needs
//! costing more than the better balance gained.)
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::arrow::{append_batch, Acc};
use crate::parquet::{file_err, open_reader, projected, read_with, Opened, ReadFail, Sizes};
use crate::{Check, IoError};
use ::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use zepto_storage::{Bitmap, Column, ColumnData, ColumnDef, ColumnSplit, DataType, Dict, KeyGroups};

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
    let fail = |e| match e {
        ReadFail::Io(m) => file_err(path, m),
        ReadFail::Other(e) => e,
    };
    let keys = read_with(file, meta.clone(), std::slice::from_ref(key_def), None, Sizes::DEFAULT, check)
        .map_err(fail)?
        .pop()
        .ok_or_else(lost)?;
    let Some(groups) = KeyGroups::of(keys) else { return Ok(None) };
    let read = Load { path, meta: &meta, groups: &groups, check };
    // The key column's parts (its groups' keys repeated) are made beside the splits: one more
    // item for a core that would otherwise wait on the last column.
    let columns: Vec<usize> = (0..schema.len()).filter(|&i| source.get(i).is_some_and(Option::is_some)).collect();
    let split = |&i: &usize| match i == key {
        true => Ok(groups.key_columns()),
        false => read.split_column(schema.get(i).ok_or_else(lost)?).map_err(fail),
    };
    let split = zepto_storage::par::try_map(&columns, split)?;
    let mut by_column: Vec<Option<Vec<Column>>> = schema.iter().map(|_| None).collect();
    for (i, parts) in columns.into_iter().zip(split) {
        *by_column.get_mut(i).ok_or_else(lost)? = Some(parts);
    }
    let mut out: Vec<Vec<Column>> = groups.sizes().iter().map(|_| Vec::with_capacity(schema.len())).collect();
    for (def, parts) in schema.iter().zip(by_column) {
        // Schema columns the file lacks read as NULL.
        let parts = parts.unwrap_or_else(|| groups.sizes().iter().map(|&n| Column::nulls(def.data_type, n)).collect());
        out.iter_mut().zip(parts).for_each(|(g, c)| g.push(c));
    }
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
    fn split_column(&self, def: &ColumnDef) -> Result<Vec<Column>, ReadFail> {
        let mut parts: ColumnSplit = self.groups.splitter(def.data_type);
        let opened = self.open(def)?;
        let dict = self.each_batch(def, opened, 0..self.groups.rows(), |data, validity, slots| {
            parts.push(data, validity, slots)
        })?;
        Ok(parts.finish(dict))
    }

    /// Decode `opened` (column `def`, file rows `rows`) a batch at a time, handing each
    /// batch to `take` with its rows' groups; the dictionary of a SYMBOL column's codes.
    fn each_batch(
        &self,
        def: &ColumnDef,
        opened: Opened,
        rows: Range<usize>,
        mut take: impl FnMut(&ColumnData, Option<&Bitmap>, &[u32]),
    ) -> Result<Option<Arc<Dict>>, ReadFail> {
        let Opened { reader, source, roots, .. } = opened;
        let defs = std::slice::from_ref(def);
        let mut acc = Acc::new(def, Sizes::DEFAULT.batch_rows);
        let mut at = rows.start;
        let uneven = |n: usize| {
            ReadFail::Io(format!("column '{}' has {n} rows where the key column has {}", def.name, rows.len()))
        };
        for batch in reader {
            let batch = batch.map_err(|e| ReadFail::Io(e.to_string()))?;
            let n = batch.num_rows();
            append_batch(std::slice::from_mut(&mut acc), defs, &source, at, |k| projected(&roots, &batch, k))?;
            let slots = self.groups.slots(at..at + n).filter(|_| at + n <= rows.end);
            let slots = slots.ok_or_else(|| uneven(at + n - rows.start))?;
            acc.drain(|data, validity| take(data, validity, slots));
            at += n;
            (self.check)().map_err(|m| ReadFail::Other(IoError::Stopped(m)))?;
        }
        if at != rows.end {
            return Err(uneven(at - rows.start));
        }
        Ok(match acc.finish().into_parts().0 {
            ColumnData::Symbol { dict, .. } => Some(dict),
            _ => None,
        })
    }
}
