//! The expression evaluator: a bound expression ([`BExpr`]) over a [`Batch`], a column at a
//! time. Column references are borrowed, literals stay scalars (a comparison with a constant
//! never materializes a column of copies), and SYMBOL columns are compared through their
//! dictionary: each distinct string is tested once, rows by code.
//!
//! It sits below the planner, which folds constant expressions with it while binding
//! ([`eval_const`]), and the executor, which evaluates over its batches. Correlated subqueries
//! need both of those, so the caller hands them in as [`Subqueries`].
//!
//! Here: the walk over an expression ([`eval`]), operands, logic, CASE and IN lists. Beside it:
//! comparisons and the rows a filter keeps (`compare.rs`), arithmetic (`arith.rs`), scalar
//! functions (`scalar.rs`), casts, LIKE, JSON, arrays and vectors each in its own file.

mod arith;
pub mod array;
mod batch;
pub(crate) mod calendar;
pub mod cast;
pub mod cmp;
mod compare;
mod divide;
mod in_set;
mod json;
mod like;
pub mod numeric;
pub mod partitioner;
mod regex;
mod scalar;
pub mod sql_order;
mod vector;

use crate::error::{Result, SqlError};
use crate::expr::{BExpr, Correlated};
use crate::parser::ast::BinaryOp;
use arith::arith;
pub use batch::{and_validity, mask_indices, Batch};
use compare::compare;
pub use compare::{ord_matches, selection};
pub(crate) use scalar::bucket_end;
use std::borrow::Cow;
use zepto_storage::{Bitmap, Column, ColumnData, DataType, Value};

/// An evaluated operand: a column, or one value standing for every row.
pub enum Opnd<'a> {
    /// A column (borrowed when the expression is a plain column reference).
    Col(Cow<'a, Column>),
    /// One constant for every row.
    Lit(&'a Value),
}

impl Opnd<'_> {
    /// The rows' validity: `None` when none is NULL (a NULL literal or untyped NULL column is all
    /// invalid).
    pub fn validity(&self, n: usize) -> Option<Bitmap> {
        match self {
            Opnd::Col(c) => match c.data() {
                ColumnData::Null(_) => Some(Bitmap::new_unset(n)),
                _ => c.validity().cloned(),
            },
            Opnd::Lit(Value::Null) => Some(Bitmap::new_unset(n)),
            Opnd::Lit(_) => None,
        }
    }

    fn is_null_lit(&self) -> bool {
        matches!(self, Opnd::Lit(Value::Null))
            || matches!(self, Opnd::Col(c) if matches!(c.data(), ColumnData::Null(_)))
    }

    /// The operand as a column of `n` rows of type `ty` (a literal is repeated).
    pub fn into_column(self, ty: DataType, n: usize) -> Result<Column> {
        Ok(match self {
            Opnd::Col(c) => c.into_owned(),
            Opnd::Lit(v) => Column::repeat(v, ty, n)?,
        })
    }
}

/// Evaluate `e` over `b`, keeping a literal as one value instead of a repeated column.
pub fn eval_opnd<'a>(e: &'a BExpr, b: &'a Batch, sq: &dyn Subqueries) -> Result<Opnd<'a>> {
    match e {
        BExpr::Lit(v, _) => Ok(Opnd::Lit(v)),
        e => Ok(Opnd::Col(eval(e, b, sq)?)),
    }
}

/// What the evaluator cannot do alone: a correlated subquery ([`BExpr::Correlated`]) is planned
/// and run again per outer tuple, which takes the planner and the executor, both above this
/// module. The executor passes its implementation to [`eval`].
pub trait Subqueries {
    /// The subquery's value for each row of `b`; `lhs` is the left side of `IN`.
    fn correlated(&self, sub: &Correlated, lhs: Option<&BExpr>, b: &Batch) -> Result<Column>;
}

/// For constant expressions: they read no row, so they hold no correlated subquery.
struct NoSubqueries;

impl Subqueries for NoSubqueries {
    fn correlated(&self, _: &Correlated, _: Option<&BExpr>, _: &Batch) -> Result<Column> {
        Err(SqlError::Internal("a correlated subquery in a constant expression".into()))
    }
}

