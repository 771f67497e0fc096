//! The SQL data types the engine stores, with their SQL spellings.
//!
//! `FLOAT[n]` (a fixed-size vector of `n` REALs, for embeddings) carries its dimension in the
//! type, as DuckDB's `FLOAT[n]` and Arrow's `FixedSizeList<Float32, n>` do, so two vector
//! columns of different widths are different types and a dimension mismatch is a type error.

use std::borrow::Cow;
use std::fmt;

/// The largest dimension of a `FLOAT[n]` vector.
pub const MAX_VECTOR_DIM: usize = u16::MAX as usize;

/// A column or expression type. `Interval` and `Null` only occur in expressions, never in tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DataType {
    /// BOOLEAN.
    Bool,
    /// INTEGER: 32-bit signed.
    Int32,
    /// BIGINT: 64-bit signed.
    Int64,
    /// HUGEINT: 128-bit signed, the exact sum of BIGINTs (DuckDB's type for it).
    Int128,
    /// REAL: 32-bit float.
    Float32,
    /// DOUBLE: 64-bit float.
    Float64,
    /// Nanoseconds since the Unix epoch, UTC.
    Timestamp,
    /// Days since the Unix epoch.
    Date,
    /// A duration in nanoseconds.
    Interval,
    /// Variable-length UTF-8 text.
    Varchar,
    /// Dictionary-encoded text (codes into the table's [`crate::Dict`]).
    Symbol,
    /// `FLOAT[n]`: a fixed-size vector of `n` (1..=65535) finite REALs, stored flat.
    Vector(u16),
    /// The type of an untyped `NULL` literal.
    Null,
}

impl DataType {
    /// Parse a SQL type name (case-insensitive). `None` for unknown names.
    /// A vector type spelled `FLOAT[n]` (also `REAL[n]`, `FLOAT4[n]`) is read here too, so the
    /// canonical spelling [`DataType::sql_name`] gives always parses back.
    pub fn from_sql(name: &str) -> Option<DataType> {
        if let Some((elem, rest)) = name.split_once('[') {
            let dim = rest.trim().strip_suffix(']')?.trim();
            let elem = DataType::from_sql(elem.trim())?;
            return (elem == DataType::Float32).then(|| DataType::vector(dim.parse().ok()?)).flatten();
        }
        let t = match name.to_ascii_uppercase().as_str() {
            "BOOLEAN" | "BOOL" => DataType::Bool,
            "INT" | "INTEGER" | "INT4" => DataType::Int32,
            "BIGINT" | "INT8" | "LONG" => DataType::Int64,
            "HUGEINT" | "INT128" => DataType::Int128,
            "REAL" | "FLOAT" | "FLOAT4" => DataType::Float32,
            "DOUBLE" | "FLOAT8" => DataType::Float64,
            "TIMESTAMP" | "TIMESTAMP_NS" | "DATETIME" => DataType::Timestamp,
            "DATE" => DataType::Date,
            "VARCHAR" | "TEXT" | "STRING" => DataType::Varchar,
            "SYMBOL" => DataType::Symbol,
            "INTERVAL" => DataType::Interval,
            _ => return None,
        };
        Some(t)
    }

    /// `FLOAT[dim]`, for a dimension in 1..=65535 (`None` otherwise).
    pub fn vector(dim: usize) -> Option<DataType> {
        u16::try_from(dim).ok().filter(|&d| d > 0).map(DataType::Vector)
    }

    /// The dimension of a `FLOAT[n]` type (`None` for every other type).
    pub fn vector_dim(self) -> Option<usize> {
        match self {
            DataType::Vector(d) => Some(d as usize),
            _ => None,
        }
    }

    /// The canonical SQL spelling (`INTEGER`, `DOUBLE`, `FLOAT[3]`, ...), as shown in schemas
    /// and errors; [`DataType::from_sql`] reads it back.
    pub fn sql_name(self) -> Cow<'static, str> {
        match self {
            DataType::Vector(d) => Cow::Owned(format!("FLOAT[{d}]")),
            other => Cow::Borrowed(other.scalar_name()),
        }
    }

    /// The spelling of a type without parameters.
    fn scalar_name(self) -> &'static str {
        match self {
            DataType::Vector(_) => "FLOAT[]",
            DataType::Bool => "BOOLEAN",
            DataType::Int32 => "INTEGER",
            DataType::Int64 => "BIGINT",
            DataType::Int128 => "HUGEINT",
            DataType::Float32 => "REAL",
            DataType::Float64 => "DOUBLE",
            DataType::Timestamp => "TIMESTAMP",
            DataType::Date => "DATE",
            DataType::Interval => "INTERVAL",
            DataType::Varchar => "VARCHAR",
            DataType::Symbol => "SYMBOL",
            DataType::Null => "NULL",
        }
    }

    /// INTEGER, BIGINT or HUGEINT.
    pub fn is_integer(self) -> bool {
        matches!(self, DataType::Int32 | DataType::Int64 | DataType::Int128)
    }

    /// REAL or DOUBLE.
    pub fn is_float(self) -> bool {
        matches!(self, DataType::Float32 | DataType::Float64)
    }

    /// An integer or float type (not timestamps, dates or intervals).
    pub fn is_numeric(self) -> bool {
        self.is_integer() || self.is_float()
    }

    /// VARCHAR or SYMBOL.
    pub fn is_string(self) -> bool {
        matches!(self, DataType::Varchar | DataType::Symbol)
    }

    /// Types a table column may have.
    pub fn is_storable(self) -> bool {
        !matches!(self, DataType::Null | DataType::Interval)
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql_name())
    }
}
