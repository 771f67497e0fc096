//! The executor: runs a [`Plan`] bottom-up, one operator at a time over whole columns
//! (kdb-style column-at-a-time), with typed kernels and no per-row heap allocation on the hot
//! paths (scans, filters, arithmetic, hash aggregation, hash joins).

pub mod aggregate;
pub mod asof;
pub mod cast;
mod correlated;
pub mod eval;
mod fill;
mod hash;
pub mod history;
mod history_agg;
pub mod interrupt;
mod join;
pub mod latest;
mod like;
mod partitioned;
mod scalar;
mod scan;
mod setops;
pub mod sort;
mod window;
mod window_join;

use crate::error::{Result, SqlError};
use crate::parser::ast::JoinKind;
use crate::plan::{BExpr, Plan};
use std::sync::Arc;
use zepto_storage::{Bitmap, Column, ColumnData};

/// Columns of equal length. `rows` is kept separately so a batch with no columns (the input of
/// a FROM-less SELECT) still has a row count.
/// Columns are shared (`Arc`): a scan of a whole partition, a projection of a plain column
/// and a batch clone copy no data.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub columns: Vec<Arc<Column>>,
    pub rows: usize,
}

impl Batch {
    pub fn new(columns: Vec<Column>, rows: usize) -> Batch {
        Batch::shared(columns.into_iter().map(Arc::new).collect(), rows)
    }

    pub fn shared(columns: Vec<Arc<Column>>, rows: usize) -> Batch {
        debug_assert!(columns.iter().all(|c| c.len() == rows), "batch columns must have {rows} rows");
        Batch { columns, rows }
    }

    pub fn col_refs(&self) -> Vec<&Column> {
        self.columns.iter().map(|c| &**c).collect()
    }

    pub fn take(&self, idx: &[u32]) -> Batch {
        Batch { columns: self.columns.iter().map(|c| Arc::new(c.take(idx))).collect(), rows: idx.len() }
    }

    /// Keep rows where `mask` is true and valid.
    pub fn filter(&self, mask: &Column) -> Batch {
        let idx = mask_indices(mask);
        if idx.len() == self.rows {
            return self.clone();
        }
        self.take(&idx)
    }
}

/// Row indices where a BOOLEAN column is true (NULL counts as false).
pub fn mask_indices(mask: &Column) -> Vec<u32> {
    let ColumnData::Bool(v) = &mask.data else {
        return Vec::new();
    };
    let mut out = Vec::with_capacity(v.len() / 4);
    match &mask.validity {
        None => out.extend(v.iter().enumerate().filter(|(_, b)| **b).map(|(i, _)| i as u32)),
        Some(bm) => out.extend((0..v.len()).filter(|&i| v[i] && bm.get(i)).map(|i| i as u32)),
    }
    out
}

/// AND of two optional validity bitmaps.
pub fn and_validity(a: Option<&Bitmap>, b: Option<&Bitmap>) -> Option<Bitmap> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(x), Some(y)) => Some(x.and(y)),
    }
}

pub fn execute(plan: &Plan) -> Result<Batch> {
    interrupt::check()?;
    let plan = history::resolve(plan)?;
    let b = execute_node(&plan)?;
    interrupt::check()?;
    Ok(b)
}

/// Below this many rows per batch on average, a result's batches are made one.
pub const MIN_CHUNK_ROWS: usize = 64;

/// The plan's result as batches of the same columns, one after another (at least one batch,
/// which carries the column types when there are no rows). A query's final result is kept this
/// way, as the operators whose output is naturally per partition produce it: a scan's whole
/// partitions and a partition-wise LEFT ASOF JOIN's left columns are the table's own columns,
/// shared rather than copied into one column. Every other plan gives one batch.
pub fn execute_chunks(plan: &Plan) -> Result<Vec<Batch>> {
    interrupt::check()?;
    let plan = history::resolve(plan)?;
    let mut out = chunks_node(&plan)?;
    interrupt::check()?;
    // Empty batches (a filter's) are dropped, but one is kept: it carries the column types.
    if out.len() > 1 {
        let first = out.remove(0);
        out.retain(|b| b.rows > 0);
        if first.rows > 0 || out.is_empty() {
            out.insert(0, first);
        }
    }
    // Batches of a few rows (a GROUP BY per partition) are not worth keeping apart: below
    // MIN_CHUNK_ROWS on average, the result is one batch (a cheap copy of few rows).
    let rows: usize = out.iter().map(|b| b.rows).sum();
    if out.len() > 1 && rows < out.len() * MIN_CHUNK_ROWS {
        out = vec![concat_chunks(out)];
    }
    debug_assert!(!out.is_empty(), "a result has at least one batch");
    Ok(out)
}

