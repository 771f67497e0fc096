//! GROUP BY: rows → groups, then every aggregate's accumulator ([`super::accum`]) over them.
//!
//! Groups are found by hashing the keys (`hash::group_ids`; a single SYMBOL key uses
//! the dictionary code directly), or, when the input is ordered so that groups are runs of
//! neighbouring rows (one partition's rows, time buckets in a time-sorted partition), from
//! the rows where a key changes: no hashing, and each aggregate reduces run by run.

use super::accum::{self, Mode, Rows};
use super::eval::eval;
use super::hash::{group_ids, key_take, positive_zeros, GroupIds};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::{AggCall, BExpr};
use zepto_storage::{Column, ColumnData};

/// Groups and what each aggregate made of them: its result, or its partial state columns.
pub struct Grouped {
    /// The group keys, one column per key expression, one row per group.
    pub keys: Vec<Column>,
    /// Per aggregate, its result column (or its state columns when partial), one row per group.
    pub aggs: Vec<Vec<Column>>,
    /// Number of groups.
    pub groups: usize,
}

impl Grouped {
    /// Key columns then every aggregate's columns, as one batch.
    pub fn into_batch(self) -> Batch {
        // Sized first: a vector grown by `collect` is moved by `realloc`, which takes the
        // allocator's arena lock (no thread cache), once per partition of a GROUP BY.
        let mut cols = Vec::with_capacity(self.keys.len() + self.aggs.iter().map(Vec::len).sum::<usize>());
        cols.extend(self.keys);
        cols.extend(self.aggs.into_iter().flatten());
        Batch::new(cols, self.groups)
    }
}

/// GROUP BY `keys` over a batch, by hashing.
pub fn aggregate(ctx: &ExecContext, b: &Batch, keys: &[BExpr], aggs: &[AggCall]) -> Result<Batch> {
    Ok(grouped(ctx, b, keys, aggs, None, Mode::Final)?.into_batch())
}

/// GROUP BY `keys` over a batch whose keys are a few sorted runs (time-sorted partitions one
/// after another, keys monotonic in time): groups found by sorting the keys, which merges
/// those runs, instead of hashing them. Groups come in key order.
pub fn aggregate_in_order(ctx: &ExecContext, b: &Batch, keys: &[BExpr], aggs: &[AggCall]) -> Result<Batch> {
    let key_cols = keys.iter().map(|k| eval(ctx, k, b)).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Column> = key_cols.iter().map(|c| &**c).collect();
    let ids = super::merge_order::ids_in_order(ctx, &refs, b.rows)?;
    by_ids(ctx, b, &key_cols, aggs, ids, Mode::Final).map(Grouped::into_batch)
}

/// Aggregate one batch. `runs`: key positions whose values only change between runs of rows
/// (time buckets inside a time-sorted partition); when every key is constant or such a run
/// key, groups are found by comparing neighbours instead of hashing.
pub fn grouped(
    ctx: &ExecContext,
    b: &Batch,
    keys: &[BExpr],
    aggs: &[AggCall],
    runs: Option<&[usize]>,
    mode: Mode,
) -> Result<Grouped> {
    let key_cols = keys.iter().map(|k| eval(ctx, k, b)).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Column> = key_cols.iter().map(|c| &**c).collect();
    match runs {
        // Run groups need only their start rows.
        Some(r) => {
            // No run key: one group (when there are rows), with no pass over the keys.
            let first = match r {
                [] => {
                    if b.rows > 0 {
                        vec![0]
                    } else {
                        vec![]
                    }
                }
                r => run_starts(&r.iter().map(|&k| refs[k]).collect::<Vec<_>>(), None, b.rows),
            };
            let out: Vec<Column> = key_cols.iter().map(|c| key_take(c, &first)).collect();
            over_runs(ctx, b, out, aggs, &first, mode)
        }
        // No keys: one group, every row of it one run (no id per row), unless an aggregate
        // orders its rows by time (a run's rows would count as time-sorted).
        None if keys.is_empty() && b.rows > 0 && aggs.iter().all(|a| a.order.is_none()) => {
            over_runs(ctx, b, Vec::new(), aggs, &[0], mode)
        }
        None => {
            let ids = group_ids(&refs, b.rows);
            by_ids(ctx, b, &key_cols, aggs, ids, mode)
        }
    }
}

