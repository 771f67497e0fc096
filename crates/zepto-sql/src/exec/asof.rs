//! ASOF JOIN: every left row meets the nearest right row with equal keys on the right side of
//! the inequality (`l >= r`: the latest right row at or before; `>`: strictly before; `<=`: the
//! earliest at or after; `<`: strictly after). NULL keys and NULL times never match.
//!
//! Right rows are bucketed by key (dense group ids, shared with the left side), each bucket
//! ordered by time — verified, and sorted only when the input was not already in order (a scan
//! of a time-sorted table usually is) — and each left row binary-searches its bucket. Memory is
//! the right side's row indices and times plus the output.

use super::eval::eval;
use super::hash::group_ids;
use super::Batch;
use crate::error::{Result, SqlError};
use crate::parser::ast::BinaryOp;
use crate::plan::BExpr;
use std::sync::Arc;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, ColumnData};

pub struct AsofSpec<'a> {
    pub left_keys: &'a [BExpr],
    pub right_keys: &'a [BExpr],
    pub left_ts: &'a BExpr,
    pub right_ts: &'a BExpr,
    pub op: BinaryOp,
    pub outer: bool,
}

/// Time values as one ordered numeric domain.
enum Times<'a> {
    I(std::borrow::Cow<'a, [i64]>),
    F(std::borrow::Cow<'a, [f64]>),
}

fn times(c: &Column) -> Result<Times<'_>> {
    use std::borrow::Cow;
    Ok(match &c.data {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => Times::I(Cow::Borrowed(v)),
        ColumnData::Int32(v) | ColumnData::Date(v) => Times::I(Cow::Owned(v.iter().map(|&x| x as i64).collect())),
        ColumnData::Float64(v) => Times::F(Cow::Borrowed(v)),
        ColumnData::Float32(v) => Times::F(Cow::Owned(v.iter().map(|&x| x as f64).collect())),
        ColumnData::Null(n) => Times::I(Cow::Owned(vec![0; *n])),
        d => return Err(SqlError::exec(format!("ASOF JOIN cannot order values of type {}", d.data_type()))),
    })
}

/// Index into a bucket (sorted ascending) of the match for `x`, if any.
fn search<T: PartialOrd + Copy>(bucket: &[T], x: T, op: BinaryOp) -> Option<usize> {
    match op {
        BinaryOp::GtEq => bucket.partition_point(|&r| r <= x).checked_sub(1),
        BinaryOp::Gt => bucket.partition_point(|&r| r < x).checked_sub(1),
        BinaryOp::LtEq => Some(bucket.partition_point(|&r| r < x)).filter(|&i| i < bucket.len()),
        _ => Some(bucket.partition_point(|&r| r <= x)).filter(|&i| i < bucket.len()),
    }
}

