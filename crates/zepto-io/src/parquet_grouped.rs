//! A Parquet file read with its rows grouped by a table's partition key, for a bulk load
//! (`grouped.rs` says why). Each column gets a reader of its own, on its own core.
//!
//! (Splitting one column from several runs of row groups at once, each writing its own
//! stretch of every group, was measured twice. With zeroed buffers, a 10M-row load was
//! 0.1-0.2 s slower, the zeroing costing more than the better balance gained. With stretches
//! written once, uninitialized until then (2026-12-02): no change beyond the noise on two
//! cores, for the benchmark's trades and quotes and for a table of one value column. A split
//! spends a third of its time in page faults on its fresh buffers, about one per 4 KiB
//! written; faults do scale with cores (700 MiB touched in 0.25-0.29 s on one thread,
//! 0.134-0.137 s on two, 2026-12-07), so what a split needs is both cores busy to its end:
//! columns go heaviest first, `grouped.rs`.)
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::grouped::{heaviest_first, into_groups, split_columns, Splitter};
use crate::parquet::{file_err, open_reader, projected, read_with, Opened, ReadFail, Sizes};
use crate::{Check, IoError};
use ::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, ColumnDef, DataType, Dict, KeyGroups, Span};

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
    drop(file);
    let Some(groups) = KeyGroups::of(read_keys(path, &meta, key_def, check)?) else { return Ok(None) };
    let read = Load { path, meta: &meta, groups: &groups, check };
    let columns: Vec<usize> = (0..schema.len()).filter(|&i| source.get(i).is_some_and(Option::is_some)).collect();
    let stored = stored_bytes(&meta);
    let columns =
        heaviest_first(columns, |i| source.get(i).copied().flatten().and_then(|k| stored.get(k).copied()).unwrap_or(0));
    let split = |i: usize| read.split_column(schema.get(i).ok_or_else(lost)?);
    let by_column = split_columns(schema.len(), &columns, key, &groups, split)?;
    let out = into_groups(schema, &groups, by_column);
    Ok(Some(out))
}

/// The bytes the file holds for each of its top-level columns (every leaf under it), compressed
/// and uncompressed, over all row groups: about what reading, decompressing and decoding it
/// costs. Indexed as the file's Arrow fields are; sums saturate (the footer's word).
fn stored_bytes(meta: &ArrowReaderMetadata) -> Vec<usize> {
    let descr = meta.metadata().file_metadata().schema_descr();
    let mut bytes = vec![0usize; descr.root_schema().get_fields().len()];
    let leaves = meta.metadata().row_groups().iter().flat_map(|g| g.columns().iter().enumerate());
    for (j, c) in leaves.filter(|&(j, _)| j < descr.num_columns()) {
        let b = usize::try_from(c.compressed_size().saturating_add(c.uncompressed_size())).unwrap_or(0);
        if let Some(root) = bytes.get_mut(descr.get_column_root_idx(j)) {
            *root = root.saturating_add(b);
        }
    }
    bytes
}

/// The key column, read on every core: the file's row groups in as many runs as there are
/// threads, each run read on its own, then joined into one column coded against one
/// dictionary whose strings come in order of first row, as one read's would (each run's
/// dictionary is in its own order of first row: its strings are interned run after run).
fn read_keys(path: &Path, meta: &ArrowReaderMetadata, def: &ColumnDef, check: Check) -> Result<Column, IoError> {
    read_keys_in(path, meta, def, zepto_storage::par::threads(), check)
}

/// [`read_keys`] in at most `n` runs.
fn read_keys_in(
    path: &Path,
    meta: &ArrowReaderMetadata,
    def: &ColumnDef,
    n: usize,
    check: Check,
) -> Result<Column, IoError> {
    let sizes = meta.metadata().row_groups().iter().map(|g| usize::try_from(g.num_rows()).unwrap_or(0));
    let runs = row_group_runs(sizes.collect(), n);
    let one = |rgs: &Option<Vec<usize>>| -> Result<Column, IoError> {
        let file = File::open(path).map_err(|e| file_err(path, e))?;
        read_with(file, meta.clone(), std::slice::from_ref(def), rgs.clone(), Sizes::DEFAULT, check)
            .map_err(|e| e.in_file(path))?
            .pop()
            .ok_or_else(lost)
    };
    let mut parts = zepto_storage::par::try_map(&runs, one)?;
    if parts.len() == 1 {
        return parts.pop().ok_or_else(lost);
    }
    join_keys(&parts)
}

/// Row groups of `rows[g]` rows each cut into at most `n` runs of neighbours holding about
/// as many rows each; one run of all (`None`) when there is nothing to share.
fn row_group_runs(rows: Vec<usize>, n: usize) -> Vec<Option<Vec<usize>>> {
    let total: usize = rows.iter().sum();
    if n < 2 || rows.len() < 2 || total == 0 {
        return vec![None];
    }
    let mut runs: Vec<Option<Vec<usize>>> = Vec::new();
    let (mut run, mut seen) = (Vec::new(), 0usize);
    for (g, &k) in rows.iter().enumerate() {
        run.push(g);
        seen += k;
        // Close the run once it reaches its share of the rows (the last takes the rest).
        if runs.len() + 1 < n && seen.saturating_mul(n) >= total.saturating_mul(runs.len() + 1) {
            runs.push(Some(std::mem::take(&mut run)));
        }
    }
    if !run.is_empty() {
        runs.push(Some(run));
    }
    runs
}

