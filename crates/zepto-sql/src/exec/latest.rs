//! `LATEST ON ts PARTITION BY keys`: the last row of every key.
//!
//! When the key is the table's partition key and `ts` its designated timestamp, every
//! partition is one key and is sorted by `ts`, so the answer is read from partition tails:
//! one row per partition, no scan (with a WHERE filter, each partition is searched from its
//! end). Otherwise rows are grouped by hashing and the greatest `ts` per group is kept.
//! Rows with a NULL `ts` are never the latest. Output is in `ts` order.

use super::cmp::value_cmp;
use super::eval::eval;
use super::hash::group_ids;
use super::scan::{piece_batch, pieces, Piece};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::physical::tail_shape;
use crate::plan::{BExpr, Plan};
use std::cmp::Ordering;
use zepto_storage::{Column, Table};

/// The last row of each partition of a (filtered) scan keyed by its partition key and ordered
/// by its designated timestamp (the physical planner checked the shape: see
/// [`crate::plan::physical::tail_shape`]): each partition is searched from its end, and each
/// output column is gathered from the partitions' own columns in one pass (no row copied
/// before it is known to be a tail).
pub fn tails(ctx: &ExecContext, input: &Plan, keys: &[BExpr], ts: &BExpr) -> Result<Batch> {
    let shape = tail_shape(input, keys, ts)
        .ok_or_else(|| SqlError::Internal("LATEST ON from partition tails over another shape".into()))?;
    let ps = pieces(shape.table, shape.range);
    let mut hits: Vec<(&Piece, u32)> = Vec::with_capacity(ps.len());
    if let (true, Some(tc)) = (shape.filters.is_empty(), shape.table.ts_col()) {
        // No filter: the last row with a timestamp, read in the stored column (NULL
        // timestamps sort first), without a batch of every column per partition.
        for p in &ps {
            let (col, range) = p.col(tc);
            if let Some(i) = range.clone().rev().find(|&i| col.is_valid(i)) {
                hits.push((p, (i - range.start) as u32));
            }
        }
        let cols = gather_all(ctx, shape.table, &hits, shape.columns)?;
        return Ok(in_ts_order(ctx, Batch::new(cols, hits.len()), ts));
    }
    for p in &ps {
        let b = piece_batch(p, shape.columns);
        let tcol = eval(ctx, ts, &b)?;
        let hit = match shape.kept_rows(ctx, &b)? {
            None => (0..b.rows).rev().find(|&i| tcol.is_valid(i)),
            Some(kept) => kept.iter().rev().map(|&i| i as usize).find(|&i| tcol.is_valid(i)),
        };
        if let Some(i) = hit {
            hits.push((p, i as u32));
        }
    }
    let cols = gather_all(ctx, shape.table, &hits, shape.columns)?;
    Ok(in_ts_order(ctx, Batch::new(cols, hits.len()), ts))
}

/// Read cost of one value of a hit, in rows of a sequential scan: each is a cache miss in a
/// column of its own partition (4,000 series x 21 columns is 84k of them).
const GATHER_ROW_WEIGHT: usize = 16;

/// Columns `columns` of every hit, a column per task on every core.
fn gather_all(ctx: &ExecContext, table: &Table, hits: &[(&Piece, u32)], columns: &[usize]) -> Result<Vec<Column>> {
    let work = hits.len().saturating_mul(columns.len()).saturating_mul(GATHER_ROW_WEIGHT);
    ctx.par_map(columns, work, |_, &c| gather(table, hits, c))
}

/// Column `c` of every hit (a piece and a row of it), read where the rows are stored.
fn gather(table: &Table, hits: &[(&Piece, u32)], c: usize) -> Result<Column> {
    let dt = table.schema().columns[c].data_type;
    let sources: Vec<(&Column, u32)> = hits
        .iter()
        .map(|(p, i)| {
            let (col, range) = p.col(c);
            (col, range.start as u32 + i)
        })
        .collect();
    let parts: Vec<(&Column, &[u32])> = sources.iter().map(|(col, at)| (*col, std::slice::from_ref(at))).collect();
    Column::gather(dt, &parts).map_err(SqlError::Internal)
}

/// The row with the greatest `ts` of every distinct `keys` tuple of `b`, in `ts` order.
pub fn by_hash(ctx: &ExecContext, b: Batch, keys: &[BExpr], ts: &BExpr) -> Result<Batch> {
    let kcols = keys.iter().map(|k| eval(ctx, k, &b)).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Column> = kcols.iter().map(|c| &**c).collect();
    let tcol = eval(ctx, ts, &b)?;
    let cmp = value_cmp(&tcol);
    let groups = group_ids(&refs, b.rows);
    let mut best: Vec<Option<usize>> = vec![None; groups.first.len()];
    for (i, &g) in groups.ids.iter().enumerate() {
        if !tcol.is_valid(i) {
            continue;
        }
        let slot = &mut best[g as usize];
        if slot.is_none_or(|j| cmp(i, j) != Ordering::Less) {
            *slot = Some(i);
        }
    }
    let idx: Vec<u32> = best.into_iter().flatten().map(|i| i as u32).collect();
    Ok(in_ts_order(ctx, b.take(&idx), ts))
}

/// Stable sort of the (few) latest rows by `ts`.
fn in_ts_order(ctx: &ExecContext, b: Batch, ts: &BExpr) -> Batch {
    let idx = {
        let Ok(t) = eval(ctx, ts, &b) else { return b };
        let cmp = value_cmp(&t);
        let mut idx: Vec<u32> = (0..b.rows as u32).collect();
        idx.sort_by(|&x, &y| cmp(x as usize, y as usize));
        idx
    };
    b.take(&idx)
}
