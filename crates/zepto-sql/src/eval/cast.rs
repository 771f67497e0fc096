//! CAST between types. Failures are errors (`CAST`) or NULLs (`TRY_CAST`). DOUBLE → integer
//! rounds half away from zero, as DuckDB does.

use crate::error::{Result, SqlError};
use std::sync::Arc;
use zepto_storage::time::{self, NS_PER_DAY};
use zepto_storage::{Bitmap, Column, ColumnBuilder, ColumnData, DataType, Dict, StrVec, Value};

fn conv_err(v: &str, to: DataType) -> SqlError {
    SqlError::exec(format!("conversion error: could not convert '{v}' to {to}"))
}

/// A boolean from text as CAST accepts it (`true`/`t`/`1`/`yes`/`y`/`on` and their opposites, any
/// case, trimmed); `None` otherwise.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "1" | "yes" | "y" | "on" => Some(true),
        "false" | "f" | "0" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}

/// Parse text as a value of type `to` (CSV ingest, string casts).
pub fn parse_value(s: &str, to: DataType) -> Option<Value> {
    let t = s.trim();
    Some(match to {
        DataType::Bool => Value::Bool(parse_bool(t)?),
        DataType::Int32 => Value::Int32(parse_int(t)?.try_into().ok()?),
        DataType::Int64 => Value::Int64(parse_int(t)?),
        DataType::Int128 => Value::Int128(t.parse::<i128>().ok().or_else(|| parse_int(t).map(i128::from))?),
        DataType::Float32 => Value::Float32(parse_float(t)? as f32),
        DataType::Float64 => Value::Float64(parse_float(t)?),
        DataType::Timestamp => Value::Timestamp(match time::parse_timestamp(t) {
            Some(v) => v,
            None => t.parse::<i64>().ok()?,
        }),
        DataType::Date => Value::Date(time::parse_date(t)?),
        DataType::Interval => Value::Interval(time::parse_interval(t)?),
        DataType::Varchar | DataType::Symbol => Value::Str(s.to_string()),
        DataType::Vector(d) => Value::Vector(zepto_storage::vector::parse_vector(t, Some(d as usize)).ok()?),
        DataType::Null => Value::Null,
    })
}

fn parse_int(t: &str) -> Option<i64> {
    if let Ok(v) = t.parse::<i64>() {
        return Some(v);
    }
    // '1.7'::INT rounds like a DOUBLE cast.
    let f: f64 = t.parse().ok()?;
    f64_to_i64(f)
}

fn parse_float(t: &str) -> Option<f64> {
    match t.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "inf" | "infinity" | "+inf" | "+infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        _ => t.parse().ok(),
    }
}

/// DOUBLE → integer rounds half to even, as DuckDB does (`CAST(2.5 AS INT)` = 2).
fn f64_to_i64(f: f64) -> Option<i64> {
    let r = f.round_ties_even();
    (r.is_finite() && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r)).then_some(r as i64)
}

/// Cast a scalar.
pub fn cast_value(v: &Value, to: DataType, try_: bool) -> Result<Value> {
    let c = Column::repeat(v, v.data_type(), 1)?;
    let out = cast_column(&c, to, try_)?;
    Ok(out.get(0))
}

