//! The Window operator: evaluates window calls over a materialized input and appends one
//! column per call. Calls sharing PARTITION BY and ORDER BY share one [`layout::Layout`]
//! (partition ids, ordering, peer groups); results are computed in window order and
//! scattered back, so the operator never reorders its input rows.

pub(super) mod frame;
mod layout;

use super::accum;
use super::bundle::{bundles, filtered_bundle};
use super::concat_batches;
use super::eval::eval;
use super::scan::{units, ScanPart, Unit};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::expr::functions::AggFunc;
use crate::plan::physical::{scan_shape, ScanShape};
use crate::plan::window::{Frame, WinCall, WinFunc};
use crate::plan::{AggCall, Plan};
use layout::Layout;
use std::borrow::Cow;
use std::sync::Arc;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

pub fn window(ctx: &ExecContext, b: Batch, calls: &[WinCall]) -> Result<Batch> {
    let mut out: Vec<Option<Column>> = vec![None; calls.len()];
    for i in 0..calls.len() {
        if out[i].is_some() {
            continue;
        }
        let mut layout = Layout::build(ctx, &b, &calls[i].partition, &calls[i].order)?;
        for j in i..calls.len() {
            if out[j].is_none() && calls[j].partition == calls[i].partition && calls[j].order == calls[i].order {
                out[j] = Some(compute(ctx, &b, &mut layout, &calls[j])?);
            }
        }
    }
    let mut cols = b.columns;
    cols.extend(out.into_iter().flatten().map(Arc::new));
    Ok(Batch::shared(cols, b.rows))
}

/// Window calls over a (filtered) scan whose every call partitions by the table's partition key
/// (`ema(price, 100) OVER (PARTITION BY sym ORDER BY ts)`, and the kdb-style default), as the
/// physical planner checked: no window partition spans two table partitions, so each table
/// partition runs [`window`] on its own columns, on every core, and the results are
/// concatenated in scan order.
pub fn partitioned(ctx: &ExecContext, input: &Plan, calls: &[WinCall]) -> Result<Batch> {
    let (outs, types) = partitioned_parts(ctx, input, calls)?;
    concat_batches(ctx, &outs, &types)
}

/// [`partitioned`]'s results one batch per table partition, in scan order (one empty batch
/// when there are none).
pub fn partitioned_chunks(ctx: &ExecContext, input: &Plan, calls: &[WinCall]) -> Result<Vec<Batch>> {
    let (outs, types) = partitioned_parts(ctx, input, calls)?;
    super::or_empty(outs, &types)
}

/// Per table partition: the window calls' results beside the scan's columns, and the types
/// of those columns.
fn partitioned_parts(ctx: &ExecContext, input: &Plan, calls: &[WinCall]) -> Result<(Vec<Batch>, Vec<DataType>)> {
    let shape = scan_shape(input)
        .ok_or_else(|| SqlError::Internal("partition-wise window functions over a non-scan".into()))?;
    let ScanShape { table, columns, range, .. } = shape;
    let us = units(table, range);
    // Small partitions run a bundle (or a whole pack) at a time: every call partitions by the
    // key, so no window partition spans two partitions of a bundle.
    let one = |c: &ExecContext, b: &&[Unit]| -> Result<Batch> { window(c, filtered_bundle(c, &shape, b)?, calls) };
    let rows = us.iter().map(ScanPart::rows).sum();
    let outs = ctx.par_map(&bundles(&us), rows, one)?;
    let types: Vec<DataType> =
        columns.iter().map(|&c| table.schema().columns[c].data_type).chain(calls.iter().map(|c| c.ty)).collect();
    Ok((outs, types))
}

fn compute(ctx: &ExecContext, b: &Batch, l: &mut Layout, c: &WinCall) -> Result<Column> {
    let n = l.n;
    // Whole-partition aggregates need no ordering at all: aggregate by partition id and
    // broadcast.
    if let WinFunc::Agg(func) = c.func {
        if c.frame == Frame::WHOLE || (c.order.is_empty() && c.frame.start == Frame::WHOLE.start && !c.frame.rows) {
            return whole_partition(ctx, b, l, c, func);
        }
    }
    let evaluated = c.args.iter().map(|e| eval(ctx, e, b)).collect::<Result<Vec<_>>>()?;
    let args: Vec<Cow<Column>> = evaluated.iter().map(|x| l.gather(x)).collect();
    let res = match c.func {
        WinFunc::RowNumber => ints_per_row(l, |_, k, ps, _| (k - ps + 1) as i64),
        WinFunc::Rank | WinFunc::DenseRank | WinFunc::PercentRank | WinFunc::CumeDist => ranks(l, c.func),
        WinFunc::Ntile(buckets) => ints_per_row(l, |_, k, ps, pe| ntile(buckets, k - ps, pe - ps)),
        WinFunc::Lag(off) => lag(l, &args, off, c.ignore_nulls),
        WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue(_) => {
            let (fs, fe) = frame::bounds(l, &c.frame)?;
            nth(&args[0], &fs, &fe, c.func, c.ignore_nulls)
        }
        WinFunc::Ema(alpha) => sequential(l, &args[0], |x, prev| match prev {
            None => x,
            Some(s) => alpha * x + (1.0 - alpha) * s,
        }),
        WinFunc::Deltas => deltas(l, &args[0])?,
        WinFunc::Ratios => ratios(l, &args[0])?,
        WinFunc::Agg(func) => {
            let (fs, fe) = frame::bounds(l, &c.frame)?;
            accum::frames(func, c.distinct, c.ty, &args, &fs, &fe)?
        }
    };
    debug_assert_eq!(res.len(), n);
    Ok(l.scatter(res))
}

