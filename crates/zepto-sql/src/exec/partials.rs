//! Aggregates as partial states merged per group: over the Parquet history without assembling
//! it (the shape DuckDB streams), and over many in-memory partitions on every core.
//!
//! `SELECT keys, aggs FROM t [WHERE ...] GROUP BY keys` over a scan that reaches the history
//! would otherwise materialize every row the scan reads (see [`super::history`]): decoded row
//! groups copied into per-key partitions, twice the data in memory, half the time in page
//! faults. Instead, each history row group is decoded, cut to the scan's keys and time range,
//! filtered and aggregated into *partial* results on a helper thread, then dropped; the
//! in-memory partitions are aggregated the same way; and the partials are merged per group.
//! Memory is one row group per core plus the partials.
//!
//! A table without history takes the same path when its GROUP BY keys leave out the partition
//! key (or there are none) and every aggregate merges (the planner's `AggHow::Partials`): its
//! partitions, small ones a bundle at a time ([`super::bundle`]), aggregate on every core over
//! their shared columns, where hashing the whole input would first copy it into one batch.
//! Partials come in partition order and merge ties as above, so `first`/`last` pick what the
//! whole input in partition order would.
//!
//! When every key is monotonic in the designated timestamp (`AggHow::TimeMerge`), a bundle's
//! groups are runs of its time-sorted partitions (no hashing; cut where the time steps back,
//! as where the next partition starts earlier, so each run is in time order), so each partial
//! is a few runs sorted by key, and the partials merge by sorting their keys: a stable sort that finds those
//! runs and merges them (`exec/merge_order.rs`). The merge keeps every partial row where it is and
//! only decides its group, so ties go to the earlier / later partial exactly as by hash.
//!
//! The partials are the accumulators' states ([`super::accum`]): every aggregate whose state
//! merges takes this path ([`AggCall::mergeable`]: all but DISTINCT and the holistic ones,
//! which assemble). `first`/`last` keep the time of the row they picked; ties go to the
//! earlier / later partial, as in a time-sorted partition assembled file by file then memory.
//!
//! Where results may differ from the same rows in memory, both being right: float sums, means
//! and variances are added in another order, equal up to floating-point rounding; and
//! `first`/`last` of a group that spans several keys, when rows of different keys tie at the
//! extreme time, pick by file order rather than by partition order (by-time order does not
//! rank such ties).

use super::accum::Mode;
use super::aggregate::{columns_read, grouped, grouped_in_time, Grouped};
use super::bundle::bundles;
use super::history::ts_cut;
use super::scan::{pieces_batch, ScanPart, Unit};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::physical::{monotonic_in, reads_history, scan_shape, ScanShape};
use crate::plan::{AggCall, BExpr, Plan, ScanRange};
use zepto_storage::{Column, ColumnData, HistoryChunk, Table};

/// The aggregate over a (filtered) scan that reaches the history, from partials, as the
/// physical planner chose. A value error of the partial path (a BIGINT partial sum that
/// overflows while the total would not, say) is retried over the assembled rows, which either
/// succeeds or fails the way any other path would. Any other error is the query's: a
/// deadline, a cancel or a memory limit would only be met again, later, and an internal
/// error would be hidden.
pub(super) fn aggregate(
    ctx: &ExecContext,
    input: &Plan,
    keys: &[BExpr],
    aggs: &[AggCall],
    how: Merge,
) -> Result<Batch> {
    let s = scan_shape(input).ok_or_else(|| SqlError::Internal("history GROUP BY over a non-scan".into()))?;
    run(ctx, s, keys, aggs, how).or_else(|e| {
        if !matches!(e, SqlError::Execution(_)) {
            return Err(e);
        }
        let assembled = super::history::resolve(ctx, input)?;
        super::aggregate::aggregate(ctx, &super::run(ctx, &assembled)?, keys, aggs)
    })
}

/// How partials merge per group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Merge {
    /// By hashing their keys.
    Hash,
    /// By sorting their keys, every one monotonic in the designated timestamp, and with the
    /// groups found as runs of each time-sorted partition.
    InTime,
    /// No keys, every aggregate folding across batches ([`AggCall::folds`]): the in-memory
    /// partitions in runs, each run folded in place into one group (`keyless.rs`), merged as
    /// by hashing.
    Fold,
}

