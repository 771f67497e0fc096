//! `sum(p * s)` and `avg(p * s)` over runs, the two columns read in place: a DOUBLE column
//! times a DOUBLE, BIGINT or INTEGER one (the notional `sum(price * size)`, and the numerator
//! of the VWAP written as `sum(price * size) / sum(size)`). Evaluating the argument first
//! writes a column of products the size of the input and reads it again: over 10M rows,
//! 9.7 ms where reading the two columns takes 4.4.
//!
//! Each run is summed by vwap's kernel ([`super::dot`]), whose lanes are [`lane_sum`]'s over
//! the products: lane `k` adds the products of rows `k`, `k + 8`, ... of the run, the rows past
//! the last eight are added in order, then the lanes. The product is the one evaluation gives
//! (`p * (s as f64)`; multiplication commutes bit for bit), so the sums are the bits the
//! general path gives. Only NULL-free columns over [`Rows::Runs`] take this path; anything
//! else evaluates the product as before. A DOUBLE times a BIGINT column reads the narrow forms
//! of the blocks a run covers whole where they have them ([`run_dot`]: the same bits).
//! (Runs of 8,192 rows or more of an evaluated column are summed from block summaries,
//! in another order, so there the two paths' last bits may differ.)
//!
//! [`lane_sum`]: super::kernels::lane_sum

use super::dot::{exact_total, lane_dot, lane_dot_i64, lane_dot_total_i64, AsF64};
use super::dot_blocks::run_dot;
use super::sum::SumAvg;
use super::{runs, Accumulator, Mode, Rows};
use crate::error::Result;
use crate::exec::Batch;
use crate::expr::functions::AggFunc;
use crate::parser::ast::BinaryOp;
use crate::plan::{AggCall, BExpr};
use std::ops::Range;
use zepto_storage::buf::Buf;
use zepto_storage::{Column, ColumnData, DataType};

/// `a` (a `sum` or `avg` of a product of two columns) over the runs of `b`, in `mode`; `None`
/// when `a` is not such a call, or its columns have NULLs, or the rows are not runs.
pub fn over_runs(a: &AggCall, b: &Batch, rows: Rows, ngroups: usize, mode: Mode) -> Option<Result<Vec<Column>>> {
    let Rows::Runs { starts, n } = rows else { return None };
    let (p, s) = read(a, b)?;
    let sums: Vec<f64> = match s {
        ColumnData::Int64(sv) => runs(starts, n).map(|(x, y)| run_dot_i64(p, sv, x..y).0).collect(),
        ColumnData::Int32(sv) => run_dots(p, sv, starts, n),
        ColumnData::Float64(sv) => run_dots(p, sv, starts, n),
        _ => return None,
    };
    let mut acc = SumAvg::new(a.func == AggFunc::Avg, a.ty);
    acc.add_float_runs(sums.into_iter().zip(lengths(starts, n)), ngroups);
    Some(settle(acc, mode))
}

/// The pairs `(i, j)` of `aggs` where `aggs[i]` is a sum or average of `p * s` (as
/// [`over_runs`] takes them) for a BIGINT column `s`, and `aggs[j]` a sum or average of `s`
/// itself (not DISTINCT): VWAP as `sum(price * size) / sum(size)`. Each call is in one pair
/// at most.
pub fn pairs(aggs: &[AggCall]) -> Vec<(usize, usize)> {
    let sizes = |a: &AggCall| match a.args.as_slice() {
        [BExpr::Col(c, DataType::Int64)] if matches!(a.func, AggFunc::Sum | AggFunc::Avg) && !a.distinct => Some(*c),
        _ => None,
    };
    // No allocation unless a pair is found: this runs once per partition of a GROUP BY.
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, a) in aggs.iter().enumerate() {
        let Some((_, s)) = factors(a).filter(|_| big_factor(a)) else { continue };
        let taken = |j: usize| out.iter().any(|&(_, t)| t == j);
        if let Some(j) = (0..aggs.len()).find(|&j| !taken(j) && sizes(&aggs[j]) == Some(s)) {
            out.push((i, j));
        }
    }
    out
}

/// A pair of [`pairs`] over the runs of `b` from one read of the sizes: `a`'s and `t`'s
/// results (or states, in `mode`). `None` where [`over_runs`] would be, or where the sizes'
/// magnitudes leave their sum unproven by the pass ([`lane_dot_total_i64`]; then each is
/// computed on its own).
pub fn both(
    a: &AggCall,
    t: &AggCall,
    b: &Batch,
    rows: Rows,
    ngroups: usize,
    mode: Mode,
) -> Option<Result<[Vec<Column>; 2]>> {
    let Rows::Runs { starts, n } = rows else { return None };
    let (p, ColumnData::Int64(s)) = read(a, b)? else { return None };
    let (mut dots, mut totals) = (Vec::with_capacity(starts.len()), Vec::with_capacity(starts.len()));
    for (x, y) in runs(starts, n) {
        let (d, total) = match run_dot(p, s, x..y) {
            Some((d, t, top)) => (d, exact_total(t, top, y - x)?),
            None => lane_dot_total_i64(&p[x..y], &s[x..y])?,
        };
        dots.push(d);
        totals.push(total);
    }
    let mut acc = SumAvg::new(a.func == AggFunc::Avg, a.ty);
    acc.add_float_runs(dots.into_iter().zip(lengths(starts, n)), ngroups);
    let mut sizes = SumAvg::new(t.func == AggFunc::Avg, t.ty);
    sizes.add_int_runs(totals.into_iter().zip(lengths(starts, n)), ngroups);
    Some(settle(acc, mode).and_then(|x| Ok([x, settle(sizes, mode)?])))
}

