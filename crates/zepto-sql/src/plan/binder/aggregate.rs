//! Aggregates bound: GROUP BY (QuestDB's implicit keys included) and each aggregate call, its
//! arguments, ORDER BY inside the call and FILTER; aggregates over the designated timestamp's
//! order read by time (`by_time`).

use super::*;
use crate::error::{Pos, Result, SqlError};
use crate::expr::functions::{self, agg_arity, agg_by_name, agg_type, AggFunc, AggOrder};
use crate::parser::ast::*;
use crate::plan::bind_expr::{cast_to, contains_aggregate, resolve, walk, AggCtx, ExprBinder};
use crate::plan::{AggCall, BExpr, Field, Plan};
use zepto_storage::DataType;

impl Binder {
    /// Build the Aggregate node: GROUP BY keys and every aggregate call used above it.
    pub(super) fn bind_aggregate(
        &mut self,
        input: Plan,
        s: &Select,
        items: &[Item],
        order_by: &[OrderItem],
        scope: &[Field],
    ) -> Result<(Plan, AggCtx)> {
        let mut key_asts = Vec::new();
        if s.group_by.is_empty() {
            key_asts = implicit_keys(items, scope);
        }
        for g in &s.group_by {
            let e = match g {
                Expr::Lit(Literal::Int(k), pos) => match items.get((*k as usize).wrapping_sub(1)) {
                    Some(Item::Ast { expr, .. }) => expr.clone(),
                    Some(Item::Input(i)) => {
                        Expr::Column { table: scope[*i].qualifier.clone(), name: scope[*i].name.clone(), pos: *pos }
                    }
                    None => {
                        return Err(SqlError::plan(
                            format!("GROUP BY position {k} is not in the select list"),
                            Some(*pos),
                        ))
                    }
                },
                Expr::Column { table: None, name, pos } if resolve(scope, None, name, *pos).is_err() => {
                    let alias = items.iter().find_map(|it| match it {
                        Item::Ast { expr, alias: Some(a) } if a.eq_ignore_ascii_case(name) => Some(expr.clone()),
                        _ => None,
                    });
                    alias.unwrap_or_else(|| g.clone())
                }
                e => e.clone(),
            };
            if contains_aggregate(&e) {
                return Err(SqlError::plan("aggregates are not allowed in GROUP BY", e.pos()));
            }
            key_asts.push(e);
        }
        let mut keys = Vec::new();
        let mut key_info = Vec::new();
        for e in &key_asts {
            let b = ExprBinder { scope, agg: None, win: None, runner: self }.bind(e)?;
            let col = match b {
                BExpr::Col(i, _) => Some(i),
                _ => None,
            };
            key_info.push((e.to_string(), col, b.data_type()));
            keys.push(b);
        }
        let mut calls: Vec<(String, AggCall)> = Vec::new();
        for e in collect_agg_exprs(items, s, order_by) {
            let Expr::Func(f) = &e else { continue };
            let call = self.bind_agg_call(f, scope, None)?;
            // Keyless, the extremes fold in place (`exec/keyless.rs`), which ends do not.
            let call = if keys.is_empty() { call } else { by_time(call, scope) };
            calls.push((e.to_string(), call));
        }
        let ctx = AggCtx { keys: key_info, aggs: calls.iter().map(|(t, c)| (t.clone(), c.ty)).collect() };
        let aggs = calls.into_iter().map(|(_, c)| c).collect();
        Ok((Plan::Aggregate { input: Box::new(input), keys, aggs, how: crate::plan::AggHow::Hash }, ctx))
    }

