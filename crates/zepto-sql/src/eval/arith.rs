//! Arithmetic: `+`, `-`, `*`, `/`, `//`, `%` over integers (overflow an error, a zero divisor
//! NULL), floats, and timestamps with intervals.

use super::batch::and_validity;
use super::divide::ByConst;
use super::{null_where_false, src_f32, src_f64, src_i128, src_i32, src_i64, type_err, zip_map};
use super::{Opnd, Src};
use crate::error::{Result, SqlError};
use crate::parser::ast::BinaryOp;
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

/// Integer `//` or `%` (`each`) of `a` by `b`: a column by one nonzero divisor through
/// `by_const` (`divide.rs`), anything else row by row, a zero divisor giving 0 and setting
/// `zero` (the caller makes those rows NULL).
fn divide<T: ByConst + Default + PartialEq>(
    a: Src<T>,
    b: Src<T>,
    n: usize,
    by_const: fn(&[T], T) -> Option<Vec<T>>,
    each: impl Fn(T, T) -> T,
    zero: &mut bool,
) -> Vec<T> {
    if let (Src::S(x), Src::C(c)) = (a, b) {
        if let Some(v) = by_const(x, c) {
            return v;
        }
    }
    zip_map(a, b, n, |x, y| {
        if y == T::default() {
            *zero = true;
            T::default()
        } else {
            each(x, y)
        }
    })
}

/// Integer arithmetic with overflow detection; division by zero yields NULL.
macro_rules! int_arith {
    ($op:expr, $a:expr, $b:expr, $n:expr, $t:ty, $validity:expr) => {{
        let mut overflow = false;
        let mut zero = false;
        let min_by_minus_one = |x: $t, y: $t| (x == <$t>::MIN) & (y == -1);
        let v: Vec<$t> = match $op {
            BinaryOp::Add => zip_map($a, $b, $n, |x: $t, y: $t| {
                let (r, o) = x.overflowing_add(y);
                overflow |= o;
                r
            }),
            BinaryOp::Sub => zip_map($a, $b, $n, |x: $t, y: $t| {
                let (r, o) = x.overflowing_sub(y);
                overflow |= o;
                r
            }),
            BinaryOp::Mul => zip_map($a, $b, $n, |x: $t, y: $t| {
                let (r, o) = x.overflowing_mul(y);
                overflow |= o;
                r
            }),
            BinaryOp::IntDiv | BinaryOp::Mod => {
                // The one quotient out of range (MIN // -1), refused as DuckDB does, for `%`
                // too; only a divisor that can be -1 is looked at.
                overflow = !matches!($b, Src::C(c) if c != -1) && zip_map($a, $b, $n, min_by_minus_one).contains(&true);
                if $op == BinaryOp::IntDiv {
                    divide($a, $b, $n, <$t as ByConst>::div_all, <$t>::wrapping_div, &mut zero)
                } else {
                    divide($a, $b, $n, <$t as ByConst>::rem_all, <$t>::wrapping_rem, &mut zero)
                }
            }
            op => return Err(type_err(op, DataType::Int64)),
        };
        let mut validity: Option<Bitmap> = $validity;
        if overflow {
            // Re-check precisely: only valid rows count.
            let check: Vec<bool> = match $op {
                BinaryOp::Add => zip_map($a, $b, $n, |x: $t, y: $t| x.checked_add(y).is_none()),
                BinaryOp::Sub => zip_map($a, $b, $n, |x: $t, y: $t| x.checked_sub(y).is_none()),
                BinaryOp::Mul => zip_map($a, $b, $n, |x: $t, y: $t| x.checked_mul(y).is_none()),
                _ => zip_map($a, $b, $n, min_by_minus_one),
            };
            if check.iter().enumerate().any(|(i, &o)| o && validity.as_ref().is_none_or(|b| b.get(i))) {
                return Err(SqlError::exec(format!("out of range: overflow in '{}'", $op.sql())));
            }
        }
        if zero {
            validity = null_where_false(validity, &zip_map($a, $b, $n, |_x: $t, y: $t| y != 0));
        }
        (v, validity)
    }};
}

macro_rules! float_arith {
    ($op:expr, $a:expr, $b:expr, $n:expr, $t:ty, $validity:expr) => {{
        let mut validity: Option<Bitmap> = $validity;
        let v: Vec<$t> = match $op {
            BinaryOp::Add => zip_map($a, $b, $n, |x: $t, y: $t| x + y),
            BinaryOp::Sub => zip_map($a, $b, $n, |x: $t, y: $t| x - y),
            BinaryOp::Mul => zip_map($a, $b, $n, |x: $t, y: $t| x * y),
            BinaryOp::Div => zip_map($a, $b, $n, |x: $t, y: $t| x / y),
            BinaryOp::IntDiv => zip_map($a, $b, $n, |x: $t, y: $t| x / y), // DuckDB: `//` on floats divides
            BinaryOp::Mod => zip_map($a, $b, $n, |x: $t, y: $t| x % y),
            op => return Err(type_err(op, DataType::Float64)),
        };
        if matches!($op, BinaryOp::Div | BinaryOp::IntDiv | BinaryOp::Mod) {
            validity = null_where_false(validity, &zip_map($a, $b, $n, |_x: $t, y: $t| y != 0.0));
        }
        (v, validity)
    }};
}

