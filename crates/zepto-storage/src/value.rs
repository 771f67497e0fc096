//! A single scalar value: literals, row-at-a-time paths (INSERT VALUES, output formatting).

use crate::time;
use crate::types::DataType;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int32(i32),
    Int64(i64),
    Float32(f32),
    Float64(f64),
    Timestamp(i64),
    Date(i32),
    Interval(i64),
    Str(String),
}

impl Value {
    pub fn data_type(&self) -> DataType {
        match self {
            Value::Null => DataType::Null,
            Value::Bool(_) => DataType::Bool,
            Value::Int32(_) => DataType::Int32,
            Value::Int64(_) => DataType::Int64,
            Value::Float32(_) => DataType::Float32,
            Value::Float64(_) => DataType::Float64,
            Value::Timestamp(_) => DataType::Timestamp,
            Value::Date(_) => DataType::Date,
            Value::Interval(_) => DataType::Interval,
            Value::Str(_) => DataType::Varchar,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int32(v) => Some(v as f64),
            Value::Int64(v) => Some(v as f64),
            Value::Float32(v) => Some(v as f64),
            Value::Float64(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int32(v) => Some(v as i64),
            Value::Int64(v) | Value::Timestamp(v) | Value::Interval(v) => Some(v),
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

impl fmt::Display for Value {
    /// Text form used by CSV output, CAST to VARCHAR and the table printer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int32(v) => write!(f, "{v}"),
            Value::Int64(v) => write!(f, "{v}"),
            Value::Float32(v) => f.write_str(&format_f32(*v)),
            Value::Float64(v) => f.write_str(&format_f64(*v)),
            Value::Timestamp(v) => f.write_str(&time::format_timestamp(*v)),
            Value::Date(v) => f.write_str(&time::format_date(*v)),
            Value::Interval(v) => f.write_str(&time::format_interval(*v)),
            Value::Str(s) => f.write_str(s),
        }
    }
}