fn run(ctx: &ExecContext, s: ScanShape, keys: &[BExpr], aggs: &[AggCall], how: Merge) -> Result<Batch> {
    let table = &**s.table;
    let range = s.range;
    // A scan that reaches no history file reads no row group (the planner's `Partials`).
    let reader = match table.history_reader() {
        Some(r) => Some(r),
        None if !reads_history(table, range) => None,
        None => return Err(SqlError::Internal(format!("table '{}' has history but no reader", table.name()))),
    };
    let bounded = range.is_time_bounded();
    let key_filter = range.keys.as_deref().filter(|_| table.key_col().is_some());
    // Decode the scan's columns, plus what cutting rows needs: the timestamp for a bounded
    // range, the key for a bounded range or a key list.
    let mut need: Vec<usize> = s.columns.to_vec();
    let ts_pos = table.ts_col().filter(|_| bounded).map(|c| position_or_push(&mut need, c));
    // Chunks are sorted by key, then time: the key's runs are what a time cut searches in.
    let key_pos = table.key_col().filter(|_| key_filter.is_some() || bounded).map(|c| position_or_push(&mut need, c));
    if need.is_empty() {
        // A chunk knows its length from its columns: `count(*)` still decodes one.
        position_or_push(&mut need, table.ts_col().or(table.key_col()).unwrap_or(0));
    }
    debug_assert!(key_filter.is_none() || key_pos.is_some());
    // Group keys that are runs in a (key, time)-sorted chunk: the partition key plus keys
    // monotonic in time. Splitting a group in two only costs a merge; positional first/last
    // is all that needs the order, and the aggregate checks the timestamps have no NULLs.
    let kp = table.key_col().and_then(|k| s.columns.iter().position(|&c| c == k));
    let tp = table.ts_col().and_then(|t| s.columns.iter().position(|&c| c == t));
    let read = columns_read(s.columns.len(), keys, aggs, &[kp, tp]);
    let s = s.gather_only(read);
    let has_key = kp.is_some_and(|kp| keys.iter().any(|k| matches!(k, BExpr::Col(i, _) if *i == kp)));
    let run_keys: Option<Vec<usize>> = has_key
        .then(|| {
            keys.iter()
                .enumerate()
                .map(|(j, k)| {
                    let is_key = matches!(k, BExpr::Col(i, _) if Some(*i) == kp);
                    (is_key || tp.is_some_and(|t| monotonic_in(k, t))).then_some(j)
                })
                .collect::<Option<Vec<usize>>>()
        })
        .flatten();

    let partial = |c: &ExecContext, b: Batch, sorted: bool| -> Result<Option<Grouped>> {
        let b = s.apply_filter(c, b)?;
        if b.rows == 0 {
            return Ok(None);
        }
        match (how, tp) {
            // Every key is monotonic in time: runs of each time-sorted piece of the batch.
            (Merge::InTime, Some(t)) => grouped_in_time(c, &b, keys, aggs, t, Mode::Partial).map(Some),
            (Merge::InTime, None) => Err(SqlError::Internal("a GROUP BY in time order without a timestamp".into())),
            (Merge::Hash | Merge::Fold, _) => {
                grouped(c, &b, keys, aggs, run_keys.as_deref().filter(|_| sorted), Mode::Partial).map(Some)
            }
        }
    };
    let units = match (reader, super::scan::history_keys(table, range)) {
        (Some(r), Some(keys)) => r.units(table, keys, range.ts_lo, range.ts_hi)?,
        _ => Vec::new(),
    };
    let rows = units.iter().map(|u| u.rows).sum();
    let unit_partial = |c: &ExecContext, u: &zepto_storage::HistoryUnit| -> Result<Option<Grouped>> {
        let Some(reader) = reader else { return Ok(None) };
        let chunk = reader.read_unit(table, &need, u)?;
        match cut(chunk, s.columns.len(), key_filter, ts_pos, range) {
            Some(b) => partial(c, b, true),
            None => Ok(None),
        }
    };
    let mut outs: Vec<Grouped> = ctx.par_map(&units, rows, unit_partial)?.into_iter().flatten().collect();
    // In memory: every partition on every core, small ones a bundle at a time (or a whole pack
    // at a time, as its columns). A bundle's rows are time-sorted partition by partition: run
    // keys include the partition key, or (in time order) runs are cut where the time steps
    // back, so no run leaves time order.
    let us = super::scan::units(table, range);
    if how == Merge::Fold {
        outs.extend(super::keyless::partials(ctx, &s, &us, aggs)?);
        return merge(ctx, outs, keys, aggs, &s, table, how);
    }
    let rows = us.iter().map(ScanPart::rows).sum();
    let bundle_partial = |c: &ExecContext, b: &&[Unit]| -> Result<Option<Grouped>> {
        partial(c, pieces_batch(table, s.columns, &b.iter().collect::<Vec<_>>())?, true)
    };
    outs.extend(ctx.par_map(&bundles(&us), rows, bundle_partial)?.into_iter().flatten());
    merge(ctx, outs, keys, aggs, &s, table, how)
}

