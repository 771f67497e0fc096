//! ZeptoDB's types as PostgreSQL sees them, and one result cell encoded as a client asked
//! (text or binary).
//!
//! | ZeptoDB | PostgreSQL (OID) |
//! |---|---|
//! | BOOLEAN | `bool` (16) |
//! | INTEGER | `int4` (23) |
//! | BIGINT | `int8` (20) |
//! | REAL | `float4` (700) |
//! | DOUBLE | `float8` (701) |
//! | VARCHAR, SYMBOL | `text` (25): a symbol is its text |
//! | TIMESTAMP | `timestamp` (1114), microseconds on the wire: the nanoseconds are cut (toward the past) |
//! | DATE | `date` (1082) |
//! | INTERVAL | `interval` (1186), as microseconds |
//! | `FLOAT[n]` | `float4[]` (1021) |
//!
//! Binary timestamps and dates count from 2000-01-01, PostgreSQL's epoch.

use bytes::{BufMut, BytesMut};
use pgwire::api::results::DataRowEncoder;
use pgwire::error::PgWireResult;
use pgwire::types::format::FormatOptions;
use pgwire::types::ToSqlText;
use postgres_types::{to_sql_checked, IsNull, ToSql, Type};
use std::error::Error;
use zepto_storage::{Column, ColumnData, DataType};

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 00:00:00 UTC).
const PG_EPOCH_US: i64 = 946_684_800_000_000;
/// Days from the Unix epoch to PostgreSQL's.
const PG_EPOCH_DAYS: i32 = 10_957;

type BoxError = Box<dyn Error + Sync + Send>;

/// The PostgreSQL type a column of `dt` is sent as.
pub fn pg_type(dt: DataType) -> Type {
    match dt {
        DataType::Bool => Type::BOOL,
        DataType::Int32 => Type::INT4,
        DataType::Int64 => Type::INT8,
        DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Timestamp => Type::TIMESTAMP,
        DataType::Date => Type::DATE,
        DataType::Interval => Type::INTERVAL,
        DataType::Vector(_) => Type::FLOAT4_ARRAY,
        DataType::Varchar | DataType::Symbol | DataType::Null => Type::TEXT,
    }
}

/// Nanoseconds since the Unix epoch as microseconds since PostgreSQL's (cut toward the past).
pub fn pg_micros(ns: i64) -> i64 {
    ns.div_euclid(1000).saturating_sub(PG_EPOCH_US)
}

/// Microseconds since PostgreSQL's epoch as nanoseconds since the Unix epoch (`None` when out
/// of ZeptoDB's range).
pub fn unix_nanos(pg_us: i64) -> Option<i64> {
    pg_us.checked_add(PG_EPOCH_US)?.checked_mul(1000)
}

/// A TIMESTAMP value: nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy)]
struct Ts(i64);

impl ToSql for Ts {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.put_i64(pg_micros(self.0));
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMP
    }
    to_sql_checked!();
}

impl ToSqlText for Ts {
    fn to_sql_text(&self, _: &Type, out: &mut BytesMut, _: &FormatOptions) -> Result<IsNull, BoxError> {
        // PostgreSQL prints microseconds, without trailing zeros.
        let text = zepto_storage::time::format_timestamp(self.0.div_euclid(1000) * 1000);
        let text = match text.split_once('.') {
            Some((whole, frac)) => {
                let frac = frac.get(..6).unwrap_or(frac).trim_end_matches('0');
                if frac.is_empty() {
                    whole.to_string()
                } else {
                    format!("{whole}.{frac}")
                }
            }
            None => text,
        };
        out.put_slice(text.as_bytes());
        Ok(IsNull::No)
    }
}

/// A DATE value: days since the Unix epoch.
#[derive(Debug, Clone, Copy)]
struct Day(i32);

impl ToSql for Day {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.put_i32(self.0.saturating_sub(PG_EPOCH_DAYS));
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::DATE
    }
    to_sql_checked!();
}

impl ToSqlText for Day {
    fn to_sql_text(&self, _: &Type, out: &mut BytesMut, _: &FormatOptions) -> Result<IsNull, BoxError> {
        out.put_slice(zepto_storage::time::format_date(self.0).as_bytes());
        Ok(IsNull::No)
    }
}

