//! The type rules of bound expressions: the type two values unify to, implicit casts made
//! explicit (widening constants without a column), operands made comparable, constant
//! sub-expressions folded, literals typed, and the binary operators' result types.

use super::{lit, BExpr};
use crate::error::{Pos, Result, SqlError};
use crate::eval::eval_const;
use crate::expr::functions::ScalarFunc;
use crate::parser::ast::{BinaryOp, Literal};
use zepto_storage::{time, DataType, Value};

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
pub(super) fn not_distinct(args: Vec<BExpr>, pos: Pos) -> Result<BExpr> {
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

pub(super) fn is_str_lit(e: &BExpr) -> bool {
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

/// `e` as a condition: BOOLEAN, or NULL read as one.
pub(super) fn to_bool(e: BExpr, pos: Pos) -> Result<BExpr> {
    match e.data_type() {
        DataType::Bool => Ok(e),
        DataType::Null => cast_to(e, DataType::Bool),
        t => Err(SqlError::plan(format!("expected BOOLEAN, got {t}"), Some(pos))),
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
