//! One partition: the rows of one partition key value, kept in designated-timestamp order.
//!
//! The order is an invariant of the type, not a flag: the fields are private to the table
//! module, the constructors sort or check, and only the table module mutates a partition, so
//! readers binary-search every partition.

use super::pack;
use crate::column::Column;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

/// Rows of one partition key value, sorted by the designated timestamp (if any).
#[derive(Debug, Clone)]
pub struct Partition {
    /// A loose partition's own columns. Shared so scans hand whole columns to queries without
    /// copying; a writer appends in place past the rows a query still holding a column reads
    /// ([`column_mut`](super::append::column_mut)), and copies a held column before any other
    /// change (`Arc::make_mut`). Equal lengths, rows in designated-timestamp order (NULLs
    /// first): every constructor makes it so, and only the table module mutates them. Empty
    /// while the partition is packed.
    pub(super) own: Vec<Arc<Column>>,
    /// A packed partition's rows: a range of columns it shares with other small partitions
    /// (`pack.rs`), in the same order. Whatever changes the partition unpacks it first
    /// ([`Partition::own_mut`]).
    pub(super) packed: Option<pack::Packed>,
    /// Dictionary code of the key, `None` for the NULL-key or the single partition.
    pub(super) key: Option<u32>,
    /// Identity of the row layout: row `i` of two partitions with the same lineage is the same
    /// row with the same values, as far as the shorter one reaches. Appending rows in time order
    /// at the end keeps it; anything that moves rows, removes rows or rewrites a vector value
    /// takes a new one ([`Partition::lineage`]).
    pub(super) lineage: u64,
    /// Rows (every column's length), kept beside the columns: a scan over 100k small
    /// partitions asks each its length, and the columns are two pointers further away.
    /// Whatever changes the columns' length calls [`Partition::recount`].
    pub(super) rows: usize,
}

/// Lineages handed out so far.
static NEXT_PARTITION_LINEAGE: AtomicU64 = AtomicU64::new(1);

pub(super) fn new_lineage() -> u64 {
    NEXT_PARTITION_LINEAGE.fetch_add(1, AtomicOrdering::Relaxed)
}

impl Partition {
    /// A partition of `columns` (equal lengths) for key code `key`, put in time order on
    /// `ts_col` (NULLs first) unless it already is: one check when it is, one sort when not.
    pub fn in_time_order(columns: Vec<Arc<Column>>, key: Option<u32>, ts_col: Option<usize>) -> Partition {
        let mut p = Partition::checked(columns, key);
        if let Some(t) = ts_col {
            if !is_sorted_with_nulls_first(&p.own[t]) {
                sort_partition(&mut p, t, 0);
            }
        }
        p
    }

    /// A partition of `columns` the caller has put in time order on `ts_col` (checked in debug
    /// builds; [`Partition::in_time_order`] checks always).
    pub fn time_sorted(columns: Vec<Arc<Column>>, key: Option<u32>, ts_col: Option<usize>) -> Partition {
        let p = Partition::checked(columns, key);
        debug_assert!(ts_col.is_none_or(|t| is_sorted_with_nulls_first(&p.own[t])), "a partition out of time order");
        p
    }

    /// Columns of equal length (a broken partition would misplace rows in every scan).
    pub(super) fn checked(columns: Vec<Arc<Column>>, key: Option<u32>) -> Partition {
        let n = columns.first().map_or(0, |c| c.len());
        assert!(columns.iter().all(|c| c.len() == n), "partition columns of unequal lengths");
        Partition::raw(columns, key)
    }

    /// A partition of `columns` as they are (equal lengths), with a new lineage.
    pub(super) fn raw(columns: Vec<Arc<Column>>, key: Option<u32>) -> Partition {
        let rows = columns.first().map_or(0, |c| c.len());
        let mut p = Partition { own: columns, packed: None, key, lineage: new_lineage(), rows };
        p.share_own();
        p
    }

