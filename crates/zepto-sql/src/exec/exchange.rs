//! The distributed operators (see [`crate::plan::dist`]): an exchange gathers a fragment's rows
//! from every owner; a partial aggregate makes states, a merge aggregate finishes them.
//!
//! The other nodes are asked all at once, on threads of their own, while this node runs its
//! own share; any node's failure fails the query, naming the node (under `allow_partial`,
//! the query goes on without that node's partitions and says so).

use super::accum::{self, Mode};
use super::aggregate::grouped;
use super::hash::{group_ids, GroupIds};
use super::scan::{filtered_piece, pieces};
use super::{Batch, ExecContext};
use crate::cluster::{ClusterRef, Remote};
use crate::error::{Result, SqlError};
use crate::plan::physical::scan_shape;
use crate::plan::{AggCall, BExpr, Plan};
use std::sync::Arc;
use zepto_storage::{Column, DataType};

/// This node's share (`input`) then every remote's, as one batch. Shares with no rows are
/// left out (a partial state's column types depend on the rows it saw: an empty one may
/// differ); with no rows anywhere, this node's empty share is the result.
pub(super) fn exchange(ctx: &ExecContext, input: &Plan, remotes: &[Remote], cluster: &ClusterRef) -> Result<Batch> {
    let fetched: Vec<Result<Batch>> = std::thread::scope(|s| {
        let threads: Vec<_> = remotes.iter().map(|r| s.spawn(move || fetch(cluster, r))).collect();
        let local = super::run(ctx, input);
        let mut out = vec![local];
        out.extend(threads.into_iter().map(|t| {
            t.join().unwrap_or_else(|_| Err(SqlError::Internal("a thread fetching from a node panicked".into())))
        }));
        out
    });
    let run = ctx.run_context();
    let mut batches = Vec::with_capacity(fetched.len());
    for (i, b) in fetched.into_iter().enumerate() {
        match (b, i.checked_sub(1).and_then(|r| remotes.get(r))) {
            (Ok(b), _) => batches.push(b),
            // A node that fails (it died, or gave its partitions up) is left out when the
            // query allows a partial answer; the result says which partitions are missing.
            (Err(_), Some(r)) if run.settings().allow_partial() => run.note_missing(&r.partitions),
            (Err(e), _) => return Err(e),
        }
    }
    // This node's share comes first: when no share has rows, it is the (typed) result.
    let (mut full, empty): (Vec<Batch>, Vec<Batch>) = batches.into_iter().partition(|b| b.rows > 0);
    if let Some(b) = full.iter().find(|b| b.columns.len() != input.width()) {
        return Err(SqlError::Execution(format!(
            "a node answered an exchange with {} columns, this node has {}",
            b.columns.len(),
            input.width()
        )));
    }
    match full.len() {
        0 => empty.into_iter().next().ok_or_else(|| SqlError::Internal("an exchange without its own share".into())),
        1 => Ok(full.remove(0)),
        _ => Ok(super::concat_chunks(full)),
    }
}

/// One remote's share.
fn fetch(cluster: &ClusterRef, r: &Remote) -> Result<Batch> {
    let (cols, rows) = cluster
        .get()
        .fetch(&r.node, &r.request)
        .map_err(|e| SqlError::Execution(format!("node {} (partitions {:?}): {e}", r.node, r.partitions)))?;
    if cols.iter().any(|c| c.len() != rows) {
        return Err(SqlError::Execution(format!("node {} answered columns of unequal lengths", r.node)));
    }
    Ok(Batch::shared(cols.into_iter().map(Arc::new).collect(), rows))
}

