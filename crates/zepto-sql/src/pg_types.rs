//! PostgreSQL's names for ZeptoDB's column types: one table that the system catalogs
//! (`information_schema`, `pg_type`, `format_type`) and the PostgreSQL door's column names (a
//! cast named by its type, `plan::binder::names`) both read. A leaf: it needs only the types.

use zepto_storage::DataType;

/// A type as PostgreSQL names it (the type the PostgreSQL door sends a column as: SYMBOL is
/// text there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgTypeName {
    /// `information_schema.columns.data_type`.
    pub data_type: &'static str,
    /// `udt_name`: the type's name in `pg_type`.
    pub udt_name: &'static str,
    /// What `format_type` prints (psql's `\d`).
    pub format: &'static str,
}

/// `dt`'s PostgreSQL names.
pub fn pg_names(dt: DataType) -> PgTypeName {
    let (data_type, udt_name, format) = match dt {
        DataType::Bool => ("boolean", "bool", "boolean"),
        DataType::Int32 => ("integer", "int4", "integer"),
        DataType::Int64 => ("bigint", "int8", "bigint"),
        DataType::Int128 => ("numeric", "numeric", "numeric"),
        DataType::Float32 => ("real", "float4", "real"),
        DataType::Float64 => ("double precision", "float8", "double precision"),
        DataType::Timestamp => ("timestamp without time zone", "timestamp", "timestamp without time zone"),
        DataType::Date => ("date", "date", "date"),
        DataType::Interval => ("interval", "interval", "interval"),
        DataType::Vector(_) => ("ARRAY", "_float4", "real[]"),
        DataType::Varchar | DataType::Symbol | DataType::Null => ("text", "text", "text"),
    };
    PgTypeName { data_type, udt_name, format }
}