    /// Take the columns' length as the row count, after a change of it (of a loose partition).
    pub(super) fn recount(&mut self) {
        debug_assert!(self.packed.is_none(), "a packed partition does not change");
        self.rows = self.own.first().map_or(0, |c| c.len());
        self.share_own();
    }

    /// Share the values of the columns no reader holds yet (a held one is shared already, by
    /// [`column_mut`](super::append::column_mut)): a scan hands them to queries whole, and
    /// what a query learns of their blocks ([`crate::summary`]) is kept for the next one.
    pub(super) fn share_own(&mut self) {
        self.own.iter_mut().filter_map(Arc::get_mut).for_each(|c| c.share());
    }

    /// The partition's own columns, to change: a packed partition first copies its rows out
    /// of the pack (same rows, same order: the lineage stays).
    pub(super) fn own_mut(&mut self) -> &mut Vec<Arc<Column>> {
        if let Some(pk) = self.packed.take() {
            self.own = pk.unpack(self.rows);
        }
        &mut self.own
    }

    /// The layout identity: equal for two versions of a partition when one only appended rows
    /// in time order to the other, so a structure keyed by row position (a vector index) built
    /// on one version is valid for the other's first rows. Any other change (an out-of-order
    /// append that merges, a DELETE, dropping old rows, an UPDATE of a vector column) gives a
    /// new lineage; an UPDATE of other columns keeps it.
    pub fn lineage(&self) -> u64 {
        self.lineage
    }

    /// The partition's columns, in schema order: shared when it is loose, copied out of the
    /// pack when it is packed (a small partition, see `pack.rs`). Scans over many partitions
    /// read [`Partition::source`] instead.
    pub fn columns(&self) -> Cow<'_, [Arc<Column>]> {
        match &self.packed {
            None => Cow::Borrowed(&self.own),
            Some(pk) => Cow::Owned(pk.unpack(self.rows)),
        }
    }

    /// Where column `c`'s rows live: a column and the position of the partition's first row in
    /// it (0 for a loose partition; packed partitions share their columns). The rows are
    /// `at..at + len()`.
    pub fn source(&self, c: usize) -> (&Column, usize) {
        match &self.packed {
            None => (&self.own[c], 0),
            Some(pk) => pk.column(c),
        }
    }

    /// The values of INTEGER-64 column `c` (a timestamp, say) in the partition's rows, in place.
    pub fn i64_values(&self, c: usize) -> Option<&[i64]> {
        let (col, at) = self.source(c);
        col.as_i64_slice().map(|v| &v[at..at + self.rows])
    }

    /// Whether row `i` of column `c` holds a value.
    pub fn is_valid(&self, c: usize, i: usize) -> bool {
        let (col, at) = self.source(c);
        col.is_valid(at + i)
    }

    /// Whether the partition's rows live in a pack shared with other small partitions.
    pub fn is_packed(&self) -> bool {
        self.packed.is_some()
    }

    /// A packed partition's pack: the columns it shares with other small partitions (whole,
    /// every partition of the pack and rows no partition holds any longer) and where its own
    /// rows start in them; `None` for a loose partition. Pack columns are never changed, so a
    /// scan that covers every row of a pack may hand them out as they are.
    pub fn pack(&self) -> Option<(&[Arc<Column>], usize)> {
        self.packed.as_ref().map(pack::Packed::columns)
    }

    /// Dictionary code of the key, `None` for the NULL-key or the single partition.
    pub fn key(&self) -> Option<u32> {
        self.key
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        debug_assert!(
            self.packed.is_some() || self.rows == self.own.first().map_or(0, |c| c.len()),
            "a partition's row count is stale"
        );
        self.rows
    }

    /// True when the partition holds no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Remove rows `rows` (ascending positions inside the partition); a new lineage.
    pub(super) fn remove_rows(&mut self, rows: &[u32]) {
        let mut keep = Vec::with_capacity(self.len() - rows.len());
        let mut it = rows.iter().peekable();
        for i in 0..self.len() as u32 {
            if it.peek() == Some(&&i) {
                it.next();
            } else {
                keep.push(i);
            }
        }
        for c in self.own_mut() {
            *c = Arc::new(c.take(&keep));
        }
        self.recount();
        self.lineage = new_lineage();
    }

    /// How many rows lead with a NULL in `ts_col` (the designated timestamp: NULLs sort first),
    /// by binary search.
    pub fn null_prefix(&self, ts_col: usize) -> usize {
        let (col, at) = self.source(ts_col);
        let Some(v) = col.validity() else { return 0 };
        let (mut l, mut r) = (0usize, self.len());
        while l < r {
            let m = (l + r) / 2;
            if v.get(at + m) {
                r = m;
            } else {
                l = m + 1;
            }
        }
        l
    }

    /// Rows whose timestamp column `ts_col` lies in `[lo, hi]` (inclusive), by binary search.
    /// `ts_col` must be the designated timestamp (the order every partition keeps).
    pub fn ts_range(&self, ts_col: usize, lo: i64, hi: i64) -> Range<usize> {
        let Some(ts) = self.i64_values(ts_col) else {
            return 0..self.len();
        };
        // A range past the partition's last time (a query for the newest rows over thousands
        // of partitions) is told by one read, not two searches. NULL slots read 0 but sort
        // first, so the last value is a time unless every row is NULL (then nothing is kept
        // either way).
        if ts.last().is_none_or(|&t| t < lo) {
            return self.len()..self.len();
        }
        // NULL timestamps sort first and never satisfy a range: skip them.
        let nulls = self.null_prefix(ts_col);
        let ts = &ts[nulls..];
        let a = ts.partition_point(|&t| t < lo);
        let b = ts.partition_point(|&t| t <= hi);
        nulls + a..nulls + b.max(a)
    }
}

