//! Late rows merged into a partition's tail in place.
//!
//! Two clients writing interleaved time ranges (each sending its own run of batches, one
//! ahead of the other, as `bench/questdb.py`'s two senders do) deliver nearly every
//! partition's rows behind its last timestamp: in a 4,000-series load, 160k of 168k
//! partition appends. Such rows were copied out of the batch (a buffer per column), appended,
//! and the tail re-sorted through another buffer per column, three allocations per column per
//! partition. Here a partition's rows of the batch, already in time order
//! (`order_spans_by_time`), are merged with the tail they belong in: one merge plan per
//! partition from the timestamps, then per column the tail moved up and merged with the new
//! rows in place.
//!
//! The result is the one `sort_partition` gives: rows in time order, a tie keeping the rows
//! that were there first, then the new ones in batch order. Columns with NULLs, strings or
//! vectors take that general path instead ([`merge_picked`] says so by returning false).

use super::{new_lineage, Partition};
use crate::column::{Column, ColumnData};
use crate::dict::Dict;
use std::sync::Arc;

/// Merge rows `rows` of `batch` (in time order on column `ts`, as this partition's columns'
/// types) into partition `p`: true when done, false (and `p` untouched) when a column or the
/// timestamps hold NULLs, or a column is VARCHAR or a vector, or the types differ.
pub(super) fn merge_picked(p: &mut Partition, batch: &[Column], rows: &[u32], ts: usize, dict: &Arc<Dict>) -> bool {
    if !mergeable(p, batch) {
        return false;
    }
    let (Some(old), Some(new)) = (p.i64_values(ts), batch.get(ts).and_then(Column::as_i64_slice)) else {
        return false;
    };
    let Some((cut, plan)) = plan(old, new, rows) else { return false };
    for (dst, src) in p.own_mut().iter_mut().zip(batch) {
        let dst = super::column_mut(dst, rows.len());
        merge_column(dst.data_mut(), src.data(), rows, cut, &plan);
        if let ColumnData::Symbol { dict: d, .. } = dst.data_mut() {
            if !Arc::ptr_eq(d, dict) {
                *d = dict.clone();
            }
        }
    }
    p.recount();
    p.lineage = new_lineage();
    true
}

/// Every column fixed-width, of the same type in the batch, and without NULLs on both sides.
fn mergeable(p: &Partition, batch: &[Column]) -> bool {
    batch.iter().enumerate().all(|(c, src)| {
        let (dst, _) = p.source(c);
        let fixed = !matches!(dst.data(), ColumnData::Varchar(_) | ColumnData::Vector { .. } | ColumnData::Null(_));
        fixed && dst.data_type() == src.data_type() && dst.validity().is_none() && src.validity().is_none()
    })
}

/// Where the partition's tail starts (its first row after the earliest new one), and the
/// merge of that tail with the new rows: per output row from there, whether it is the next new
/// row. `None` when there are no new rows.
fn plan(old: &[i64], new: &[i64], rows: &[u32]) -> Option<(usize, Vec<bool>)> {
    let at = |j: usize| rows.get(j).and_then(|&r| new.get(r as usize)).copied();
    let first = at(0)?;
    let cut = old.partition_point(|&t| t <= first);
    let mut plan = Vec::with_capacity(old.len() - cut + rows.len());
    let (mut i, mut j) = (cut, 0);
    while i < old.len() || j < rows.len() {
        let take_old = match (old.get(i), at(j)) {
            (Some(&o), Some(n)) => o <= n,
            (Some(_), None) => true,
            _ => false,
        };
        plan.push(!take_old);
        if take_old {
            i += 1;
        } else {
            j += 1;
        }
    }
    Some((cut, plan))
}

