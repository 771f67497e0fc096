//! Hash aggregation: rows → dense group ids ([`super::hash::group_ids`]; a single SYMBOL key
//! uses the dictionary code directly), then each aggregate runs as a tight loop over
//! `(group id, value)` into per-group accumulators.

use super::eval::eval;
use super::hash::{group_ids, GroupIds};
use super::sort::value_cmp;
use super::Batch;
use crate::error::{Result, SqlError};
use crate::plan::functions::AggFunc;
use crate::plan::{AggCall, BExpr};
use std::borrow::Cow;
use std::cmp::Ordering;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

pub fn aggregate(b: &Batch, keys: &[BExpr], aggs: &[AggCall]) -> Result<Batch> {
    aggregate_grouped(b, keys, aggs, None)
}

/// Aggregate one batch. `runs`: key positions whose values only change between runs of rows
/// (time buckets inside a time-sorted partition); when every key is constant or such a run
/// key, groups are found by comparing neighbours instead of hashing.
pub fn aggregate_grouped(b: &Batch, keys: &[BExpr], aggs: &[AggCall], runs: Option<&[usize]>) -> Result<Batch> {
    let key_cols = keys.iter().map(|k| eval(k, b)).collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Column> = key_cols.iter().map(|c| &**c).collect();
    if runs.is_some_and(|r| r.is_empty()) && b.rows > 0 {
        return single_group(b, &key_cols, aggs);
    }
    match runs {
        // Run groups need only their start rows; per-row ids are made if an aggregate needs them.
        Some(r) => {
            let first = run_starts(&r.iter().map(|&k| refs[k]).collect::<Vec<_>>(), b.rows);
            let out: Vec<Column> = key_cols.iter().map(|c| c.take(&first)).collect();
            aggregate_over_runs(b, out, aggs, &first)
        }
        None => {
            let GroupIds { ids, first } = group_ids(&refs, b.rows);
            // Without GROUP BY there is exactly one group, even over no rows.
            let ngroups = if keys.is_empty() { 1 } else { first.len() };
            let mut out: Vec<Column> = key_cols.iter().map(|c| c.take(&first)).collect();
            for a in aggs {
                out.push(run_agg(a, b, &ids, ngroups, false)?);
            }
            Ok(Batch::new(out, ngroups))
        }
    }
}

/// Aggregate a batch in designated time order whose groups are the runs of rows starting at
/// `starts` (the first is 0; none for no rows): keys evaluated at the start rows only, then
/// each aggregate. For groups found without evaluating a key on every row.
pub fn aggregate_runs(b: &Batch, keys: &[BExpr], aggs: &[AggCall], starts: &[u32]) -> Result<Batch> {
    debug_assert!(starts.first().is_none_or(|&s| s == 0) && starts.windows(2).all(|w| w[0] < w[1]));
    // The start rows of the columns the keys read (the others stand in as untyped NULLs).
    let mut read = vec![false; b.columns.len()];
    keys.iter().for_each(|k| k.for_each_col(&mut |i| read.get_mut(i).into_iter().for_each(|r| *r = true)));
    let heads = Batch::shared(
        b.columns
            .iter()
            .zip(&read)
            .map(|(c, &r)| {
                std::sync::Arc::new(if r { c.take(starts) } else { Column::nulls(DataType::Null, starts.len()) })
            })
            .collect(),
        starts.len(),
    );
    let out = keys.iter().map(|k| eval(k, &heads).map(|c| c.into_owned())).collect::<Result<Vec<_>>>()?;
    aggregate_over_runs(b, out, aggs, starts)
}

/// `aggs` over the runs starting at `first`, after the key columns `out`.
fn aggregate_over_runs(b: &Batch, mut out: Vec<Column>, aggs: &[AggCall], first: &[u32]) -> Result<Batch> {
    let ngroups = first.len();
    let mut ids = None;
    for a in aggs {
        // Groups that are runs of neighbours reduce slice by slice (vectorizable, no scatter).
        if !a.distinct && b.rows > 0 {
            let args = a.args.iter().map(|e| eval(e, b)).collect::<Result<Vec<_>>>()?;
            let order_ok = a.order.as_ref().is_none_or(|o| matches!(eval(o, b), Ok(c) if c.validity.is_none()));
            if let Some(c) = segment_agg(a, &args, first, b.rows, order_ok)? {
                out.push(c);
                continue;
            }
        }
        // Inside a time-sorted piece, rows are in designated-timestamp order.
        let ids = ids.get_or_insert_with(|| run_ids(first, b.rows));
        out.push(run_agg(a, b, ids, ngroups, true)?);
    }
    Ok(Batch::new(out, ngroups))
}

