//! A single scalar value: literals, row-at-a-time paths (INSERT VALUES, output formatting).

use crate::time;
use crate::types::DataType;
use std::fmt;

/// A single scalar: a literal or one cell, for row-at-a-time paths (INSERT VALUES, output
/// formatting). SYMBOL cells are carried as `Str`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Value {
    /// SQL NULL (untyped).
    Null,
    /// BOOLEAN.
    Bool(bool),
    /// INTEGER.
    Int32(i32),
    /// BIGINT.
    Int64(i64),
    /// HUGEINT.
    Int128(i128),
    /// REAL.
    Float32(f32),
    /// DOUBLE.
    Float64(f64),
    /// TIMESTAMP: nanoseconds since the Unix epoch, UTC.
    Timestamp(i64),
    /// DATE: days since the Unix epoch.
    Date(i32),
    /// INTERVAL: a duration in nanoseconds.
    Interval(i64),
    /// VARCHAR or SYMBOL text.
    Str(String),
    /// `FLOAT[n]`: a vector of finite REALs (`n` is its length, 1..=65535).
    Vector(Vec<f32>),
}

impl Value {
    /// The type of this value (`Str` is VARCHAR, `Null` is the NULL type).
    pub fn data_type(&self) -> DataType {
        match self {
            Value::Null => DataType::Null,
            Value::Bool(_) => DataType::Bool,
            Value::Int32(_) => DataType::Int32,
            Value::Int64(_) => DataType::Int64,
            Value::Int128(_) => DataType::Int128,
            Value::Float32(_) => DataType::Float32,
            Value::Float64(_) => DataType::Float64,
            Value::Timestamp(_) => DataType::Timestamp,
            Value::Date(_) => DataType::Date,
            Value::Interval(_) => DataType::Interval,
            Value::Str(_) => DataType::Varchar,
            Value::Vector(v) => DataType::vector(v.len()).unwrap_or(DataType::Null),
        }
    }

    /// True for `Value::Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value as a float, for the numeric variants only (`None` for NULL, text, times,
    /// booleans).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int32(v) => Some(v as f64),
            Value::Int64(v) => Some(v as f64),
            Value::Int128(v) => Some(v as f64),
            Value::Float32(v) => Some(v as f64),
            Value::Float64(v) => Some(v),
            _ => None,
        }
    }

    /// The value as an integer: integers (a HUGEINT when it fits), timestamps and intervals
    /// (nanoseconds), dates (days), booleans (0 or 1); `None` otherwise (floats are not
    /// truncated).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int32(v) => Some(v as i64),
            Value::Int64(v) | Value::Timestamp(v) | Value::Interval(v) => Some(v),
            Value::Int128(v) => i64::try_from(v).ok(),
            Value::Date(v) => Some(v as i64),
            Value::Bool(b) => Some(b as i64),
            _ => None,
        }
    }
}

/// Shortest round-trip float text, with `NaN`/`inf`/`-inf` spelled as DuckDB does.
pub fn format_f64(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if v == v.trunc() && v.abs() < 1e16 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

/// Shortest round-trip text of an `f32` (so `0.1::REAL` prints as `0.1`).
pub fn format_f32(v: f32) -> String {
    if v.is_finite() && v == v.trunc() && v.abs() < 1e7 {
        format!("{v:.1}")
    } else if v.is_finite() {
        format!("{v}")
    } else {
        format_f64(v as f64)
    }
}

/// A vector as DuckDB prints it: `[0.1, 0.2, 0.3]` (each element's shortest REAL text).
pub fn format_vector(v: &[f32]) -> String {
    let mut s = String::with_capacity(2 + v.len() * 8);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(&format_f32(*x));
    }
    s.push(']');
    s
}

impl fmt::Display for Value {
    /// Text form used by CSV output, CAST to VARCHAR and the table printer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int32(v) => write!(f, "{v}"),
            Value::Int64(v) => write!(f, "{v}"),
            Value::Int128(v) => write!(f, "{v}"),
            Value::Float32(v) => f.write_str(&format_f32(*v)),
            Value::Float64(v) => f.write_str(&format_f64(*v)),
            Value::Timestamp(v) => f.write_str(&time::format_timestamp(*v)),
            Value::Date(v) => f.write_str(&time::format_date(*v)),
            Value::Interval(v) => f.write_str(&time::format_interval(*v)),
            Value::Str(s) => f.write_str(s),
            Value::Vector(v) => f.write_str(&format_vector(v)),
        }
    }
}
