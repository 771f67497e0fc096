//! Expression binding: names → column positions, literals → typed values, implicit casts made
//! explicit, aggregates replaced by references to the aggregate's output. Constant
//! sub-expressions are folded here (so `'2024-01-02'::TIMESTAMP` reaches scan pushdown as a value
//! and a bad constant fails before any row is read).
//!
//! A function call's argument checks and result type, family by family, are in `calls.rs`.

use super::{BExpr, Correlated, Field, SubqueryKind};
use crate::error::{Pos, Result, SqlError};
use crate::eval::eval_const;
use crate::expr::functions::{self, scalar_by_name, ScalarFunc};
use crate::expr::in_set::{self, InSet};
use crate::parser::ast::{
    BinaryOp, Expr, FuncCall, InValues, Literal, Query, UnaryOp, Values, ARRAY_CAST, ARRAY_QUANTIFIED, ARRAY_QUERY,
    ARRAY_VALUE, FIELD_OF, NOT_DISTINCT, QUESTDB_IN,
};
use crate::plan::srf::SrfFunc;
use crate::plan::ArrayOf;
use zepto_storage::{time, DataType, Value};

mod calls;
pub use calls::bind_function;
use calls::{questdb_in, to_bool};

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

fn numeric_rank(t: DataType) -> u8 {
    match t {
        DataType::Int32 => 1,
        DataType::Int64 => 2,
        DataType::Int128 => 3,
        DataType::Float32 => 4,
        DataType::Float64 => 5,
        _ => 0,
    }
}

/// The type two values unify to (CASE branches, UNION columns, COALESCE, IN lists).
pub fn common_type(a: DataType, b: DataType) -> Option<DataType> {
    use DataType::*;
    if a == b {
        return Some(a);
    }
    Some(match (a, b) {
        (Null, t) | (t, Null) => t,
        (x, y) if x.is_numeric() && y.is_numeric() => {
            if (matches!(x, Int64 | Int128) && y == Float32) || (x == Float32 && matches!(y, Int64 | Int128)) {
                Float64
            } else if numeric_rank(x) >= numeric_rank(y) {
                x
            } else {
                y
            }
        }
        (x, y) if x.is_string() && y.is_string() => Varchar,
        (Timestamp, Date) | (Date, Timestamp) => Timestamp,
        // Text beside a vector is read as one (a '[1, 2]' literal in VALUES, CASE, UNION).
        (Vector(d), Varchar) | (Varchar, Vector(d)) => Vector(d),
        _ => return None,
    })
}

pub fn cast_to(e: BExpr, to: DataType) -> Result<BExpr> {
    let from = e.data_type();
    if from == to || (from.is_string() && to.is_string() && to == DataType::Symbol) {
        return Ok(e);
    }
    if let BExpr::Lit(v, _) = &e {
        if let Some(w) = widen(v, to) {
            return Ok(BExpr::Lit(w, to));
        }
    }
    let c = BExpr::Cast { expr: Box::new(e), to, try_: false };
    fold(c)
}

/// Constant `v` as type `to` when that is a widening every value survives (or as SQL casts
/// an integer to a float), without building a column for it: a long IN list of integer
/// literals against a BIGINT or DOUBLE column is a million of these.
fn widen(v: &Value, to: DataType) -> Option<Value> {
    Some(match (v, to) {
        (Value::Null, _) => Value::Null,
        (Value::Int32(x), DataType::Int64) => Value::Int64(i64::from(*x)),
        (Value::Int32(x), DataType::Int128) => Value::Int128(i128::from(*x)),
        (Value::Int64(x), DataType::Int128) => Value::Int128(i128::from(*x)),
        (Value::Int32(x), DataType::Float64) => Value::Float64(f64::from(*x)),
        (Value::Int64(x), DataType::Float64) => Value::Float64(*x as f64),
        _ => return None,
    })
}

/// `COALESCE(x = y, x IS NULL AND y IS NULL)`: `x IS NOT DISTINCT FROM y`.
fn not_distinct(args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
    let [x, y]: [BExpr; 2] =
        args.try_into().map_err(|_| SqlError::plan("IS DISTINCT FROM takes two values", Some(pos)))?;
    let null = |e: &BExpr| BExpr::IsNull { expr: Box::new(e.clone()), negated: false };
    let both_null =
        BExpr::Binary { op: BinaryOp::And, left: Box::new(null(&x)), right: Box::new(null(&y)), ty: DataType::Bool };
    let eq = bind_binary(BinaryOp::Eq, x, y, pos)?;
    Ok(BExpr::Func { func: ScalarFunc::Coalesce, args: vec![eq, both_null], ty: DataType::Bool })
}

/// `x IS NOT DISTINCT FROM y` as bound by [`not_distinct`]: its two sides.
pub fn as_not_distinct(e: &BExpr) -> Option<(&BExpr, &BExpr)> {
    let BExpr::Func { func: ScalarFunc::Coalesce, args, .. } = e else { return None };
    let [BExpr::Binary { op: BinaryOp::Eq, left, right, .. }, BExpr::Binary { op: BinaryOp::And, left: nl, right: nr, .. }] =
        args.as_slice()
    else {
        return None;
    };
    let is_null_of = |n: &BExpr, x: &BExpr| matches!(n, BExpr::IsNull { expr, negated: false } if **expr == *x);
    (is_null_of(nl, left) && is_null_of(nr, right)).then_some((&**left, &**right))
}

