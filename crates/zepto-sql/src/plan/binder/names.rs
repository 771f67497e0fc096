//! What an unaliased select-list entry is called: its text (`count(*)`, `sum(px)`, as DuckDB
//! names most columns), or PostgreSQL's name for it (`count`, `sum`, `?column?`), which the
//! PostgreSQL door asks for because its clients (pandas' `read_sql`, BI tools, ORMs) read
//! columns by the names PostgreSQL gives.
//!
//! PostgreSQL's rule (its parser's `FigureColname`): a column reference is named by the
//! column, a function call (aggregates and window functions too) by the function, `CASE` by
//! its ELSE result's name or else `case`, a cast by the name of what it casts or else by the
//! type, `EXISTS` and `ARRAY` by those words, a scalar subquery by its first column; anything
//! else (operators, literals, `IN`, `LIKE`, `IS NULL`) is `?column?`. A session that asks for
//! these names gets them at every level (derived tables and CTEs too), so a query wrapped by a
//! BI tool (`SELECT "count" FROM (...) t`) finds the names the query alone gave.
//!
//! Where the parser turns other syntax into a call, the call is named as PostgreSQL names that
//! syntax: operators (`IS DISTINCT FROM`, `&`, `<<`) are `?column?`, `arr[i]` is named by
//! `arr`, `trim(...)` is `btrim`. Two cannot be told from what they became: `EXTRACT(f FROM x)`
//! is named `date_part` (PostgreSQL 14 and later say `extract`), and `x IS TRUE` `coalesce`.

pub use crate::column_names::ColumnNames;
use crate::parser::ast::{
    Expr, Literal, Query, SelectItem, SetExpr, ARRAY_CAST, ARRAY_QUANTIFIED, ARRAY_QUERY, ARRAY_VALUE, FIELD_OF,
    NOT_DISTINCT,
};
use zepto_storage::DataType;

/// How sure a name is, as PostgreSQL ranks them (no name at all is `?column?`): a cast or
/// CASE uses what it wraps only when that is a real name.
#[derive(Clone, Copy, PartialEq)]
enum Strength {
    /// A type's name (a cast, a typed literal) or `case`.
    Weak,
    /// A column's, a function's or a keyword's name.
    Real,
}

/// PostgreSQL's name for the unaliased select-list entry `e`.
pub fn postgres_name(e: &Expr) -> String {
    name_of(e).map_or_else(|| "?column?".to_string(), |(n, _)| n)
}

fn name_of(e: &Expr) -> Option<(String, Strength)> {
    match e {
        Expr::Column { name, .. } => Some((name.clone(), Strength::Real)),
        Expr::Func(f) => call_name(&f.name, &f.args),
        Expr::Case { else_, .. } => {
            let inner = else_.as_deref().and_then(name_of).filter(|(_, s)| *s == Strength::Real);
            inner.or_else(|| Some(("case".to_string(), Strength::Weak)))
        }
        Expr::Cast { expr, to, .. } => cast_name(expr, type_name(*to)),
        Expr::Exists { .. } => Some(("exists".to_string(), Strength::Real)),
        Expr::Subquery(q) => first_column(q),
        Expr::Lit(Literal::Bool(_), _) => Some(("bool".to_string(), Strength::Weak)),
        Expr::Lit(Literal::Interval(_), _) => Some(("interval".to_string(), Strength::Weak)),
        Expr::Lit(Literal::Typed(t, _), _) => Some((type_name(*t), Strength::Weak)),
        _ => None,
    }
}