pub fn asof_join(l: &Batch, r: &Batch, spec: AsofSpec) -> Result<Batch> {
    let (n, m) = (l.rows, r.rows);
    let lk = spec.left_keys.iter().map(|e| eval(e, l)).collect::<Result<Vec<_>>>()?;
    let rk = spec.right_keys.iter().map(|e| eval(e, r)).collect::<Result<Vec<_>>>()?;
    let lt = eval(spec.left_ts, l)?;
    let rt = eval(spec.right_ts, r)?;
    // Shared group ids: stack the key columns of both sides and group once.
    let (lid, rid, ngroups): (Vec<u32>, Vec<u32>, usize) = if lk.is_empty() {
        (vec![0; n], vec![0; m], 1)
    } else {
        let stacked: Vec<Column> = lk.iter().zip(&rk).map(|(a, b)| Column::concat(&[&**a, &**b])).collect();
        let refs: Vec<&Column> = stacked.iter().collect();
        let g = group_ids(&refs, n + m);
        let ng = g.first.len();
        let mut ids = g.ids;
        let rid = ids.split_off(n);
        (ids, rid, ng)
    };
    let key_ok = |cols: &[std::borrow::Cow<Column>], i: usize| cols.iter().all(|c| c.is_valid(i));
    // Bucket right rows by group (counting sort keeps input order), skipping NULL keys/times.
    let mut start = vec![0usize; ngroups + 1];
    for j in 0..m {
        if rt.is_valid(j) && key_ok(&rk, j) {
            start[rid[j] as usize + 1] += 1;
        }
    }
    for g in 0..ngroups {
        start[g + 1] += start[g];
    }
    let mut order = vec![0u32; start[ngroups]];
    let mut next = start.clone();
    for j in 0..m {
        if rt.is_valid(j) && key_ok(&rk, j) {
            let g = rid[j] as usize;
            order[next[g]] = j as u32;
            next[g] += 1;
        }
    }
    let lt_vals = times(&lt)?;
    let rt_vals = times(&rt)?;
    let mut matched = vec![NULL_INDEX; n];
    macro_rules! run {
        ($lv:expr, $rv:expr, $t:ty) => {{
            // Per bucket: times in order (sorting the bucket only if the input was not).
            let mut bucket_times: Vec<$t> = order.iter().map(|&j| $rv[j as usize]).collect();
            for g in 0..ngroups {
                let (a, b) = (start[g], start[g + 1]);
                if !bucket_times[a..b].windows(2).all(|w| w[0] <= w[1]) {
                    let mut pairs: Vec<($t, u32)> = (a..b).map(|k| (bucket_times[k], order[k])).collect();
                    pairs
                        .sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal).then(x.1.cmp(&y.1)));
                    for (k, (t, j)) in pairs.into_iter().enumerate() {
                        bucket_times[a + k] = t;
                        order[a + k] = j;
                    }
                }
            }
            for i in 0..n {
                if !lt.is_valid(i) || !key_ok(&lk, i) {
                    continue;
                }
                let g = lid[i] as usize;
                let (a, b) = (start[g], start[g + 1]);
                if let Some(k) = search(&bucket_times[a..b], $lv[i], spec.op) {
                    matched[i] = order[a + k];
                }
            }
        }};
    }
    match (&lt_vals, &rt_vals) {
        (Times::I(lv), Times::I(rv)) => run!(lv, rv, i64),
        (Times::F(lv), Times::F(rv)) => run!(lv, rv, f64),
        (Times::I(lv), Times::F(rv)) => {
            let lf: Vec<f64> = lv.iter().map(|&x| x as f64).collect();
            run!(lf, rv, f64)
        }
        (Times::F(lv), Times::I(rv)) => {
            let rf: Vec<f64> = rv.iter().map(|&x| x as f64).collect();
            run!(lv, rf, f64)
        }
    }
    let (li, ri): (Vec<u32>, Vec<u32>) = if spec.outer {
        ((0..n as u32).collect(), matched)
    } else {
        matched.iter().enumerate().filter(|(_, &j)| j != NULL_INDEX).map(|(i, &j)| (i as u32, j)).unzip()
    };
    let mut cols: Vec<Arc<Column>> =
        if spec.outer { l.columns.clone() } else { l.columns.iter().map(|c| Arc::new(c.take(&li))).collect() };
    cols.extend(r.columns.iter().map(|c| Arc::new(c.take_opt(&ri))));
    Ok(Batch::shared(cols, li.len()))
}

#[cfg(test)]
mod tests {
    use super::search;
    use crate::parser::ast::BinaryOp;

    #[test]
    fn nearest_on_each_side() {
        let b = [1, 3, 3, 7];
        assert_eq!(search(&b, 3, BinaryOp::GtEq), Some(2));
        assert_eq!(search(&b, 3, BinaryOp::Gt), Some(0));
        assert_eq!(search(&b, 0, BinaryOp::GtEq), None);
        assert_eq!(search(&b, 3, BinaryOp::LtEq), Some(1));
        assert_eq!(search(&b, 3, BinaryOp::Lt), Some(3));
        assert_eq!(search(&b, 8, BinaryOp::LtEq), None);
    }
}