fn chunks_node(plan: &Plan) -> Result<Vec<Batch>> {
    match plan {
        Plan::Scan { table, columns, range } => {
            let ps = scan::pieces(table, range);
            if ps.len() < 2 {
                return Ok(vec![scan::scan(table, columns, range)?]);
            }
            Ok(ps.iter().map(|p| scan::piece_batch(table, p, columns, range)).collect())
        }
        // Row-local expressions are evaluated batch by batch; a column reference shares its
        // input's column.
        Plan::Project { input, exprs } if exprs.iter().all(row_local) => {
            chunks_node(input)?.iter().map(|b| project(b, exprs)).collect()
        }
        Plan::Filter { input, pred } if row_local(pred) => {
            chunks_node(input)?.iter().map(|b| filter(b, pred)).collect()
        }
        Plan::AsofJoin { .. } => {
            match asof::AsofSpec::of(plan).and_then(|(l, r, s)| asof::try_partitioned_chunks(l, r, &s)) {
                Some(r) => r,
                None => Ok(vec![execute_node(plan)?]),
            }
        }
        Plan::WindowJoin { left, right, left_keys, right_keys, left_ts, right_ts, lo, hi, aggs } => {
            let band = window_join::Band { left_keys, right_keys, left_ts, right_ts, lo: *lo, hi: *hi };
            match window_join::try_partitioned_chunks(left, right, &band, aggs) {
                Some(r) => r,
                None => Ok(vec![execute_node(plan)?]),
            }
        }
        Plan::Aggregate { input, keys, aggs } => {
            if let Some(r) = history_agg::try_aggregate(input, keys, aggs) {
                return r.map(|b| vec![b]);
            }
            match partitioned::try_aggregate_chunks(input, keys, aggs) {
                Some(r) => r,
                // Not partition-wise, or no partition has rows: the general path (not
                // execute_node, which would try the partition-wise path again).
                None => Ok(vec![aggregate::aggregate(&execute(input)?, keys, aggs)?]),
            }
        }
        Plan::Window { input, calls } => match window::try_partitioned_chunks(input, calls) {
            Some(r) => r,
            None => Ok(vec![execute_node(plan)?]),
        },
        _ => Ok(vec![execute_node(plan)?]),
    }
}

/// Whether an expression's value at a row depends on that row alone, and evaluating it batch
/// by batch gives the same columns as over one batch: no correlated subquery (evaluated per
/// distinct outer value of its batch), no `now()` (read once per evaluation: one query must
/// see one time), and no computed SYMBOL (each batch would code it in a dictionary of its own).
fn row_local(e: &BExpr) -> bool {
    use crate::plan::functions::ScalarFunc;
    matches!(e, BExpr::Col(..))
        || (e.data_type() != zepto_storage::DataType::Symbol
            && !e.any(&|x| matches!(x, BExpr::Correlated { .. } | BExpr::Func { func: ScalarFunc::Now, .. })))
}

/// The rows of `b` where `pred` holds.
fn filter(b: &Batch, pred: &BExpr) -> Result<Batch> {
    let m = eval::eval(pred, b)?;
    Ok(b.filter(&m))
}