/// Evaluate an expression without column references.
pub fn eval_const(e: &BExpr) -> Result<Value> {
    let b = Batch::new(vec![], 1);
    Ok(eval(e, &b, &NoSubqueries)?.get(0))
}

/// `e` over the rows of `b`. Recursive over the expression, growing the stack when an
/// expression is deep (`#[recursive]`: a check per node per batch, never per row).
#[recursive::recursive]
pub fn eval<'a>(e: &'a BExpr, b: &'a Batch, sq: &dyn Subqueries) -> Result<Cow<'a, Column>> {
    let n = b.rows;
    Ok(match e {
        BExpr::Col(i, _) => {
            Cow::Borrowed(b.columns.get(*i).ok_or_else(|| SqlError::Internal(format!("column {i} out of range")))?)
        }
        BExpr::Lit(v, t) => Cow::Owned(Column::repeat(v, *t, n)?),
        BExpr::Neg(x) => Cow::Owned(negate(&*eval(x, b, sq)?)?),
        BExpr::Not(x) => {
            let c = eval(x, b, sq)?;
            let ColumnData::Bool(v) = &c.data() else {
                return Ok(Cow::Owned(Column::nulls(DataType::Bool, n)));
            };
            Cow::Owned(Column::new(ColumnData::Bool(v.iter().map(|x| !x).collect()), c.validity().cloned()))
        }
        BExpr::Binary { op, left, right, ty } => {
            let l = eval_opnd(left, b, sq)?;
            let r = eval_opnd(right, b, sq)?;
            Cow::Owned(binary(*op, l, r, *ty, left.data_type(), n)?)
        }
        BExpr::Cast { expr, to, try_ } => {
            let c = eval(expr, b, sq)?;
            Cow::Owned(cast::cast_column(&c, *to, *try_)?)
        }
        BExpr::Func { func, args, ty } => Cow::Owned(scalar::call(*func, args, *ty, b, sq)?),
        BExpr::Case { whens, else_, ty } => Cow::Owned(case(whens, else_.as_deref(), *ty, b, sq)?),
        BExpr::InList { expr, list, negated } => Cow::Owned(in_list(expr, list, *negated, b, sq)?),
        BExpr::InSet { expr, set, negated } => Cow::Owned(in_set::in_set(&*eval(expr, b, sq)?, set, *negated)),
        BExpr::IsNull { expr, negated } => {
            let c = eval(expr, b, sq)?;
            let v: Vec<bool> = (0..n).map(|i| c.is_valid(i) == *negated).collect();
            Cow::Owned(Column::from_data(ColumnData::Bool(v.into())))
        }
        BExpr::Like { expr, pattern, negated, case_insensitive } => {
            let x = eval(expr, b, sq)?;
            let p = eval_opnd(pattern, b, sq)?;
            Cow::Owned(like::like(&x, p, *negated, *case_insensitive, n)?)
        }
        BExpr::Correlated { sub, expr } => Cow::Owned(sq.correlated(sub, expr.as_deref(), b)?),
    })
}

fn negate(c: &Column) -> Result<Column> {
    let data = match &c.data() {
        ColumnData::Int32(v) => ColumnData::Int32((checked_map(v, c, |x: i32| x.checked_neg())?).into()),
        ColumnData::Int64(v) => ColumnData::Int64((checked_map(v, c, |x: i64| x.checked_neg())?).into()),
        ColumnData::Int128(v) => ColumnData::Int128((checked_map(v, c, |x: i128| x.checked_neg())?).into()),
        ColumnData::Interval(v) => ColumnData::Interval((checked_map(v, c, |x: i64| x.checked_neg())?).into()),
        ColumnData::Float32(v) => ColumnData::Float32(v.iter().map(|x| -x).collect()),
        ColumnData::Float64(v) => ColumnData::Float64(v.iter().map(|x| -x).collect()),
        ColumnData::Null(n) => ColumnData::Null(*n),
        d => return Err(SqlError::exec(format!("cannot negate {}", d.data_type()))),
    };
    Ok(Column::new(data, c.validity().cloned()))
}

fn checked_map<T: Copy + Default>(v: &[T], c: &Column, f: impl Fn(T) -> Option<T>) -> Result<Vec<T>> {
    v.iter()
        .enumerate()
        .map(|(i, &x)| match f(x) {
            Some(y) => Ok(y),
            None if !c.is_valid(i) => Ok(T::default()),
            None => Err(SqlError::exec("out of range: integer overflow")),
        })
        .collect()
}

