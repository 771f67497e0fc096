//! Aggregates over the Parquet history without assembling it: the shape DuckDB streams.
//!
//! `SELECT keys, aggs FROM t [WHERE ...] GROUP BY keys` over a scan that reaches the history
//! would otherwise materialize every row the scan reads (see [`super::history`]): decoded row
//! groups copied into per-key partitions, twice the data in memory, half the time in page
//! faults. Instead, each history row group is decoded, cut to the scan's keys and time range,
//! filtered and aggregated into *partial* results on a helper thread, then dropped; the
//! in-memory partitions are aggregated the same way; and the partials are merged per group.
//! Memory is one row group per core plus the partials.
//!
//! Only aggregates that merge exactly take this path: `count`, `sum` (BIGINT, DOUBLE), `min`,
//! `max`, `avg` (kept as average and count), and `first`/`last` by time (kept with the time of
//! the row they picked; ties go to the earlier / later partial, as in a time-sorted partition
//! assembled file by file then memory). Anything else (DISTINCT, medians, variance, vwap,
//! twap) takes the assembling path.
//!
//! Where results may differ from the same rows in memory, both being right: `avg` is merged
//! as Σ(avgᵢ·nᵢ)/Σnᵢ, equal up to floating-point rounding; and `first`/`last` of a group that
//! spans several keys, when rows of different keys tie at the extreme time, pick by file order
//! rather than by partition order (by-time order does not rank such ties).

use super::aggregate::{aggregate_grouped, run_agg};
use super::hash::{group_ids, GroupIds};
use super::history::ts_cut;
use super::interrupt::par_map;
use super::scan::{piece_batch, pieces};
use super::Batch;
use crate::error::{Result, SqlError};
use crate::plan::functions::AggFunc;
use crate::plan::physical::{monotonic_in, scan_shape, ScanShape};
use crate::plan::{AggCall, BExpr, Plan, ScanRange};
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, ColumnData, DataType, HistoryChunk, Table};

/// The aggregate over a (filtered) scan that reaches the history, from partials (`parts[i]`
/// stands for `aggs[i]`), as the physical planner chose. A failure of the partial path (a
/// BIGINT partial sum that overflows while the total would not, say) is retried over the
/// assembled rows, which either succeeds or fails the way any other path would.
pub(super) fn aggregate(
    ctx: &super::ExecContext,
    input: &Plan,
    keys: &[BExpr],
    aggs: &[AggCall],
    parts: &[Vec<AggCall>],
) -> Result<Batch> {
    let s = scan_shape(input).ok_or_else(|| SqlError::Internal("history GROUP BY over a non-scan".into()))?;
    run(&s, keys, aggs, parts).or_else(|_| {
        let assembled = super::history::resolve(input)?;
        super::aggregate::aggregate(&super::run(ctx, &assembled)?, keys, aggs)
    })
}