/// Whether a timestamp operand holds `'infinity'` or `'-infinity'` (NULL rows read as 0).
fn any_infinite(v: Src<i64>, n: usize) -> bool {
    match v {
        Src::S(v) => v.iter().take(n).any(|&t| zepto_storage::time::is_infinite(t)),
        Src::C(t) => n > 0 && zepto_storage::time::is_infinite(t),
    }
}

/// A timestamp plus or minus an interval (`lt`: the left operand's type). An infinite
/// timestamp stays what it is, as in DuckDB; the finite ones overflow into an error.
fn timestamp_arith(
    op: BinaryOp,
    a: Src<i64>,
    b: Src<i64>,
    lt: DataType,
    n: usize,
    validity: Option<Bitmap>,
) -> Result<(Vec<i64>, Option<Bitmap>)> {
    let infinite = zepto_storage::time::is_infinite;
    let ts = if lt == DataType::Timestamp { a } else { b };
    if !any_infinite(ts, n) {
        return Ok(int_arith!(op, a, b, n, i64, validity));
    }
    // Compute with the infinite rows at the epoch (they cannot overflow), then put them back.
    let finite: Vec<i64> = zip_map(ts, Src::C(0i64), n, |t, _| if infinite(t) { 0 } else { t });
    let (a2, b2) = if lt == DataType::Timestamp { (Src::S(&finite[..]), b) } else { (a, Src::S(&finite[..])) };
    let (mut v, va) = int_arith!(op, a2, b2, n, i64, validity);
    for (out, t) in v.iter_mut().zip(zip_map(ts, Src::C(0i64), n, |t, _| t)) {
        if infinite(t) {
            *out = t;
        }
    }
    Ok((v, va))
}

pub(super) fn arith(op: BinaryOp, l: &Opnd, r: &Opnd, ty: DataType, lt: DataType, n: usize) -> Result<Column> {
    let validity = and_validity(l.validity(n).as_ref(), r.validity(n).as_ref());
    let miss = || type_err(op, ty);
    let (data, validity) = match ty {
        DataType::Int32 => {
            let (a, b) = (src_i32(l).ok_or_else(miss)?, src_i32(r).ok_or_else(miss)?);
            let (v, va) = int_arith!(op, a, b, n, i32, validity);
            (ColumnData::Int32(v.into()), va)
        }
        DataType::Date => {
            let (a, b) = (src_i32(l).ok_or_else(miss)?, src_i32(r).ok_or_else(miss)?);
            let (v, va) = int_arith!(op, a, b, n, i32, validity);
            (ColumnData::Date(v.into()), va)
        }
        DataType::Timestamp => {
            let (a, b) = (src_i64(l).ok_or_else(miss)?, src_i64(r).ok_or_else(miss)?);
            let (v, va) = timestamp_arith(op, a, b, lt, n, validity)?;
            (ColumnData::Timestamp(v.into()), va)
        }
        DataType::Int64 => {
            let (a, b) = (src_i64(l).ok_or_else(miss)?, src_i64(r).ok_or_else(miss)?);
            let (v, va) = int_arith!(op, a, b, n, i64, validity);
            (ColumnData::Int64(v.into()), va)
        }
        DataType::Int128 => {
            let (a, b) = (src_i128(l).ok_or_else(miss)?, src_i128(r).ok_or_else(miss)?);
            let (v, va) = int_arith!(op, a, b, n, i128, validity);
            (ColumnData::Int128(v.into()), va)
        }
        DataType::Interval if lt == DataType::Interval && matches!(op, BinaryOp::Mul | BinaryOp::Div) => {
            let (a, b) = (src_i64(l).ok_or_else(miss)?, src_f64(r).ok_or_else(miss)?);
            let v = if op == BinaryOp::Mul {
                zip_map(a, b, n, |x, y| (x as f64 * y).round() as i64)
            } else {
                zip_map(a, b, n, |x, y| if y == 0.0 { 0 } else { (x as f64 / y).round() as i64 })
            };
            (ColumnData::Interval(v.into()), validity)
        }
        DataType::Interval => {
            let (a, b) = (src_i64(l).ok_or_else(miss)?, src_i64(r).ok_or_else(miss)?);
            if lt == DataType::Timestamp && any_infinite(a, n) | any_infinite(b, n) {
                // ts - ts: DuckDB refuses it too (no interval is infinite).
                return Err(SqlError::exec("cannot subtract infinite timestamps"));
            }
            let (v, va) = int_arith!(op, a, b, n, i64, validity);
            (ColumnData::Interval(v.into()), va)
        }
        DataType::Float32 => {
            let (a, b) = (src_f32(l).ok_or_else(miss)?, src_f32(r).ok_or_else(miss)?);
            let (v, va) = float_arith!(op, a, b, n, f32, validity);
            (ColumnData::Float32(v.into()), va)
        }
        DataType::Float64 => {
            let (a, b) = (src_f64(l).ok_or_else(miss)?, src_f64(r).ok_or_else(miss)?);
            let (v, va) = float_arith!(op, a, b, n, f64, validity);
            (ColumnData::Float64(v.into()), va)
        }
        DataType::Null => return Ok(Column::nulls(DataType::Null, n)),
        t => return Err(type_err(op, t)),
    };
    Ok(Column::new(data, validity))
}
