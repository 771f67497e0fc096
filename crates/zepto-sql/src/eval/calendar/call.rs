//! The calendar functions over a batch's rows (the units, periods and patterns were checked
//! when the call was bound). A result outside the timestamp range, and text that does not
//! match its pattern, is NULL.

use super::pattern::Pattern;
use super::{add, ceil, diff, floor, Period, Unit};
use crate::error::{Result, SqlError};
use crate::eval::{eval, Batch, Subqueries};
use crate::expr::functions::ScalarFunc;
use crate::expr::BExpr;
use zepto_storage::time::NS_PER_SEC;
use zepto_storage::{Bitmap, Column, ColumnData, Value};

fn text(e: Option<&BExpr>) -> Result<&str> {
    match e {
        Some(BExpr::Lit(Value::Str(s), _)) => Ok(s),
        _ => Err(SqlError::Internal("a calendar function without its constant".into())),
    }
}

fn times(c: &Column) -> Result<&[i64]> {
    c.as_i64_slice().ok_or_else(|| SqlError::Internal("a calendar function's timestamp".into()))
}

/// `f` over the rows of `b`.
pub fn call(f: ScalarFunc, args: &[BExpr], b: &Batch, sq: &dyn Subqueries) -> Result<Column> {
    let arg = |i: usize| match args.get(i) {
        Some(e) => eval(e, b, sq),
        None => Err(SqlError::Internal("calendar arity".into())),
    };
    let n = b.rows;
    let mut valid = Bitmap::new_set(n);
    let mut out = Vec::with_capacity(n);
    let mut push = |i: usize, v: Option<i64>| {
        out.push(v.unwrap_or(0));
        if v.is_none() {
            valid.set(i, false);
        }
    };
    match f {
        ScalarFunc::DateAdd | ScalarFunc::DateDiff => {
            let unit = Unit::from_letter(text(args.first())?).ok_or_else(|| SqlError::Internal("unit".into()))?;
            let (x, y) = (arg(1)?, arg(2)?);
            let (xs, ys) = (times(&x)?, times(&y)?);
            for (i, (&a, &c)) in xs.iter().zip(ys).enumerate().take(n) {
                let both = x.is_valid(i) && y.is_valid(i);
                let v = match f {
                    ScalarFunc::DateAdd => both.then(|| add(unit, a, c)).flatten(),
                    _ => both.then(|| diff(unit, a, c)),
                };
                push(i, v);
            }
        }
        ScalarFunc::TimestampFloor | ScalarFunc::TimestampCeil => {
            let p = Period::parse(text(args.first())?).ok_or_else(|| SqlError::Internal("period".into()))?;
            let t = arg(1)?;
            let ts = times(&t)?;
            let step = if f == ScalarFunc::TimestampFloor { floor } else { ceil };
            for (i, &x) in ts.iter().enumerate().take(n) {
                push(i, t.is_valid(i).then(|| step(p, x)).flatten());
            }
        }
        ScalarFunc::ToTimezone | ScalarFunc::ToUtc => {
            let zone = super::zone::Zone::parse(text(args.get(1))?).map_err(SqlError::exec)?;
            let t = arg(0)?;
            let to = |x: i64| if f == ScalarFunc::ToTimezone { zone.local(x) } else { zone.utc(x) };
            for (i, &x) in times(&t)?.iter().enumerate().take(n) {
                push(i, t.is_valid(i).then(|| to(x)).flatten());
            }
        }
        _ if args.len() == 1 => {
            let x = arg(0)?;
            let secs = crate::eval::numeric::to_f64(&x)?;
            for (i, s) in secs.iter().enumerate().take(n) {
                let ns = s * NS_PER_SEC as f64;
                push(i, (x.is_valid(i) && ns.is_finite() && ns.abs() < 9.2e18).then_some(ns as i64));
            }
        }
        _ => {
            let pattern = Pattern::compile(text(args.get(1))?).map_err(SqlError::exec)?;
            let s = arg(0)?;
            for i in 0..n {
                push(i, s.str_at(i).and_then(|t| pattern.parse(t)));
            }
        }
    }
    let data =
        if f == ScalarFunc::DateDiff { ColumnData::Int64(out.into()) } else { ColumnData::Timestamp(out.into()) };
    Ok(Column::new(data, Some(valid)))
}