/// GROUP BY `keys` over `input` into partial states: key columns then every aggregate's
/// state columns. Over a (filtered) scan, each partition makes its own states, on every core
/// and without copying the scan into one batch; the merge folds a group's states wherever
/// they came from.
pub(super) fn partial_node(ctx: &ExecContext, input: &Plan, keys: &[BExpr], aggs: &[AggCall]) -> Result<Batch> {
    let Some(shape) = scan_shape(input) else { return partial_aggregate(ctx, &super::run(ctx, input)?, keys, aggs) };
    ctx.fused(input);
    let ps = pieces(shape.table, shape.range);
    let one = |c: &ExecContext, p: &super::scan::Piece| -> Result<Option<Batch>> {
        let b = filtered_piece(c, &shape, p)?;
        if b.rows == 0 {
            return Ok(None);
        }
        Ok(Some(grouped(c, &b, keys, aggs, None, Mode::Partial)?.into_batch()))
    };
    let rows = ps.iter().map(|p| p.range.len()).sum();
    let outs: Vec<Batch> = ctx.par_map(&ps, rows, one)?.into_iter().flatten().collect();
    if outs.is_empty() {
        let empty = shape.columns.iter().map(|&c| Column::nulls(shape.table.schema().columns[c].data_type, 0));
        return partial_aggregate(ctx, &Batch::new(empty.collect(), 0), keys, aggs);
    }
    Ok(super::concat_chunks(outs))
}

/// GROUP BY `keys` into partial states: key columns then every aggregate's state columns.
/// No rows make no groups (the merge computes the aggregate over no rows itself).
fn partial_aggregate(ctx: &ExecContext, b: &Batch, keys: &[BExpr], aggs: &[AggCall]) -> Result<Batch> {
    if b.rows == 0 {
        let types = keys.iter().map(BExpr::data_type);
        // States of no rows: the merge never reads them (see `merge_aggregate`).
        let states = aggs.iter().flat_map(|a| (0..accum::state_width(a)).map(|_| Column::nulls(DataType::Null, 0)));
        let cols = types.map(|t| Column::nulls(t, 0)).chain(states);
        return Ok(Batch::new(cols.collect(), 0));
    }
    Ok(grouped(ctx, b, keys, aggs, None, Mode::Partial)?.into_batch())
}

/// Partial states (`nkeys` key columns, then each aggregate's states) merged per group.
pub(super) fn merge_aggregate(
    ctx: &ExecContext,
    b: &Batch,
    nkeys: usize,
    aggs: &[AggCall],
    empty: &[DataType],
) -> Result<Batch> {
    if b.rows == 0 {
        // The aggregate over no rows: one row without keys, none with.
        let none = Batch::new(empty.iter().map(|&t| Column::nulls(t, 0)).collect(), 0);
        let keys: Vec<BExpr> = Vec::new();
        if nkeys == 0 {
            return super::aggregate::aggregate(ctx, &none, &keys, aggs);
        }
        let cols =
            b.columns.iter().take(nkeys).map(|c| (**c).clone()).chain(aggs.iter().map(|a| Column::nulls(a.ty, 0)));
        return Ok(Batch::new(cols.collect(), 0));
    }
    let mut at = nkeys;
    let mut states: Vec<Vec<&Column>> = Vec::with_capacity(aggs.len());
    for a in aggs {
        let w = accum::state_width(a);
        let Some(cols) = b.columns.get(at..at + w) else {
            return Err(SqlError::Internal(format!(
                "partial states of {} columns, {} expected",
                b.columns.len(),
                at + w
            )));
        };
        states.push(cols.iter().map(|c| &**c).collect());
        at += w;
    }
    let keys: Vec<&Column> = b.columns.iter().take(nkeys).map(|c| &**c).collect();
    merge_states(&keys, &states, aggs, b.rows)
}

/// Partial results merged per group: `keys` (one column per key, `rows` rows) and, per
/// aggregate, its state columns of the same rows. Without keys, all rows are one group.
pub(super) fn merge_states(keys: &[&Column], states: &[Vec<&Column>], aggs: &[AggCall], rows: usize) -> Result<Batch> {
    merge_grouped(keys, states, aggs, group_ids(keys, rows))
}

/// [`merge_states`] over the groups already found.
pub(super) fn merge_grouped(keys: &[&Column], states: &[Vec<&Column>], aggs: &[AggCall], g: GroupIds) -> Result<Batch> {
    let GroupIds { ids, first } = g;
    let ng = if keys.is_empty() { 1 } else { first.len() };
    let mut out: Vec<Column> = keys.iter().map(|c| super::hash::key_take(c, &first)).collect();
    for (a, state) in aggs.iter().zip(states) {
        out.push(accum::merge(a, state, &ids, ng)?);
    }
    Ok(Batch::new(out, ng))
}