/// `exprs` over `b`; a plain column reference shares the input column.
fn project(b: &Batch, exprs: &[BExpr]) -> Result<Batch> {
    let cols = exprs
        .iter()
        .map(|e| match e {
            BExpr::Col(i, _) => {
                b.columns.get(*i).cloned().ok_or_else(|| SqlError::Internal(format!("column {i} out of range")))
            }
            e => eval::eval(e, b).map(|c| Arc::new(c.into_owned())),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Batch::shared(cols, b.rows))
}

/// A partition-wise operator's batches, `None` when there are none (its caller then takes
/// the general path, whose one batch carries the column types).
pub(super) fn non_empty(r: Result<Vec<Batch>>) -> Option<Result<Vec<Batch>>> {
    match r {
        Ok(outs) if outs.is_empty() => None,
        r => Some(r),
    }
}

/// Column `j` of `batches`, one after another.
fn concat_column(batches: &[Batch], j: usize) -> Arc<Column> {
    Arc::new(Column::concat(&batches.iter().map(|b| &*b.columns[j]).collect::<Vec<_>>()))
}

/// Batches of the same columns as one batch (shared when there is one).
pub fn concat_chunks(mut chunks: Vec<Batch>) -> Batch {
    if chunks.len() == 1 {
        return chunks.remove(0);
    }
    let rows = chunks.iter().map(|b| b.rows).sum();
    let width = chunks.first().map_or(0, |b| b.columns.len());
    Batch::shared((0..width).map(|j| concat_column(&chunks, j)).collect(), rows)
}

/// Partition results one after another inside a query (`types`: the columns' types, for no
/// partitions): a column per item of [`interrupt::par_map`], so the columns go to every core.
pub(crate) fn concat_batches(outs: &[Batch], types: &[zepto_storage::DataType]) -> Result<Batch> {
    let rows = outs.iter().map(|b| b.rows).sum();
    let column = |&j: &usize| -> Result<Arc<Column>> {
        Ok(if outs.is_empty() { Arc::new(Column::nulls(types[j], 0)) } else { concat_column(outs, j) })
    };
    let cols = interrupt::par_map(&(0..types.len()).collect::<Vec<_>>(), rows, column)?;
    Ok(Batch::shared(cols, rows))
}

fn execute_node(plan: &Plan) -> Result<Batch> {
    match plan {
        Plan::Scan { table, columns, range } => scan::scan(table, columns, range),
        Plan::Values { rows, width } => {
            let empty = Batch::new(vec![], 1);
            if *width == 0 {
                return Ok(Batch::new(vec![], rows.len()));
            }
            let mut cols = Vec::with_capacity(*width);
            for j in 0..*width {
                let parts = rows
                    .iter()
                    .map(|r| eval::eval(&r[j], &empty).map(|c| c.into_owned()))
                    .collect::<Result<Vec<_>>>()?;
                let refs: Vec<&Column> = parts.iter().collect();
                cols.push(Column::concat(&refs));
            }
            Ok(Batch::new(cols, rows.len()))
        }
        Plan::Filter { input, pred } => filter(&execute(input)?, pred),
        Plan::Project { input, exprs } => project(&execute(input)?, exprs),
        Plan::Aggregate { input, keys, aggs } => {
            if let Some(r) = history_agg::try_aggregate(input, keys, aggs) {
                return r;
            }
            if let Some(r) = partitioned::try_aggregate(input, keys, aggs) {
                return r;
            }
            let b = execute(input)?;
            aggregate::aggregate(&b, keys, aggs)
        }
        Plan::Join { kind: JoinKind::Window, .. } => {
            Err(SqlError::plan("WINDOW JOIN needs aggregates over the right side in the select list", None))
        }
        Plan::Join { left, right, kind, left_keys, right_keys, residual } => {
            let l = execute(left)?;
            let r = execute(right)?;
            join::join(&l, &r, *kind, left_keys, right_keys, residual.as_ref())
        }
        Plan::AsofJoin { .. } => {
            let Some((left, right, spec)) = asof::AsofSpec::of(plan) else {
                return Err(SqlError::Internal("not an ASOF JOIN node".into()));
            };
            if let Some(r) = asof::try_partitioned(left, right, &spec) {
                return r;
            }
            let l = execute(left)?;
            let r = execute(right)?;
            asof::asof_join(&l, &r, spec)
        }
        Plan::Sort { input, keys, limit } => {
            let b = execute(input)?;
            let perm = sort::sort_indices(&b, keys, *limit)?;
            Ok(b.take(&perm))
        }
        Plan::Limit { input, offset, limit } => {
            let b = execute(input)?;
            let start = (*offset).min(b.rows);
            let end = match limit {
                Some(l) => start.saturating_add(*l).min(b.rows),
                None => b.rows,
            };
            if start == 0 && end == b.rows {
                return Ok(b);
            }
            let idx: Vec<u32> = (start as u32..end as u32).collect();
            Ok(b.take(&idx))
        }
        Plan::Latest { input, keys, ts } => latest::latest(input, keys, ts),
        Plan::SpliceJoin { left, right, left_keys, right_keys, left_ts, right_ts } => {
            let l = execute(left)?;
            let r = execute(right)?;
            asof::splice_join(&l, &r, left_keys, right_keys, left_ts, right_ts)
        }
        Plan::RangeJoin { left, right, left_keys, right_keys, left_ts, right_ts, lo, hi, outer } => {
            let l = execute(left)?;
            let r = execute(right)?;
            let band = window_join::Band { left_keys, right_keys, left_ts, right_ts, lo: *lo, hi: *hi };
            window_join::range_join(&l, &r, &band, *outer)
        }
        Plan::WindowJoin { left, right, left_keys, right_keys, left_ts, right_ts, lo, hi, aggs } => {
            let band = window_join::Band { left_keys, right_keys, left_ts, right_ts, lo: *lo, hi: *hi };
            if let Some(r) = window_join::try_partitioned(left, right, &band, aggs) {
                return r;
            }
            let l = execute(left)?;
            let r = execute(right)?;
            window_join::window_join(l, &r, &band, aggs)
        }
        Plan::Fill { input, spec } => {
            let b = execute(input)?;
            fill::fill(b, spec)
        }
        Plan::Window { input, calls } => {
            if let Some(r) = window::try_partitioned(input, calls) {
                return r;
            }
            let b = execute(input)?;
            window::window(b, calls)
        }
        Plan::Distinct { input } => {
            let b = execute(input)?;
            let idx = hash::distinct_rows(&b);
            Ok(b.take(&idx))
        }
        Plan::SetOp { op, all, left, right } => {
            let l = execute(left)?;
            let r = execute(right)?;
            setops::set_op(*op, *all, l, r)
        }
    }
}