fn whole_partition(ctx: &ExecContext, b: &Batch, l: &mut Layout, c: &WinCall, func: AggFunc) -> Result<Column> {
    let call = AggCall { func, args: c.args.clone(), distinct: c.distinct, order: None, ty: c.ty };
    let ngroups = l.ngroups.max(1);
    let gid = l.gid();
    let rows = if gid.is_empty() { accum::Rows::sparse(gid) } else { accum::Rows::dense(gid, ngroups) };
    let per_group = accum::aggregate(ctx, &call, b, rows, ngroups, false, accum::Mode::Final)?;
    let [col] = per_group.as_slice() else { return Err(SqlError::Internal("an aggregate gives one column".into())) };
    Ok(col.take(gid))
}

/// An Int64 column from a per-position function `(layout, position, partition start, end)`.
fn ints_per_row(l: &Layout, f: impl Fn(&Layout, usize, usize, usize) -> i64) -> Column {
    let mut v = vec![0i64; l.n];
    for (ps, pe) in l.partitions() {
        for (k, slot) in v.iter_mut().enumerate().take(pe).skip(ps) {
            *slot = f(l, k, ps, pe);
        }
    }
    Column::from_data(ColumnData::Int64(v.into()))
}

/// Bucket (1-based) of row `i` of `n` split into `buckets` near-equal groups, larger first.
fn ntile(buckets: i64, i: usize, n: usize) -> i64 {
    let (i, n) = (i as i64, n as i64);
    let b = buckets.min(n).max(1);
    let size = n / b;
    let large = n - b * size;
    let in_large = large * (size + 1);
    if i < in_large {
        1 + i / (size + 1)
    } else {
        1 + large + (i - in_large) / size
    }
}

fn ranks(l: &mut Layout, f: WinFunc) -> Column {
    let parts: Vec<(usize, usize)> = l.partitions().collect();
    let (lo, hi) = l.peers();
    let n = lo.len();
    match f {
        WinFunc::Rank | WinFunc::DenseRank => {
            let mut v = vec![0i64; n];
            for (ps, pe) in parts {
                let mut dense = 0i64;
                for k in ps..pe {
                    if lo[k] as usize == k {
                        dense += 1;
                    }
                    v[k] = if f == WinFunc::Rank { (lo[k] as usize - ps + 1) as i64 } else { dense };
                }
            }
            Column::from_data(ColumnData::Int64(v.into()))
        }
        _ => {
            let mut v = vec![0f64; n];
            for (ps, pe) in parts {
                let size = (pe - ps) as f64;
                for k in ps..pe {
                    v[k] = if f == WinFunc::PercentRank {
                        if pe - ps > 1 {
                            (lo[k] as usize - ps) as f64 / (size - 1.0)
                        } else {
                            0.0
                        }
                    } else {
                        (hi[k] as usize - ps) as f64 / size
                    };
                }
            }
            Column::from_data(ColumnData::Float64(v.into()))
        }
    }
}

/// `lag(x, off [, default])` (negative `off`: lead). IGNORE NULLS counts only non-NULL rows.
fn lag(l: &Layout, args: &[Cow<Column>], off: i64, ignore_nulls: bool) -> Column {
    let x = &args[0];
    let n = l.n;
    let mut idx = vec![NULL_INDEX; n];
    let pc = if ignore_nulls { accum::prefix_valid(x) } else { vec![] };
    let valid_pos: Vec<u32> =
        if ignore_nulls { (0..n as u32).filter(|&i| x.is_valid(i as usize)).collect() } else { vec![] };
    for (ps, pe) in l.partitions() {
        for (k, slot) in idx.iter_mut().enumerate().take(pe).skip(ps) {
            if off == 0 {
                *slot = k as u32;
                continue;
            }
            if !ignore_nulls {
                let j = k as i64 - off;
                if j >= ps as i64 && j < pe as i64 {
                    *slot = j as u32;
                }
                continue;
            }
            // The off-th non-NULL row before k (or after, for lead).
            let j = if off > 0 { pc[k] as i64 - off } else { pc[k + 1] as i64 - off - 1 };
            if j >= pc[ps] as i64 && j < pc[pe] as i64 {
                *slot = valid_pos[j as usize];
            }
        }
    }
    let got = x.take_opt(&idx);
    match args.get(1) {
        None => got,
        Some(d) => {
            // Rows without a source row take the default.
            let both = Column::concat(&[&**x, &**d]);
            let pick: Vec<u32> =
                idx.iter().enumerate().map(|(k, &i)| if i == NULL_INDEX { (n + k) as u32 } else { i }).collect();
            both.take(&pick)
        }
    }
}