/// Two keys that are never NULL and equal exactly when `e`'s values are not distinct (NULL
/// equals NULL): whether it is NULL, and its value with NULL read as a zero of its type.
pub fn null_safe_keys(e: &BExpr) -> Option<[BExpr; 2]> {
    let e = match e.data_type() {
        t if t.is_string() => cast_to(e.clone(), DataType::Varchar).ok()?,
        _ => e.clone(),
    };
    let ty = e.data_type();
    let zero = match ty {
        DataType::Bool => Value::Bool(false),
        DataType::Int32 => Value::Int32(0),
        DataType::Int64 => Value::Int64(0),
        DataType::Float32 => Value::Float32(0.0),
        DataType::Float64 => Value::Float64(0.0),
        DataType::Timestamp => Value::Timestamp(0),
        DataType::Date => Value::Date(0),
        DataType::Interval => Value::Interval(0),
        DataType::Varchar => Value::Str(String::new()),
        _ => return None,
    };
    let is_null = BExpr::IsNull { expr: Box::new(e.clone()), negated: false };
    let value = BExpr::Func { func: ScalarFunc::Coalesce, args: vec![e, BExpr::Lit(zero, ty)], ty };
    Some([is_null, value])
}

/// Evaluate an expression without column references now.
pub fn fold(e: BExpr) -> Result<BExpr> {
    if matches!(e, BExpr::Lit(..)) || !is_constant(&e) {
        return Ok(e);
    }
    let ty = e.data_type();
    let v = eval_const(&e)?;
    Ok(BExpr::Lit(v, ty))
}

fn is_constant(e: &BExpr) -> bool {
    let mut has_col = false;
    e.for_each_col(&mut |_| has_col = true);
    !has_col && !reads_rows(e)
}

/// Whether `e` holds something evaluated against rows though it names no column: a correlated
/// subquery (`now()` is bound to the statement's time, a constant).
fn reads_rows(e: &BExpr) -> bool {
    e.any(&|x| matches!(x, BExpr::Correlated { .. }))
}

fn is_str_lit(e: &BExpr) -> bool {
    matches!(e, BExpr::Lit(Value::Str(_), _))
}

