//! SELECT-list aliases used in WHERE, as DuckDB takes them: `SELECT price * size AS notional
//! FROM t WHERE notional > 1e6`. A name in WHERE that is no column of FROM but is the alias of
//! a select item becomes that item's expression (a column of the same name wins, as in DuckDB).
//! Items with aggregates or window functions are not substituted (they have no value per input
//! row; the name stays unknown and its error says so), and a WHERE with a subquery is left as
//! written (its names resolve in scopes of their own).

use super::super::bind_expr::{contains_aggregate, is_window_call, walk};
use super::super::Field;
use crate::parser::ast::{Expr, SelectItem};
use std::borrow::Cow;

/// `where_` with the select-list aliases it names (and FROM does not) replaced by their items;
/// `where_` itself, uncopied, when it names none (a million-item IN list is not cloned).
pub fn with_select_aliases<'a>(where_: &'a Expr, items: &[SelectItem], scope: &[Field]) -> Cow<'a, Expr> {
    if has_subquery(where_) {
        return Cow::Borrowed(where_);
    }
    let alias_of = |e: &Expr| -> Option<&Expr> {
        let Expr::Column { table: None, name, .. } = e else { return None };
        if scope.iter().any(|f| f.name.eq_ignore_ascii_case(name)) {
            return None;
        }
        let item = items.iter().find_map(|it| match it {
            SelectItem::Expr { expr, alias: Some(a) } if a.eq_ignore_ascii_case(name) => Some(expr),
            _ => None,
        });
        item.filter(|x| per_row(x))
    };
    let mut named = false;
    walk(where_, &mut |e| named |= alias_of(e).is_some());
    if !named {
        return Cow::Borrowed(where_);
    }
    let mut w = where_.clone();
    crate::parser::visit::rewrite_expr(&mut w, &mut |e| {
        if let Some(expr) = alias_of(e) {
            *e = expr.clone();
        }
    });
    Cow::Owned(w)
}

/// Whether `e` has a value for each input row: no aggregate, window function or subquery.
fn per_row(e: &Expr) -> bool {
    let mut windowed = false;
    walk(e, &mut |x| windowed |= matches!(x, Expr::Func(f) if is_window_call(f)));
    !windowed && !contains_aggregate(e) && !has_subquery(e)
}

fn has_subquery(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| found |= matches!(x, Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }));
    found
}