/// Group id of every row from run start rows.
fn run_ids(starts: &[u32], n: usize) -> Vec<u32> {
    let mut ids = Vec::with_capacity(n);
    for (g, &s) in starts.iter().enumerate() {
        let e = starts.get(g + 1).map_or(n, |&x| x as usize);
        ids.resize(ids.len() + (e - s as usize), g as u32);
    }
    ids
}

/// Aggregates over groups that are consecutive runs starting at `starts` (rows in designated
/// time order), for NULL-free numeric inputs: each run is a slice reduced on its own. `None`
/// for anything else (the general path). `order_ok`: first/last may be positional.
fn segment_agg(a: &AggCall, args: &[Cow<Column>], starts: &[u32], n: usize, order_ok: bool) -> Result<Option<Column>> {
    let ends: Vec<usize> = starts.iter().skip(1).map(|&s| s as usize).chain(std::iter::once(n)).collect();
    let runs = || starts.iter().map(|&s| s as usize).zip(ends.iter().copied());
    if a.func == AggFunc::CountStar {
        return Ok(Some(Column::from_data(ColumnData::Int64(runs().map(|(s, e)| (e - s) as i64).collect()))));
    }
    let Some(x) = args.first() else { return Ok(None) };
    if matches!(a.func, AggFunc::First | AggFunc::Last) && order_ok {
        let idx: Vec<u32> =
            if a.func == AggFunc::First { starts.to_vec() } else { ends.iter().map(|&e| e as u32 - 1).collect() };
        return Ok(Some(x.take(&idx)));
    }
    if x.validity.is_some() || args.len() != 1 {
        return Ok(None);
    }
    let col = |d: ColumnData| Ok(Some(Column::from_data(d)));
    match (a.func, &x.data) {
        (AggFunc::Count, _) => col(ColumnData::Int64(runs().map(|(s, e)| (e - s) as i64).collect())),
        (AggFunc::Sum, ColumnData::Float64(v)) => {
            col(ColumnData::Float64(runs().map(|(s, e)| lane_sum(&v[s..e])).collect()))
        }
        (AggFunc::Avg, ColumnData::Float64(v)) => {
            col(ColumnData::Float64(runs().map(|(s, e)| lane_sum(&v[s..e]) / (e - s) as f64).collect()))
        }
        (AggFunc::Sum, ColumnData::Int64(v)) if a.ty == DataType::Int64 => {
            let mut out = Vec::with_capacity(starts.len());
            // When no run can overflow (its length times the largest magnitude fits), sums run
            // in i64 lanes; otherwise in i128, checked.
            // Every |y| is at most `peak`: the OR of the one's-complement magnitudes (y, or
            // |y| - 1 for negatives) bounds them all, plus one, rounded up to a power of two.
            // One vectorizable pass (no 64-bit compares).
            let bits = v.iter().fold(0u64, |m, &y| m | (y ^ (y >> 63)) as u64);
            let peak = (bits + 1).checked_next_power_of_two().unwrap_or(u64::MAX);
            let longest = runs().map(|(s, e)| e - s).max().unwrap_or(0) as u64;
            if peak.checked_mul(longest).is_some_and(|b| b <= i64::MAX as u64) {
                return col(ColumnData::Int64(runs().map(|(s, e)| lane_sum_i64(&v[s..e])).collect()));
            }
            for (s, e) in runs() {
                let t: i128 = v[s..e].iter().map(|&y| y as i128).sum();
                out.push(i64::try_from(t).map_err(|_| SqlError::exec("out of range: sum() overflows BIGINT"))?);
            }
            col(ColumnData::Int64(out))
        }
        (AggFunc::Min | AggFunc::Max, ColumnData::Float64(v)) => {
            let min = a.func == AggFunc::Min;
            let mut out = Vec::with_capacity(starts.len());
            for (s, e) in runs() {
                let r = &v[s..e];
                match if min { lane_extreme::<true>(r) } else { lane_extreme::<false>(r) } {
                    Some(x) => out.push(x),
                    None => return Ok(None), // a NaN: the general path orders it
                }
            }
            col(ColumnData::Float64(out))
        }
        (AggFunc::Min | AggFunc::Max, ColumnData::Int64(v)) => {
            let min = a.func == AggFunc::Min;
            col(ColumnData::Int64(
                runs()
                    .map(|(s, e)| {
                        let r = v[s..e].iter().copied();
                        if min {
                            r.min().unwrap_or(0)
                        } else {
                            r.max().unwrap_or(0)
                        }
                    })
                    .collect(),
            ))
        }
        _ => Ok(None),
    }
}