/// Symbol columns read from neighbouring runs of a file, one after another, coded against the
/// first one's dictionary grown by each later one's strings in turn. Without NULLs (a key
/// column's usual case) the codes are joined on every core ([`join_codes`]).
fn join_keys(parts: &[Column]) -> Result<Column, IoError> {
    let sources = parts.iter().map(symbols).collect::<Result<Vec<_>, IoError>>()?;
    let mut dict = (**sources.first().ok_or_else(lost)?.1).clone();
    let mut remaps: Vec<Option<Vec<u32>>> = vec![None];
    for (_, own) in sources.iter().skip(1) {
        remaps.push(Some((0..own.len() as u32).map(|c| dict.intern(own.get(c))).collect()));
    }
    let dict = Arc::new(dict);
    if parts.iter().any(|p| p.validity().is_some()) {
        let spans: Vec<Span<'_>> =
            parts.iter().zip(&remaps).map(|(col, m)| Span { col, rows: 0..col.len(), remap: m.as_deref() }).collect();
        return Column::concat_spans(DataType::Symbol, Some(&dict), &spans).map_err(IoError::Invalid);
    }
    let codes = sources.iter().map(|(c, _)| *c).zip(remaps.iter().map(Option::as_deref));
    Ok(Column::new(ColumnData::Symbol { codes: (join_codes(codes)?).into(), dict }, None))
}

/// A SYMBOL column's codes and dictionary.
fn symbols(c: &Column) -> Result<(&[u32], &Arc<Dict>), IoError> {
    match c.data() {
        ColumnData::Symbol { codes, dict } => Ok((codes, dict)),
        _ => Err(IoError::Invalid("a key column that is not SYMBOL".into())),
    }
}

/// Runs of codes one after another, each mapped through its remap (none: as they are), as
/// [`Column::concat_spans`] joins them but each run into its own stretch of the result on a
/// core of its own (10M keys took 6 ms on one). A code outside its remap is an error, as there.
fn join_codes<'a>(runs: impl Iterator<Item = (&'a [u32], Option<&'a [u32]>)>) -> Result<Vec<u32>, IoError> {
    let runs: Vec<_> = runs.collect();
    let mut joined = vec![0u32; runs.iter().map(|(c, _)| c.len()).sum()];
    // Written once on every core and freed after the split: small pages (`small_pages`).
    zepto_storage::mem::small_pages(&joined);
    let mut stretches = Vec::with_capacity(runs.len());
    let mut rest = joined.as_mut_slice();
    for (src, remap) in runs {
        let (mine, after) = rest.split_at_mut(src.len());
        stretches.push((mine, src, remap));
        rest = after;
    }
    let outside = AtomicBool::new(false);
    zepto_storage::par::for_each(stretches, |(out, src, remap)| match remap {
        None => out.copy_from_slice(src),
        Some(m) => out.iter_mut().zip(src).for_each(|(o, &c)| match m.get(c as usize) {
            Some(&to) => *o = to,
            None => outside.store(true, Ordering::Relaxed),
        }),
    });
    if outside.into_inner() {
        return Err(IoError::Invalid("symbol code outside its remap".into()));
    }
    Ok(joined)
}

/// The key column `def` of the Parquet file at `path` as a grouped read reads it, in at most
/// `n` runs of row groups (for tests that choose the runs whatever the core count).
#[cfg(test)]
pub(crate) fn key_column_in_runs(path: &Path, def: &ColumnDef, n: usize) -> Result<Column, IoError> {
    let file = File::open(path).map_err(|e| file_err(path, e))?;
    let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| file_err(path, e))?;
    read_keys_in(path, &meta, def, n, &crate::unchecked)
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

#[cfg(test)]
mod tests {
    use super::row_group_runs;

    #[test]
    fn row_groups_are_cut_into_runs_of_about_equal_rows() {
        let all =
            |runs: &[Option<Vec<usize>>]| runs.iter().flat_map(|r| r.clone().unwrap_or_default()).collect::<Vec<_>>();
        assert_eq!(row_group_runs(vec![10; 10], 2), vec![Some((0..5).collect()), Some((5..10).collect())]);
        assert_eq!(row_group_runs(vec![100, 1, 1, 1], 2), vec![Some(vec![0]), Some(vec![1, 2, 3])]);
        assert_eq!(row_group_runs(vec![5; 7], 3).len(), 3);
        assert_eq!(all(&row_group_runs(vec![5; 7], 3)), (0..7).collect::<Vec<_>>());
        assert_eq!(all(&row_group_runs(vec![0, 0, 9], 4)), vec![0, 1, 2]);
        for (rows, n) in [(vec![7], 2), (vec![1, 2], 1), (vec![0, 0], 2), (vec![], 2)] {
            assert_eq!(row_group_runs(rows, n), vec![None], "nothing to share");
        }
    }
}
