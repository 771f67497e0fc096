//! `IN` and subqueries bound: `x [NOT] IN (list)` (a hash set once the list is long and
//! constant), packed `IN` lists, `IN (SELECT ...)`, `EXISTS` and scalar subqueries, run once
//! when uncorrelated and re-planned per outer row when not.

use super::{bind_literal, cast_to, coerce_pair, common_type, lit, one_column, ExprBinder, SubPlan};
use crate::error::{Result, SqlError};
use crate::expr::in_set::{self, InSet};
use crate::parser::ast::{Expr, InValues, Literal, Query, Values};
use crate::plan::{BExpr, Correlated, SubqueryKind};
use zepto_storage::Value;

/// An error of an item of a packed `IN` list ([`InValues`]), naming the item: its position
/// is the list's.
fn in_item(e: SqlError, lit: &Literal) -> SqlError {
    match e {
        SqlError::Plan { message, pos } => {
            SqlError::Plan { message: format!("{message} (the IN list's item {lit})"), pos }
        }
        e => e,
    }
}

/// `x [NOT] IN (items)`, the items of `x`'s type: a hash set when they are
/// [`in_set::HASH_FROM`] or more constants, else the list to compare item by item.
fn list_or_set(x: BExpr, items: Vec<BExpr>, negated: bool) -> BExpr {
    if items.len() >= in_set::HASH_FROM && items.iter().all(|i| matches!(i, BExpr::Lit(..))) {
        let values = items.iter().filter_map(|i| match i {
            BExpr::Lit(v, _) => Some(v),
            _ => None,
        });
        if let Some(set) = InSet::build(x.data_type(), values) {
            return BExpr::InSet { expr: Box::new(x), set, negated };
        }
    }
    BExpr::InList { expr: Box::new(x), list: items, negated }
}