/// A run's Σ p·s and Σ s of BIGINT sizes: from the narrow blocks where the run has them
/// ([`run_dot`]), else from the values (AVX2 where the sizes allow it).
pub fn run_dot_i64(p: &Buf<f64>, s: &Buf<i64>, r: Range<usize>) -> (f64, f64) {
    if let Some((num, den, _)) = run_dot(p, s, r.clone()) {
        return (num, den);
    }
    let (p, s) = (&p[r.clone()], &s[r]);
    lane_dot_i64(p, s).unwrap_or_else(|| lane_dot(p, s))
}

/// `a`'s two NULL-free columns in `b`: the DOUBLE `p`'s values and `s`'s data.
fn read<'b>(a: &AggCall, b: &'b Batch) -> Option<(&'b Buf<f64>, &'b ColumnData)> {
    let (pc, sc) = factors(a)?;
    let (p, s) = (b.columns.get(pc)?, b.columns.get(sc)?);
    if p.validity().is_some() || s.validity().is_some() {
        return None;
    }
    let ColumnData::Float64(pv) = p.data() else { return None };
    Some((pv, s.data()))
}

/// The result column, or the state columns, of a finished accumulator.
fn settle(mut acc: SumAvg, mode: Mode) -> Result<Vec<Column>> {
    match mode {
        Mode::Final => acc.finish().map(|c| vec![c]),
        Mode::Partial => acc.state(),
    }
}

/// The rows of each run.
fn lengths(starts: &[u32], n: usize) -> impl Iterator<Item = usize> + '_ {
    runs(starts, n).map(|(x, y)| y - x)
}

/// Σ p·s of each run.
fn run_dots<S: AsF64>(p: &[f64], s: &[S], starts: &[u32], n: usize) -> Vec<f64> {
    runs(starts, n).map(|(x, y)| lane_dot(&p[x..y], &s[x..y]).0).collect()
}

/// Whether `a`'s second factor (as [`factors`] orders them) is a BIGINT column.
fn big_factor(a: &AggCall) -> bool {
    let [BExpr::Binary { left, right, .. }] = a.args.as_slice() else { return false };
    let big = |e: &BExpr| matches!(e, BExpr::Cast { expr, .. } if matches!(**expr, BExpr::Col(_, DataType::Int64)));
    big(left) || big(right)
}

/// The positions of `p` and `s` when `a` is `sum(p * s)` or `avg(p * s)` (not DISTINCT) of a
/// DOUBLE column `p` and a DOUBLE column or an integer column cast to DOUBLE `s`, in either
/// order.
fn factors(a: &AggCall) -> Option<(usize, usize)> {
    if !matches!(a.func, AggFunc::Sum | AggFunc::Avg) || a.distinct || a.ty != DataType::Float64 {
        return None;
    }
    let [BExpr::Binary { op: BinaryOp::Mul, left, right, ty: DataType::Float64 }] = a.args.as_slice() else {
        return None;
    };
    match (double(left), double(right)) {
        (Some((l, true)), Some((r, _))) => Some((l, r)),
        (Some((l, false)), Some((r, true))) => Some((r, l)),
        _ => None,
    }
}

/// The column a DOUBLE factor reads, and whether it is a DOUBLE column itself (rather than a
/// BIGINT or INTEGER one cast, as `as f64` converts: the cast's own conversion).
fn double(e: &BExpr) -> Option<(usize, bool)> {
    match e {
        BExpr::Col(c, DataType::Float64) => Some((*c, true)),
        BExpr::Cast { expr, to: DataType::Float64, try_: false } => match **expr {
            BExpr::Col(c, DataType::Int64 | DataType::Int32) => Some((c, false)),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(c: usize, ty: DataType) -> BExpr {
        BExpr::Col(c, ty)
    }

    fn cast(e: BExpr) -> BExpr {
        BExpr::Cast { expr: Box::new(e), to: DataType::Float64, try_: false }
    }

    fn call(func: AggFunc, l: BExpr, r: BExpr) -> AggCall {
        let arg = BExpr::Binary { op: BinaryOp::Mul, left: Box::new(l), right: Box::new(r), ty: DataType::Float64 };
        AggCall { func, args: vec![arg], distinct: false, order: None, ty: DataType::Float64 }
    }

    #[test]
    fn a_double_column_times_a_numeric_column_in_either_order() {
        use DataType::{Float64 as F, Int32 as I, Int64 as L};
        assert_eq!(factors(&call(AggFunc::Sum, col(1, F), cast(col(2, L)))), Some((1, 2)));
        assert_eq!(factors(&call(AggFunc::Avg, cast(col(2, I)), col(1, F))), Some((1, 2)));
        assert_eq!(factors(&call(AggFunc::Sum, col(3, F), col(1, F))), Some((3, 1)));
        // Two integers cast (no DOUBLE column to read as the prices), a literal, a TRY_CAST,
        // DISTINCT, and other aggregates are left to evaluation.
        assert_eq!(factors(&call(AggFunc::Sum, cast(col(1, L)), cast(col(2, L)))), None);
        let lit = BExpr::Lit(zepto_storage::Value::Float64(2.0), F);
        assert_eq!(factors(&call(AggFunc::Sum, col(1, F), lit)), None);
        let try_cast = BExpr::Cast { expr: Box::new(col(2, L)), to: F, try_: true };
        assert_eq!(factors(&call(AggFunc::Sum, col(1, F), try_cast)), None);
        let mut distinct = call(AggFunc::Sum, col(1, F), col(2, F));
        distinct.distinct = true;
        assert_eq!(factors(&distinct), None);
        assert_eq!(factors(&call(AggFunc::Max, col(1, F), col(2, F))), None);
    }
}
