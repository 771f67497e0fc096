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
    let key_cols = keys
        .iter()
        .map(|k| eval(k, b))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Column> = key_cols.iter().map(|c| &**c).collect();
    let GroupIds { ids, first } = group_ids(&refs, b.rows);
    // Without GROUP BY there is exactly one group, even over no rows.
    let ngroups = if keys.is_empty() { 1 } else { first.len() };
    let mut out: Vec<Column> = key_cols.iter().map(|c| c.take(&first)).collect();
    for a in aggs {
        out.push(run_agg(a, b, &ids, ngroups)?);
    }
    Ok(Batch::new(out, ngroups))
}

fn run_agg(a: &AggCall, b: &Batch, ids: &[u32], ng: usize) -> Result<Column> {
    let args = a
        .args
        .iter()
        .map(|e| eval(e, b))
        .collect::<Result<Vec<_>>>()?;
    if a.distinct && !args.is_empty() {
        // Keep the first row of every distinct (group, value) pair.
        let gid = Column::from_data(ColumnData::Int64(ids.iter().map(|&g| g as i64).collect()));
        let keep = group_ids(&[&gid, &args[0]], ids.len()).first;
        let ids2: Vec<u32> = keep.iter().map(|&i| ids[i as usize]).collect();
        let args2: Vec<Cow<Column>> = args.iter().map(|c| Cow::Owned(c.take(&keep))).collect();
        let order = a
            .order
            .as_ref()
            .map(|o| eval(o, b).map(|c| c.take(&keep)))
            .transpose()?;
        return compute(a, &args2, order.as_ref(), &ids2, ng);
    }
    let order = a.order.as_ref().map(|o| eval(o, b)).transpose()?;
    compute(a, &args, order.as_deref(), ids, ng)
}

fn compute(
    a: &AggCall,
    args: &[Cow<Column>],
    order: Option<&Column>,
    ids: &[u32],
    ng: usize,
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
        AggFunc::Sum => sum(
            x.ok_or_else(|| SqlError::Internal("sum arg".into()))?,
            ids,
            ng,
            a.ty,
        ),
        AggFunc::Avg => {
            let (s, c) = f64_sums(
                x.ok_or_else(|| SqlError::Internal("avg arg".into()))?,
                ids,
                ng,
            )?;
            Ok(from_opt_f64(
                s.iter()
                    .zip(&c)
                    .map(|(s, &c)| (c > 0).then(|| s / c as f64)),
            ))
        }
        AggFunc::Min | AggFunc::Max => {
            let x = x.ok_or_else(|| SqlError::Internal("min/max arg".into()))?;
            let want = if a.func == AggFunc::Min {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            let best = best_rows(x, ids, ng, want, true);
            Ok(x.take_opt(&best))
        }
        AggFunc::First | AggFunc::Last => {
            let x = x.ok_or_else(|| SqlError::Internal("first/last arg".into()))?;
            let best = match order {
                Some(o) => {
                    let want = if a.func == AggFunc::First {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    };
                    best_rows(o, ids, ng, want, a.func == AggFunc::First)
                }
                None => {
                    let mut best = vec![NULL_INDEX; ng];
                    for (i, &g) in ids.iter().enumerate() {
                        let slot = &mut best[g as usize];
                        if a.func == AggFunc::Last || *slot == NULL_INDEX {
                            *slot = i as u32;
                        }
                    }
                    best
                }
            };
            Ok(x.take_opt(&best))
        }
        AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
            let x = x.ok_or_else(|| SqlError::Internal("variance arg".into()))?;
            let (s, c) = f64_sums(x, ids, ng)?;
            let mean: Vec<f64> = s
                .iter()
                .zip(&c)
                .map(|(s, &c)| if c > 0 { s / c as f64 } else { 0.0 })
                .collect();
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
        AggFunc::Median | AggFunc::PercentileCont(_) | AggFunc::Quantile(_) => quantile(
            a.func,
            x.ok_or_else(|| SqlError::Internal("quantile arg".into()))?,
            ids,
            ng,
        ),
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
            Ok(from_opt_f64(
                num.iter()
                    .zip(&den)
                    .map(|(n, &d)| (d != 0.0).then(|| n / d)),
            ))
        }
    }
}

fn from_opt_f64(it: impl Iterator<Item = Option<f64>>) -> Column {
    let mut vals = Vec::new();
    let mut valid = Bitmap::default();
    for v in it {
        vals.push(v.unwrap_or(0.0));
        valid.push(v.is_some());
    }
    Column::new(ColumnData::Float64(vals), Some(valid))
}

/// Values as f64 (NULL slots hold 0).
pub fn to_f64(c: &Column) -> Result<Cow<'_, [f64]>> {
    Ok(match &c.data {
        ColumnData::Float64(v) => Cow::Borrowed(v.as_slice()),
        ColumnData::Float32(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        ColumnData::Int32(v) | ColumnData::Date(v) => {
            Cow::Owned(v.iter().map(|&x| x as f64).collect())
        }
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            Cow::Owned(v.iter().map(|&x| x as f64).collect())
        }
        ColumnData::Bool(v) => Cow::Owned(v.iter().map(|&x| x as u8 as f64).collect()),
        ColumnData::Null(n) => Cow::Owned(vec![0.0; *n]),
        d => {
            return Err(SqlError::exec(format!(
                "expected a numeric value, got {}",
                d.data_type()
            )))
        }
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
        return Ok(from_opt_f64(
            s.into_iter().zip(c).map(|(s, c)| (c > 0).then_some(s)),
        ));
    }
    let v = int_values(x)
        .ok_or_else(|| SqlError::exec(format!("sum() is not defined for {}", x.data_type())))?;
    let mut s = vec![0i128; ng];
    for (i, &g) in ids.iter().enumerate() {
        if x.is_valid(i) {
            s[g as usize] += v(i) as i128;
            seen[g as usize] = true;
        }
    }
    let mut out = Vec::with_capacity(ng);
    for v in s {
        out.push(
            i64::try_from(v).map_err(|_| SqlError::exec("out of range: sum() overflows BIGINT"))?,
        );
    }
    let data = if ty == DataType::Interval {
        ColumnData::Interval(out)
    } else {
        ColumnData::Int64(out)
    };
    Ok(Column::new(data, Some(Bitmap::from_bools(seen))))
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
                let o = $v[i]
                    .partial_cmp(&$v[*slot as usize])
                    .unwrap_or(Ordering::Equal);
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
    let mut rows: Vec<u32> = (0..ids.len() as u32)
        .filter(|&i| x.is_valid(i as usize))
        .collect();
    rows.sort_by(|&a, &b| {
        ids[a as usize]
            .cmp(&ids[b as usize])
            .then_with(|| cmp(a as usize, b as usize))
    });
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
