//! `LATEST ON ts PARTITION BY keys`: the last row of every key.
//!
//! When the key is the table's partition key and `ts` its designated timestamp, every
//! partition is one key and is sorted by `ts`, so the answer is read from partition tails:
//! one row per partition, no scan (with a WHERE filter, each partition is searched from its
//! end). Without a filter the answer is kept beside the table
//! ([`zepto_storage::table::TailMemo`]) and the next such query reads again only the
//! partitions changed since. Over other keys, rows are grouped by hashing and the greatest
//! `ts` per group is kept. Rows with a NULL `ts` are never the latest. Output is in `ts`
//! order, ties in partition (or first-seen) order.

use super::cmp::value_cmp;
use super::eval::eval;
use super::hash::group_ids;
use super::scan::{piece_batch, pieces, Piece};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::physical::tail_shape;
use crate::plan::{BExpr, Plan};
use std::cmp::Ordering;
use zepto_storage::table::TailMemo;
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
    if let (true, Some(tc)) = (shape.filters.is_empty(), shape.table.ts_col()) {
        return unfiltered_tails(ctx, shape.table, &ps, tc, shape.columns, ts);
    }
    let mut hits: Vec<(&Piece, u32)> = Vec::with_capacity(ps.len());
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
    let cols = gather_all(ctx, shape.table, None, &hits, shape.columns)?;
    Ok(in_ts_order(ctx, Batch::new(cols, hits.len()), ts, None))
}

/// Without a filter: the last row with a timestamp of each piece, read in the stored column
/// (NULL timestamps sort first), without a batch of every column per partition. A whole
/// partition unchanged since the table's tail memo was kept is answered from the memo (one
/// contiguous row instead of a cache miss per column); when every piece is a whole partition
/// the answer becomes the next memo.
fn unfiltered_tails(
    ctx: &ExecContext,
    table: &Table,
    ps: &[Piece],
    tc: usize,
    columns: &[usize],
    ts: &BExpr,
) -> Result<Batch> {
    let lineage = table.dict().lineage();
    let last = table.tail_memo();
    let memo = last.as_deref().filter(|m| m.serves(lineage, columns));
    let mut kept = Vec::new();
    let mut hits: Vec<(&Piece, u32)> = Vec::with_capacity(ps.len());
    // Each answer row's piece, memo rows first as they are gathered: ties in `ts` keep the
    // pieces' order, whichever rows came from the memo.
    let (mut kept_at, mut hit_at) = (Vec::new(), Vec::new());
    for (k, p) in ps.iter().enumerate() {
        if let Some(r) = memo.filter(|_| p.is_whole()).and_then(|m| m.row_of(p.part)) {
            kept.push(r);
            kept_at.push(k as u32);
            continue;
        }
        let (col, range) = p.col(tc);
        if let Some(i) = range.clone().rev().find(|&i| col.is_valid(i)) {
            hits.push((p, (i - range.start) as u32));
            hit_at.push(k as u32);
        }
    }
    let cols = gather_all(ctx, table, memo.map(|m| (m, kept.as_slice())), &hits, columns)?;
    let rows = kept.len() + hits.len();
    let keep = last.as_deref().is_none_or(|m| m.replaced_by(lineage, columns));
    if keep && !hits.is_empty() && ps.iter().all(Piece::is_whole) {
        let parts: Vec<_> =
            kept_at.iter().map(|&k| ps[k as usize].part).chain(hits.iter().map(|(p, _)| p.part)).collect();
        if let Some(m) = TailMemo::new(lineage, columns.to_vec(), cols.clone(), &parts) {
            table.keep_tail_memo(m);
        }
    }
    kept_at.extend(hit_at);
    Ok(in_ts_order(ctx, Batch::new(cols, rows), ts, Some(&kept_at)))
}

/// Read cost of one value of a hit, in rows of a sequential scan: each is a cache miss in a
/// column of its own partition (4,000 series x 21 columns is 84k of them).
const GATHER_ROW_WEIGHT: usize = 16;

/// Columns `columns` of the memo's rows `memo.1` (if any), then of every hit, a column per
/// task on every core.
fn gather_all(
    ctx: &ExecContext,
    table: &Table,
    memo: Option<(&TailMemo, &[u32])>,
    hits: &[(&Piece, u32)],
    columns: &[usize],
) -> Result<Vec<Column>> {
    let kept = memo.map_or(0, |(_, rows)| rows.len());
    let work = (hits.len().saturating_mul(GATHER_ROW_WEIGHT) + kept).saturating_mul(columns.len());
    ctx.par_map(columns, work, |_, &c| gather(table, memo, hits, c))
}

/// Column `c` of the memo's rows, then of every hit (a piece and a row of it), read where the
/// rows are stored.
fn gather(table: &Table, memo: Option<(&TailMemo, &[u32])>, hits: &[(&Piece, u32)], c: usize) -> Result<Column> {
    let dt = table.schema().columns[c].data_type;
    let sources: Vec<(&Column, u32)> = hits
        .iter()
        .map(|(p, i)| {
            let (col, range) = p.col(c);
            (col, range.start as u32 + i)
        })
        .collect();
    let memo_part = match memo {
        Some((m, rows)) => {
            let col = m.column(c).ok_or_else(|| SqlError::Internal(format!("tail memo without column {c}")))?;
            Some((col, rows))
        }
        None => None,
    };
    let parts: Vec<(&Column, &[u32])> =
        memo_part.into_iter().chain(sources.iter().map(|(col, at)| (*col, std::slice::from_ref(at)))).collect();
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
    Ok(in_ts_order(ctx, b.take(&idx), ts, None))
}

/// The (few) latest rows sorted by `ts`, ties in the order of `tie` (a rank per row) or, without
/// it, as they are.
fn in_ts_order(ctx: &ExecContext, b: Batch, ts: &BExpr, tie: Option<&[u32]>) -> Batch {
    let idx = {
        let Ok(t) = eval(ctx, ts, &b) else { return b };
        let cmp = value_cmp(&t);
        let rank = |i: u32| tie.and_then(|r| r.get(i as usize)).copied().unwrap_or(i);
        let mut idx: Vec<u32> = (0..b.rows as u32).collect();
        idx.sort_by(|&x, &y| cmp(x as usize, y as usize).then_with(|| rank(x).cmp(&rank(y))));
        idx
    };
    b.take(&idx)
}
