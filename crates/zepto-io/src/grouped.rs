//! Rows read grouped by a table's partition key, for a bulk load (a Parquet file,
//! `parquet_grouped.rs`; an Arrow stream, [`crate::ipc::read_batches_grouped`]).
//!
//! Read whole, a load's columns would each be held once as decoded and again as split among
//! the partitions: every value written and page-faulted twice. Grouped, the key column is read
//! first ([`KeyGroups`]); every other column is then split among the groups a batch at a time
//! as it is converted ([`Splitter`]), into buffers sized exactly up front, so no column is ever
//! whole. Columns are split on every core, and the key column's parts (each group's key
//! repeated) are made beside them.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::arrow::Acc;
use crate::IoError;
use arrow_array::Array;
use zepto_storage::{Column, ColumnDef, ColumnSplit, Dict, KeyGroups};

/// One column's arrays, in row order, split among the groups as they come.
pub(crate) struct Splitter<'g> {
    def: &'g ColumnDef,
    acc: Acc,
    parts: ColumnSplit,
    groups: &'g KeyGroups,
    /// Rows taken so far.
    at: usize,
}

impl<'g> Splitter<'g> {
    /// A split of column `def` among `groups`, its SYMBOL strings coded against `dict` (a
    /// version of the table's dictionary) when given.
    pub(crate) fn new(def: &'g ColumnDef, groups: &'g KeyGroups, dict: Option<&Dict>, batch_rows: usize) -> Self {
        let acc = Acc::new_in(def, batch_rows, dict);
        Splitter { def, acc, parts: groups.splitter(def.data_type), groups, at: 0 }
    }

    /// The column's next rows, cut where the groups' ordered chunks end (a Parquet batch is
    /// one already; an Arrow table's batches are any size), so that whole chunks split in
    /// their group order.
    pub(crate) fn push(&mut self, arr: &dyn Array) -> Result<(), IoError> {
        let n = arr.len();
        let mut off = 0;
        while off < n {
            let len = self.groups.chunk_end(self.at).saturating_sub(self.at).clamp(1, n - off);
            if len == n {
                self.push_piece(arr)?;
            } else {
                self.push_piece(arr.slice(off, len).as_ref())?;
            }
            off += len;
        }
        Ok(())
    }

    /// Rows of the column's next array, split.
    fn push_piece(&mut self, arr: &dyn Array) -> Result<(), IoError> {
        let n = arr.len();
        let slots = self.groups.slots(self.at..self.at + n).ok_or_else(|| self.uneven(self.at + n))?;
        // Values stored as they arrive are split from the array itself: no copy between.
        let plain = crate::arrow::plain_values(arr, self.def.data_type);
        let order = self.groups.order(self.at..self.at + n);
        if !plain.is_some_and(|v| self.parts.push_plain(v, slots, order)) {
            self.acc.append(arr, self.at).map_err(|e| e.into_io(self.def, arr.data_type()))?;
            let parts = &mut self.parts;
            self.acc.drain(|data, validity| parts.push(data, validity, slots, order));
        }
        self.at += n;
        Ok(())
    }

    /// The column's parts, one per group; an error unless it had the key column's rows.
    pub(crate) fn finish(self) -> Result<Vec<Column>, IoError> {
        if self.at != self.groups.rows() {
            return Err(self.uneven(self.at));
        }
        let dict = self.acc.finish().symbol_dict().cloned();
        Ok(self.parts.finish(dict))
    }

    fn uneven(&self, rows: usize) -> IoError {
        let (name, key) = (&self.def.name, self.groups.rows());
        IoError::Invalid(format!("column '{name}' has {rows} rows where the key column has {key}"))
    }
}

/// The rows of each group as columns in `schema` order, from each column's parts
/// (`by_column[i]`; NULLs where a column had no source).
pub(crate) fn into_groups(
    schema: &[ColumnDef],
    groups: &KeyGroups,
    by_column: Vec<Option<Vec<Column>>>,
) -> Vec<Vec<Column>> {
    let mut out: Vec<Vec<Column>> = groups.sizes().iter().map(|_| Vec::with_capacity(schema.len())).collect();
    for (def, parts) in schema.iter().zip(by_column) {
        let parts = parts.unwrap_or_else(|| groups.null_columns(def.data_type));
        out.iter_mut().zip(parts).for_each(|(g, c)| g.push(c));
    }
    out
}

/// Schema indexes `columns` heaviest first by `bytes` (ties in schema order; `bytes` called
/// once a column): the order cores should take them in ([`split_columns`]), the longest first
/// so that no core starts one late.
pub(crate) fn heaviest_first(mut columns: Vec<usize>, bytes: impl Fn(usize) -> usize) -> Vec<usize> {
    columns.sort_by_cached_key(|&i| std::cmp::Reverse(bytes(i)));
    columns
}

/// Each of `columns` (schema indexes with a source, heaviest first: [`heaviest_first`]) split
/// among `groups` by `split`, on every core, the key column (`key`) as its groups' keys: column
/// `i`'s parts at `by_column[i]`. Of several columns that fail, the error is the first one's in
/// that order.
pub(crate) fn split_columns<E: Send>(
    width: usize,
    columns: &[usize],
    key: usize,
    groups: &KeyGroups,
    split: impl Fn(usize) -> Result<Vec<Column>, E> + Sync,
) -> Result<Vec<Option<Vec<Column>>>, E> {
    let one = |&i: &usize| if i == key { Ok(groups.key_columns()) } else { split(i) };
    // Cores take the items one at a time in `columns`' order (with pinned query cores, the
    // pool's threads share them out instead): the key column's parts (a fill, the lightest
    // item) go last, for whichever core frees first. Taken early (the key is the benchmark
    // tables' second column), a core finished them at once and went on to a decoded column
    // while the other still had the heaviest: 10M + 10M-row Parquet loads took 0.404 s against
    // 0.430 (median of ten alternated runs; 0.419 against 0.446 in ten more).
    let columns = match columns.contains(&key) {
        true => columns.iter().copied().filter(|&i| i != key).chain([key]).collect(),
        false => columns.to_vec(),
    };
    let parts = zepto_storage::par::try_map(&columns, one)?;
    let mut by_column: Vec<Option<Vec<Column>>> = (0..width).map(|_| None).collect();
    for (&i, p) in columns.iter().zip(parts) {
        if let Some(slot) = by_column.get_mut(i) {
            *slot = Some(p);
        }
    }
    Ok(by_column)
}

#[cfg(test)]
mod tests {
    use super::heaviest_first;

    #[test]
    fn columns_go_heaviest_first_ties_in_schema_order() {
        let bytes = [5usize, 40, 5, 0, 40, 7];
        assert_eq!(heaviest_first(vec![0, 1, 2, 3, 4, 5], |i| bytes[i]), vec![1, 4, 5, 0, 2, 3]);
        assert_eq!(heaviest_first(vec![5, 2, 0], |i| bytes[i]), vec![5, 2, 0]);
        assert!(heaviest_first(Vec::new(), |i| bytes[i]).is_empty());
    }
}