/// Where `c` is in `need`, appended if missing.
fn position_or_push(need: &mut Vec<usize>, c: usize) -> usize {
    need.iter().position(|&n| n == c).unwrap_or_else(|| {
        need.push(c);
        need.len() - 1
    })
}

/// The rows of a decoded row group the scan reads (its keys, its time range), as a batch of
/// the scan's first `width` columns; `None` when none are left.
fn cut(
    chunk: HistoryChunk,
    width: usize,
    keys: Option<&[String]>,
    ts_pos: Option<usize>,
    range: &ScanRange,
) -> Option<Batch> {
    let n = chunk.len();
    let mut keep: Vec<std::ops::Range<usize>> = Vec::new();
    for (key, run) in &chunk.runs {
        if keys.is_some_and(|ks| !key.as_ref().is_some_and(|k| ks.contains(k))) {
            continue;
        }
        let r = match ts_pos {
            Some(t) => ts_cut(&chunk.columns[t], run.clone(), range.ts_lo, range.ts_hi),
            None => run.clone(),
        };
        if !r.is_empty() {
            keep.push(r);
        }
    }
    let kept: usize = keep.iter().map(|r| r.len()).sum();
    if kept == 0 {
        return None;
    }
    let mut cols: Vec<Column> = chunk.columns;
    cols.truncate(width);
    let b = Batch::new(cols, n);
    if kept == n {
        return Some(b);
    }
    let idx: Vec<u32> = keep.into_iter().flat_map(|r| r.start as u32..r.end as u32).collect();
    Some(b.take(&idx))
}

/// Merge partial results (key columns and each aggregate's state) per group.
fn merge(
    ctx: &ExecContext,
    outs: Vec<Grouped>,
    keys: &[BExpr],
    aggs: &[AggCall],
    s: &ScanShape,
    table: &Table,
    how: Merge,
) -> Result<Batch> {
    if outs.is_empty() {
        // No rows at all: what the aggregate says over an empty input (one row without
        // GROUP BY, none with).
        let empty: Vec<Column> = s
            .columns
            .iter()
            .map(|&c| Column::from_data(ColumnData::empty(table.schema().columns[c].data_type)))
            .collect();
        return super::aggregate::aggregate(ctx, &Batch::new(empty, 0), keys, aggs);
    }
    let rows: usize = outs.iter().map(|g| g.groups).sum();
    let concat = |pick: &dyn Fn(&Grouped) -> &Column| Column::concat(&outs.iter().map(pick).collect::<Vec<_>>());
    let key_cols: Vec<Column> = (0..keys.len()).map(|j| concat(&|g| &g.keys[j])).collect();
    let key_refs: Vec<&Column> = key_cols.iter().collect();
    let states: Vec<Vec<Column>> =
        (0..aggs.len()).map(|i| (0..outs[0].aggs[i].len()).map(|j| concat(&|g| &g.aggs[i][j])).collect()).collect();
    let state_refs: Vec<Vec<&Column>> = states.iter().map(|s| s.iter().collect()).collect();
    match how {
        Merge::Hash | Merge::Fold => super::merge_split::merge_on_cores(ctx, &key_refs, &state_refs, aggs, rows),
        // Each partial's rows are a few runs sorted by key (see the module docs).
        Merge::InTime => {
            let groups = super::merge_order::ids_in_order(ctx, &key_refs, rows)?;
            super::exchange::merge_grouped(&key_refs, &state_refs, aggs, groups)
        }
    }
}
