//! The SQL data types the engine stores, with their SQL spellings.

use std::fmt;

/// A column or expression type. `Interval` and `Null` only occur in expressions, never in tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// BOOLEAN.
    Bool,
    /// INTEGER: 32-bit signed.
    Int32,
    /// BIGINT: 64-bit signed.
    Int64,
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
    /// The type of an untyped `NULL` literal.
    Null,
}

impl DataType {
    /// Parse a SQL type name (case-insensitive). `None` for unknown names.
    pub fn from_sql(name: &str) -> Option<DataType> {
        let t = match name.to_ascii_uppercase().as_str() {
            "BOOLEAN" | "BOOL" => DataType::Bool,
            "INT" | "INTEGER" | "INT4" => DataType::Int32,
            "BIGINT" | "INT8" | "LONG" => DataType::Int64,
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

    /// The canonical SQL spelling (`INTEGER`, `DOUBLE`, ...), as shown in schemas and errors.
    pub fn sql_name(self) -> &'static str {
        match self {
            DataType::Bool => "BOOLEAN",
            DataType::Int32 => "INTEGER",
            DataType::Int64 => "BIGINT",
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

    /// INTEGER or BIGINT.
    pub fn is_integer(self) -> bool {
        matches!(self, DataType::Int32 | DataType::Int64)
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
        f.write_str(self.sql_name())
    }
}
