//! A view's rows kept between reads, for views whose plan above the aggregate makes one row of
//! each group on its own: projections of row-local expressions (`BExpr::is_row_local`), and a
//! SAMPLE BY without FILL, which only orders the buckets (and drops a NULL one). A read after
//! writes that changed a few groups computes those groups' rows alone and patches them into
//! the rows kept; the general read runs the whole plan over every group again.
//!
//! The rows are kept as the view's table holds them: sorted by its first TIMESTAMP column
//! (NULLs first), then by group, each group's row known. A patch keeps that order without
//! sorting: a changed group's row keeps its place if it keeps its time (else the rows are
//! built again from every group, and sorted); new groups' rows are appended when they come
//! after every row (the usual case: buckets are time), and merged in by time otherwise (a
//! late row opening a bucket of its own), one pass over the rows.

use crate::error::Result;
use crate::eval::Batch;
use crate::exec::ExecContext;
use crate::expr::BExpr;
use crate::plan::Plan;
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, DataType, Dict, Partition, Schema, Table};

/// The plan above a view's aggregate, when it makes one row per group (see the module docs).
pub(crate) struct RowWise {
    /// Each projection's expressions, the one over the groups first.
    projections: Vec<Vec<BExpr>>,
    /// A SAMPLE BY's bucket (a column of the groups): a group whose bucket is NULL has no row.
    bucket: Option<usize>,
}

impl RowWise {
    /// The row-wise form of `top`, which reads every column of `groups`, if it has one.
    pub(crate) fn of(top: &Plan, groups: &Arc<Table>) -> Option<RowWise> {
        let mut projections = Vec::new();
        let mut bucket = None;
        let mut p = top;
        loop {
            match p {
                Plan::Project { input, exprs } if exprs.iter().all(BExpr::is_row_local) => {
                    projections.push(exprs.clone());
                    p = input;
                }
                Plan::Fill { input, spec } if !spec.fills() && bucket.is_none() && is_groups(input, groups) => {
                    bucket = Some(spec.bucket);
                    p = input;
                }
                p if is_groups(p, groups) => break,
                _ => return None,
            }
        }
        projections.reverse();
        Some(RowWise { projections, bucket })
    }

    /// The row of each group of `groups` (keys, then results), in order; `None` when one has
    /// no row (a NULL bucket).
    pub(crate) fn rows(&self, ctx: &ExecContext, groups: &Batch) -> Result<Option<Batch>> {
        if let Some(b) = self.bucket {
            if groups.columns.get(b).is_none_or(|c| c.null_count() > 0) {
                return Ok(None);
            }
        }
        let mut b = groups.clone();
        for exprs in &self.projections {
            b = crate::exec::project(ctx, &b, exprs)?;
        }
        Ok(Some(b))
    }
}

/// `b`'s columns held by `b` alone (copied when shared, as the groups' keys and results are:
/// a later patch then changes them in place), with the zero value in every NULL slot as a
/// table's columns hold them (a result may hold anything there: `first` of a group of NULLs
/// takes another row's code).
fn owned(mut b: Batch) -> Batch {
    for c in &mut b.columns {
        let c = Arc::make_mut(c);
        if c.null_count() > 0 {
            c.zero_nulls();
        }
    }
    b
}

/// Row `i` of a TIMESTAMP column (`None`: NULL).
fn time_at(c: &Column, i: usize) -> Option<i64> {
    c.is_valid(i).then(|| c.as_i64_slice().and_then(|v| v.get(i).copied())).flatten()
}

/// Whether `p` scans every column of `groups`, unfiltered.
fn is_groups(p: &Plan, groups: &Arc<Table>) -> bool {
    matches!(p, Plan::Scan { table, columns, range }
        if Arc::ptr_eq(table, groups)
            && columns.iter().copied().eq(0..groups.schema().columns.len())
            && *range == Default::default())
}

/// A view's rows, sorted as its table holds them, with each group's row.
pub(crate) struct Kept {
    columns: Vec<Arc<Column>>,
    rows: usize,
    /// The row of each group.
    row_of: Vec<u32>,
    /// The column the table sorts by (its first TIMESTAMP column), if any.
    ts: Option<usize>,
}