/// Groups as runs of equal neighbouring keys (input ordered so that equal keys are adjacent):
/// the first row of each run.
fn run_starts(cols: &[&Column], n: usize) -> Vec<u32> {
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
        match (&c.data, &c.validity) {
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
    first.extend((1..n).filter(|&i| changed[i]).map(|i| i as u32));
    first
}

/// Every key is constant over the (non-empty) batch: one group, no group ids. Common
/// aggregates over NULL-free inputs run as multi-lane reductions (no per-row dependency chain,
/// so the compiler vectorizes them); anything else takes the general path with one group.
fn single_group(b: &Batch, key_cols: &[Cow<Column>], aggs: &[AggCall]) -> Result<Batch> {
    let mut out: Vec<Column> = key_cols.iter().map(|c| c.take(&[0])).collect();
    let mut ids: Option<Vec<u32>> = None;
    for a in aggs {
        let args = a.args.iter().map(|e| eval(e, b)).collect::<Result<Vec<_>>>()?;
        match (!a.distinct).then(|| fast_single(a, &args, b.rows)).flatten() {
            Some(c) => out.push(c),
            None => {
                let ids = ids.get_or_insert_with(|| vec![0u32; b.rows]);
                out.push(run_agg(a, b, ids, 1, true)?);
            }
        }
    }
    Ok(Batch::new(out, 1))
}

/// Sum of a slice with 8 independent accumulators.
fn lane_sum(v: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    chunks.remainder().iter().sum::<f64>() + acc.iter().sum::<f64>()
}

/// The minimum (`MIN`) or maximum of a non-empty slice, four lanes at a time; `None` if it
/// holds a NaN (whose place in the order the general path decides).
fn lane_extreme<const MIN: bool>(v: &[f64]) -> Option<f64> {
    let init = if MIN { f64::INFINITY } else { f64::NEG_INFINITY };
    let pick = |acc: f64, x: f64| if (MIN && x < acc) || (!MIN && x > acc) { x } else { acc };
    let (mut m, mut nan) = ([init; 4], false);
    let mut chunks = v.chunks_exact(4);
    for ch in &mut chunks {
        for k in 0..4 {
            nan |= ch[k].is_nan();
            m[k] = pick(m[k], ch[k]);
        }
    }
    for &x in chunks.remainder() {
        nan |= x.is_nan();
        m[0] = pick(m[0], x);
    }
    (!nan).then(|| m.into_iter().fold(init, pick))
}

/// Sum of integers known not to overflow, in four independent lanes (vectorizable).
fn lane_sum_i64(v: &[i64]) -> i64 {
    let mut acc = [0i64; 4];
    let mut chunks = v.chunks_exact(4);
    for ch in &mut chunks {
        for k in 0..4 {
            acc[k] += ch[k];
        }
    }
    acc.iter().sum::<i64>() + chunks.remainder().iter().sum::<i64>()
}

/// Σ p·s and Σ s with 8 independent accumulators.
fn lane_dot<S: Copy + Into<f64>>(p: &[f64], s: &[S]) -> (f64, f64) {
    let (mut num, mut den) = ([0.0f64; 8], [0.0f64; 8]);
    let n = p.len().min(s.len());
    let full = n / 8 * 8;
    for base in (0..full).step_by(8) {
        for k in 0..8 {
            let w: f64 = s[base + k].into();
            num[k] += p[base + k] * w;
            den[k] += w;
        }
    }
    let (mut tn, mut td) = (0.0, 0.0);
    for i in full..n {
        let w: f64 = s[i].into();
        tn += p[i] * w;
        td += w;
    }
    (tn + num.iter().sum::<f64>(), td + den.iter().sum::<f64>())
}

fn one_f64(v: Option<f64>) -> Column {
    from_opt_f64(std::iter::once(v))
}

fn fast_single(a: &AggCall, args: &[Cow<Column>], n: usize) -> Option<Column> {
    let x = args.first().map(|c| &**c);
    let no_nulls = args.iter().all(|c| c.validity.is_none() && c.data_type() != DataType::Null);
    match a.func {
        AggFunc::CountStar => Some(Column::from_data(ColumnData::Int64(vec![n as i64]))),
        AggFunc::Count => x.map(|x| Column::from_data(ColumnData::Int64(vec![(n - x.null_count()) as i64]))),
        _ if !no_nulls => None,
        AggFunc::Sum | AggFunc::Avg => match &x?.data {
            ColumnData::Float64(v) => {
                let s = lane_sum(v);
                Some(one_f64(Some(if a.func == AggFunc::Avg { s / n as f64 } else { s })))
            }
            ColumnData::Int64(v) => {
                let s: i128 = v.iter().map(|&x| x as i128).sum();
                if a.func == AggFunc::Avg {
                    Some(one_f64(Some(s as f64 / n as f64)))
                } else {
                    i64::try_from(s).ok().map(|s| Column::from_data(ColumnData::Int64(vec![s])))
                }
            }
            _ => None,
        },
        AggFunc::Min | AggFunc::Max => {
            let min = a.func == AggFunc::Min;
            let data = match &x?.data {
                ColumnData::Float64(v) if !v.iter().any(|f| f.is_nan()) => {
                    let r = if min {
                        v.iter().copied().fold(f64::INFINITY, f64::min)
                    } else {
                        v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                    };
                    ColumnData::Float64(vec![r])
                }
                ColumnData::Int64(v) => {
                    ColumnData::Int64(vec![if min { *v.iter().min()? } else { *v.iter().max()? }])
                }
                ColumnData::Timestamp(v) => {
                    ColumnData::Timestamp(vec![if min { *v.iter().min()? } else { *v.iter().max()? }])
                }
                ColumnData::Int32(v) => {
                    ColumnData::Int32(vec![if min { *v.iter().min()? } else { *v.iter().max()? }])
                }
                _ => return None,
            };
            Some(Column::from_data(data))
        }
        AggFunc::Vwap => {
            let (p, s) = match args {
                [p, s] => (&**p, &**s),
                _ => return None,
            };
            let ColumnData::Float64(pv) = &p.data else { return None };
            let (num, den) = match &s.data {
                ColumnData::Float64(sv) => lane_dot(pv, sv),
                ColumnData::Int64(sv) => {
                    // i64 → f64 is exact below 2^53, far beyond any traded size.
                    let sf: Vec<f64> = sv.iter().map(|&x| x as f64).collect();
                    lane_dot(pv, &sf)
                }
                ColumnData::Int32(sv) => lane_dot(pv, sv),
                _ => return None,
            };
            Some(one_f64((den != 0.0).then(|| num / den)))
        }
        _ => None,
    }
}

pub(super) fn run_agg(a: &AggCall, b: &Batch, ids: &[u32], ng: usize, sorted: bool) -> Result<Column> {
    let args = a.args.iter().map(|e| eval(e, b)).collect::<Result<Vec<_>>>()?;
    if a.distinct && !args.is_empty() {
        // Keep the first row of every distinct (group, value) pair.
        let gid = Column::from_data(ColumnData::Int64(ids.iter().map(|&g| g as i64).collect()));
        let keep = group_ids(&[&gid, &args[0]], ids.len()).first;
        let ids2: Vec<u32> = keep.iter().map(|&i| ids[i as usize]).collect();
        let args2: Vec<Cow<Column>> = args.iter().map(|c| Cow::Owned(c.take(&keep))).collect();
        let order = a.order.as_ref().map(|o| eval(o, b).map(|c| c.take(&keep))).transpose()?;
        return compute(a, &args2, order.as_ref(), &ids2, ng, false);
    }
    let order = a.order.as_ref().map(|o| eval(o, b)).transpose()?;
    compute(a, &args, order.as_deref(), ids, ng, sorted)
}

/// `sorted`: rows are in designated-timestamp order, so `first`/`last` are positional.
fn compute(
    a: &AggCall,
    args: &[Cow<Column>],
    order: Option<&Column>,
    ids: &[u32],
    ng: usize,
    sorted: bool,
) -> Result<Column> {
    let x = args.first().map(|c| &**c);
    match a.func {
        AggFunc::CountStar => {
            let mut cnt = vec![0i64; ng];
            ids.iter().for_each(|&g| cnt[g as usize] += 1);
            Ok(Column::from_data(ColumnData::Int64(cnt)))
        }
        AggFunc::Count => {
            let x = x.ok_or_else(|| SqlError::Internal("count arg".into()))?;
            let mut cnt = vec![0i64; ng];
            if x.validity.is_none() && x.data_type() != DataType::Null {
                ids.iter().for_each(|&g| cnt[g as usize] += 1);
                return Ok(Column::from_data(ColumnData::Int64(cnt)));
            }
            for (i, &g) in ids.iter().enumerate() {
                if x.is_valid(i) {
                    cnt[g as usize] += 1;
                }
            }
            Ok(Column::from_data(ColumnData::Int64(cnt)))
        }
        AggFunc::Sum => sum(x.ok_or_else(|| SqlError::Internal("sum arg".into()))?, ids, ng, a.ty),
        AggFunc::Avg => {
            let (s, c) = f64_sums(x.ok_or_else(|| SqlError::Internal("avg arg".into()))?, ids, ng)?;
            Ok(from_opt_f64(s.iter().zip(&c).map(|(s, &c)| (c > 0).then(|| s / c as f64))))
        }
        AggFunc::Min | AggFunc::Max => {
            let x = x.ok_or_else(|| SqlError::Internal("min/max arg".into()))?;
            if let Some(c) = minmax_values(x, ids, ng, a.func == AggFunc::Min) {
                return Ok(c);
            }
            let want = if a.func == AggFunc::Min { Ordering::Less } else { Ordering::Greater };
            let best = best_rows(x, ids, ng, want, true);
            Ok(x.take_opt(&best))
        }
        AggFunc::First | AggFunc::Last => {
            let x = x.ok_or_else(|| SqlError::Internal("first/last arg".into()))?;
            let positional = order.is_none() || (sorted && order.is_some_and(|o| o.validity.is_none()));
            let best = if positional {
                let mut best = vec![NULL_INDEX; ng];
                for (i, &g) in ids.iter().enumerate() {
                    let slot = &mut best[g as usize];
                    if a.func == AggFunc::Last || *slot == NULL_INDEX {
                        *slot = i as u32;
                    }
                }
                best
            } else {
                let o = order.ok_or_else(|| SqlError::Internal("first/last order".into()))?;
                let want = if a.func == AggFunc::First { Ordering::Less } else { Ordering::Greater };
                best_rows(o, ids, ng, want, a.func == AggFunc::First)
            };
            Ok(x.take_opt(&best))
        }
        AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
            let x = x.ok_or_else(|| SqlError::Internal("variance arg".into()))?;
            let (s, c) = f64_sums(x, ids, ng)?;
            let mean: Vec<f64> = s.iter().zip(&c).map(|(s, &c)| if c > 0 { s / c as f64 } else { 0.0 }).collect();
            let v = to_f64(x)?;
            let mut m2 = vec![0.0f64; ng];
            for (i, &g) in ids.iter().enumerate() {
                if x.is_valid(i) {
                    let d = v[i] - mean[g as usize];
                    m2[g as usize] += d * d;
                }
            }
            let samp = matches!(a.func, AggFunc::VarSamp | AggFunc::StddevSamp);
            let sqrt = matches!(a.func, AggFunc::StddevSamp | AggFunc::StddevPop);
            Ok(from_opt_f64(m2.iter().zip(&c).map(|(&m, &n)| {
                let d = if samp { n - 1 } else { n };
                (d > 0).then(|| {
                    let var = m / d as f64;
                    if sqrt {
                        var.sqrt()
                    } else {
                        var
                    }
                })
            })))
        }
        AggFunc::Median | AggFunc::PercentileCont(_) | AggFunc::Quantile(_) => {
            quantile(a.func, x.ok_or_else(|| SqlError::Internal("quantile arg".into()))?, ids, ng)
        }
        AggFunc::Vwap => {
            let (p, s) = match args {
                [p, s] => (&**p, &**s),
                _ => return Err(SqlError::Internal("vwap args".into())),
            };
            let (pv, sv) = (to_f64(p)?, to_f64(s)?);
            let mut num = vec![0.0f64; ng];
            let mut den = vec![0.0f64; ng];
            let all_valid = p.validity.is_none() && s.validity.is_none();
            for (i, &g) in ids.iter().enumerate() {
                if all_valid || (p.is_valid(i) && s.is_valid(i)) {
                    num[g as usize] += pv[i] * sv[i];
                    den[g as usize] += sv[i];
                }
            }
            Ok(from_opt_f64(num.iter().zip(&den).map(|(n, &d)| (d != 0.0).then(|| n / d))))
        }
        AggFunc::Twap => {
            let x = x.ok_or_else(|| SqlError::Internal("twap args".into()))?;
            let t = args.get(1).map(|c| &**c).or(order).ok_or_else(|| SqlError::Internal("twap time".into()))?;
            twap(x, t, ids, ng, sorted)
        }
    }
}