/// A typed operand view: a slice or one constant.
#[derive(Clone, Copy)]
pub enum Src<'a, T> {
    /// A slice with one value per row.
    S(&'a [T]),
    /// One value for every row.
    C(T),
}

/// `f` applied row by row to two operand views, giving `n` results.
#[inline]
pub fn zip_map<T: Copy, U: Copy, R: Clone>(a: Src<T>, b: Src<U>, n: usize, mut f: impl FnMut(T, U) -> R) -> Vec<R> {
    match (a, b) {
        (Src::S(x), Src::S(y)) => x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect(),
        (Src::S(x), Src::C(c)) => x.iter().map(|&p| f(p, c)).collect(),
        (Src::C(c), Src::S(y)) => y.iter().map(|&q| f(c, q)).collect(),
        (Src::C(p), Src::C(q)) => vec![f(p, q); n],
    }
}

macro_rules! src_fn {
    ($name:ident, $t:ty, [$($var:ident),+], [$($val:ident),+]) => {
        /// The operand as a typed view, if its type is one of the macro's; a NULL literal reads as
        /// the zero value (the caller masks it).
        pub fn $name<'a>(o: &'a Opnd<'a>) -> Option<Src<'a, $t>> {
            match o {
                Opnd::Col(c) => match &c.data() {
                    $(ColumnData::$var(v) => Some(Src::S(v)),)+
                    _ => None,
                },
                Opnd::Lit(Value::Null) => Some(Src::C(<$t>::default())),
                Opnd::Lit(v) => match v {
                    $(Value::$val(x) => Some(Src::C(*x)),)+
                    _ => None,
                },
            }
        }
    };
}
src_fn!(src_i32, i32, [Int32, Date], [Int32, Date]);
src_fn!(src_i64, i64, [Int64, Timestamp, Interval], [Int64, Timestamp, Interval]);
src_fn!(src_i128, i128, [Int128], [Int128]);
src_fn!(src_f32, f32, [Float32], [Float32]);
src_fn!(src_f64, f64, [Float64], [Float64]);
src_fn!(src_bool, bool, [Bool], [Bool]);

fn type_err(op: BinaryOp, t: DataType) -> SqlError {
    SqlError::Internal(format!("operator {} has no kernel for {t}", op.sql()))
}

fn binary(op: BinaryOp, l: Opnd, r: Opnd, ty: DataType, lt: DataType, n: usize) -> Result<Column> {
    match op {
        BinaryOp::And | BinaryOp::Or => logic(op, &l, &r, n),
        _ if op.is_comparison() => compare(op, &l, &r, lt, n),
        BinaryOp::Concat => concat(&l, &r, n),
        _ => arith(op, &l, &r, ty, lt, n),
    }
}

fn logic(op: BinaryOp, l: &Opnd, r: &Opnd, n: usize) -> Result<Column> {
    let (a, b) = (
        src_bool(l).ok_or_else(|| type_err(op, DataType::Null))?,
        src_bool(r).ok_or_else(|| type_err(op, DataType::Null))?,
    );
    let (va, vb) = (l.validity(n), r.validity(n));
    let get = |s: &Src<bool>, i: usize| match s {
        Src::S(v) => v[i],
        Src::C(c) => *c,
    };
    let valid = |v: &Option<Bitmap>, i: usize| v.as_ref().is_none_or(|b| b.get(i));
    if va.is_none() && vb.is_none() {
        let v = if op == BinaryOp::And { zip_map(a, b, n, |x, y| x && y) } else { zip_map(a, b, n, |x, y| x || y) };
        return Ok(Column::from_data(ColumnData::Bool(v.into())));
    }
    let mut out = Vec::with_capacity(n);
    let mut validity = Bitmap::new_set(n);
    for i in 0..n {
        let (x, y) = (valid(&va, i).then(|| get(&a, i)), valid(&vb, i).then(|| get(&b, i)));
        let r = if op == BinaryOp::And {
            match (x, y) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            }
        } else {
            match (x, y) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            }
        };
        out.push(r.unwrap_or(false));
        if r.is_none() {
            validity.set(i, false);
        }
    }
    Ok(Column::new(ColumnData::Bool(out.into()), Some(validity)))
}