fn run(s: &ScanShape, keys: &[BExpr], aggs: &[AggCall], parts: &[Vec<AggCall>]) -> Result<Batch> {
    let table = &**s.table;
    let reader = table
        .history_reader()
        .ok_or_else(|| SqlError::Internal(format!("table '{}' has history but no reader", table.name)))?;
    let flat: Vec<AggCall> = parts.iter().flatten().cloned().collect();
    let range = s.range;
    let bounded = range.ts_lo != i64::MIN || range.ts_hi != i64::MAX;
    let key_filter = range.keys.as_deref().filter(|_| table.key_col.is_some());
    // Decode the scan's columns, plus what cutting rows needs: the timestamp for a bounded
    // range, the key for a bounded range or a key list.
    let mut need: Vec<usize> = s.columns.to_vec();
    let ts_pos = table.ts_col.filter(|_| bounded).map(|c| position_or_push(&mut need, c));
    // Chunks are sorted by key, then time: the key's runs are what a time cut searches in.
    let key_pos = table.key_col.filter(|_| key_filter.is_some() || bounded).map(|c| position_or_push(&mut need, c));
    if need.is_empty() {
        // A chunk knows its length from its columns: `count(*)` still decodes one.
        position_or_push(&mut need, table.ts_col.or(table.key_col).unwrap_or(0));
    }
    debug_assert!(key_filter.is_none() || key_pos.is_some());
    // Group keys that are runs in a (key, time)-sorted chunk: the partition key plus keys
    // monotonic in time. Splitting a group in two only costs a merge; positional first/last
    // is all that needs the order, and the aggregate checks the timestamps have no NULLs.
    let kp = table.key_col.and_then(|k| s.columns.iter().position(|&c| c == k));
    let tp = table.ts_col.and_then(|t| s.columns.iter().position(|&c| c == t));
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

    let partial = |b: Batch, sorted: bool| -> Result<Option<Batch>> {
        let b = s.apply_filter(b)?;
        if b.rows == 0 {
            return Ok(None);
        }
        aggregate_grouped(&b, keys, &flat, run_keys.as_deref().filter(|_| sorted)).map(Some)
    };
    let units = reader.units(table, range.keys.as_deref(), range.ts_lo, range.ts_hi)?;
    let rows = units.iter().map(|u| u.rows).sum();
    let unit_partial = |u: &zepto_storage::HistoryUnit| -> Result<Option<Batch>> {
        let chunk = reader.read_unit(table, &need, u)?;
        match cut(chunk, s.columns.len(), key_filter, ts_pos, range) {
            Some(b) => partial(b, true),
            None => Ok(None),
        }
    };
    let mut outs: Vec<Batch> = par_map(&units, rows, unit_partial)?.into_iter().flatten().collect();
    for p in pieces(table, range) {
        super::interrupt::check()?;
        if let Some(o) = partial(piece_batch(table, &p, s.columns, range), p.part.sorted)? {
            outs.push(o);
        }
    }
    merge(outs, keys, aggs, parts, s, table)
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

/// Merge partial results (key columns, then each aggregate's partial columns) per group.
fn merge(
    outs: Vec<Batch>,
    keys: &[BExpr],
    aggs: &[AggCall],
    parts: &[Vec<AggCall>],
    s: &ScanShape,
    table: &Table,
) -> Result<Batch> {
    if outs.is_empty() {
        // No rows at all: what the aggregate says over an empty input (one row without
        // GROUP BY, none with).
        let empty: Vec<Column> = s
            .columns
            .iter()
            .map(|&c| Column::from_data(ColumnData::empty(table.schema.columns[c].data_type)))
            .collect();
        return super::aggregate::aggregate(&Batch::new(empty, 0), keys, aggs);
    }
    let width = outs[0].columns.len();
    let rows: usize = outs.iter().map(|b| b.rows).sum();
    let cols: Vec<Column> =
        (0..width).map(|j| Column::concat(&outs.iter().map(|b| &*b.columns[j]).collect::<Vec<_>>())).collect();
    let p = Batch::new(cols, rows);
    let nk = keys.len();
    let key_refs: Vec<&Column> = p.columns[..nk].iter().map(|c| &**c).collect();
    let GroupIds { ids, first } = group_ids(&key_refs, rows);
    let ng = if nk == 0 { 1 } else { first.len() };
    let mut out: Vec<Column> = key_refs.iter().map(|c| c.take(&first)).collect();
    let mut at = nk;
    for (a, ps) in aggs.iter().zip(parts) {
        let col = |k: usize| BExpr::Col(at + k, p.columns[at + k].data_type());
        let combine = |func: AggFunc, ty: DataType| {
            let call = AggCall { func, args: vec![col(0)], distinct: false, order: None, ty };
            run_agg(&call, &p, &ids, ng, false)
        };
        out.push(match a.func {
            AggFunc::CountStar | AggFunc::Count => combine(AggFunc::Sum, DataType::Int64)?,
            AggFunc::Sum => combine(AggFunc::Sum, a.ty)?,
            AggFunc::Min | AggFunc::Max => combine(a.func, a.ty)?,
            AggFunc::Avg => merge_avg(&p.columns[at], &p.columns[at + 1], &ids, ng)?,
            AggFunc::First | AggFunc::Last => {
                merge_first_last(&p.columns[at], &p.columns[at + 1], &ids, ng, a.func == AggFunc::First)
            }
            f => return Err(SqlError::Internal(format!("no partial merge for {f:?}"))),
        });
        at += ps.len();
    }
    Ok(Batch::new(out, ng))
}

/// Average of averages weighted by their counts; NULL where no partial saw a value.
fn merge_avg(avg: &Column, count: &Column, ids: &[u32], ng: usize) -> Result<Column> {
    let (ColumnData::Float64(a), ColumnData::Int64(c)) = (&avg.data, &count.data) else {
        return Err(SqlError::Internal("avg partials are not (DOUBLE, BIGINT)".into()));
    };
    let mut sum = vec![0.0f64; ng];
    let mut n = vec![0i64; ng];
    for (i, &g) in ids.iter().enumerate() {
        if avg.is_valid(i) && c[i] > 0 {
            sum[g as usize] += a[i] * c[i] as f64;
            n[g as usize] += c[i];
        }
    }
    let mut b = zepto_storage::ColumnBuilder::new(DataType::Float64, ng);
    for (s, &k) in sum.iter().zip(&n) {
        if k > 0 {
            b.push_value(&zepto_storage::Value::Float64(s / k as f64));
        } else {
            b.push_null();
        }
    }
    Ok(b.finish())
}

/// Per group, the partial value whose time is smallest (`first`) or largest (`last`); a NULL
/// time means the partial saw no timed row and never wins. Ties: the earliest partial for
/// `first`, the latest for `last` (partials come file by file, then memory).
fn merge_first_last(value: &Column, time: &Column, ids: &[u32], ng: usize, first: bool) -> Column {
    let Some(t) = time.as_i64_slice() else {
        return Column::nulls(value.data_type(), ng);
    };
    let mut best = vec![NULL_INDEX; ng];
    for (i, &g) in ids.iter().enumerate() {
        if !time.is_valid(i) {
            continue;
        }
        let slot = &mut best[g as usize];
        let better = *slot == NULL_INDEX || {
            let cur = t[*slot as usize];
            if first {
                t[i] < cur
            } else {
                t[i] >= cur
            }
        };
        if better {
            *slot = i as u32;
        }
    }
    value.take_opt(&best)
}