/// Time-weighted average per group: Σ x_i·(t_{i+1} − t_i) / (t_last − t_first) over the rows
/// with both values, in time order (among equal times the later row carries the interval);
/// a group spanning no time gives the plain average.
fn twap(x: &Column, t: &Column, ids: &[u32], ng: usize, sorted: bool) -> Result<Column> {
    let xv = to_f64(x)?;
    let tv: Vec<i64> = match &t.data {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => v.clone(),
        ColumnData::Int32(v) | ColumnData::Date(v) => v.iter().map(|&y| y as i64).collect(),
        d => return Err(SqlError::exec(format!("twap() needs timestamps, got {}", d.data_type()))),
    };
    let mut rows: Vec<u32> =
        (0..ids.len() as u32).filter(|&i| x.is_valid(i as usize) && t.is_valid(i as usize)).collect();
    if sorted {
        rows.sort_by_key(|&i| ids[i as usize]);
    } else {
        rows.sort_by_key(|&i| (ids[i as usize], tv[i as usize], i));
    }
    let mut out = vec![None; ng];
    let mut k = 0;
    while k < rows.len() {
        let g = ids[rows[k] as usize];
        let mut e = k;
        while e < rows.len() && ids[rows[e] as usize] == g {
            e += 1;
        }
        let run = &rows[k..e];
        let (t0, t1) = (tv[run[0] as usize], tv[run[run.len() - 1] as usize]);
        out[g as usize] = Some(if t1 > t0 {
            let num: f64 =
                run.windows(2).map(|w| xv[w[0] as usize] * (tv[w[1] as usize] - tv[w[0] as usize]) as f64).sum();
            num / (t1 - t0) as f64
        } else {
            run.iter().map(|&i| xv[i as usize]).sum::<f64>() / run.len() as f64
        });
        k = e;
    }
    Ok(from_opt_f64(out.into_iter()))
}

