//! Mutable traversal of every expression in a query (including nested subqueries, CTEs, FROM
//! subqueries and join conditions), used to substitute outer references of correlated
//! subqueries.

use super::ast::*;

/// Calls `f` on every expression, children first; `f` may replace the expression.
pub fn rewrite_query(q: &mut Query, f: &mut dyn FnMut(&mut Expr)) {
    for (_, c) in &mut q.ctes {
        rewrite_query(c, f);
    }
    rewrite_set(&mut q.body, f);
    for o in &mut q.order_by {
        rewrite_expr(&mut o.expr, f);
    }
    for e in [&mut q.limit, &mut q.limit_to].into_iter().flatten() {
        rewrite_expr(e, f);
    }
    if let Some(e) = &mut q.offset {
        rewrite_expr(e, f);
    }
}

fn rewrite_set(s: &mut SetExpr, f: &mut dyn FnMut(&mut Expr)) {
    match s {
        SetExpr::Select(sel) => {
            for it in &mut sel.items {
                if let SelectItem::Expr { expr, .. } = it {
                    rewrite_expr(expr, f);
                }
            }
            if let Some(t) = &mut sel.from {
                rewrite_from(t, f);
            }
            for e in sel
                .where_
                .iter_mut()
                .chain(sel.group_by.iter_mut())
                .chain(sel.having.iter_mut())
                .chain(sel.qualify.iter_mut())
            {
                rewrite_expr(e, f);
            }
        }
        SetExpr::Values(rows) => rows.iter_mut().flatten().for_each(|e| rewrite_expr(e, f)),
        SetExpr::SetOp { left, right, .. } => {
            rewrite_set(left, f);
            rewrite_set(right, f);
        }
        SetExpr::Query(q) => rewrite_query(q, f),
    }
}

fn rewrite_from(t: &mut TableRef, f: &mut dyn FnMut(&mut Expr)) {
    match t {
        TableRef::Table { .. } => {}
        TableRef::Subquery { query, .. } => rewrite_query(query, f),
        TableRef::Function { args, .. } => args.iter_mut().for_each(|e| rewrite_expr(e, f)),
        TableRef::Join { left, right, on, .. } => {
            rewrite_from(left, f);
            rewrite_from(right, f);
            if let Some(e) = on {
                rewrite_expr(e, f);
            }
        }
    }
}

/// Calls `f` on `e` and every expression inside it (subqueries included), children first; `f` may
/// replace the expression.
pub fn rewrite_expr(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    match e {
        Expr::Column { .. } | Expr::Lit(..) => {}
        Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } | Expr::Cast { expr, .. } => rewrite_expr(expr, f),
        Expr::Binary { left, right, .. } => {
            rewrite_expr(left, f);
            rewrite_expr(right, f);
        }
        Expr::Func(fc) => {
            fc.args.iter_mut().for_each(|a| rewrite_expr(a, f));
            if let Some(o) = &mut fc.within_group {
                rewrite_expr(&mut o.expr, f);
            }
            fc.order_by.iter_mut().for_each(|o| rewrite_expr(&mut o.expr, f));
            if let Some(w) = &mut fc.over {
                w.partition_by.iter_mut().for_each(|a| rewrite_expr(a, f));
                w.order_by.iter_mut().for_each(|o| rewrite_expr(&mut o.expr, f));
                if let Some(fr) = &mut w.frame {
                    for b in [&mut fr.start, &mut fr.end] {
                        if let FrameBound::Preceding(x) | FrameBound::Following(x) = b {
                            rewrite_expr(x, f);
                        }
                    }
                }
            }
        }
        Expr::Case { operand, whens, else_ } => {
            if let Some(o) = operand {
                rewrite_expr(o, f);
            }
            for (w, t) in whens {
                rewrite_expr(w, f);
                rewrite_expr(t, f);
            }
            if let Some(x) = else_ {
                rewrite_expr(x, f);
            }
        }
        Expr::InList { expr, list, .. } => {
            rewrite_expr(expr, f);
            list.iter_mut().for_each(|a| rewrite_expr(a, f));
        }
        Expr::InValues(v) => rewrite_expr(&mut v.expr, f),
        Expr::InSubquery { expr, query, .. } => {
            rewrite_expr(expr, f);
            rewrite_query(query, f);
        }
        Expr::Exists { query, .. } | Expr::Subquery(query) => rewrite_query(query, f),
        Expr::Between { expr, lo, hi, .. } => {
            rewrite_expr(expr, f);
            rewrite_expr(lo, f);
            rewrite_expr(hi, f);
        }
        Expr::Like { expr, pattern, .. } => {
            rewrite_expr(expr, f);
            rewrite_expr(pattern, f);
        }
    }
    f(e);
}

/// Calls `f` on each direct child expression of `e` (one level; subqueries are not entered).
/// The building block of walks that must not recurse, such as [`super::limits::measure`].
pub fn for_each_child<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e Expr)) {
    match e {
        Expr::Column { .. } | Expr::Lit(..) | Expr::Exists { .. } | Expr::Subquery(_) => {}
        Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } | Expr::Cast { expr, .. } => f(expr),
        Expr::InSubquery { expr, .. } => f(expr),
        Expr::Binary { left, right, .. } | Expr::Like { expr: left, pattern: right, .. } => {
            f(left);
            f(right);
        }
        Expr::Func(fc) => {
            fc.args.iter().for_each(&mut *f);
            if let Some(o) = &fc.within_group {
                f(&o.expr);
            }
            fc.order_by.iter().for_each(|o| f(&o.expr));
            if let Some(w) = &fc.over {
                w.partition_by.iter().for_each(&mut *f);
                w.order_by.iter().for_each(|o| f(&o.expr));
                if let Some(fr) = &w.frame {
                    for b in [&fr.start, &fr.end] {
                        if let FrameBound::Preceding(x) | FrameBound::Following(x) = b {
                            f(x);
                        }
                    }
                }
            }
        }
        Expr::Case { operand, whens, else_ } => {
            operand.iter().for_each(|o| f(o));
            for (w, t) in whens {
                f(w);
                f(t);
            }
            else_.iter().for_each(|x| f(x));
        }
        Expr::InList { expr, list, .. } => {
            f(expr);
            list.iter().for_each(&mut *f);
        }
        Expr::InValues(v) => f(&v.expr),
        Expr::Between { expr, lo, hi, .. } => {
            f(expr);
            f(lo);
            f(hi);
        }
    }
}
