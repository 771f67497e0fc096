//! Expression binding: names → column positions, literals → typed values, implicit casts made
//! explicit, aggregates replaced by references to the aggregate's output. Constant
//! sub-expressions are folded here (so `'2024-01-02'::TIMESTAMP` reaches scan pushdown as a value
//! and a bad constant fails before any row is read).
//!
//! A function call's argument checks and result type, family by family, are in `calls.rs`;
//! the type rules (common types, casts, folding, literals, operators) in `typing.rs`; `IN`
//! and subqueries in `membership.rs`.

use super::{BExpr, Field};
use crate::error::{Pos, Result, SqlError};
use crate::expr::functions::{self, scalar_by_name, ScalarFunc};
use crate::parser::ast::{
    BinaryOp, Expr, FuncCall, Literal, Query, UnaryOp, ARRAY_CAST, ARRAY_QUANTIFIED, ARRAY_QUERY, ARRAY_VALUE,
    FIELD_OF, NOT_DISTINCT, QUESTDB_IN,
};
use crate::plan::srf::SrfFunc;
use crate::plan::ArrayOf;
use zepto_storage::{DataType, Value};

mod calls;
mod membership;
mod typing;
pub use calls::bind_function;
use calls::questdb_in;
use typing::not_distinct;
pub use typing::{as_not_distinct, bind_binary, bind_literal, cast_to, coerce_pair, common_type, fold, null_safe_keys};

/// Group keys and aggregates already computed by an Aggregate node: expressions above it are
/// bound to its output columns `[keys..., aggs...]`.
pub struct AggCtx {
    /// Canonical text of each GROUP BY expression, its input column (when it is a plain
    /// column), and its type.
    pub keys: Vec<(String, Option<usize>, DataType)>,
    /// Canonical text of each aggregate call and its type.
    pub aggs: Vec<(String, DataType)>,
}

/// What binding a subquery produced.
pub enum SubPlan {
    /// Uncorrelated: already executed. `values` are the first column's values.
    Rows { values: Vec<Value>, ty: DataType, width: usize, rows: usize },
    /// Correlated: re-planned per outer row by the executor.
    Correlated {
        query: Box<Query>,
        refs: Vec<super::OuterRef>,
        ty: DataType,
        width: usize,
        catalog: crate::access::CatalogView,
    },
}

/// Plans subqueries during binding (the binder implements it).
pub trait SubqueryRunner {
    /// Plan `q` in the context of the enclosing scope `outer`; run it now if it does not
    /// reference the enclosing row.
    fn plan_subquery(&mut self, q: &Query, outer: &[Field]) -> Result<SubPlan>;
    /// The statement's time, which every `now()` in it is.
    fn statement_time(&self) -> i64;
    /// `name(args)` bound as one of the functions on the system catalogs (`format_type`,
    /// `regclass`, ...), which read the catalog as this session sees it; `None` when `name`
    /// is not one.
    fn catalog_function(&self, name: &str, args: Vec<BExpr>, pos: Pos) -> Result<Option<BExpr>>;
    /// Count one bound expression node (or IN-list value), and every so often check the
    /// query's control: binding a statement of millions of nodes stops when the query is
    /// cancelled, passes its deadline or holds too much memory.
    fn tick(&mut self) -> Result<()>;
}

/// Window function results already computed by a Window node: its output is its input
/// followed by one column per call, so call `j` is column `base + j`.
pub struct WinCtx {
    pub base: usize,
    /// Canonical text of each window call and its type.
    pub calls: Vec<(String, DataType)>,
}

pub struct ExprBinder<'a> {
    pub scope: &'a [Field],
    pub agg: Option<&'a AggCtx>,
    pub win: Option<&'a WinCtx>,
    pub runner: &'a mut dyn SubqueryRunner,
}

fn one_column(width: usize) -> Result<()> {
    if width != 1 {
        return Err(SqlError::plan(format!("subquery must return exactly one column, it returns {width}"), None));
    }
    Ok(())
}

fn lit(v: Value) -> BExpr {
    let t = v.data_type();
    BExpr::Lit(v, t)
}