/// A FLOAT64 column from optional values (`None` = NULL).
pub(super) fn from_opt_f64(it: impl Iterator<Item = Option<f64>>) -> Column {
    let (lo, _) = it.size_hint();
    let (mut vals, mut valid) = (Vec::with_capacity(lo), Vec::with_capacity(lo));
    for v in it {
        vals.push(v.unwrap_or(0.0));
        valid.push(v.is_some());
    }
    Column::new(ColumnData::Float64(vals), Some(Bitmap::from_bools(valid)))
}

/// Values as f64 (NULL slots hold 0).
pub fn to_f64(c: &Column) -> Result<Cow<'_, [f64]>> {
    Ok(match &c.data {
        ColumnData::Float64(v) => Cow::Borrowed(v.as_slice()),
        ColumnData::Float32(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        ColumnData::Int32(v) | ColumnData::Date(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            Cow::Owned(v.iter().map(|&x| x as f64).collect())
        }
        ColumnData::Bool(v) => Cow::Owned(v.iter().map(|&x| x as u8 as f64).collect()),
        ColumnData::Null(n) => Cow::Owned(vec![0.0; *n]),
        d => return Err(SqlError::exec(format!("expected a numeric value, got {}", d.data_type()))),
    })
}

/// Per-group sum (exact for integers via i128) and count of valid values.
fn f64_sums(x: &Column, ids: &[u32], ng: usize) -> Result<(Vec<f64>, Vec<i64>)> {
    let mut cnt = vec![0i64; ng];
    if let Some(v) = int_values(x) {
        let mut s = vec![0i128; ng];
        for (i, &g) in ids.iter().enumerate() {
            if x.is_valid(i) {
                s[g as usize] += v(i) as i128;
                cnt[g as usize] += 1;
            }
        }
        return Ok((s.into_iter().map(|v| v as f64).collect(), cnt));
    }
    let v = to_f64(x)?;
    let mut s = vec![0.0f64; ng];
    if x.validity.is_none() {
        for (i, &g) in ids.iter().enumerate() {
            s[g as usize] += v[i];
            cnt[g as usize] += 1;
        }
    } else {
        for (i, &g) in ids.iter().enumerate() {
            if x.is_valid(i) {
                s[g as usize] += v[i];
                cnt[g as usize] += 1;
            }
        }
    }
    Ok((s, cnt))
}