/// first_value / last_value / nth_value over each frame.
fn nth(x: &Column, fs: &[u32], fe: &[u32], f: WinFunc, ignore_nulls: bool) -> Column {
    let n = fs.len();
    let pc = if ignore_nulls { accum::prefix_valid(x) } else { vec![] };
    let valid_pos: Vec<u32> =
        if ignore_nulls { (0..n as u32).filter(|&i| x.is_valid(i as usize)).collect() } else { vec![] };
    let idx: Vec<u32> = (0..n)
        .map(|k| {
            let (a, b) = (fs[k] as usize, fe[k] as usize);
            if a >= b {
                return NULL_INDEX;
            }
            if !ignore_nulls {
                return match f {
                    WinFunc::FirstValue => a as u32,
                    WinFunc::LastValue => (b - 1) as u32,
                    WinFunc::NthValue(m) => {
                        let j = a as i64 + m - 1;
                        if j < b as i64 {
                            j as u32
                        } else {
                            NULL_INDEX
                        }
                    }
                    _ => NULL_INDEX,
                };
            }
            let (va, vb) = (pc[a] as i64, pc[b] as i64);
            let j = match f {
                WinFunc::FirstValue => va,
                WinFunc::LastValue => vb - 1,
                WinFunc::NthValue(m) => va + m - 1,
                _ => -1,
            };
            if j >= va && j < vb {
                valid_pos[j as usize]
            } else {
                NULL_INDEX
            }
        })
        .collect();
    x.take_opt(&idx)
}

/// A running state per partition over the non-NULL values (NULL rows give NULL).
fn sequential(l: &Layout, x: &Column, step: impl Fn(f64, Option<f64>) -> f64) -> Column {
    let v = match &x.data() {
        ColumnData::Float64(v) => v.as_slice(),
        _ => &[],
    };
    let mut out = vec![0f64; l.n];
    for (ps, pe) in l.partitions() {
        let mut s = None;
        for k in ps..pe {
            if x.validity().is_none() || x.is_valid(k) {
                let y = step(v.get(k).copied().unwrap_or(0.0), s);
                s = Some(y);
                out[k] = y;
            }
        }
    }
    let validity = x.validity().cloned();
    Column::new(ColumnData::Float64(out.into()), validity)
}

fn deltas(l: &Layout, x: &Column) -> Result<Column> {
    let mut valid = Bitmap::new_set(l.n);
    let ok = |k: usize| x.is_valid(k);
    let flag = |k: usize, prev: Option<usize>, valid: &mut Bitmap| {
        if !ok(k) || prev.is_some_and(|p| !ok(p)) {
            valid.set(k, false);
        }
    };
    let data = match &x.data() {
        ColumnData::Float64(v) => {
            let mut out = vec![0f64; l.n];
            for (ps, pe) in l.partitions() {
                for k in ps..pe {
                    let prev = (k > ps).then(|| k - 1);
                    out[k] = v[k] - prev.map_or(0.0, |p| v[p]);
                    flag(k, prev, &mut valid);
                }
            }
            ColumnData::Float64(out.into())
        }
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            let timestamps = matches!(x.data(), ColumnData::Timestamp(_));
            let mut out = vec![0i64; l.n];
            for (ps, pe) in l.partitions() {
                for k in ps..pe {
                    let prev = (k > ps).then(|| k - 1);
                    // The first timestamp of a partition has no predecessor: NULL, not an
                    // interval since 1970.
                    if timestamps && prev.is_none() {
                        valid.set(k, false);
                        continue;
                    }
                    out[k] = v[k].wrapping_sub(prev.map_or(0, |p| v[p]));
                    flag(k, prev, &mut valid);
                }
            }
            if timestamps || matches!(x.data(), ColumnData::Interval(_)) {
                ColumnData::Interval(out.into())
            } else {
                ColumnData::Int64(out.into())
            }
        }
        ColumnData::Null(n) => return Ok(Column::nulls(zepto_storage::DataType::Int64, *n)),
        d => return Err(crate::error::SqlError::Internal(format!("deltas over {}", d.data_type()))),
    };
    Ok(Column::new(data, Some(valid)))
}

fn ratios(l: &Layout, x: &Column) -> Result<Column> {
    let v = match &x.data() {
        ColumnData::Float64(v) => v.as_slice(),
        _ => &[],
    };
    let mut out = Vec::with_capacity(l.n);
    for (ps, pe) in l.partitions() {
        for k in ps..pe {
            let cur = x.is_valid(k).then(|| v.get(k).copied().unwrap_or(0.0));
            out.push(if k == ps {
                cur
            } else {
                let prev = x.is_valid(k - 1).then(|| v.get(k - 1).copied().unwrap_or(0.0));
                match (cur, prev) {
                    (Some(c), Some(p)) if p != 0.0 => Some(c / p),
                    _ => None,
                }
            });
        }
    }
    Ok(accum::from_opt_f64(out.into_iter()))
}