/// Aggregate a batch of time-sorted pieces one after another (the partitions of a bundle or a
/// pack), every key monotonic in the designated timestamp (column `ts` of `b`): groups are runs
/// of equal keys, cut also where the time steps back (a new piece begins) and around NULL
/// times, so every run is in time order, which `first`/`last` over a run rely on. A key's value
/// may span several runs: they are merged later (`exec/merge_order.rs`).
pub fn grouped_in_time(
    ctx: &ExecContext,
    b: &Batch,
    keys: &[BExpr],
    aggs: &[AggCall],
    ts: usize,
    mode: Mode,
) -> Result<Grouped> {
    let key_cols = keys.iter().map(|k| eval(ctx, k, b)).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Column> = key_cols.iter().map(|c| &**c).collect();
    let time =
        b.columns.get(ts).ok_or_else(|| SqlError::Internal("a GROUP BY in time order without its time".into()))?;
    let first = run_starts(&refs, Some(&**time), b.rows);
    let out: Vec<Column> = key_cols.iter().map(|c| key_take(c, &first)).collect();
    over_runs(ctx, b, out, aggs, &first, mode)
}

/// Aggregate `b` over the groups `ids` found (its keys' columns `key_cols`).
fn by_ids(
    ctx: &ExecContext,
    b: &Batch,
    key_cols: &[std::borrow::Cow<'_, Column>],
    aggs: &[AggCall],
    ids: GroupIds,
    mode: Mode,
) -> Result<Grouped> {
    let GroupIds { ids, first } = ids;
    // Without GROUP BY there is exactly one group, even over no rows.
    let groups = if key_cols.is_empty() { 1 } else { first.len() };
    let out: Vec<Column> = key_cols.iter().map(|c| key_take(c, &first)).collect();
    // Every group found has a row; the one group of an aggregate without keys may not.
    let rows = if b.rows == 0 { Rows::sparse(&ids) } else { Rows::dense(&ids, groups) };
    let aggs = accum::aggregate_all(ctx, aggs, b, rows, groups, false, mode)?;
    Ok(Grouped { keys: out, aggs, groups })
}

/// Aggregate a batch in designated time order whose groups are the runs of rows starting at
/// `starts` (the first is 0; none for no rows): keys evaluated at the start rows only, then
/// each aggregate. For groups found without evaluating a key on every row. `same`: a column
/// that holds one value on every row (a partition's key), read at its first row alone rather
/// than at every start (a cache line each).
pub fn aggregate_runs(
    ctx: &ExecContext,
    b: &Batch,
    keys: &[BExpr],
    aggs: &[AggCall],
    starts: &[u32],
    same: Option<usize>,
) -> Result<Batch> {
    debug_assert!(starts.first().is_none_or(|&s| s == 0) && starts.windows(2).all(|w| w[0] < w[1]));
    // A column's start rows; a key that is a column is taken so, as it is (no batch of
    // heads, no copy of one).
    let head = |i: usize| -> Result<Column> {
        let c = b.columns.get(i).ok_or_else(|| SqlError::Internal(format!("key column {i} out of range")))?;
        Ok(if Some(i) == same { c.take(&vec![0; starts.len()]) } else { c.take(starts) })
    };
    // The start rows of the columns the other keys read (the rest stand in as untyped NULLs).
    let mut read = vec![false; b.columns.len()];
    keys.iter().filter(|k| !matches!(k, BExpr::Col(..))).for_each(|k| super::scan::mark_reads(k, &mut read));
    let heads = match keys.iter().any(|k| !matches!(k, BExpr::Col(..))) {
        true => {
            let col = |(i, &r): (usize, &bool)| {
                if r {
                    head(i).map(std::sync::Arc::new)
                } else {
                    Ok(super::scan::unread(starts.len()))
                }
            };
            Some(Batch::shared(read.iter().enumerate().map(col).collect::<Result<_>>()?, starts.len()))
        }
        false => None,
    };
    let key = |k: &BExpr| -> Result<Column> {
        let c = match (k, &heads) {
            (BExpr::Col(i, _), _) => head(*i)?,
            (_, Some(h)) => eval(ctx, k, h)?.into_owned(),
            (_, None) => return Err(SqlError::Internal("a key evaluated without the start rows".into())),
        };
        Ok(positive_zeros(c))
    };
    let out = keys.iter().map(key).collect::<Result<Vec<_>>>()?;
    Ok(over_runs(ctx, b, out, aggs, starts, Mode::Final)?.into_batch())
}

/// `aggs` over the runs starting at `starts`, after the key columns `keys`.
fn over_runs(
    ctx: &ExecContext,
    b: &Batch,
    keys: Vec<Column>,
    aggs: &[AggCall],
    starts: &[u32],
    mode: Mode,
) -> Result<Grouped> {
    let rows = Rows::Runs { starts, n: b.rows };
    let groups = starts.len();
    let aggs = accum::aggregate_all(ctx, aggs, b, rows, groups, true, mode)?;
    Ok(Grouped { keys, aggs, groups })
}

/// Groups as runs of equal neighbouring keys (input ordered so that equal keys are adjacent):
/// the first row of each run.
fn run_starts(cols: &[&Column], steps_back: Option<&Column>, n: usize) -> Vec<u32> {
    let mut first = Vec::new();
    if n == 0 {
        return first;
    }
    first.push(0);
    // Row i starts a run when any key differs from row i - 1: one pass per key, over the raw
    // values where there are no NULLs (a symbol key's codes, a time bucket's i64s).
    let mut changed = vec![false; n];
    for c in cols {
        fn mark<T: PartialEq>(v: &[T], changed: &mut [bool]) {
            for (i, w) in v.windows(2).enumerate() {
                changed[i + 1] |= w[0] != w[1];
            }
        }
        match (&c.data(), c.validity()) {
            (ColumnData::Symbol { codes, .. }, None) => mark(codes, &mut changed),
            (ColumnData::Int32(v) | ColumnData::Date(v), None) => mark(v, &mut changed),
            (ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v), None) => mark(v, &mut changed),
            _ => {
                for i in 1..n {
                    changed[i] |= !super::hash::rows_equal(&[c], i - 1, &[c], i);
                }
            }
        }
    }
    // A time that steps back starts a new piece: cut there too, and on either side of a NULL
    // time (a piece's NULL times come first). A time column that is not one cuts every row.
    if let Some(t) = steps_back {
        match (t.as_i64_slice(), t.validity()) {
            (Some(v), None) => {
                for (i, w) in v.windows(2).enumerate() {
                    changed[i + 1] |= w[1] < w[0];
                }
            }
            (Some(v), Some(_)) => {
                for i in 1..n {
                    changed[i] |= !t.is_valid(i) || !t.is_valid(i - 1) || v[i] < v[i - 1];
                }
            }
            (None, _) => changed.iter_mut().skip(1).for_each(|c| *c = true),
        }
    }
    first.extend((1..n).filter(|&i| changed[i]).map(|i| i as u32));
    first
}

/// Which of `width` input columns a GROUP BY reads: its keys, its aggregates' arguments and
/// orderings, and `also` (columns the operator reads itself: the partition key, the
/// designated timestamp). What a filter below it reads alone need not be gathered.
pub(super) fn columns_read(width: usize, keys: &[BExpr], aggs: &[AggCall], also: &[Option<usize>]) -> Vec<bool> {
    let mut read = vec![false; width];
    let mut mark = |c: usize| read[c] = true;
    keys.iter().for_each(|k| k.for_each_col(&mut mark));
    for a in aggs {
        a.args.iter().chain(&a.order).for_each(|e| e.for_each_col(&mut mark));
    }
    also.iter().flatten().for_each(|&c| mark(c));
    read
}
