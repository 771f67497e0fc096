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
use super::scan::{piece_batch, pieces};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::physical::{tail_shape, ScanShape};
use crate::plan::{BExpr, Plan};
use std::cmp::Ordering;
use zepto_storage::{Column, Table};

/// The last row of each partition of a (filtered) scan keyed by its partition key and ordered
/// by its designated timestamp (the physical planner checked the shape: see
/// [`crate::plan::physical::tail_shape`]): each partition is searched from its end.
pub fn tails(ctx: &ExecContext, input: &Plan, keys: &[BExpr], ts: &BExpr) -> Result<Batch> {
    let shape = tail_shape(input, keys, ts)
        .ok_or_else(|| SqlError::Internal("LATEST ON from partition tails over another shape".into()))?;
    let ScanShape { table, columns, range, .. } = &shape;
    let ps = pieces(table, range);
    let mut picks: Vec<Batch> = Vec::new();
    for p in &ps {
        let b = piece_batch(p, columns);
        let tcol = eval(ctx, ts, &b)?;
        let hit = match shape.kept_rows(ctx, &b)? {
            None => (0..b.rows).rev().find(|&i| tcol.is_valid(i)),
            Some(kept) => kept.iter().rev().map(|&i| i as usize).find(|&i| tcol.is_valid(i)),
        };
        if let Some(i) = hit {
            picks.push(b.take(&[i as u32]));
        }
    }
    Ok(in_ts_order(ctx, concat(picks, columns.len(), table, columns), ts))
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

fn concat(parts: Vec<Batch>, width: usize, table: &Table, columns: &[usize]) -> Batch {
    let rows = parts.iter().map(|b| b.rows).sum();
    let cols = (0..width)
        .map(|j| {
            if parts.is_empty() {
                return Column::nulls(table.schema().columns[columns[j]].data_type, 0);
            }
            let refs: Vec<&Column> = parts.iter().map(|b| &*b.columns[j]).collect();
            Column::concat(&refs)
        })
        .collect();
    Batch::new(cols, rows)
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