fn int_values(x: &Column) -> Option<Box<dyn Fn(usize) -> i64 + '_>> {
    match &x.data {
        ColumnData::Int32(v) => Some(Box::new(move |i| v[i] as i64)),
        ColumnData::Int64(v) | ColumnData::Interval(v) => Some(Box::new(move |i| v[i])),
        ColumnData::Bool(v) => Some(Box::new(move |i| v[i] as i64)),
        _ => None,
    }
}

fn sum(x: &Column, ids: &[u32], ng: usize, ty: DataType) -> Result<Column> {
    let mut seen = vec![false; ng];
    if ty == DataType::Float64 {
        let (s, c) = f64_sums(x, ids, ng)?;
        return Ok(from_opt_f64(s.into_iter().zip(c).map(|(s, c)| (c > 0).then_some(s))));
    }
    if let (ColumnData::Int64(v), None, false) = (&x.data, &x.validity, ids.is_empty()) {
        // i64 accumulators; an overflow anywhere falls back to the exact i128 loop below.
        let mut acc = vec![0i64; ng];
        let mut overflow = false;
        for (i, &g) in ids.iter().enumerate() {
            let (r, o) = acc[g as usize].overflowing_add(v[i]);
            acc[g as usize] = r;
            overflow |= o;
        }
        if !overflow {
            // Every group id comes from a row, so every sum is valid.
            let data = if ty == DataType::Interval { ColumnData::Interval(acc) } else { ColumnData::Int64(acc) };
            return Ok(Column::from_data(data));
        }
    }
    let v = int_values(x).ok_or_else(|| SqlError::exec(format!("sum() is not defined for {}", x.data_type())))?;
    let mut s = vec![0i128; ng];
    for (i, &g) in ids.iter().enumerate() {
        if x.is_valid(i) {
            s[g as usize] += v(i) as i128;
            seen[g as usize] = true;
        }
    }
    let mut out = Vec::with_capacity(ng);
    for v in s {
        out.push(i64::try_from(v).map_err(|_| SqlError::exec("out of range: sum() overflows BIGINT"))?);
    }
    let data = if ty == DataType::Interval { ColumnData::Interval(out) } else { ColumnData::Int64(out) };
    Ok(Column::new(data, Some(Bitmap::from_bools(seen))))
}