/// Timestamp order as the append path keeps it: NULLs first, then non-decreasing values.
pub(super) fn is_sorted_with_nulls_first(c: &Column) -> bool {
    let Some(v) = c.as_i64_slice() else { return true };
    let nulls = (0..v.len()).take_while(|&i| !c.is_valid(i)).count();
    (nulls..v.len()).all(|i| c.is_valid(i)) && v[nulls..].windows(2).all(|w| w[0] <= w[1])
}

/// Row `i`'s place in time order on timestamp column `col` (its values `v`): NULLs first.
pub(super) fn time_key(col: &Column, v: &[i64], i: usize) -> (u8, i64) {
    match (col.is_valid(i), v.get(i)) {
        (true, Some(&t)) => (1, t),
        _ => (0, 0),
    }
}

/// Restore time order after appending rows `old_len..` that broke it: sort the new rows
/// (stable) and merge them with the sorted prefix. NULL timestamps sort first.
pub(super) fn sort_partition(p: &mut Partition, ts_col: usize, old_len: usize) {
    p.lineage = new_lineage();
    let col = &p.own_mut()[ts_col];
    let ts = col.as_i64_slice().unwrap_or(&[]);
    let key = |i: usize| time_key(col, ts, i);
    let mut new_rows: Vec<u32> = (old_len as u32..ts.len() as u32).collect();
    new_rows.sort_by_key(|&i| key(i as usize));
    // Old rows up to the first that sorts after the earliest new row stay where they are: late
    // rows (a batch that lost a race with the next one) rewrite only the partition's tail.
    let first = new_rows.first().map_or((2, 0), |&i| key(i as usize));
    let (mut lo, mut hi) = (0, old_len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if key(mid) <= first {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let cut = lo;
    let mut order = Vec::with_capacity(ts.len() - cut);
    let (mut i, mut j) = (cut, 0usize);
    while i < old_len || j < new_rows.len() {
        let take_old = j >= new_rows.len() || (i < old_len && key(i) <= key(new_rows[j] as usize));
        if take_old {
            order.push(i as u32);
            i += 1;
        } else {
            order.push(new_rows[j]);
            j += 1;
        }
    }
    for c in p.own_mut() {
        Arc::make_mut(c).reorder_tail(cut, &order);
    }
}