pub fn resolve(scope: &[Field], table: Option<&str>, name: &str, pos: Pos) -> Result<usize> {
    let mut found = None;
    for (i, f) in scope.iter().enumerate() {
        let qual_ok = match table {
            Some(t) => f.qualifier.as_deref().is_some_and(|q| q.eq_ignore_ascii_case(t)),
            None => !f.using_copy,
        };
        if qual_ok && f.name.eq_ignore_ascii_case(name) {
            if found.is_some() {
                return Err(SqlError::plan(format!("column reference '{name}' is ambiguous"), Some(pos)));
            }
            found = Some(i);
        }
    }
    // A bare relation name standing for its row, as PostgreSQL reads `FROM generate_series(0,
    // 3) s ... a[s]`: the relation's value when it has exactly one column.
    if found.is_none() && table.is_none() {
        let mut of = scope
            .iter()
            .enumerate()
            .filter(|(_, f)| f.qualifier.as_deref().is_some_and(|q| q.eq_ignore_ascii_case(name)));
        if let (Some((i, _)), None) = (of.next(), of.next()) {
            found = Some(i);
        }
    }
    found.ok_or_else(|| {
        let full = match table {
            Some(t) => format!("{t}.{name}"),
            None => name.to_string(),
        };
        SqlError::ColumnNotFound {
            message: format!("column '{full}' does not exist"),
            pos: Some(pos),
            table: table.map(str::to_string),
            name: name.to_string(),
        }
    })
}

/// Whether an AST expression contains an aggregate call (not looking into subqueries).
pub fn contains_aggregate(e: &Expr) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        if let Expr::Func(f) = x {
            if f.over.is_none() && functions::is_aggregate(&f.name) {
                found = true;
            }
        }
    });
    found
}

/// Whether a function call is a window function: it has `OVER`, or it is one of the
/// window-only functions (`row_number`, `lag`, `ema`, `mavg`, ...) written kdb-style without it.
pub fn is_window_call(f: &FuncCall) -> bool {
    f.over.is_some() || functions::is_window_only(&f.name)
}

/// Pre-order walk over an AST expression (not into subqueries).
pub fn walk(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match e {
        Expr::Unary { expr, .. } | Expr::IsNull { expr, .. } | Expr::Cast { expr, .. } => walk(expr, f),
        Expr::Binary { left, right, .. } => {
            walk(left, f);
            walk(right, f);
        }
        Expr::Func(fc) => {
            fc.args.iter().for_each(|a| walk(a, f));
            if let Some(o) = &fc.within_group {
                walk(&o.expr, f);
            }
            fc.order_by.iter().for_each(|o| walk(&o.expr, f));
            if let Some(w) = &fc.over {
                w.partition_by.iter().for_each(|a| walk(a, f));
                w.order_by.iter().for_each(|o| walk(&o.expr, f));
            }
        }
        Expr::Case { operand, whens, else_ } => {
            if let Some(o) = operand {
                walk(o, f);
            }
            for (w, t) in whens {
                walk(w, f);
                walk(t, f);
            }
            if let Some(e) = else_ {
                walk(e, f);
            }
        }
        Expr::InList { expr, list, .. } => {
            walk(expr, f);
            list.iter().for_each(|a| walk(a, f));
        }
        Expr::InValues(v) => walk(&v.expr, f),
        Expr::InSubquery { expr, .. } => walk(expr, f),
        Expr::Between { expr, lo, hi, .. } => {
            walk(expr, f);
            walk(lo, f);
            walk(hi, f);
        }
        Expr::Like { expr, pattern, .. } => {
            walk(expr, f);
            walk(pattern, f);
        }
        Expr::Column { .. } | Expr::Lit(..) | Expr::Exists { .. } | Expr::Subquery(_) => {}
    }
}