impl Kept {
    /// The rows of every group (row `g` is group `g`'s), sorted by column `ts`.
    pub(crate) fn new(rows: Batch, ts: Option<usize>) -> Kept {
        let n = rows.rows;
        let mut order: Vec<u32> = (0..n as u32).collect();
        if let Some(c) = ts.and_then(|t| rows.columns.get(t)) {
            order.sort_by_key(|&i| time_at(c, i as usize));
        }
        let mut row_of = vec![0u32; n];
        for (r, &g) in order.iter().enumerate() {
            row_of[g as usize] = r as u32;
        }
        let sorted = order.iter().enumerate().all(|(r, &g)| r as u32 == g);
        // One copy either way: the sorted rows are new columns already.
        let columns = owned(if sorted { rows } else { rows.take(&order) }).columns;
        Kept { columns, rows: n, row_of, ts }
    }

    /// Put in `part`'s rows (row `j` is group `ids[j]`'s: groups kept, then new ones in
    /// order), or say `false` and change nothing when that would move a kept row (its time
    /// changed). New rows are appended, or merged in by time when one comes before the last.
    pub(crate) fn patch(&mut self, ids: &[u32], part: Batch) -> bool {
        if part.columns.len() != self.columns.len() || part.rows != ids.len() {
            return false;
        }
        let Some((at, late)) = self.places(ids, &part) else { return false };
        let part = owned(part);
        let fresh = ids.len() - at.len();
        if late {
            let (index, row_of) = self.merged(&at, ids, &part);
            for (kept, new) in self.columns.iter_mut().zip(&part.columns) {
                *kept = Arc::new(Column::concat(&[kept, new]).take(&index));
            }
            self.row_of = row_of;
        } else {
            for (kept, new) in self.columns.iter_mut().zip(&part.columns) {
                Arc::make_mut(kept).patch(&at, new);
            }
            self.row_of.extend((self.rows..self.rows + fresh).map(|r| r as u32));
        }
        self.rows += fresh;
        true
    }

    /// The row of each kept group of `ids` (they come first, each keeping its time), and
    /// whether a new group's row comes before the last row (else all append in order); `None`
    /// when a kept group's time changed or `ids` is not of that form.
    fn places(&self, ids: &[u32], part: &Batch) -> Option<(Vec<u32>, bool)> {
        let (mut at, mut late) = (Vec::new(), false);
        let mut last = self.rows.checked_sub(1).and_then(|r| self.time(r));
        for (j, &g) in ids.iter().enumerate() {
            let new_time = self.time_in(part, j);
            match self.row_of.get(g as usize) {
                Some(&r) if at.len() == j => {
                    if self.time(r as usize) != new_time {
                        return None;
                    }
                    at.push(r);
                }
                Some(_) => return None,
                None => {
                    if g as usize != self.row_of.len() + (j - at.len()) {
                        return None;
                    }
                    late |= self.ts.is_some() && (new_time.is_none() || new_time < last);
                    last = last.max(new_time);
                }
            }
        }
        Some((at, late))
    }

    /// Where each row of the patched rows comes from in `concat(kept, part)`, and each
    /// group's row: the kept rows in their order (the changed ones from `part`, rows `at`
    /// being `part`'s first), the new ones merged in by time after kept rows of the same time
    /// (the order a sort of every group by time, then group, gives).
    fn merged(&self, at: &[u32], ids: &[u32], part: &Batch) -> (Vec<u32>, Vec<u32>) {
        let n = self.rows;
        let mut source: Vec<u32> = (0..n as u32).collect();
        for (j, &r) in at.iter().enumerate() {
            source[r as usize] = (n + j) as u32;
        }
        let mut fresh: Vec<usize> = (at.len()..ids.len()).collect();
        fresh.sort_by_key(|&j| self.time_in(part, j));
        let mut group_at = vec![0u32; n];
        for (g, &r) in self.row_of.iter().enumerate() {
            group_at[r as usize] = g as u32;
        }
        let (mut index, mut row_of) =
            (Vec::with_capacity(n + fresh.len()), vec![0u32; self.row_of.len() + fresh.len()]);
        let (mut r, mut k) = (0, 0);
        while r < n || k < fresh.len() {
            let take_new = k < fresh.len() && (r == n || self.time_in(part, fresh[k]) < self.time(r));
            let (src, g) = if take_new {
                let j = fresh[k];
                k += 1;
                ((n + j) as u32, ids[j])
            } else {
                r += 1;
                (source[r - 1], group_at[r - 1])
            };
            row_of[g as usize] = index.len() as u32;
            index.push(src);
        }
        (index, row_of)
    }

    /// The sort time of kept row `r` (`None`: NULL, or no time column).
    fn time(&self, r: usize) -> Option<i64> {
        self.ts.and_then(|t| self.columns.get(t)).and_then(|c| time_at(c, r))
    }