/// An INTERVAL value: nanoseconds (sent as microseconds, no days or months).
#[derive(Debug, Clone, Copy)]
struct Span(i64);

impl ToSql for Span {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        out.put_i64(self.0.div_euclid(1000));
        out.put_i32(0);
        out.put_i32(0);
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
    to_sql_checked!();
}

impl ToSqlText for Span {
    fn to_sql_text(&self, _: &Type, out: &mut BytesMut, _: &FormatOptions) -> Result<IsNull, BoxError> {
        // PostgreSQL's style: `[-]HH:MM:SS[.ffffff]`, hours unbounded.
        let us = self.0.div_euclid(1000);
        let (sign, us) = if us < 0 { ("-", us.unsigned_abs()) } else { ("", us.unsigned_abs()) };
        let (h, m, s, f) = (us / 3_600_000_000, us / 60_000_000 % 60, us / 1_000_000 % 60, us % 1_000_000);
        let text = if f == 0 {
            format!("{sign}{h:02}:{m:02}:{s:02}")
        } else {
            format!("{sign}{h:02}:{m:02}:{s:02}.{}", format!("{f:06}").trim_end_matches('0'))
        };
        out.put_slice(text.as_bytes());
        Ok(IsNull::No)
    }
}

/// Encode row `i` of `col` as the next field of `enc` (NULL when the row is).
pub fn encode_cell(enc: &mut DataRowEncoder, col: &Column, i: usize) -> PgWireResult<()> {
    if !col.is_valid(i) {
        return enc.encode_field(&None::<i64>);
    }
    match col.data() {
        ColumnData::Bool(v) => enc.encode_field(&v.get(i).copied()),
        ColumnData::Int32(v) => enc.encode_field(&v.get(i).copied()),
        ColumnData::Int64(v) => enc.encode_field(&v.get(i).copied()),
        ColumnData::Float32(v) => enc.encode_field(&v.get(i).copied()),
        ColumnData::Float64(v) => enc.encode_field(&v.get(i).copied()),
        ColumnData::Timestamp(v) => enc.encode_field(&v.get(i).map(|&t| Ts(t))),
        ColumnData::Date(v) => enc.encode_field(&v.get(i).map(|&d| Day(d))),
        ColumnData::Interval(v) => enc.encode_field(&v.get(i).map(|&d| Span(d))),
        ColumnData::Vector { .. } => enc.encode_field(&col.vector_at(i).map(<[f32]>::to_vec)),
        ColumnData::Varchar(_) | ColumnData::Symbol { .. } => enc.encode_field(&col.str_at(i)),
        ColumnData::Null(_) => enc.encode_field(&None::<i64>),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &impl ToSqlText, ty: &Type) -> String {
        let mut out = BytesMut::new();
        v.to_sql_text(ty, &mut out, &FormatOptions::default()).expect("encodes");
        String::from_utf8(out.to_vec()).expect("utf-8")
    }

    #[test]
    fn times_are_postgres_shaped() {
        assert_eq!(text(&Ts(1_700_000_000_123_456_789), &Type::TIMESTAMP), "2023-11-14 22:13:20.123456");
        assert_eq!(text(&Ts(1_700_000_000_000_000_000), &Type::TIMESTAMP), "2023-11-14 22:13:20");
        assert_eq!(text(&Ts(-1), &Type::TIMESTAMP), "1969-12-31 23:59:59.999999", "cut toward the past");
        assert_eq!(text(&Day(19_675), &Type::DATE), "2023-11-14");
        assert_eq!(text(&Span(90_061_500_000_000), &Type::INTERVAL), "25:01:01.5");
        assert_eq!(text(&Span(-1_000_000_000), &Type::INTERVAL), "-00:00:01");
        assert_eq!(pg_micros(946_684_800_000_000_000), 0);
        assert_eq!(unix_nanos(0), Some(946_684_800_000_000_000));
        let mut out = BytesMut::new();
        Day(10_957).to_sql(&Type::DATE, &mut out).expect("binary");
        assert_eq!(&out[..], &[0, 0, 0, 0]);
    }
}
