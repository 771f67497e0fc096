//! Rows appended to partitions: a batch's columns (or picked rows of them) copied onto a
//! partition's columns, validity carried along, and time order kept or restored (rows that
//! follow a partition's last are pushed; others sorted and merged in).

use super::merge;
use super::partition::{is_sorted_with_nulls_first, sort_partition, time_key};
use super::picked::{gather, Picked};
use super::{Partition, NO_SLOT};
use crate::column::{Column, ColumnData};
use crate::dict::Dict;
use std::ops::Range;
use std::sync::Arc;

pub(super) fn append_column(dst: &mut Column, src: &Column) {
    let had_nulls = dst.validity().is_some() || src.validity().is_some();
    let old_len = dst.len();
    match (dst.data_mut(), src.data()) {
        (ColumnData::Bool(a), ColumnData::Bool(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Int32(a), ColumnData::Int32(b)) | (ColumnData::Date(a), ColumnData::Date(b)) => {
            a.extend_shared_from_slice(b)
        }
        (ColumnData::Int64(a), ColumnData::Int64(b))
        | (ColumnData::Timestamp(a), ColumnData::Timestamp(b))
        | (ColumnData::Interval(a), ColumnData::Interval(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Int128(a), ColumnData::Int128(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Float32(a), ColumnData::Float32(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Float64(a), ColumnData::Float64(b)) => a.extend_shared_from_slice(b),
        (ColumnData::Varchar(a), ColumnData::Varchar(b)) => a.append_all(b),
        (ColumnData::Symbol { codes: a, .. }, ColumnData::Symbol { codes: b, .. }) => a.extend_shared_from_slice(b),
        (ColumnData::Vector { dim: da, values: a }, ColumnData::Vector { dim: db, values: b }) if da == db => {
            a.extend_shared_from_slice(b)
        }
        (a, b) => panic!("append_column: {:?} into {:?} (validate() must reject this)", b.data_type(), a.data_type()),
    }
    if had_nulls {
        append_validity(dst, old_len, src, None);
    }
}

/// The validity tail of [`append_column`] / [`append_column_rows`]: `dst`'s bitmap (all set
/// for its first `old_len` rows if it had none) extended by `src`'s rows `rows` (all of them
/// when `None`).
pub(super) fn append_validity(dst: &mut Column, old_len: usize, src: &Column, rows: Option<&[u32]>) {
    let mut v = dst.validity_mut().take().unwrap_or_else(|| crate::Bitmap::new_set(old_len));
    match (src.validity(), rows) {
        (Some(s), None) => s.iter().for_each(|b| v.push(b)),
        (Some(s), Some(rows)) => rows.iter().for_each(|&i| v.push(s.get(i as usize))),
        (None, None) => v.extend_set(src.len()),
        (None, Some(rows)) => v.extend_set(rows.len()),
    }
    *dst = Column::new(std::mem::replace(dst.data_mut(), ColumnData::Null(0)), Some(v));
}

/// Each target's rows beside a mutable borrow of its partition (`targets` distinct slots of
/// `parts`), in slot order.
pub(super) fn targets_mut<'a, T>(
    parts: &'a mut [Arc<Partition>],
    targets: &[usize],
    rows: Vec<T>,
) -> Vec<(T, &'a mut Arc<Partition>)> {
    let mut by_slot: Vec<(usize, T)> = targets.iter().copied().zip(rows).collect();
    by_slot.sort_unstable_by_key(|(slot, _)| *slot);
    let mut rest = parts.iter_mut();
    let mut next = 0;
    by_slot
        .into_iter()
        .map(|(slot, cols)| {
            let p = rest.nth(slot - next).expect("a target is a slot of the table, each once");
            next = slot + 1;
            (cols, p)
        })
        .collect()
}

/// Each partition's span of `rows` (in time order: [`order_spans_by_time`]) appended to it:
/// copied straight onto its columns when the rows follow its last (the usual case), else
/// taken first and merged in. The columns of every partition the rows follow are all taken to
/// write (`column_mut`) before any row is copied: taking one is an atomic compare-exchange
/// (`Arc::get_mut`), which waits for every store before it to drain, and taken between
/// partitions' copies each waited for the copies before it (the copies of a 10k-row append
/// over 100 symbols took 5.2 ms a million rows, 4.9 taken first).
pub(super) fn append_picked_run(
    run: Vec<(Range<usize>, &mut Arc<Partition>)>,
    batch: &[Column],
    rows: &[u32],
    ts_col: Option<usize>,
    dict: &Arc<Dict>,
) {
    let (follow, rest): (Vec<_>, Vec<_>) =
        run.into_iter().partition(|(span, p)| follows(p, batch, &rows[span.clone()], ts_col));
    // Only a table with a designated timestamp has rows that do not follow.
    if let Some(t) = ts_col {
        for (span, p) in rest {
            merge_picked_rows(Arc::make_mut(p), batch, &rows[span], t, dict);
        }
    }
    let (spans, mut parts): (Vec<Range<usize>>, Vec<&mut Partition>) =
        follow.into_iter().map(|(span, p)| (span, Arc::make_mut(p))).unzip();
    let mut cols: Vec<&mut Column> = parts
        .iter_mut()
        .zip(&spans)
        .flat_map(|(p, span)| p.own_mut().iter_mut().map(|c| column_mut(c, span.len())))
        .collect();
    // Every partition has the table's columns, as the batch does (never none).
    let width = batch.len();
    assert!(width > 0 && cols.len() == spans.len() * width, "a partition's columns are the batch's");
    for (k, span) in spans.iter().enumerate() {
        // The next partition's columns are written next: their lines are asked for while
        // this one's rows are copied (each partition's end is a cold line of its own).
        if let (Some(next), Some(n)) = (cols.get(width * (k + 1)..width * (k + 2)), spans.get(k + 1)) {
            next.iter().for_each(|c| c.prefetch_room(n.len()));
        }
        append_columns_rows(&mut cols[width * k..width * (k + 1)], batch, &rows[span.clone()], dict);
    }
    drop(cols);
    parts.iter_mut().for_each(|p| p.recount());
}

/// Whether rows `rows` of `batch` (in time order, NULLs first) follow `p`'s last row in
/// time: appended as they are, they keep the partition in order.
pub(super) fn follows(p: &Partition, batch: &[Column], rows: &[u32], ts_col: Option<usize>) -> bool {
    let Some(t) = ts_col else { return true };
    let ts = &batch[t];
    let new_ts = ts.as_i64_slice().unwrap_or(&[]);
    let key = |i: u32| time_key(ts, new_ts, i as usize);
    debug_assert!(rows.windows(2).all(|w| key(w[0]) <= key(w[1])), "rows in time order");
    let last = p.i64_values(t).and_then(|v| v.last().copied()).unwrap_or(i64::MIN);
    // In time order with NULLs first: when the first row has a time, every row has one.
    rows.first().is_none_or(|&i| ts.is_valid(i as usize) && last <= new_ts[i as usize])
}

/// Rows `rows` of `batch` (in time order on column `t`) that do not follow `p`'s last row,
/// merged into its rows.
pub(super) fn merge_picked_rows(p: &mut Partition, batch: &[Column], rows: &[u32], t: usize, dict: &Arc<Dict>) {
    if !merge::merge_picked(p, batch, rows, t, dict) {
        append_rows(p, batch.iter().map(|c| c.take(rows)).collect(), Some(t), dict);
    }
}

/// Rows `rows` of each column of `batch` appended to the partition column beside it in `dst`,
/// SYMBOL columns then coding against `dict`.
pub(super) fn append_columns_rows(dst: &mut [&mut Column], batch: &[Column], rows: &[u32], dict: &Arc<Dict>) {
    // Checked once for every column: a batch's columns are all of its length.
    let rows = Picked::new(rows, batch.first().map_or(0, Column::len));
    for (dst, src) in dst.iter_mut().zip(batch) {
        append_column_rows(dst, src, rows);
        if let ColumnData::Symbol { dict: d, .. } = dst.data_mut() {
            // Only when the dictionary changed: the swap is two atomic operations on a count
            // every partition shares, per partition and symbol column of every batch.
            if !Arc::ptr_eq(d, dict) {
                *d = dict.clone();
            }
        }
    }
}

/// Whether every one of `codes` has a partition slot in `slots`, a chunk of rows at a time
/// without a branch per row.
pub(super) fn all_known(slots: &[u32], codes: &[u32]) -> bool {
    let known = |c: u32| slots.get(c as usize).is_some_and(|&s| s != NO_SLOT);
    codes.chunks(256).all(|ch| ch.iter().fold(true, |ok, &c| ok & known(c)))
}

/// Whether `v` never steps back, a chunk of rows at a time without a branch per row.
pub(super) fn never_steps_back(v: &[i64]) -> bool {
    // Chunk k of `v` beside chunk k of `v[1..]`: every row beside the next.
    let Some(next) = v.get(1..) else { return true };
    v.chunks(256).zip(next.chunks(256)).all(|(a, b)| a.iter().zip(b).fold(true, |ok, (x, y)| ok & (x <= y)))
}

/// Whether the times `ts` have no NULL and never step back.
pub(super) fn in_time_order(ts: &Column) -> bool {
    ts.validity().is_none() && never_steps_back(ts.as_i64_slice().unwrap_or(&[]))
}

/// Each partition's span of `rows` in time order (NULLs first, ties in batch order), as the
/// partition will hold them: rows of two clients' batches that arrived out of turn (the later
/// batch first) are then appended as they are, not copied out and sorted into each
/// partition's tail.
pub(super) fn order_spans_by_time(rows: &mut [u32], spans: &[std::ops::Range<usize>], ts: &Column) {
    let v = ts.as_i64_slice().unwrap_or(&[]);
    let key = |i: u32| time_key(ts, v, i as usize);
    for span in spans {
        if let Some(r) = rows.get_mut(span.clone()) {
            if !r.windows(2).all(|w| key(w[0]) <= key(w[1])) {
                r.sort_by_key(|&i| key(i));
            }
        }
    }
}

/// [`append_column`] of rows `picked` of `src`, in that order.
pub(super) fn append_column_rows(dst: &mut Column, src: &Column, picked: Picked<'_>) {
    let rows = picked.rows();
    let had_nulls = dst.validity().is_some() || src.validity().is_some();
    let old_len = dst.len();
    match (dst.data_mut(), src.data()) {
        (ColumnData::Bool(a), ColumnData::Bool(b)) => gather(a, b, picked),
        (ColumnData::Int32(a), ColumnData::Int32(b)) | (ColumnData::Date(a), ColumnData::Date(b)) => {
            gather(a, b, picked)
        }
        (ColumnData::Int64(a), ColumnData::Int64(b))
        | (ColumnData::Timestamp(a), ColumnData::Timestamp(b))
        | (ColumnData::Interval(a), ColumnData::Interval(b)) => gather(a, b, picked),
        (ColumnData::Int128(a), ColumnData::Int128(b)) => gather(a, b, picked),
        (ColumnData::Float32(a), ColumnData::Float32(b)) => gather(a, b, picked),
        (ColumnData::Float64(a), ColumnData::Float64(b)) => gather(a, b, picked),
        (ColumnData::Varchar(a), ColumnData::Varchar(b)) => a.append_picked(b, rows),
        (ColumnData::Symbol { codes: a, .. }, ColumnData::Symbol { codes: b, .. }) => gather(a, b, picked),
        (ColumnData::Vector { dim: da, values: a }, ColumnData::Vector { dim: db, values: b }) if da == db => {
            let d = *da as usize;
            rows.iter().for_each(|&i| a.extend_from_slice(&b[i as usize * d..(i as usize + 1) * d]));
        }
        (a, b) => {
            panic!("append_column_rows: {:?} into {:?} (validate() must reject this)", b.data_type(), a.data_type())
        }
    }
    if had_nulls {
        append_validity(dst, old_len, src, Some(rows));
    }
}

/// Below this many rows an append stays on the caller's thread (ingest batches are small and
/// latency-bound; starting helpers costs tens of microseconds).
pub(super) const PARALLEL_APPEND_ROWS: usize = 100_000;

/// From this many rows, a batch spread thin over many partitions fills them on every core...
/// (Helper threads cost a few hundred microseconds a call here: from 16Ki rows, 16-64Ki-row
/// inserts over 100 symbols ran at 14-22M rows/s against 34-37M on the caller alone. Batches
/// of 100k rows and more take `split_batch`'s path instead, unless they are thinner than
/// [`THIN_SPLIT_ROWS`].)
pub(super) const PARALLEL_SPREAD_ROWS: usize = 64 * 1024;

/// ...taking the partitions in about this many runs.
pub(super) const SPREAD_RUNS: usize = 64;

/// A batch with fewer rows than this a partition it touches, however many rows, is spread
/// ([`Table::append_spread`](super::Table::append_spread)) rather than split into a buffer per
/// partition: folds of 256Ki deferred rows over 100k partitions spent a third of their time
/// allocating those buffers.
pub(super) const THIN_SPLIT_ROWS: usize = 16;

/// Column `dst` to append `extra` rows to. One a reader still holds (a query, or a checkpoint
/// writing its snapshot: during a bulk load, every partition's columns) is copied with room
/// to grow: twice its rows, as a growing vector would have, so the copy is the only one (an
/// exact copy is copied again by the append right after, and page-faulted twice). The copy
/// shares its values (`buf.rs`): while readers hold it later, the appends go in place past the
/// rows they read, not into another copy.
pub(super) fn column_mut(dst: &mut Arc<Column>, extra: usize) -> &mut Column {
    if Arc::get_mut(dst).is_none() {
        let c = if dst.is_shared() {
            (**dst).clone()
        } else {
            let mut c = dst.copy_with_room(extra.max(dst.len()));
            c.share();
            c
        };
        *dst = Arc::new(c);
    }
    Arc::make_mut(dst)
}

/// Append `cols` (rows of `p`'s key) to partition `p`, keeping time order on `ts_col`: in-order
/// rows are pushed, others sorted and merged in.
pub(super) fn append_rows(p: &mut Partition, cols: Vec<Column>, ts_col: Option<usize>, dict: &Arc<Dict>) {
    let old_len = p.len();
    let in_order = match ts_col {
        None => true,
        Some(t) => {
            let new_ts = cols[t].as_i64_slice().unwrap_or(&[]);
            let old_ts = p.i64_values(t).unwrap_or(&[]);
            let nulls = cols[t].null_count() > 0;
            !nulls
                && new_ts.windows(2).all(|w| w[0] <= w[1])
                && old_ts.last().is_none_or(|&l| new_ts.first().is_none_or(|&f| l <= f))
        }
    };
    for (dst, src) in p.own_mut().iter_mut().zip(cols) {
        // An empty partition (a bulk load's first batch) takes the new rows as they are: no
        // second copy. Readers holding the old column keep it.
        let dst = if old_len == 0 && dst.data_type() == src.data_type() {
            *dst = Arc::new(src);
            Arc::make_mut(dst)
        } else {
            let dst = column_mut(dst, src.len());
            append_column(dst, &src);
            dst
        };
        if let ColumnData::Symbol { dict: d, .. } = dst.data_mut() {
            if !Arc::ptr_eq(d, dict) {
                *d = dict.clone();
            }
        }
    }
    p.recount();
    if !in_order {
        if let Some(t) = ts_col {
            sort_partition(p, t, old_len);
        }
    }
    debug_assert!(ts_col.is_none_or(|t| is_sorted_with_nulls_first(&p.own[t])));
}
