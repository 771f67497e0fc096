//! WINDOW JOIN binding: `FROM t WINDOW JOIN q ON t.k = q.k AND q.ts BETWEEN t.ts - a AND
//! t.ts + b` with aggregates over `q` in the select list gives one row per left row (kdb+
//! `wj1`): the aggregates over the right rows with equal keys whose time falls in the window.
//! An empty window gives `count` 0 and NULL for other aggregates.
//!
//! The SELECT binds like an aggregation whose groups are the left rows: left columns are the
//! "keys", and the Aggregate node is replaced by a [`Plan::WindowJoin`] sweep.

use super::{collect_agg_exprs, split_equi, Binder, Item};
use super::{BExpr, Field, Plan};
use crate::error::{Result, SqlError};
use crate::expr::functions::AggFunc;
use crate::parser::ast::{BinaryOp, Expr, JoinKind, OrderItem, Select};
use crate::plan::bind_expr::AggCtx;
use zepto_storage::{DataType, Value};

/// A `WINDOW JOIN` (possibly under WHERE filters) waiting for its SELECT.
pub fn is_window_join(p: &Plan) -> bool {
    match p {
        Plan::Join { kind: JoinKind::Window, .. } => true,
        Plan::Filter { input, .. } => is_window_join(input),
        _ => false,
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(SqlError::plan(msg, None))
}

const SHAPE: &str = "WINDOW JOIN ... ON takes equality keys and one time window, e.g. \
    ON t.sym = q.sym AND q.ts BETWEEN t.ts - INTERVAL '1 second' AND t.ts + INTERVAL '1 second'";

/// Which sides of a `nl`-wide left / right scope an expression reads: (left, right).
fn sides(e: &BExpr, nl: usize) -> (bool, bool) {
    let (mut l, mut r) = (false, false);
    e.for_each_col(&mut |c| {
        if c < nl {
            l = true;
        } else {
            r = true;
        }
    });
    (l, r)
}

fn offset_of(v: &Value) -> Option<i64> {
    match v {
        Value::Interval(x) | Value::Int64(x) => Some(*x),
        Value::Int32(x) => Some(*x as i64),
        _ => None,
    }
}

/// `left_col [± const]` → (left column, offset).
fn left_plus(e: &BExpr, nl: usize) -> Option<(usize, i64)> {
    match e {
        BExpr::Col(i, _) if *i < nl => Some((*i, 0)),
        BExpr::Binary { op: BinaryOp::Add, left, right, .. } => match (&**left, &**right) {
            (BExpr::Col(i, _), BExpr::Lit(v, _)) | (BExpr::Lit(v, _), BExpr::Col(i, _)) if *i < nl => {
                Some((*i, offset_of(v)?))
            }
            _ => None,
        },
        BExpr::Binary { op: BinaryOp::Sub, left, right, .. } => match (&**left, &**right) {
            (BExpr::Col(i, _), BExpr::Lit(v, _)) if *i < nl => Some((*i, offset_of(v)?.checked_neg()?)),
            _ => None,
        },
        _ => None,
    }
}

/// One side of the window: `right_col op left_col ± const`, as (right col, left col, bound
/// offset, is the lower bound). Strict bounds become inclusive ones (times are integers).
pub(super) fn window_bound(c: &BExpr, nl: usize) -> Option<(usize, usize, i64, bool)> {
    let BExpr::Binary { op, left, right, .. } = c else { return None };
    let (r, op, l) = match (sides(left, nl), sides(right, nl)) {
        ((false, true), (true, false)) => (&**left, *op, &**right),
        ((true, false), (false, true)) => (&**right, op.flip(), &**left),
        _ => return None,
    };
    let BExpr::Col(rc, _) = r else { return None };
    let (lc, off) = left_plus(l, nl)?;
    match op {
        BinaryOp::GtEq => Some((*rc, lc, off, true)),
        BinaryOp::Gt => Some((*rc, lc, off.checked_add(1)?, true)),
        BinaryOp::LtEq => Some((*rc, lc, off, false)),
        BinaryOp::Lt => Some((*rc, lc, off.checked_sub(1)?, false)),
        _ => None,
    }
}

pub(super) fn time_type(t: DataType) -> bool {
    matches!(t, DataType::Timestamp | DataType::Int64 | DataType::Int32 | DataType::Date)
}

/// A WINDOW JOIN under its WHERE filters, taken apart: each WHERE conjunct filters the one
/// side it reads (right-side ones before the windows are formed), and the ON condition is
/// returned for the SELECT to split into keys and the window.
fn where_by_side(plan: Plan) -> Result<(Plan, Plan, Option<BExpr>)> {
    let mut filters = Vec::new();
    let mut p = plan;
    while let Plan::Filter { input, pred } = p {
        pred.conjuncts(&mut filters);
        p = *input;
    }
    let Plan::Join { left, right, residual, .. } = p else {
        return Err(SqlError::Internal("window join shape".into()));
    };
    let nl = left.width();
    let (mut lp, mut rp) = (*left, *right);
    for f in filters {
        match sides(&f, nl) {
            (_, false) => lp = Plan::Filter { input: Box::new(lp), pred: f },
            (false, true) => {
                let mut f = f;
                f.map_cols(&|c| c - nl);
                rp = Plan::Filter { input: Box::new(rp), pred: f };
            }
            (true, true) => {
                return err(
                    "a WHERE condition of a WINDOW JOIN must read only one side; put the other in ON or a subquery",
                )
            }
        }
    }
    Ok((lp, rp, residual))
}

impl Binder {
    pub(super) fn bind_window_join(
        &mut self,
        plan: Plan,
        s: &Select,
        items: &[Item],
        order_by: &[OrderItem],
        scope: &[Field],
    ) -> Result<(Plan, AggCtx)> {
        if !s.group_by.is_empty() {
            return err(
                "WINDOW JOIN gives one row per left row: GROUP BY is not allowed (aggregate in an outer query)",
            );
        }
        let (lp, rp, residual) = where_by_side(plan)?;
        let nl = lp.width();
        let mut conds = Vec::new();
        if let Some(r) = residual {
            r.conjuncts(&mut conds);
        }
        let (mut lk, mut rk) = (Vec::new(), Vec::new());
        let (mut lower, mut upper) = (None, None);
        for c in conds {
            if let Some((l, r)) = split_equi(&c, nl) {
                lk.push(l);
                rk.push(r);
                continue;
            }
            match window_bound(&c, nl) {
                Some((rc, lc, off, true)) if lower.is_none() => lower = Some((rc, lc, off)),
                Some((rc, lc, off, false)) if upper.is_none() => upper = Some((rc, lc, off)),
                _ => return err(SHAPE),
            }
        }
        let (Some((rc, lc, lo)), Some((rc2, lc2, hi))) = (lower, upper) else { return err(SHAPE) };
        if rc != rc2 || lc != lc2 {
            return err("both window bounds of a WINDOW JOIN must compare the same two time columns");
        }
        let (lt_ty, rt_ty) = (scope[lc].data_type, scope[rc].data_type);
        if !time_type(lt_ty) || !time_type(rt_ty) || (lt_ty == DataType::Timestamp) != (rt_ty == DataType::Timestamp) {
            return err(format!("WINDOW JOIN needs comparable timestamp or integer times, got {lt_ty} and {rt_ty}"));
        }
        let right_ts = BExpr::Col(rc - nl, rt_ty);
        let mut aggs = Vec::new();
        let mut texts = Vec::new();
        for e in collect_agg_exprs(items, s, order_by) {
            let Expr::Func(f) = &e else { continue };
            let mut call = self.bind_agg_call(f, scope, None)?;
            let mut left_ref = false;
            call.args.iter().for_each(|a| a.for_each_col(&mut |c| left_ref |= c < nl));
            if left_ref {
                return err(format!("aggregates of a WINDOW JOIN read right-side columns only: {e}"));
            }
            call.args.iter_mut().for_each(|a| a.map_cols(&|c| c - nl));
            call.order = matches!(call.func, AggFunc::First | AggFunc::Last).then(|| right_ts.clone());
            if call.func == AggFunc::Twap && call.args.len() == 1 {
                call.args.push(right_ts.clone());
            }
            texts.push((e.to_string(), call.ty));
            aggs.push(call);
        }
        if aggs.is_empty() {
            return err("WINDOW JOIN needs aggregates over the right side in the select list");
        }
        let keys = (0..nl).map(|i| (format!("\u{1}left column {i}"), Some(i), scope[i].data_type)).collect();
        let plan = Plan::WindowJoin {
            left: Box::new(lp),
            right: Box::new(rp),
            left_keys: lk,
            right_keys: rk,
            left_ts: BExpr::Col(lc, lt_ty),
            right_ts,
            lo,
            hi,
            aggs,
            how: crate::plan::PairHow::Sweep,
        };
        Ok((plan, AggCtx { keys, aggs: texts }))
    }
}

/// A join's inputs and its ON condition split into equality keys and the rest.
pub(super) struct JoinParts {
    pub lp: Plan,
    pub rp: Plan,
    pub lk: Vec<BExpr>,
    pub rk: Vec<BExpr>,
    pub residual: Vec<BExpr>,
}

/// `l [LEFT] JOIN r ON keys AND r.ts BETWEEN l.ts - a AND l.ts + b`: a band join run by the
/// WINDOW JOIN sweep instead of hashing on the keys and filtering every same-key pair.
/// `None` when the residual is not exactly one time band (plus, for inner joins, other
/// conditions, returned as a filter).
pub(super) fn band_join(
    parts: JoinParts,
    scope: &[Field],
    kind: JoinKind,
) -> std::result::Result<Plan, Box<JoinParts>> {
    let JoinParts { lp, rp, lk, rk, residual } = parts;
    let nl = lp.width();
    let (mut lower, mut upper, mut rest) = (None, None, Vec::new());
    for c in &residual {
        match window_bound(c, nl) {
            Some((rc, lc, off, true)) if lower.is_none() => lower = Some((rc, lc, off)),
            Some((rc, lc, off, false)) if upper.is_none() => upper = Some((rc, lc, off)),
            _ => rest.push(c.clone()),
        }
    }
    let ok = matches!(kind, JoinKind::Inner | JoinKind::Left) && (kind == JoinKind::Inner || rest.is_empty());
    let (Some((rc, lc, lo)), Some((rc2, lc2, hi)), true) = (lower, upper, ok) else {
        return Err(Box::new(JoinParts { lp, rp, lk, rk, residual }));
    };
    let (lt, rt) = (scope[lc].data_type, scope[rc].data_type);
    if rc != rc2
        || lc != lc2
        || !time_type(lt)
        || !time_type(rt)
        || (lt == DataType::Timestamp) != (rt == DataType::Timestamp)
    {
        return Err(Box::new(JoinParts { lp, rp, lk, rk, residual }));
    }
    let plan = Plan::RangeJoin {
        left: Box::new(lp),
        right: Box::new(rp),
        left_keys: lk,
        right_keys: rk,
        left_ts: BExpr::Col(lc, lt),
        right_ts: BExpr::Col(rc - nl, rt),
        lo,
        hi,
        outer: kind == JoinKind::Left,
    };
    Ok(match BExpr::and_all(rest) {
        Some(pred) => Plan::Filter { input: Box::new(plan), pred },
        None => plan,
    })
}