/// A call's name: the function's, lower-cased as PostgreSQL folds an unquoted name; the calls
/// the parser made of other syntax are named as that syntax is.
fn call_name(name: &str, args: &[Expr]) -> Option<(String, Strength)> {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        FIELD_OF => match args.get(1) {
            Some(Expr::Lit(Literal::Str(field), _)) => Some((field.clone(), Strength::Real)),
            _ => None,
        },
        ARRAY_QUERY | ARRAY_VALUE => Some(("array".to_string(), Strength::Real)),
        ARRAY_CAST => {
            let ty = match args.get(1) {
                Some(Expr::Lit(Literal::Str(t), _)) => t.to_ascii_lowercase(),
                _ => return None,
            };
            let ty = DataType::from_sql(&ty).map_or(ty, type_name);
            cast_name(args.first()?, ty)
        }
        ARRAY_QUANTIFIED | NOT_DISTINCT | "bit_and_op" | "bit_or_op" | "bit_xor_op" | "shift_left_op"
        | "shift_right_op" => None,
        "array_subscript" => args.first().and_then(name_of),
        "trim" => Some(("btrim".to_string(), Strength::Real)),
        _ => Some((lower, Strength::Real)),
    }
}

fn cast_name(inner: &Expr, ty: String) -> Option<(String, Strength)> {
    match name_of(inner) {
        Some((n, Strength::Real)) => Some((n, Strength::Real)),
        _ => Some((ty, Strength::Weak)),
    }
}

/// A type's name in `pg_type` (an array's by its element, as PostgreSQL names `x::int[]`).
fn type_name(t: DataType) -> String {
    let udt = crate::pg_types::pg_names(t).udt_name;
    udt.strip_prefix('_').unwrap_or(udt).to_string()
}

/// A scalar subquery's name: its first select-list entry's (its alias, or its own name).
fn first_column(q: &Query) -> Option<(String, Strength)> {
    let mut body = &q.body;
    loop {
        match body {
            SetExpr::SetOp { left, .. } => body = left,
            SetExpr::Query(q) => body = &q.body,
            _ => break,
        }
    }
    let SetExpr::Select(s) = body else { return None };
    match s.items.first()? {
        SelectItem::Expr { alias: Some(a), .. } => Some((a.clone(), Strength::Real)),
        SelectItem::Expr { expr, alias: None } => name_of(expr),
        SelectItem::Wildcard { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::postgres_name;
    use crate::parser::ast::{SelectItem, SetExpr, Statement};

    /// Each entry of `sql`'s select list, named as PostgreSQL names it.
    fn names(sql: &str) -> Vec<String> {
        let Ok(Statement::Query(q)) = crate::parser::parse_statement(sql) else { panic!("{sql} parses as a query") };
        let SetExpr::Select(s) = &q.body else { panic!("a SELECT") };
        s.items
            .iter()
            .map(|i| match i {
                SelectItem::Expr { expr, .. } => postgres_name(expr),
                SelectItem::Wildcard { .. } => "*".to_string(),
            })
            .collect()
    }

    /// PostgreSQL 16's names for the same select lists (checked against psql).
    #[test]
    fn entries_are_named_as_postgresql_names_them() {
        let sql = "SELECT count(*), SUM(px), px + 1, sym, t.px, 1, 'a', NULL, true, count(*) + 1, \
                   CAST(px AS BIGINT), CAST(1 AS BIGINT), px::double, '1'::int, TIMESTAMP '2020-01-01', \
                   CASE WHEN px > 1 THEN 1 END, CASE WHEN px > 1 THEN 1 ELSE px END, \
                   (SELECT max(x) FROM u), (SELECT max(x) AS m FROM u), EXISTS (SELECT 1), \
                   px IS NULL, px IN (1, 2), sym LIKE 'a%', -px, ARRAY[1, 2], coalesce(px, 0), \
                   row_number() OVER (ORDER BY ts), now(), INTERVAL '1 day', trim(sym), a IS DISTINCT FROM b, \
                   n & 1, arr[1], ((SELECT max(x) FROM u)) FROM t";
        let want = [
            "count",
            "sum",
            "?column?",
            "sym",
            "px",
            "?column?",
            "?column?",
            "?column?",
            "bool",
            "?column?",
            "px",
            "int8",
            "px",
            "int4",
            "timestamp",
            "case",
            "px",
            "max",
            "m",
            "exists",
            "?column?",
            "?column?",
            "?column?",
            "?column?",
            "array",
            "coalesce",
            "row_number",
            "now",
            "interval",
            "btrim",
            "?column?",
            "?column?",
            "arr",
            "max",
        ];
        assert_eq!(names(sql), want);
    }
}