/// One column: the tail from `cut` and the new rows merged in place as `plan` says.
fn merge_column(dst: &mut ColumnData, src: &ColumnData, rows: &[u32], cut: usize, plan: &[bool]) {
    use ColumnData as D;
    match (dst, src) {
        (D::Bool(a), D::Bool(b)) => merge_into(a.vec_mut(0), b, rows, cut, plan),
        (D::Int32(a), D::Int32(b)) | (D::Date(a), D::Date(b)) => merge_into(a.vec_mut(0), b, rows, cut, plan),
        (D::Int64(a), D::Int64(b)) | (D::Timestamp(a), D::Timestamp(b)) | (D::Interval(a), D::Interval(b)) => {
            merge_into(a.vec_mut(0), b, rows, cut, plan)
        }
        (D::Int128(a), D::Int128(b)) => merge_into(a.vec_mut(0), b, rows, cut, plan),
        (D::Float32(a), D::Float32(b)) => merge_into(a.vec_mut(0), b, rows, cut, plan),
        (D::Float64(a), D::Float64(b)) => merge_into(a.vec_mut(0), b, rows, cut, plan),
        (D::Symbol { codes: a, .. }, D::Symbol { codes: b, .. }) => merge_into(a.vec_mut(0), b, rows, cut, plan),
        (a, b) => unreachable!("merge of {:?} into {:?}: mergeable() admits neither", b.data_type(), a.data_type()),
    }
}

fn merge_into<T: Copy>(v: &mut Vec<T>, src: &[T], rows: &[u32], cut: usize, plan: &[bool]) {
    let (old_len, k) = (v.len(), rows.len());
    assert_eq!(cut + plan.len(), old_len + k, "a merge plan covers the tail and the new rows");
    // Room for the new rows, the old tail moved up by as many, then a forward merge into
    // cut..: the slot written, cut + (old rows taken) + (new rows taken), never passes the next
    // old row to read, cut + k + (old rows taken).
    v.extend(rows.iter().map(|&r| src[r as usize]));
    v.copy_within(cut..old_len, cut + k);
    let (mut i, mut j) = (cut + k, 0);
    for (w, &from_new) in (cut..).zip(plan) {
        if from_new {
            v[w] = src[rows[j] as usize];
            j += 1;
        } else {
            v[w] = v[i];
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift;

    /// The in-place merge equals a stable sort of old rows then new rows by time, whatever
    /// the overlap (none, partial, all new rows before every old one) and with ties.
    #[test]
    fn merges_as_a_stable_sort_would() {
        let mut rng = XorShift::new(11);
        for case in 0..500 {
            let n_old = rng.below(40) as usize;
            let n_new = 1 + rng.below(20) as usize;
            let span = 1 + rng.below(60) as i64;
            let mut old: Vec<i64> = (0..n_old).map(|_| rng.below(span as u64) as i64).collect();
            old.sort();
            // The batch holds other rows too: the partition's are `rows`, in time order.
            let batch: Vec<i64> = (0..n_new * 2).map(|_| rng.below(span as u64) as i64 + span / 3).collect();
            let mut rows: Vec<u32> = (0..n_new as u32).map(|k| k * 2 + (case % 2)).collect();
            rows.sort_by_key(|&r| batch[r as usize]);
            let (cut, plan) = plan(&old, &batch, &rows).expect("new rows");
            // Values tagged by origin: old row i is (t, i), new row r is (t, 1000 + r).
            let mut tagged: Vec<(i64, u32)> = old.iter().enumerate().map(|(i, &t)| (t, i as u32)).collect();
            let src: Vec<(i64, u32)> = batch.iter().enumerate().map(|(r, &t)| (t, 1000 + r as u32)).collect();
            let mut want = tagged.clone();
            want.extend(rows.iter().map(|&r| src[r as usize]));
            want.sort_by_key(|&(t, _)| t);
            merge_into(&mut tagged, &src, &rows, cut, &plan);
            assert_eq!(tagged, want, "case {case}: old {old:?}, new rows {rows:?} of {batch:?}");
            assert!(old[..cut].iter().all(|&t| t <= batch[rows[0] as usize]), "rows before the cut stay");
        }
    }
}