fn concat(l: &Opnd, r: &Opnd, n: usize) -> Result<Column> {
    let validity = and_validity(l.validity(n).as_ref(), r.validity(n).as_ref());
    let get = |o: &Opnd, i: usize| -> String {
        match o {
            Opnd::Col(c) => c.str_at(i).unwrap_or("").to_string(),
            Opnd::Lit(Value::Str(s)) => s.clone(),
            Opnd::Lit(_) => String::new(),
        }
    };
    let mut out = zepto_storage::StrVec::with_capacity(n, n * 16);
    let mut buf = String::new();
    for i in 0..n {
        buf.clear();
        buf.push_str(&get(l, i));
        buf.push_str(&get(r, i));
        out.push(&buf);
    }
    Ok(Column::new(ColumnData::Varchar(out), validity))
}

/// `validity` with rows where `ok` is false turned NULL (division by zero, fields of an infinite
/// timestamp).
pub(crate) fn null_where_false(validity: Option<Bitmap>, ok: &[bool]) -> Option<Bitmap> {
    if ok.iter().all(|&b| b) {
        return validity;
    }
    let mut bm = validity.unwrap_or_else(|| Bitmap::new_set(ok.len()));
    for (i, &good) in ok.iter().enumerate() {
        if !good {
            bm.set(i, false);
        }
    }
    Some(bm)
}

fn case(
    whens: &[(BExpr, BExpr)],
    else_: Option<&BExpr>,
    ty: DataType,
    b: &Batch,
    sq: &dyn Subqueries,
) -> Result<Column> {
    let n = b.rows;
    let k = whens.len();
    // branch[i] = index of the chosen THEN, or k for ELSE.
    let mut branch = vec![k as u32; n];
    let mut decided = vec![false; n];
    for (j, (w, _)) in whens.iter().enumerate() {
        let c = eval(w, b, sq)?;
        let ColumnData::Bool(v) = &c.data() else {
            continue;
        };
        for i in 0..n {
            if !decided[i] && v[i] && c.is_valid(i) {
                decided[i] = true;
                branch[i] = j as u32;
            }
        }
    }
    let mut parts = Vec::with_capacity(k + 1);
    for (_, t) in whens {
        parts.push(eval(t, b, sq)?.into_owned());
    }
    parts.push(match else_ {
        Some(e) => eval(e, b, sq)?.into_owned(),
        None => Column::nulls(ty, n),
    });
    let parts: Vec<Column> = parts
        .into_iter()
        .map(|p| if p.data_type() == DataType::Null && ty != DataType::Null { Column::nulls(ty, n) } else { p })
        .collect();
    let refs: Vec<&Column> = parts.iter().collect();
    let all = Column::concat(&refs);
    let idx: Vec<u32> = branch.iter().enumerate().map(|(i, &br)| br * n as u32 + i as u32).collect();
    Ok(all.take(&idx))
}

fn in_list(expr: &BExpr, list: &[BExpr], negated: bool, b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    let n = b.rows;
    let x = eval(expr, b, sq)?;
    let mut result = vec![false; n];
    let mut saw_null = vec![false; n];
    let xo = Opnd::Col(Cow::Borrowed(&*x));
    for item in list {
        let io = eval_opnd(item, b, sq)?;
        let eq = compare(BinaryOp::Eq, &xo, &io, expr.data_type(), n)?;
        let ColumnData::Bool(v) = &eq.data() else {
            continue;
        };
        for i in 0..n {
            if eq.is_valid(i) {
                result[i] |= v[i];
            } else {
                saw_null[i] = true;
            }
        }
    }
    let mut validity = Bitmap::new_set(n);
    for i in 0..n {
        if !result[i] && (saw_null[i] || (!x.is_valid(i) && !list.is_empty())) {
            validity.set(i, false);
        }
        if !x.is_valid(i) && !list.is_empty() {
            validity.set(i, false);
        }
    }
    if negated {
        result.iter_mut().for_each(|r| *r = !*r);
    }
    Ok(Column::new(ColumnData::Bool(result.into()), Some(validity)))
}