    /// The sort time of `part`'s row `j`.
    fn time_in(&self, part: &Batch, j: usize) -> Option<i64> {
        self.ts.and_then(|t| part.columns.get(t)).and_then(|c| time_at(c, j))
    }

    /// The rows.
    pub(crate) fn batch(&self) -> Batch {
        Batch::shared(self.columns.clone(), self.rows)
    }

    /// The rows as table `name` of `schema`, sharing their columns (no copy), when they have
    /// the schema's types and every SYMBOL column codes in one dictionary lineage; `None`
    /// otherwise (the caller copies them into a table of their own).
    pub(crate) fn table(&self, name: &str, schema: &Schema) -> Option<Result<Table>> {
        let fits = schema.columns.len() == self.columns.len()
            && schema.columns.iter().zip(&self.columns).all(|(d, c)| d.data_type == c.data_type());
        let ts = schema.columns.iter().position(|c| c.data_type == DataType::Timestamp);
        if !fits || ts != self.ts {
            return None;
        }
        let mut dict: Option<&Arc<Dict>> = None;
        for c in &self.columns {
            if let ColumnData::Symbol { dict: d, .. } = c.data() {
                match dict {
                    Some(k) if k.lineage() != d.lineage() => return None,
                    Some(k) if k.len() >= d.len() => {}
                    _ => dict = Some(d),
                }
            }
        }
        let dict = dict.cloned().unwrap_or_default();
        let part = Partition::time_sorted(self.columns.clone(), None, ts);
        Some(Table::assembled(name, schema.clone(), None, ts, dict, vec![part]).map_err(Into::into))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;
    use zepto_storage::{ColumnBuilder, DataType, Value};

    /// Groups' rows: a time (NULL now and then, ties often) and a value.
    fn rows(rows: &[(Option<i64>, i64)]) -> Batch {
        let mut t = ColumnBuilder::new(DataType::Timestamp, rows.len());
        let mut v = ColumnBuilder::new(DataType::Int64, rows.len());
        for &(time, x) in rows {
            t.push_value(&time.map_or(Value::Null, Value::Timestamp)).expect("a time");
            v.push_value(&Value::Int64(x)).expect("a value");
        }
        Batch::new(vec![t.finish(), v.finish()], rows.len())
    }

    fn cells(b: &Batch) -> Vec<Vec<Value>> {
        (0..b.rows).map(|i| b.columns.iter().map(|c| c.get(i)).collect()).collect()
    }

    /// Patching (in place, or merging late groups in) keeps exactly the rows, in exactly the
    /// order, that sorting every group's row again gives; a kept group whose time changed is
    /// refused with nothing changed.
    #[test]
    fn patched_rows_are_the_rows_sorted_again() {
        let mut rng = XorShift::new(0x5EED);
        let time = |rng: &mut XorShift, hi: i64| (rng.below(12) != 0).then(|| rng.below(hi as u64) as i64);
        let mut groups: Vec<(Option<i64>, i64)> = (0..50).map(|g| (time(&mut rng, 100), g)).collect();
        let mut kept = Kept::new(rows(&groups), Some(0));
        for step in 0..300 {
            let n = groups.len();
            let mut ids: Vec<u32> = (0..rng.index(4)).map(|_| rng.index(n) as u32).collect();
            ids.sort_unstable();
            ids.dedup();
            for &g in &ids {
                groups[g as usize].1 = step * 1000 + i64::from(g);
            }
            let late = rng.below(3) == 0;
            for _ in 0..rng.index(4) {
                ids.push(groups.len() as u32);
                let t = if late { time(&mut rng, 100 + step) } else { Some(100 + step) };
                groups.push((t, -(groups.len() as i64)));
            }
            let part: Vec<_> = ids.iter().map(|&g| groups[g as usize]).collect();
            assert!(kept.patch(&ids, rows(&part)), "step {step}");
            assert_eq!(cells(&kept.batch()), cells(&Kept::new(rows(&groups), Some(0)).batch()), "step {step}");
        }
        let before = cells(&kept.batch());
        let moved = groups.iter().position(|(t, _)| t.is_some()).expect("a timed group");
        let part = rows(&[(groups[moved].0.map(|t| t + 1), 0)]);
        assert!(!kept.patch(&[moved as u32], part), "a kept group's time changed");
        assert_eq!(cells(&kept.batch()), before, "nothing changed");
    }
}
