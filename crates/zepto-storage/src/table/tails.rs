//! The last answer to "the last row of every partition" (`LATEST ON ts PARTITION BY key`),
//! kept beside the table so the next one reads only the partitions that changed since.
//!
//! Reading one row from each of 4,000 partitions' 21 columns is 84k cache misses, one column
//! buffer each, where the answer itself is 700 kB. A dashboard asks it every second while most
//! series have not reported since the last time. The memo holds the rows it answered (a column
//! each) and, per row, a [`Weak`] to the partition it came from.
//!
//! A memo row is valid exactly while its partition's allocation is the one the table holds:
//! a `Weak` keeps the allocation's address from being reused, and `Arc::make_mut` never
//! changes a partition in place while a `Weak` to it lives (it moves the partition to a new
//! allocation; `Arc::get_mut` refuses). So "same address, still alive" means "not changed
//! since", whatever the change (append, merge, UPDATE, DELETE, retention): no stamp to keep
//! in step with every writer. A writer pays one move of the partition's header (not its
//! columns) the first time it changes a remembered partition.

use super::Partition;
use crate::column::Column;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Rows a memo holds at most: past this many partitions the answer is not kept...
pub const TAIL_MEMO_MAX_ROWS: usize = 1 << 20;

/// ...nor past this many bytes of values (a table of many partitions with few rows each would
/// otherwise be copied whole).
pub const TAIL_MEMO_MAX_BYTES: usize = 64 << 20;

/// Rows answered earlier: `values[k]` is table column `columns[k]` of every row, row `r` being
/// the last valid row of the partition `rows` maps to `r`.
#[derive(Debug)]
pub struct TailMemo {
    dict_lineage: u64,
    columns: Vec<usize>,
    values: Vec<Column>,
    rows: HashMap<usize, (Weak<Partition>, u32)>,
}

impl TailMemo {
    /// A memo of `values` (table columns `columns`, coded in dictionary lineage
    /// `dict_lineage`), row `r` taken from `parts[r]`. Refused (`None`) when the lengths
    /// disagree, a partition appears twice, or it would pass [`TAIL_MEMO_MAX_ROWS`] rows or
    /// [`TAIL_MEMO_MAX_BYTES`].
    pub fn new(dict_lineage: u64, columns: Vec<usize>, values: Vec<Column>, parts: &[&Arc<Partition>]) -> Option<Self> {
        let fits = values.len() == columns.len() && values.iter().all(|v| v.len() == parts.len());
        let bytes: usize = values.iter().map(Column::data_bytes).sum();
        if !fits || parts.len() > TAIL_MEMO_MAX_ROWS || bytes > TAIL_MEMO_MAX_BYTES {
            return None;
        }
        let mut rows = HashMap::with_capacity(parts.len());
        for (r, p) in parts.iter().enumerate() {
            if rows.insert(Arc::as_ptr(p) as usize, (Arc::downgrade(p), r as u32)).is_some() {
                return None;
            }
        }
        Some(TailMemo { dict_lineage, columns, values, rows })
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether the memo answers for these table columns (a subset of its own, any order) in a
    /// table whose dictionary has lineage `dict_lineage`.
    pub fn serves(&self, dict_lineage: u64, columns: &[usize]) -> bool {
        dict_lineage == self.dict_lineage && columns.iter().all(|c| self.columns.contains(c))
    }

    /// Whether an answer of `columns` in dictionary lineage `dict_lineage` should take the
    /// memo's place: it holds every column the memo does (a narrower answer would leave the
    /// wider queries without one), or the memo is of another lineage.
    pub fn replaced_by(&self, dict_lineage: u64, columns: &[usize]) -> bool {
        dict_lineage != self.dict_lineage || self.columns.iter().all(|c| columns.contains(c))
    }

    /// The memo's values of table column `c`.
    pub fn column(&self, c: usize) -> Option<&Column> {
        self.columns.iter().position(|&k| k == c).map(|k| &self.values[k])
    }

    /// The memo row of partition `p`, while `p` is the very partition it was read from.
    pub fn row_of(&self, p: &Partition) -> Option<u32> {
        let (w, r) = self.rows.get(&(p as *const Partition as usize))?;
        (w.strong_count() > 0 && std::ptr::eq(w.as_ptr(), p)).then_some(*r)
    }
}

/// A table's memo slot, shared by its versions (rows are checked against the partitions each
/// version holds, so an older version's memo is merely less useful).
#[derive(Debug, Default, Clone)]
pub(super) struct TailSlot(Arc<Mutex<Option<Arc<TailMemo>>>>);

impl TailSlot {
    pub(super) fn get(&self) -> Option<Arc<TailMemo>> {
        self.0.lock().ok().and_then(|m| m.clone())
    }

    pub(super) fn put(&self, memo: TailMemo) {
        if let Ok(mut m) = self.0.lock() {
            *m = Some(Arc::new(memo));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TailMemo;
    use crate::column::{Column, ColumnData};
    use crate::table::Partition;
    use std::sync::Arc;

    fn part(ts: &[i64]) -> Arc<Partition> {
        Arc::new(Partition::in_time_order(
            vec![Arc::new(Column::from_data(ColumnData::Timestamp(ts.to_vec().into())))],
            None,
            Some(0),
        ))
    }

    /// A row stays valid while its partition is untouched, and not once a writer changed it,
    /// even when the writer held the only strong reference (no copy of the columns).
    #[test]
    fn a_row_lives_while_its_partition_is_unchanged() {
        let (mut a, b) = (part(&[1, 2]), part(&[5]));
        let last = Column::from_data(ColumnData::Timestamp(vec![2, 5].into()));
        let memo = TailMemo::new(7, vec![0], vec![last], &[&a, &b]).expect("a memo");
        assert_eq!((memo.row_of(&a), memo.row_of(&b)), (Some(0), Some(1)));
        assert!(memo.serves(7, &[0]) && !memo.serves(8, &[0]) && !memo.serves(7, &[1]));
        assert!(memo.replaced_by(7, &[1, 0]) && memo.replaced_by(8, &[1]) && !memo.replaced_by(7, &[1]));
        let before = Arc::as_ptr(&a);
        let p = Arc::make_mut(&mut a);
        assert!(!std::ptr::eq(p, before), "a remembered partition is moved, not changed in place");
        assert_eq!(memo.row_of(&a), None);
        assert_eq!(memo.row_of(&b), Some(1));
        assert!(TailMemo::new(
            7,
            vec![0],
            vec![Column::from_data(ColumnData::Timestamp(vec![2, 2].into()))],
            &[&b, &b]
        )
        .is_none());
    }
}
