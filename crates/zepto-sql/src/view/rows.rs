//! A view's rows kept between reads, for views whose plan above the aggregate makes one row of
//! each group on its own: projections of row-local expressions (`BExpr::is_row_local`), and a
//! SAMPLE BY without FILL, which only orders the buckets (and drops a NULL one). A read after
//! writes that changed a few groups computes those groups' rows alone and patches them into
//! the rows kept; the general read runs the whole plan over every group again.
//!
//! The rows are kept as the view's table holds them: sorted by its first TIMESTAMP column
//! (NULLs first), each group's row known. A patch keeps that order without sorting: a changed
//! group's row must keep its time, and new groups' rows must come after every row kept (the
//! usual case: buckets are time, and late rows fall in buckets that exist). Otherwise the
//! rows are built again from every group, and sorted.

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
        let rows = owned(rows);
        let n = rows.rows;
        let mut order: Vec<u32> = (0..n as u32).collect();
        if let Some(c) = ts.and_then(|t| rows.columns.get(t)) {
            let key =
                |i: u32| c.is_valid(i as usize).then(|| c.as_i64_slice().and_then(|v| v.get(i as usize).copied()));
            order.sort_by_key(|&i| key(i));
        }
        let mut row_of = vec![0u32; n];
        for (r, &g) in order.iter().enumerate() {
            row_of[g as usize] = r as u32;
        }
        let sorted = order.iter().enumerate().all(|(r, &g)| r as u32 == g);
        let columns = if sorted { rows.columns } else { rows.take(&order).columns };
        Kept { columns, rows: n, row_of, ts }
    }

    /// Put in `part`'s rows (row `j` is group `ids[j]`'s: groups kept, then new ones in
    /// order), or say `false` and change nothing when that would move a row.
    pub(crate) fn patch(&mut self, ids: &[u32], part: &Batch) -> bool {
        if part.columns.len() != self.columns.len() || part.rows != ids.len() {
            return false;
        }
        let Some(at) = self.places(ids, part) else { return false };
        let part = owned(part.clone());
        for (kept, new) in self.columns.iter_mut().zip(&part.columns) {
            Arc::make_mut(kept).patch(&at, new);
        }
        let fresh = ids.len() - at.len();
        self.row_of.extend((self.rows..self.rows + fresh).map(|r| r as u32));
        self.rows += fresh;
        true
    }

    /// The row of each kept group of `ids` (they come first), if every kept group keeps its
    /// time and the new ones, in order, come at or after the last row's time.
    fn places(&self, ids: &[u32], part: &Batch) -> Option<Vec<u32>> {
        let ts = self.ts.map(|t| (self.columns.get(t), part.columns.get(t)));
        let time = |c: Option<&Arc<Column>>, i: usize| {
            c.filter(|c| c.is_valid(i)).and_then(|c| c.as_i64_slice().and_then(|v| v.get(i).copied()))
        };
        let mut at = Vec::new();
        let mut last = self.rows.checked_sub(1).and_then(|r| ts.and_then(|(k, _)| time(k, r)));
        for (j, &g) in ids.iter().enumerate() {
            let new_time = ts.and_then(|(_, p)| time(p, j));
            match self.row_of.get(g as usize) {
                Some(&r) if at.len() == j => {
                    if ts.is_some_and(|(k, _)| time(k, r as usize) != new_time) {
                        return None;
                    }
                    at.push(r);
                }
                Some(_) => return None,
                None => {
                    let next = self.row_of.len() + (j - at.len());
                    if g as usize != next || (ts.is_some() && (new_time.is_none() || new_time < last)) {
                        return None;
                    }
                    last = new_time;
                }
            }
        }
        Some(at)
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