/// Per-group min/max as values, for NULL-free numeric inputs (every group has a row, so every
/// result is valid). `None` for other inputs (strings, NULLs, NaN): the row-based path.
fn minmax_values(x: &Column, ids: &[u32], ng: usize, min: bool) -> Option<Column> {
    // No rows (a global aggregate over nothing): the group exists but has no value.
    if x.validity.is_some() || ids.is_empty() {
        return None;
    }
    macro_rules! ints {
        ($v:expr, $t:ty, $variant:ident) => {{
            let mut acc = vec![if min { <$t>::MAX } else { <$t>::MIN }; ng];
            if min {
                ids.iter().zip($v.iter()).for_each(|(&g, &x)| acc[g as usize] = acc[g as usize].min(x));
            } else {
                ids.iter().zip($v.iter()).for_each(|(&g, &x)| acc[g as usize] = acc[g as usize].max(x));
            }
            Some(Column::from_data(ColumnData::$variant(acc)))
        }};
    }
    match &x.data {
        ColumnData::Float64(v) if !v.iter().any(|f| f.is_nan()) => {
            let mut acc = vec![if min { f64::INFINITY } else { f64::NEG_INFINITY }; ng];
            if min {
                ids.iter().zip(v.iter()).for_each(|(&g, &x)| acc[g as usize] = acc[g as usize].min(x));
            } else {
                ids.iter().zip(v.iter()).for_each(|(&g, &x)| acc[g as usize] = acc[g as usize].max(x));
            }
            Some(Column::from_data(ColumnData::Float64(acc)))
        }
        ColumnData::Int64(v) => ints!(v, i64, Int64),
        ColumnData::Timestamp(v) => ints!(v, i64, Timestamp),
        ColumnData::Int32(v) => ints!(v, i32, Int32),
        ColumnData::Date(v) => ints!(v, i32, Date),
        _ => None,
    }
}