impl ExprBinder<'_> {
    /// `x [NOT] IN (list)`: the list items and `x` coerced to one type.
    pub(super) fn bind_in_list(&mut self, expr: &Expr, list: &[Expr], negated: bool) -> Result<BExpr> {
        let x = self.bind(expr)?;
        let mut items = Vec::with_capacity(list.len());
        for item in list {
            let b = self.bind(item)?;
            let (_, b) = coerce_pair(x.clone(), b, item.pos().unwrap_or_default())?;
            items.push(b);
        }
        let target = items.iter().try_fold(x.data_type(), |t, i| common_type(t, i.data_type()));
        let x = match target {
            Some(t) if !(t.is_string() && x.data_type().is_string()) => cast_to(x, t)?,
            _ => x,
        };
        let items = items
            .into_iter()
            .map(|i| {
                if i.data_type() == x.data_type() || (i.data_type().is_string() && x.data_type().is_string()) {
                    Ok(i)
                } else {
                    cast_to(i, x.data_type())
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(list_or_set(x, items, negated))
    }

    /// `x [NOT] IN (v1, v2, ...)` of packed literals: what [`Self::bind_in_list`] makes of the
    /// same literals, each bound and coerced as it would be, without a bound expression held
    /// for every item. An item's error points at the list's first item and names the item.
    pub(super) fn bind_in_values(&mut self, v: &InValues) -> Result<BExpr> {
        let x = self.bind(&v.expr)?;
        let n = v.values.len();
        // Item `i` coerced against `x`, as `bind_in_list` does each.
        let item = |i: usize| -> Result<BExpr> {
            let lit = v.values.literal(i).ok_or_else(|| SqlError::Internal("IN list item out of range".into()))?;
            let (_, b) = coerce_pair(x.clone(), bind_literal(&lit, v.pos)?, v.pos).map_err(|e| in_item(e, &lit))?;
            Ok(b)
        };
        // The list's type: the items' common type with `x`. An item's coerced type follows
        // from its literal's type alone (its value only decides whether it fails, and a
        // failing item fails again below, where its error is returned): one item of each
        // literal type decides it (integers bind as INTEGER when they fit, else BIGINT).
        let firsts: Vec<usize> = match &v.values {
            Values::Ints(xs) => [|x: &i64| i32::try_from(*x).is_ok(), |x: &i64| i32::try_from(*x).is_err()]
                .iter()
                .filter_map(|kind| xs.iter().position(kind))
                .collect(),
            Values::Strs(_) => vec![0],
        };
        let mut target = Some(x.data_type());
        for i in firsts.into_iter().filter(|&i| i < n) {
            target = target.and_then(|t| common_type(t, item(i).ok()?.data_type()));
        }
        let to = match target {
            Some(t) if !(t.is_string() && x.data_type().is_string()) => t,
            _ => x.data_type(),
        };
        let as_x = |i: usize| -> Result<BExpr> {
            let b = item(i)?;
            if b.data_type() == to || (b.data_type().is_string() && to.is_string()) {
                Ok(b)
            } else {
                cast_to(b, to)
            }
        };
        let xs = cast_to(x.clone(), to)?;
        if n >= in_set::HASH_FROM {
            // Straight into the set: a value each, not a bound expression each.
            let mut values = Vec::with_capacity(n);
            for i in 0..n {
                // Each item counts against the query's deadline, as binding it as an
                // expression does.
                self.runner.tick()?;
                match as_x(i)? {
                    BExpr::Lit(value, _) => values.push(value),
                    _ => break,
                }
            }
            if values.len() == n {
                if let Some(set) = InSet::build(xs.data_type(), values.iter()) {
                    return Ok(BExpr::InSet { expr: Box::new(xs), set, negated: v.negated });
                }
            }
        }
        let mut items = Vec::with_capacity(n);
        for i in 0..n {
            self.runner.tick()?;
            items.push(as_x(i)?);
        }
        Ok(list_or_set(xs, items, v.negated))
    }

    /// `x [NOT] IN (subquery)`: an uncorrelated subquery's distinct values become a list;
    /// a correlated one is evaluated per row.
    pub(super) fn bind_in_subquery(&mut self, expr: &Expr, query: &Query, negated: bool) -> Result<BExpr> {
        let x = self.bind(expr)?;
        let (values, ty) = match self.runner.plan_subquery(query, self.scope)? {
            SubPlan::Rows { values, ty, width, .. } => {
                one_column(width)?;
                (values, ty)
            }
            SubPlan::Correlated { query, refs, ty, width, catalog } => {
                one_column(width)?;
                let sub = Correlated { query: *query, kind: SubqueryKind::In { negated }, refs, sub_ty: ty, catalog };
                return Ok(BExpr::Correlated { sub: Box::new(sub), expr: Some(Box::new(x)) });
            }
        };
        let pos = expr.pos().unwrap_or_default();
        // Repeated values stay: the hash set the list becomes keeps each once.
        let mut items = Vec::with_capacity(values.len());
        for v in values {
            self.runner.tick()?;
            let (_, b) = coerce_pair(x.clone(), BExpr::Lit(v, ty), pos)?;
            items.push(b);
        }
        let x = match items.first().map(|i| i.data_type()) {
            Some(t) if t != x.data_type() && !(t.is_string() && x.data_type().is_string()) => cast_to(x, t)?,
            _ => x,
        };
        Ok(list_or_set(x, items, negated))
    }

    /// `[NOT] EXISTS (subquery)`: a constant when uncorrelated.
    pub(super) fn bind_exists(&mut self, query: &Query, negated: bool) -> Result<BExpr> {
        match self.runner.plan_subquery(query, self.scope)? {
            SubPlan::Rows { rows, .. } => Ok(lit(Value::Bool((rows == 0) == negated))),
            SubPlan::Correlated { query, refs, ty, catalog, .. } => {
                let sub =
                    Correlated { query: *query, kind: SubqueryKind::Exists { negated }, refs, sub_ty: ty, catalog };
                Ok(BExpr::Correlated { sub: Box::new(sub), expr: None })
            }
        }
    }

    /// A scalar subquery: its one value when uncorrelated (no row: NULL).
    pub(super) fn bind_scalar_subquery(&mut self, q: &Query) -> Result<BExpr> {
        match self.runner.plan_subquery(q, self.scope)? {
            SubPlan::Rows { mut values, ty, width, .. } => {
                one_column(width)?;
                if values.len() > 1 {
                    return Err(SqlError::exec("more than one row returned by a subquery used as an expression"));
                }
                Ok(BExpr::Lit(values.pop().unwrap_or(Value::Null), ty))
            }
            SubPlan::Correlated { query, refs, ty, width, catalog } => {
                one_column(width)?;
                let sub = Correlated { query: *query, kind: SubqueryKind::Scalar, refs, sub_ty: ty, catalog };
                Ok(BExpr::Correlated { sub: Box::new(sub), expr: None })
            }
        }
    }
}