    /// Bind an aggregate call. `agg`: the GROUP BY context when the call is a window
    /// aggregate above an Aggregate node (its arguments may then be aggregates themselves).
    pub(super) fn bind_agg_call(&mut self, f: &FuncCall, scope: &[Field], agg: Option<&AggCtx>) -> Result<AggCall> {
        let mut func =
            agg_by_name(&f.name).ok_or_else(|| SqlError::Internal(format!("{} is not an aggregate", f.name)))?;
        if agg.is_none() {
            for a in &f.args {
                if contains_aggregate(a) {
                    return Err(SqlError::plan("aggregate function calls cannot be nested", a.pos()));
                }
            }
        }
        let mut args = Vec::new();
        for a in &f.args {
            args.push(ExprBinder { scope, agg, win: None, runner: self }.bind(a)?);
        }
        if f.star {
            if func != AggFunc::Count {
                return Err(SqlError::plan(format!("{}(*) is not valid", f.name), Some(f.pos)));
            }
            func = AggFunc::CountStar;
        }
        // QuestDB's count() is count(*).
        if func == AggFunc::Count && f.name == "count" && args.is_empty() {
            func = AggFunc::CountStar;
        }
        if matches!(f.name.as_str(), "count_if" | "countif") {
            args = vec![count_if_arg(args, f)?];
        }
        // QuestDB's count_distinct(x) is count(DISTINCT x), and so are DuckDB's and
        // ClickHouse's approx_count_distinct(x) and uniq(x), counted exactly (an estimate's
        // error is zero). A repeated row cannot change arg_min/arg_max (DISTINCT is over all
        // the arguments): theirs is dropped.
        let counts_distinct = matches!(f.name.as_str(), "count_distinct" | "approx_count_distinct" | "uniq");
        let distinct = (f.distinct || counts_distinct) && !matches!(func, AggFunc::ArgMin | AggFunc::ArgMax);
        let fraction = |e: &BExpr| -> Result<f64> {
            match e {
                BExpr::Lit(v, _) => v.as_f64().filter(|q| (0.0..=1.0).contains(q)).ok_or_else(|| {
                    SqlError::plan("the quantile fraction must be a constant between 0 and 1", Some(f.pos))
                }),
                _ => Err(SqlError::plan("the quantile fraction must be a constant", Some(f.pos))),
            }
        };
        match func {
            AggFunc::PercentileCont(_) if f.within_group.is_some() => {
                let q = fraction(
                    args.first().ok_or_else(|| SqlError::plan("percentile_cont(q) needs a fraction", Some(f.pos)))?,
                )?;
                let o = f
                    .within_group
                    .as_ref()
                    .map(|o| &o.expr)
                    .ok_or_else(|| SqlError::Internal("within group".into()))?;
                let x = ExprBinder { scope, agg, win: None, runner: self }.bind(o)?;
                func = AggFunc::PercentileCont(q);
                args = vec![x];
            }
            AggFunc::PercentileCont(_) | AggFunc::Quantile(_) => {
                if args.len() != 2 {
                    return Err(SqlError::plan(format!("{}(x, q) takes two arguments", f.name), Some(f.pos)));
                }
                let q = fraction(&args[1])?;
                args.truncate(1);
                func = if matches!(func, AggFunc::Quantile(_)) {
                    AggFunc::Quantile(q)
                } else {
                    AggFunc::PercentileCont(q)
                };
            }
            _ => {
                let (lo, hi) = agg_arity(func);
                if args.len() < lo || args.len() > hi {
                    return Err(SqlError::plan(format!("wrong number of arguments to {}()", f.name), Some(f.pos)));
                }
            }
        }
        let types: Vec<DataType> = args.iter().map(BExpr::data_type).collect();
        let ty = agg_type(func, &types, f.pos)?;
        let order = if func.ordered() {
            let (f2, key) = self.agg_order(func, f, scope, agg)?;
            func = f2;
            if matches!(func, AggFunc::StringAgg(_)) {
                args = args.into_iter().map(|a| cast_to(a, DataType::Varchar)).collect::<Result<_>>()?;
            }
            key
        } else if !f.order_by.is_empty() && !func.order_insensitive() {
            return Err(SqlError::NotSupported(format!("ORDER BY inside {}()", f.name)));
        } else if matches!(func, AggFunc::First | AggFunc::Last) || (func == AggFunc::Twap && args.len() == 1) {
            scope.iter().position(|x| x.designated_ts).map(|i| BExpr::Col(i, DataType::Timestamp))
        } else {
            None
        };
        if func == AggFunc::Twap && args.len() == 1 && order.is_none() {
            return Err(SqlError::plan("twap(x) needs a designated timestamp; write twap(x, ts)", Some(f.pos)));
        }
        Ok(AggCall { func, args, distinct, order, ty })
    }

    /// The `ORDER BY` of a listing aggregate's call (`string_agg(x, ',' ORDER BY k DESC)`):
    /// its direction in the function, its key as the call's order column. One key; none
    /// in a window call (as in PostgreSQL).
    pub(super) fn agg_order(
        &mut self,
        func: AggFunc,
        f: &FuncCall,
        scope: &[Field],
        agg: Option<&AggCtx>,
    ) -> Result<(AggFunc, Option<BExpr>)> {
        let item = match f.order_by.as_slice() {
            [] => return Ok((func, None)),
            [_] if f.over.is_some() => {
                return Err(SqlError::NotSupported(format!("ORDER BY inside {}() as a window function", f.name)))
            }
            [item] if !item.all => item,
            _ => return Err(SqlError::NotSupported(format!("{}() ordered by more than one key", f.name))),
        };
        let key = ExprBinder { scope, agg, win: None, runner: self }.bind(&item.expr)?;
        let o = AggOrder { desc: item.desc, nulls_first: item.nulls_first.unwrap_or(false) };
        let func = match func {
            AggFunc::StringAgg(_) => AggFunc::StringAgg(o),
            _ => AggFunc::ArrayAgg(o),
        };
        Ok((func, Some(key)))
    }
}