/// Row of each group whose value compares `want` against all others (NULLs skipped when
/// `skip_nulls`); ties keep the first row when `first_on_tie`, else the last.
fn best_rows(c: &Column, ids: &[u32], ng: usize, want: Ordering, first_on_tie: bool) -> Vec<u32> {
    let mut best = vec![NULL_INDEX; ng];
    // Fast paths for the common numeric types.
    let all_valid = c.validity.is_none();
    macro_rules! typed {
        ($v:expr) => {{
            for (i, &g) in ids.iter().enumerate() {
                if !all_valid && !c.is_valid(i) {
                    continue;
                }
                let slot = &mut best[g as usize];
                if *slot == NULL_INDEX {
                    *slot = i as u32;
                    continue;
                }
                let o = $v[i].partial_cmp(&$v[*slot as usize]).unwrap_or(Ordering::Equal);
                if o == want || (o == Ordering::Equal && !first_on_tie) {
                    *slot = i as u32;
                }
            }
            return best;
        }};
    }
    match &c.data {
        ColumnData::Float64(v) if !v.iter().any(|x| x.is_nan()) => typed!(v),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => typed!(v),
        ColumnData::Int32(v) => typed!(v),
        _ => {}
    }
    let cmp = value_cmp(c);
    for (i, &g) in ids.iter().enumerate() {
        if !c.is_valid(i) {
            continue;
        }
        let slot = &mut best[g as usize];
        if *slot == NULL_INDEX {
            *slot = i as u32;
            continue;
        }
        let o = cmp(i, *slot as usize);
        if o == want || (o == Ordering::Equal && !first_on_tie) {
            *slot = i as u32;
        }
    }
    best
}

fn quantile(f: AggFunc, x: &Column, ids: &[u32], ng: usize) -> Result<Column> {
    let cmp = value_cmp(x);
    let mut rows: Vec<u32> = (0..ids.len() as u32).filter(|&i| x.is_valid(i as usize)).collect();
    rows.sort_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]).then_with(|| cmp(a as usize, b as usize)));
    let mut start = vec![0usize; ng + 1];
    for &r in &rows {
        start[ids[r as usize] as usize + 1] += 1;
    }
    for g in 0..ng {
        start[g + 1] += start[g];
    }
    let q = match f {
        AggFunc::Quantile(q) | AggFunc::PercentileCont(q) => q,
        _ => 0.5,
    };
    if let AggFunc::Quantile(_) = f {
        let pick: Vec<u32> = (0..ng)
            .map(|g| {
                let n = start[g + 1] - start[g];
                if n == 0 {
                    NULL_INDEX
                } else {
                    rows[start[g] + ((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
                }
            })
            .collect();
        return Ok(x.take_opt(&pick));
    }
    let is_ts = x.data_type() == DataType::Timestamp;
    let v = to_f64(x)?;
    let ints = x.as_i64_slice();
    let mut out = Vec::with_capacity(ng);
    let mut valid = Bitmap::default();
    for g in 0..ng {
        let n = start[g + 1] - start[g];
        if n == 0 {
            out.push(0.0);
            valid.push(false);
            continue;
        }
        let pos = (n - 1) as f64 * q;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        let (a, b) = (rows[start[g] + lo] as usize, rows[start[g] + hi] as usize);
        let val = match (is_ts, ints) {
            (true, Some(iv)) => iv[a] as f64 + (iv[b] - iv[a]) as f64 * (pos - lo as f64),
            _ => v[a] + (v[b] - v[a]) * (pos - lo as f64),
        };
        out.push(val);
        valid.push(true);
    }
    if is_ts {
        let ts: Vec<i64> = out.iter().map(|&f| f.round() as i64).collect();
        return Ok(Column::new(ColumnData::Timestamp(ts), Some(valid)));
    }
    Ok(Column::new(ColumnData::Float64(out), Some(valid)))
}