/// Make two operands comparable: same type (strings of either kind compare as strings).
pub fn coerce_pair(l: BExpr, r: BExpr, pos: Pos) -> Result<(BExpr, BExpr)> {
    let (lt, rt) = (l.data_type(), r.data_type());
    if lt == rt || (lt.is_string() && rt.is_string()) {
        return Ok((l, r));
    }
    if is_str_lit(&r) && rt.is_string() && lt != DataType::Null {
        return Ok((l, cast_to(r, lt)?));
    }
    if is_str_lit(&l) && lt.is_string() && rt != DataType::Null {
        let l = cast_to(l, rt)?;
        return Ok((l, r));
    }
    match common_type(lt, rt) {
        Some(t) => Ok((cast_to(l, t)?, cast_to(r, t)?)),
        None => Err(SqlError::plan(format!("cannot compare {lt} with {rt}"), Some(pos))),
    }
}

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

    /// `x [NOT] IN (list)`: the list items and `x` coerced to one type.
    fn bind_in_list(&mut self, expr: &Expr, list: &[Expr], negated: bool) -> Result<BExpr> {
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
    fn bind_in_values(&mut self, v: &InValues) -> Result<BExpr> {
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
    fn bind_in_subquery(&mut self, expr: &Expr, query: &Query, negated: bool) -> Result<BExpr> {
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
    fn bind_exists(&mut self, query: &Query, negated: bool) -> Result<BExpr> {
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
    fn bind_scalar_subquery(&mut self, q: &Query) -> Result<BExpr> {
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

pub fn bind_literal(l: &Literal, pos: Pos) -> Result<BExpr> {
    Ok(match l {
        Literal::Null => BExpr::Lit(Value::Null, DataType::Null),
        Literal::Bool(b) => lit(Value::Bool(*b)),
        Literal::Int(v) => match i32::try_from(*v) {
            Ok(x) => lit(Value::Int32(x)),
            Err(_) => lit(Value::Int64(*v)),
        },
        Literal::Float(v) => lit(Value::Float64(*v)),
        Literal::Str(s) => lit(Value::Str(s.clone())),
        Literal::Interval(ns) => lit(Value::Interval(*ns)),
        Literal::Typed(DataType::Date, s) => {
            let d =
                time::parse_date(s).ok_or_else(|| SqlError::Parse { message: format!("invalid DATE '{s}'"), pos })?;
            lit(Value::Date(d))
        }
        Literal::Typed(DataType::Int128, s) => {
            let v = s.parse().map_err(|_| SqlError::Parse { message: format!("invalid HUGEINT '{s}'"), pos })?;
            lit(Value::Int128(v))
        }
        Literal::Typed(_, s) => {
            let t = time::parse_timestamp(s)
                .ok_or_else(|| SqlError::Parse { message: format!("invalid TIMESTAMP '{s}'"), pos })?;
            lit(Value::Timestamp(t))
        }
        Literal::Vector(v) => {
            let v = zepto_storage::vector::check_vector(v, None)
                .map_err(|e| SqlError::Parse { message: format!("invalid vector: {e}"), pos })?;
            lit(Value::Vector(v))
        }
    })
}

fn arith_err(op: BinaryOp, lt: DataType, rt: DataType, pos: Pos) -> SqlError {
    SqlError::plan(format!("cannot apply '{}' to {lt} and {rt}", op.sql()), Some(pos))
}

pub fn bind_binary(op: BinaryOp, l: BExpr, r: BExpr, pos: Pos) -> Result<BExpr> {
    use DataType::*;
    let bin = |op, l: BExpr, r: BExpr, ty| BExpr::Binary { op, left: Box::new(l), right: Box::new(r), ty };
    match op {
        BinaryOp::And | BinaryOp::Or => {
            let l = to_bool(l, pos)?;
            let r = to_bool(r, pos)?;
            return Ok(bin(op, l, r, Bool));
        }
        _ if op.is_comparison() => {
            let (l, r) = coerce_pair(l, r, pos)?;
            return Ok(bin(op, l, r, Bool));
        }
        BinaryOp::Concat => {
            let l = if l.data_type().is_string() { l } else { cast_to(l, Varchar)? };
            let r = if r.data_type().is_string() { r } else { cast_to(r, Varchar)? };
            return Ok(bin(op, l, r, Varchar));
        }
        _ => {}
    }
    // Arithmetic. A string literal takes the other side's type; NULL takes it too.
    let (mut l, mut r) = (l, r);
    if is_str_lit(&l) && !r.data_type().is_string() && r.data_type() != Null {
        l = cast_to(l, if r.data_type() == Timestamp || r.data_type() == Date { Interval } else { r.data_type() })?;
    }
    if is_str_lit(&r) && !l.data_type().is_string() && l.data_type() != Null {
        let t = if matches!(l.data_type(), Timestamp | Date) && op != BinaryOp::Sub { Interval } else { l.data_type() };
        r = cast_to(r, t)?;
    }
    let (lt, rt) = (l.data_type(), r.data_type());
    if lt == Null && rt == Null {
        return Ok(BExpr::Lit(Value::Null, Null));
    }
    if lt == Null {
        let t = if rt == Interval && op == BinaryOp::Add { Timestamp } else { rt };
        return bind_binary(op, cast_to(l, t)?, r, pos);
    }
    if rt == Null {
        let t = if matches!(lt, Timestamp | Date) { Interval } else { lt };
        return bind_binary(op, l, cast_to(r, t)?, pos);
    }
    match (lt, rt) {
        (a, b) if a.is_numeric() && b.is_numeric() => {
            let common = common_type(a, b).ok_or_else(|| arith_err(op, lt, rt, pos))?;
            match op {
                BinaryOp::Div => Ok(bin(op, cast_to(l, Float64)?, cast_to(r, Float64)?, Float64)),
                _ => Ok(bin(op, cast_to(l, common)?, cast_to(r, common)?, common)),
            }
        }
        (Timestamp, Interval) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => Ok(bin(op, l, r, Timestamp)),
        (Interval, Timestamp) if op == BinaryOp::Add => Ok(bin(op, r, l, Timestamp)),
        (Timestamp, Timestamp) if op == BinaryOp::Sub => Ok(bin(op, l, r, Interval)),
        (Date, Interval) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
            Ok(bin(op, cast_to(l, Timestamp)?, r, Timestamp))
        }
        (Interval, Date) if op == BinaryOp::Add => Ok(bin(op, cast_to(r, Timestamp)?, l, Timestamp)),
        (Date, Date) if op == BinaryOp::Sub => Ok(bin(op, cast_to(l, Int64)?, cast_to(r, Int64)?, Int64)),
        (Date, b) if b.is_integer() && matches!(op, BinaryOp::Add | BinaryOp::Sub) => {
            Ok(bin(op, l, cast_to(r, Int32)?, Date))
        }
        (Timestamp, Date) if op == BinaryOp::Sub => Ok(bin(op, l, cast_to(r, Timestamp)?, Interval)),
        (Date, Timestamp) if op == BinaryOp::Sub => Ok(bin(op, cast_to(l, Timestamp)?, r, Interval)),
        (Interval, Interval) if matches!(op, BinaryOp::Add | BinaryOp::Sub) => Ok(bin(op, l, r, Interval)),
        (Interval, b) if b.is_numeric() && matches!(op, BinaryOp::Mul | BinaryOp::Div) => {
            Ok(bin(op, l, cast_to(r, Float64)?, Interval))
        }
        (a, Interval) if a.is_numeric() && op == BinaryOp::Mul => Ok(bin(op, r, cast_to(l, Float64)?, Interval)),
        _ => Err(arith_err(op, lt, rt, pos)),
    }
}