impl ExprBinder<'_> {
    /// The column an operator below the projection computed for the call written `key`
    /// (a window or set-returning call), or the error `missing` makes.
    fn computed_below(&self, key: String, missing: impl FnOnce() -> SqlError) -> Result<BExpr> {
        let found = self.win.and_then(|w| w.calls.iter().position(|(s, _)| *s == key).map(|j| (w, j)));
        match found {
            Some((w, j)) => Ok(BExpr::Col(w.base + j, w.calls[j].1)),
            None => Err(missing()),
        }
    }

    #[recursive::recursive]
    pub fn bind(&mut self, e: &Expr) -> Result<BExpr> {
        self.runner.tick()?;
        if let Expr::Func(f) = e {
            if f.name == FIELD_OF {
                return self.field_of(f);
            }
            if f.name == ARRAY_QUERY && f.args.len() == 1 {
                return self.bind(&f.args[0]);
            }
            if f.name == ARRAY_QUANTIFIED {
                return self.quantified(f);
            }
            if f.name == ARRAY_CAST {
                // The text normalized to `{...}` (a vector's `1 2` becomes `{1,2}`).
                let x = f.args.first().ok_or_else(|| SqlError::Internal("an array cast without its value".into()))?;
                let x = cast_to(self.bind(x)?, DataType::Varchar)?;
                return bind_function("array_cat", vec![x, BExpr::Lit(Value::Null, DataType::Varchar)], f.pos);
            }
            if f.over.is_none() && SrfFunc::by_name(&f.name).is_some() {
                return self.computed_below(e.to_string(), || {
                    SqlError::plan(
                        format!("set-returning function {}() is only allowed in the select list", f.name),
                        Some(f.pos),
                    )
                });
            }
            if is_window_call(f) {
                let key = e.to_string();
                let found = self.win.and_then(|w| w.calls.iter().position(|(s, _)| *s == key).map(|j| (w, j)));
                return match found {
                    Some((w, j)) => Ok(BExpr::Col(w.base + j, w.calls[j].1)),
                    None => Err(SqlError::plan(
                        format!(
                            "window function {}() is not allowed here (only in the select list, QUALIFY and ORDER BY, and not nested)",
                            f.name
                        ),
                        Some(f.pos),
                    )),
                };
            }
        }
        if let Some(agg) = self.agg {
            // Matched by text; a text longer than every key's and call's matches none.
            let longest = agg.keys.iter().map(|k| k.0.len()).chain(agg.aggs.iter().map(|a| a.0.len())).max();
            let key = longest.and_then(|n| e.text_within(n));
            if let Some(k) = agg.keys.iter().position(|(s, _, _)| Some(s) == key.as_ref()) {
                return Ok(BExpr::Col(k, agg.keys[k].2));
            }
            if let Expr::Func(f) = e {
                if functions::is_aggregate(&f.name) {
                    let j = agg
                        .aggs
                        .iter()
                        .position(|(s, _)| Some(s) == key.as_ref())
                        .ok_or_else(|| SqlError::Internal(format!("aggregate {e} was not collected")))?;
                    return Ok(BExpr::Col(agg.keys.len() + j, agg.aggs[j].1));
                }
            }
            if let Expr::Column { table, name, pos } = e {
                let i = resolve(self.scope, table.as_deref(), name, *pos)?;
                return match agg.keys.iter().position(|(_, c, _)| *c == Some(i)) {
                    Some(k) => Ok(BExpr::Col(k, agg.keys[k].2)),
                    None => Err(SqlError::plan(
                        format!("column '{e}' must appear in the GROUP BY clause or be used in an aggregate function"),
                        Some(*pos),
                    )),
                };
            }
        } else if let Expr::Func(f) = e {
            if functions::is_aggregate(&f.name) {
                return Err(SqlError::plan(format!("aggregate {}() is not allowed here", f.name), Some(f.pos)));
            }
        }
        let b = self.bind_inner(e)?;
        let b = match e {
            Expr::Func(f) if f.name == "array_subscript" => self.as_array_item(b, f.args.first())?,
            _ => b,
        };
        fold(b)
    }

    /// `(composite).field`: a field of a composite set-returning call's row, or of a column
    /// a subquery made of one (`(t.keys).x` reads its column `keys.x`).
    fn field_of(&mut self, f: &FuncCall) -> Result<BExpr> {
        let (Some(base), Some(Expr::Lit(Literal::Str(field), _))) = (f.args.first(), f.args.get(1)) else {
            return Err(SqlError::Internal("a field access without its field".into()));
        };
        match base {
            Expr::Func(c) if SrfFunc::by_name(&c.name).is_some_and(|s| s.fields().contains(&field.as_str())) => self
                .computed_below(format!("({base}).{field}"), || {
                    SqlError::plan(format!("{}() is only allowed in the select list", c.name), Some(c.pos))
                }),
            Expr::Column { table, name, pos } => {
                let part = Expr::Column { table: table.clone(), name: format!("{name}.{field}"), pos: *pos };
                self.bind(&part)
            }
            _ => Err(SqlError::plan(format!("'{base}' is not a composite value with a field '{field}'"), Some(f.pos))),
        }
    }

    /// `x op ANY|ALL (array)`: `x` and the items compared in the type both fit (the items'
    /// declared type, else `x`'s), item by item when the row is evaluated.
    fn quantified(&mut self, f: &FuncCall) -> Result<BExpr> {
        let [x, array, Expr::Lit(Literal::Str(op), _), Expr::Lit(Literal::Bool(any), _)] = f.args.as_slice() else {
            return Err(SqlError::Internal("a quantified comparison without its parts".into()));
        };
        let op = [BinaryOp::Eq, BinaryOp::NotEq, BinaryOp::Lt, BinaryOp::LtEq, BinaryOp::Gt, BinaryOp::GtEq]
            .into_iter()
            .find(|o| o.sql() == op)
            .ok_or_else(|| SqlError::Internal(format!("quantified comparison by '{op}'")))?;
        let item = self.array_of(array)?.map(|a| a.item);
        let xb = self.bind(x)?;
        let ab = self.bind(array)?;
        if !matches!(ab.data_type(), DataType::Varchar | DataType::Symbol | DataType::Null) {
            return Err(SqlError::plan(format!("ANY/ALL needs an array, not {}", ab.data_type()), array.pos()));
        }
        let ty = match item {
            Some(t) => common_type(xb.data_type(), t).ok_or_else(|| {
                SqlError::plan(format!("cannot compare {} with items of {t}", xb.data_type()), Some(f.pos))
            })?,
            None if xb.data_type() == DataType::Symbol => DataType::Varchar,
            None => xb.data_type(),
        };
        let func = ScalarFunc::Quantified { op, any: *any };
        Ok(BExpr::Func { func, args: vec![cast_to(xb, ty)?, cast_to(ab, DataType::Varchar)?], ty: DataType::Bool })
    }

    /// What the array `e` holds, where something says: a catalog's or a subquery's array
    /// column's declaration, `array_agg(x)` (of `x`'s type), `ARRAY[...]` (of its items'),
    /// `ARRAY(subquery)`, `a || b` of an array. `None`: not known to be an array.
    pub fn array_of(&mut self, e: &Expr) -> Result<Option<ArrayOf>> {
        // `a || b || c` nests to the left, as deep as the statement allows: walked, not recursed.
        let mut e = e;
        while let Expr::Binary { op: BinaryOp::Concat, left, right, .. } = e {
            if let Some(a) = self.array_source(right)? {
                return Ok(Some(a));
            }
            e = left;
        }
        self.array_source(e)
    }

    /// What `e` holds when it is itself an array: a column declared one, or a call that
    /// makes one (`a || b` is [`ExprBinder::array_of`]'s).
    fn array_source(&mut self, e: &Expr) -> Result<Option<ArrayOf>> {
        let Expr::Func(f) = e else {
            return Ok(match e {
                Expr::Column { table, name, pos } => {
                    resolve(self.scope, table.as_deref(), name, *pos).ok().and_then(|i| self.scope[i].array_of)
                }
                _ => None,
            });
        };
        let mut plain = ExprBinder { scope: self.scope, agg: None, win: None, runner: &mut *self.runner };
        Ok(match f.name.to_ascii_lowercase().as_str() {
            "array_agg" if f.args.len() == 1 => Some(ArrayOf::of(plain.bind(&f.args[0])?.data_type())),
            ARRAY_VALUE => {
                let mut item = DataType::Null;
                for a in &f.args {
                    item = common_type(item, plain.bind(a)?.data_type()).unwrap_or(DataType::Varchar);
                }
                Some(ArrayOf::of(if item == DataType::Null { DataType::Varchar } else { item }))
            }
            ARRAY_QUERY | "string_to_array" | "parse_ident" => Some(ArrayOf::of(DataType::Varchar)),
            ARRAY_CAST => match f.args.get(1) {
                Some(Expr::Lit(Literal::Str(t), _)) => DataType::from_sql(t).map(ArrayOf::of),
                _ => None,
            },
            "array_cat" => match f.args.first() {
                Some(a) => plain.array_source(a)?,
                None => None,
            },
            _ => None,
        })
    }

    /// An array's item `b` (text) cast to the item type of the array `array` when something
    /// declares one (a catalog's `indoption[k]` is a number).
    fn as_array_item(&mut self, b: BExpr, array: Option<&Expr>) -> Result<BExpr> {
        let item = match array {
            Some(a) => self.array_of(a)?.map(|a| a.item),
            None => None,
        };
        match item {
            Some(t) if t != DataType::Varchar => cast_to(b, t),
            _ => Ok(b),
        }
    }

    fn bind_inner(&mut self, e: &Expr) -> Result<BExpr> {
        match e {
            Expr::Column { table, name, pos } => {
                let i = resolve(self.scope, table.as_deref(), name, *pos)?;
                Ok(BExpr::Col(i, self.scope[i].data_type))
            }
            Expr::Lit(l, pos) => bind_literal(l, *pos),
            Expr::Unary { op: UnaryOp::Neg, expr } => {
                let x = self.bind(expr)?;
                let t = x.data_type();
                if !(t.is_numeric() || t == DataType::Interval || t == DataType::Null) {
                    return Err(SqlError::plan(format!("cannot negate {t}"), expr.pos()));
                }
                Ok(BExpr::Neg(Box::new(x)))
            }
            Expr::Unary { op: UnaryOp::Not, expr } => {
                let x = self.bind_bool(expr)?;
                Ok(BExpr::Not(Box::new(x)))
            }
            Expr::Binary { op, left, right, pos } => {
                let l = self.bind(left)?;
                let r = self.bind(right)?;
                if *op == BinaryOp::Concat && (self.array_of(left)?.is_some() || self.array_of(right)?.is_some()) {
                    return bind_function("array_cat", vec![l, r], *pos);
                }
                bind_binary(*op, l, r, *pos)
            }
            Expr::Cast { expr, to, try_, .. } => {
                let x = self.bind(expr)?;
                Ok(BExpr::Cast { expr: Box::new(x), to: *to, try_: *try_ })
            }
            Expr::Case { operand, whens, else_ } => self.bind_case(operand.as_deref(), whens, else_.as_deref()),
            Expr::InList { expr, list, negated } => self.bind_in_list(expr, list, *negated),
            Expr::InValues(v) => self.bind_in_values(v),
            Expr::InSubquery { expr, query, negated } => self.bind_in_subquery(expr, query, *negated),
            Expr::Exists { query, negated } => self.bind_exists(query, *negated),
            Expr::Subquery(q) => self.bind_scalar_subquery(q),
            Expr::Between { expr, lo, hi, negated } => {
                let pos = expr.pos().unwrap_or_default();
                let x = self.bind(expr)?;
                let lo = self.bind(lo)?;
                let hi = self.bind(hi)?;
                let ge = bind_binary(BinaryOp::GtEq, x.clone(), lo, pos)?;
                let le = bind_binary(BinaryOp::LtEq, x, hi, pos)?;
                let both =
                    BExpr::Binary { op: BinaryOp::And, left: Box::new(ge), right: Box::new(le), ty: DataType::Bool };
                Ok(if *negated { BExpr::Not(Box::new(both)) } else { both })
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                let x = self.bind_string(expr)?;
                let p = self.bind_string(pattern)?;
                Ok(BExpr::Like {
                    expr: Box::new(x),
                    pattern: Box::new(p),
                    negated: *negated,
                    case_insensitive: *case_insensitive,
                })
            }
            Expr::IsNull { expr, negated } => Ok(BExpr::IsNull { expr: Box::new(self.bind(expr)?), negated: *negated }),
            Expr::Func(f) => self.bind_call(f),
        }
    }

    /// Whether no function is called `name`: neither a scalar nor a catalog function (asked
    /// without arguments, which a known one refuses or answers) nor one bound specially.
    fn is_unknown_function(&self, name: &str, pos: Pos) -> bool {
        let special = name == NOT_DISTINCT
            || name == QUESTDB_IN
            || functions::is_aggregate(name)
            || functions::is_window_only(name);
        !special
            && scalar_by_name(name).is_none()
            && matches!(self.runner.catalog_function(name, Vec::new(), pos), Ok(None))
    }

    /// A scalar function call; `now()` binds to the statement's time.
    fn bind_call(&mut self, f: &FuncCall) -> Result<BExpr> {
        if f.within_group.is_some() || f.distinct || f.star || !f.order_by.is_empty() {
            return Err(SqlError::plan(format!("{}() is not an aggregate function", f.name), Some(f.pos)));
        }
        let args = match f.args.iter().map(|a| self.bind(a)).collect::<Result<Vec<_>>>() {
            Ok(args) => args,
            // An unknown name is the error to report, not what its arguments break (a
            // DuckDB aggregate this engine lacks, called with a column outside GROUP BY).
            Err(_) if self.is_unknown_function(&f.name, f.pos) => {
                return Err(SqlError::plan(format!("unknown function {}()", f.name), Some(f.pos)));
            }
            Err(e) => return Err(e),
        };
        if f.name == NOT_DISTINCT {
            return not_distinct(args, f.pos);
        }
        if f.name == QUESTDB_IN {
            return questdb_in(args, f.pos);
        }
        if scalar_by_name(&f.name).is_none() {
            let bound = self.runner.catalog_function(&f.name, args, f.pos)?;
            return bound.ok_or_else(|| SqlError::plan(format!("unknown function {}()", f.name), Some(f.pos)));
        }
        match bind_function(&f.name, args, f.pos)? {
            // One clock per statement: `now()` is its time, a constant the planner can
            // fold into time-range searches.
            BExpr::Func { func: ScalarFunc::Now, .. } => {
                Ok(BExpr::Lit(Value::Timestamp(self.runner.statement_time()), DataType::Timestamp))
            }
            e => Ok(e),
        }
    }

    pub fn bind_bool(&mut self, e: &Expr) -> Result<BExpr> {
        let b = self.bind(e)?;
        match b.data_type() {
            DataType::Bool => Ok(b),
            DataType::Null => cast_to(b, DataType::Bool),
            t => Err(SqlError::plan(format!("expected a BOOLEAN expression, got {t}"), e.pos())),
        }
    }

    fn bind_string(&mut self, e: &Expr) -> Result<BExpr> {
        let b = self.bind(e)?;
        match b.data_type() {
            t if t.is_string() => Ok(b),
            _ => cast_to(b, DataType::Varchar),
        }
    }

    fn bind_case(&mut self, operand: Option<&Expr>, whens: &[(Expr, Expr)], else_: Option<&Expr>) -> Result<BExpr> {
        let op = operand.map(|o| self.bind(o)).transpose()?;
        let mut conds = Vec::new();
        let mut thens = Vec::new();
        for (w, t) in whens {
            let c = match &op {
                Some(o) => {
                    let wv = self.bind(w)?;
                    bind_binary(BinaryOp::Eq, o.clone(), wv, w.pos().unwrap_or_default())?
                }
                None => self.bind_bool(w)?,
            };
            conds.push(c);
            thens.push(self.bind(t)?);
        }
        let els = else_.map(|e| self.bind(e)).transpose()?;
        let mut ty = DataType::Null;
        for t in thens.iter().chain(els.iter()) {
            ty = common_type(ty, t.data_type()).ok_or_else(|| {
                SqlError::plan(format!("CASE branches have incompatible types {ty} and {}", t.data_type()), None)
            })?;
        }
        let thens = thens.into_iter().map(|t| cast_to(t, ty)).collect::<Result<Vec<_>>>()?;
        let els = els.map(|e| cast_to(e, ty)).transpose()?;
        Ok(BExpr::Case { whens: conds.into_iter().zip(thens).collect(), else_: els.map(Box::new), ty })
    }
}