/// `c` converted to type `to`. A value that does not convert is an error, or NULL when `try_`
/// (TRY_CAST).
pub fn cast_column(c: &Column, to: DataType, try_: bool) -> Result<Column> {
    let from = c.data_type();
    if from == to {
        return Ok(c.clone());
    }
    let n = c.len();
    if from == DataType::Null {
        return Ok(Column::nulls(to, n));
    }
    let validity = c.validity().cloned();
    let num = |data: ColumnData| Ok(Column::new(data, validity.clone()));
    use ColumnData as D;
    if from == DataType::Int128 || (to == DataType::Int128 && !from.is_string()) {
        return cast_int128(c, to, try_);
    }
    match (&c.data(), to) {
        (D::Int32(v), DataType::Int64) => num(D::Int64(v.iter().map(|&x| x as i64).collect())),
        (D::Int32(v), DataType::Float32) => num(D::Float32(v.iter().map(|&x| x as f32).collect())),
        (D::Int32(v), DataType::Float64) => num(D::Float64(v.iter().map(|&x| x as f64).collect())),
        (D::Int64(v), DataType::Float32) => num(D::Float32(v.iter().map(|&x| x as f32).collect())),
        (D::Int64(v), DataType::Float64) => num(D::Float64(v.iter().map(|&x| x as f64).collect())),
        (D::Float32(v), DataType::Float64) => num(D::Float64(v.iter().map(|&x| x as f64).collect())),
        (D::Float64(v), DataType::Float32) => num(D::Float32(v.iter().map(|&x| x as f32).collect())),
        (D::Int64(v), DataType::Timestamp | DataType::Interval) => {
            num(if to == DataType::Timestamp { D::Timestamp(v.clone()) } else { D::Interval(v.clone()) })
        }
        (D::Int32(v), DataType::Timestamp | DataType::Interval) => {
            let w: Vec<i64> = v.iter().map(|&x| x as i64).collect();
            num(if to == DataType::Timestamp { D::Timestamp(w.into()) } else { D::Interval(w.into()) })
        }
        (D::Timestamp(v) | D::Interval(v), DataType::Int64) => num(D::Int64(v.clone())),
        (D::Timestamp(v), DataType::Date) => {
            // An infinite timestamp has no date (DATE has no infinities here).
            let day = |x: i64| (!zepto_storage::time::is_infinite(x)).then(|| x.div_euclid(NS_PER_DAY) as i32);
            let (days, validity) = per_row(v, c, try_, day, "TIMESTAMP", to)?;
            Ok(Column::new(D::Date(days.into()), validity))
        }
        (D::Date(v), DataType::Timestamp) => {
            let ns = |d: i32| i64::from(d).checked_mul(NS_PER_DAY);
            let (ts, validity) = per_row(v, c, try_, ns, "DATE", to)?;
            Ok(Column::new(D::Timestamp(ts.into()), validity))
        }
        (D::Bool(v), t) if t.is_numeric() => {
            let ints = Column::new(D::Int32(v.iter().map(|&b| b as i32).collect()), validity.clone());
            cast_column(&ints, t, try_)
        }
        (D::Int32(_) | D::Int64(_) | D::Float32(_) | D::Float64(_), DataType::Bool) => {
            let f = cast_column(c, DataType::Float64, try_)?;
            let D::Float64(v) = &f.data() else {
                return Err(SqlError::Internal("cast to f64".into()));
            };
            num(D::Bool(v.iter().map(|&x| x != 0.0).collect()))
        }
        (D::Float32(_) | D::Float64(_) | D::Int64(_), DataType::Int32 | DataType::Int64) => cast_to_int(c, to, try_),
        (D::Symbol { .. }, DataType::Varchar) => {
            let mut b = ColumnBuilder::new(DataType::Varchar, n);
            b.extend_from(c);
            Ok(b.finish())
        }
        (D::Varchar(s), DataType::Symbol) => {
            let mut dict = Dict::default();
            let codes = s.iter().enumerate().map(|(i, x)| if c.is_valid(i) { dict.intern(x) } else { 0 }).collect();
            num(D::Symbol { codes, dict: Arc::new(dict) })
        }
        (_, DataType::Varchar) => {
            let mut out = StrVec::with_capacity(n, n * 8);
            for i in 0..n {
                match c.get(i) {
                    Value::Null => out.push(""),
                    v => out.push(&v.to_string()),
                }
            }
            num(D::Varchar(out))
        }
        (D::Vector { dim, .. }, DataType::Vector(want)) => {
            Err(SqlError::exec(format!("cannot cast FLOAT[{dim}] to FLOAT[{want}]: vectors differ in dimension")))
        }
        (D::Varchar(_) | D::Symbol { .. }, DataType::Vector(d)) => text_to_vector(c, d, try_),
        (D::Varchar(_) | D::Symbol { .. }, t) => {
            let mut b = ColumnBuilder::new(t, n);
            for i in 0..n {
                match c.str_at(i) {
                    None => b.push_null(),
                    Some(s) => match parse_value(s, t) {
                        Some(v) => b.push_value(&v)?,
                        None if try_ => b.push_null(),
                        None => return Err(conv_err(s, t)),
                    },
                }
            }
            Ok(b.finish())
        }
        _ => {
            if try_ {
                Ok(Column::nulls(to, n))
            } else {
                Err(SqlError::exec(format!("cannot cast {from} to {to}")))
            }
        }
    }
}

/// `f` over every value of `c` (`v`, of type `from`): a valid row it cannot convert is an
/// error naming the row, or NULL with `try_`. The values and the validity of the result.
fn per_row<T: Copy, R: Default>(
    v: &[T],
    c: &Column,
    try_: bool,
    f: impl Fn(T) -> Option<R>,
    from: &str,
    to: DataType,
) -> Result<(Vec<R>, Option<zepto_storage::Bitmap>)> {
    let mut validity = c.validity().cloned();
    let mut out = Vec::with_capacity(v.len());
    for (i, &x) in v.iter().enumerate() {
        match f(x) {
            Some(r) => out.push(r),
            None if !c.is_valid(i) => out.push(R::default()),
            None if try_ => {
                validity.get_or_insert_with(|| zepto_storage::Bitmap::new_set(v.len())).set(i, false);
                out.push(R::default());
            }
            None => return Err(SqlError::exec(format!("row {}: this {from} is out of {to}'s range", i + 1))),
        }
    }
    Ok((out, validity))
}