/// DuckDB's `count_if(c)`: `sum(c)` of the condition as a BIGINT (1 for true, 0 for false,
/// NULL left out), so a HUGEINT, NULL when no row has a condition, as DuckDB gives it.
fn count_if_arg(args: Vec<BExpr>, f: &FuncCall) -> Result<BExpr> {
    let [c] = <[BExpr; 1]>::try_from(args)
        .map_err(|_| SqlError::plan(format!("{}(condition) takes one argument", f.name), Some(f.pos)))?;
    if !matches!(c.data_type(), DataType::Bool | DataType::Null) {
        return Err(SqlError::plan(
            format!("{}(condition) needs a BOOLEAN condition, got {}", f.name, c.data_type()),
            Some(f.pos),
        ));
    }
    cast_to(c, DataType::Int64)
}

/// Every aggregate call of the select list, HAVING and ORDER BY (deduplicated by text, in
/// first-seen order).
pub(super) fn collect_agg_exprs(items: &[Item], s: &Select, order_by: &[OrderItem]) -> Vec<Expr> {
    let mut sources: Vec<&Expr> = items
        .iter()
        .filter_map(|i| match i {
            Item::Ast { expr, .. } => Some(expr),
            Item::Input(_) => None,
        })
        .collect();
    sources.extend(s.having.iter());
    sources.extend(order_by.iter().map(|o| &o.expr));
    let mut out: Vec<Expr> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    for src in sources {
        walk(src, &mut |x| {
            if let Expr::Func(f) = x {
                if f.over.is_none() && functions::is_aggregate(&f.name) {
                    let t = x.to_string();
                    if !texts.contains(&t) {
                        texts.push(t);
                        out.push(x.clone());
                    }
                }
            }
        });
    }
    out
}

/// For each select-list entry, the texts of the aggregate calls in it (SAMPLE BY FILL modes
/// are given per aggregate column, in select-list order).
pub(super) fn items_agg_texts(items: &[Item]) -> Vec<Vec<String>> {
    items
        .iter()
        .map(|it| {
            let mut out = Vec::new();
            if let Item::Ast { expr, .. } = it {
                walk(expr, &mut |x| {
                    if let Expr::Func(f) = x {
                        if f.over.is_none() && functions::is_aggregate(&f.name) {
                            out.push(x.to_string());
                        }
                    }
                });
            }
            out
        })
        .collect()
}

/// QuestDB's implicit GROUP BY: with aggregates and no GROUP BY, the select list's items that
/// read columns and hold no aggregate (nor window function) are the keys, where standard SQL
/// refuses the query (so no query standard SQL answers changes meaning).
pub(super) fn implicit_keys(items: &[Item], scope: &[Field]) -> Vec<Expr> {
    let mut keys = Vec::new();
    for item in items {
        match item {
            Item::Input(i) => keys.push(Expr::Column {
                table: scope[*i].qualifier.clone(),
                name: scope[*i].name.clone(),
                pos: Pos::default(),
            }),
            Item::Ast { expr, .. } if !contains_aggregate(expr) => {
                let (mut column, mut window) = (false, false);
                walk(expr, &mut |e| match e {
                    Expr::Column { .. } => column = true,
                    Expr::Func(f) if f.over.is_some() || functions::is_window_only(&f.name) => window = true,
                    _ => {}
                });
                if column && !window {
                    keys.push(expr.clone());
                }
            }
            Item::Ast { .. } => {}
        }
    }
    keys
}

/// Aggregates of a GROUP BY that read the designated timestamp's order (not for window
/// aggregates, whose rows follow the window's order, nor DISTINCT, nor without GROUP BY keys:
/// the caller):
/// - `max(ts)` and `min(ts)` of it, as `last(ts)` and `first(ts)` (the time at a group's latest
///   or earliest row by that same timestamp): the same value, NULL times skipped by both, and
///   NULL for a group without a time. In a partition, where rows keep time order, those read a
///   group's end row instead of all its rows (`SELECT sym, max(ts) ... GROUP BY sym` reads 100
///   rows, not 1M).
/// - `arg_min(x, ts)` and `arg_max(x, ts)` by it, given it as their order column: over runs of
///   time-ordered rows, each group's pick is at its run's start or end (`exec::accum`'s
///   `arg_extreme.rs`), which EXPLAIN names `arg_min by time`.
pub(super) fn by_time(call: AggCall, scope: &[Field]) -> AggCall {
    // The one designated timestamp in scope (a join's two sides may each bring one).
    let designated = |e: &BExpr| match e {
        BExpr::Col(i, DataType::Timestamp) => {
            scope.get(*i).is_some_and(|f| f.designated_ts) && scope.iter().filter(|f| f.designated_ts).count() == 1
        }
        _ => false,
    };
    if call.distinct {
        return call;
    }
    match (call.func, call.args.as_slice()) {
        (AggFunc::Max | AggFunc::Min, [ts]) if designated(ts) => {
            let end = if call.func == AggFunc::Max { AggFunc::Last } else { AggFunc::First };
            AggCall { func: end, order: Some(ts.clone()), ..call }
        }
        (AggFunc::ArgMin | AggFunc::ArgMax, [_, ts]) if designated(ts) => AggCall { order: Some(ts.clone()), ..call },
        _ => call,
    }
}