/// Text like `[0.1, 0.2]` as `FLOAT[dim]`: an error names the row and what is wrong (wrong
/// dimension, NaN or infinite element, not a list of numbers), or NULL with `try_`.
fn text_to_vector(c: &Column, dim: u16, try_: bool) -> Result<Column> {
    let n = c.len();
    let mut b = ColumnBuilder::new(DataType::Vector(dim), n);
    for i in 0..n {
        match c.str_at(i) {
            None => b.push_null(),
            Some(s) => match zepto_storage::vector::parse_vector(s, Some(dim as usize)) {
                Ok(v) => b.push_value(&Value::Vector(v))?,
                Err(_) if try_ => b.push_null(),
                Err(e) => {
                    return Err(SqlError::exec(format!(
                        "conversion error: could not convert row {} to FLOAT[{dim}]: {e}",
                        i + 1
                    )))
                }
            },
        }
    }
    Ok(b.finish())
}

/// Casts from and to HUGEINT: integers and booleans widen exactly, floats round half to even
/// (out of range: an error, or NULL with `try_`); a HUGEINT narrows to BIGINT or INTEGER when
/// it fits, and becomes a float (rounded) or text.
fn cast_int128(c: &Column, to: DataType, try_: bool) -> Result<Column> {
    use ColumnData as D;
    let validity = c.validity().cloned();
    let wide = |data: ColumnData| Ok(Column::new(data, validity.clone()));
    match (&c.data(), to) {
        (D::Int32(v), DataType::Int128) => wide(D::Int128(v.iter().map(|&x| i128::from(x)).collect())),
        (D::Int64(v), DataType::Int128) => wide(D::Int128(v.iter().map(|&x| i128::from(x)).collect())),
        (D::Bool(v), DataType::Int128) => wide(D::Int128(v.iter().map(|&x| i128::from(x)).collect())),
        (D::Float32(_) | D::Float64(_), DataType::Int128) => {
            let f = cast_column(c, DataType::Float64, try_)?;
            let D::Float64(v) = f.data() else { return Err(SqlError::Internal("cast to f64".into())) };
            let round = |x: f64| {
                let r = x.round_ties_even();
                (r.is_finite() && r.abs() < 1.7e38).then_some(r as i128)
            };
            let (out, validity) = per_row(v, c, try_, round, "DOUBLE", to)?;
            Ok(Column::new(D::Int128(out.into()), validity))
        }
        (D::Int128(v), DataType::Float64) => wide(D::Float64(v.iter().map(|&x| x as f64).collect())),
        (D::Int128(v), DataType::Float32) => wide(D::Float32(v.iter().map(|&x| x as f32).collect())),
        (D::Int128(v), DataType::Bool) => wide(D::Bool(v.iter().map(|&x| x != 0).collect())),
        (D::Int128(v), DataType::Int64) => {
            let (out, validity) = per_row(v, c, try_, |x| i64::try_from(x).ok(), "HUGEINT", to)?;
            Ok(Column::new(D::Int64(out.into()), validity))
        }
        (D::Int128(v), DataType::Int32) => {
            let (out, validity) = per_row(v, c, try_, |x| i32::try_from(x).ok(), "HUGEINT", to)?;
            Ok(Column::new(D::Int32(out.into()), validity))
        }
        (D::Int128(_), DataType::Varchar) => {
            let text: Vec<String> =
                (0..c.len()).map(|i| if c.is_valid(i) { c.get(i).to_string() } else { String::new() }).collect();
            wide(D::Varchar(text.iter().map(String::as_str).collect()))
        }
        _ if try_ => Ok(Column::nulls(to, c.len())),
        _ => Err(SqlError::exec(format!("cannot cast {} to {to}", c.data_type()))),
    }
}

fn cast_to_int(c: &Column, to: DataType, try_: bool) -> Result<Column> {
    let n = c.len();
    let mut vals: Vec<i64> = Vec::with_capacity(n);
    let mut valid = Bitmap::new_set(n);
    for i in 0..n {
        let v = match &c.data() {
            ColumnData::Float32(v) => f64_to_i64(v[i] as f64),
            ColumnData::Float64(v) => f64_to_i64(v[i]),
            ColumnData::Int64(v) => Some(v[i]),
            _ => None,
        };
        let v = v.filter(|x| to == DataType::Int64 || i32::try_from(*x).is_ok());
        match v {
            Some(x) => vals.push(x),
            None if !c.is_valid(i) || try_ => {
                vals.push(0);
                valid.set(i, false);
            }
            None => {
                return Err(SqlError::exec(format!("conversion error: value {} is out of range for {to}", c.get(i))))
            }
        }
        if !c.is_valid(i) {
            valid.set(i, false);
        }
    }
    let data = if to == DataType::Int32 {
        ColumnData::Int32(vals.into_iter().map(|x| x as i32).collect())
    } else {
        ColumnData::Int64(vals.into())
    };
    Ok(Column::new(data, Some(valid)))
}
