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
use pgwire::error::PgWireResult;
use pgwire::messages::data::DataRow;
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
        DataType::Int128 => Type::NUMERIC,
        DataType::Float32 => Type::FLOAT4,
        DataType::Float64 => Type::FLOAT8,
        DataType::Timestamp => Type::TIMESTAMP,
        DataType::Date => Type::DATE,
        DataType::Interval => Type::INTERVAL,
        DataType::Vector(_) => Type::FLOAT4_ARRAY,
        DataType::Varchar | DataType::Symbol | DataType::Null => Type::TEXT,
    }
}

/// The PostgreSQL type a result column is sent as: an array type for a column of `{...}`
/// arrays (`array_agg`, the catalogs' `text[]` columns), else its type's.
pub fn field_type(f: &zepto_sql::plan::Field) -> Type {
    match f.array_of {
        Some(a) if !a.spaced && f.data_type == DataType::Varchar => match a.item {
            DataType::Bool => Type::BOOL_ARRAY,
            DataType::Int32 => Type::INT4_ARRAY,
            DataType::Int64 => Type::INT8_ARRAY,
            DataType::Float64 => Type::FLOAT8_ARRAY,
            _ => Type::TEXT_ARRAY,
        },
        _ => pg_type(f.data_type),
    }
}

/// The item type of array type `ty` when a text column is sent as it.
fn array_item(ty: &Type) -> Option<Type> {
    if ![Type::BOOL_ARRAY, Type::INT4_ARRAY, Type::INT8_ARRAY, Type::FLOAT8_ARRAY, Type::TEXT_ARRAY].contains(ty) {
        return None;
    }
    match ty.kind() {
        postgres_types::Kind::Array(item) => Some(item.clone()),
        _ => None,
    }
}

/// A one-dimensional array in binary from its text: dimensions, whether any item is NULL,
/// the item type, its length and lower bound 1, then each item (-1 for NULL). False (sent
/// as NULL) for text that is not an array, which ZeptoDB never makes.
fn array_binary(buf: &mut BytesMut, text: &str, item: &Type) -> bool {
    let Ok(items) = zepto_sql::eval::array::parse(text) else { return false };
    let n = i32::try_from(items.len()).unwrap_or(i32::MAX);
    buf.put_i32(i32::from(n > 0));
    buf.put_i32(i32::from(items.iter().any(Option::is_none)));
    buf.put_u32(item.oid());
    if n > 0 {
        buf.put_i32(n);
        buf.put_i32(1);
    }
    for it in &items {
        let Some(s) = it else {
            buf.put_i32(-1);
            continue;
        };
        let at = buf.len();
        buf.put_i32(0);
        match *item {
            Type::BOOL => buf.put_u8(u8::from(s == "t" || s.eq_ignore_ascii_case("true"))),
            Type::INT4 => buf.put_i32(s.parse().unwrap_or(0)),
            Type::INT8 => buf.put_i64(s.parse().unwrap_or(0)),
            Type::FLOAT8 => buf.put_f64(s.parse().unwrap_or(f64::NAN)),
            _ => buf.put_slice(s.as_bytes()),
        }
        let len = i32::try_from(buf.len() - at - 4).unwrap_or(i32::MAX);
        if let Some(mut slot) = buf.get_mut(at..at + 4) {
            slot.put_i32(len);
        }
    }
    true
}

/// Nanoseconds since the Unix epoch as microseconds since PostgreSQL's (cut toward the past).
pub fn pg_micros(ns: i64) -> i64 {
    match ns {
        // PostgreSQL's own infinities (DT_NOEND, DT_NOBEGIN).
        zepto_storage::time::TS_INFINITY => i64::MAX,
        zepto_storage::time::TS_NEG_INFINITY => i64::MIN,
        _ => ns.div_euclid(1000).saturating_sub(PG_EPOCH_US),
    }
}

/// Microseconds since PostgreSQL's epoch as nanoseconds since the Unix epoch (`None` when out
/// of ZeptoDB's range).
pub fn unix_nanos(pg_us: i64) -> Option<i64> {
    match pg_us {
        i64::MAX => Some(zepto_storage::time::TS_INFINITY),
        i64::MIN => Some(zepto_storage::time::TS_NEG_INFINITY),
        _ => pg_us.checked_add(PG_EPOCH_US)?.checked_mul(1000),
    }
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
        if let Some(t) = zepto_storage::time::infinite_text(self.0) {
            out.put_slice(t.as_bytes());
            return Ok(IsNull::No);
        }
        if ts_text_fast(self.0, out) {
            return Ok(IsNull::No);
        }
        // PostgreSQL prints microseconds, without trailing zeros.
        let text = zepto_storage::time::format_timestamp(self.0.div_euclid(1000).saturating_mul(1000));
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

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (microseconds, trailing zeros cut) written digit by digit,
/// for years 0 to 9999 (false otherwise; a nanosecond timestamp is always within them). A 1M-row text result
/// is mostly timestamps; formatting them through `format!` took most of the door's time.
fn ts_text_fast(ns: i64, out: &mut BytesMut) -> bool {
    use zepto_storage::time::{civil_from_days, NS_PER_DAY, NS_PER_SEC};
    let us = ns.div_euclid(1000).saturating_mul(1000);
    let (days, rem) = (us.div_euclid(NS_PER_DAY), us.rem_euclid(NS_PER_DAY));
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return false;
    }
    let secs = rem / NS_PER_SEC;
    let (h, mi, sec) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut text = [0u8; 26];
    let mut put = |at: usize, v: i64, width: usize| {
        let mut v = v;
        for k in (0..width).rev() {
            if let Some(c) = text.get_mut(at + k) {
                *c = b'0' + (v % 10) as u8;
            }
            v /= 10;
        }
    };
    put(0, y, 4);
    put(5, i64::from(m), 2);
    put(8, i64::from(d), 2);
    put(11, h, 2);
    put(14, mi, 2);
    put(17, sec, 2);
    let micros = rem % NS_PER_SEC / 1000;
    put(20, micros, 6);
    for (at, c) in [(4, b'-'), (7, b'-'), (10, b' '), (13, b':'), (16, b':'), (19, b'.')] {
        if let Some(slot) = text.get_mut(at) {
            *slot = c;
        }
    }
    let len = if micros == 0 { 19 } else { 26 - trailing_decimal_zeros(micros) };
    out.put_slice(text.get(..len).unwrap_or(&text));
    true
}

/// Trailing decimal zeros of a number of microseconds (1 to 999,999): at most 5.
fn trailing_decimal_zeros(mut us: i64) -> usize {
    let mut n = 0;
    while us % 10 == 0 && n < 5 {
        us /= 10;
        n += 1;
    }
    n
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

/// Encodes result rows as DataRow messages, each field in the text or binary format asked
/// for its column. Rows are cut from one large buffer (a fresh one every 64 KiB), so a row
/// costs no allocation of its own; binary values are written directly.
pub struct RowWriter {
    buf: BytesMut,
    columns: Vec<(Type, bool)>,
    opts: FormatOptions,
}

/// Room a row may need before the buffer is renewed.
const ROW_ROOM: usize = 4 * 1024;

impl RowWriter {
    /// A writer for rows described by `fields`.
    pub fn new(fields: &[pgwire::api::results::FieldInfo]) -> RowWriter {
        let columns = fields
            .iter()
            .map(|f| (f.datatype().clone(), f.format() == pgwire::api::results::FieldFormat::Binary))
            .collect();
        RowWriter { buf: BytesMut::new(), columns, opts: FormatOptions::default() }
    }

    /// Row `i` of `columns` (one per field).
    pub fn row(&mut self, columns: &[std::sync::Arc<Column>], i: usize) -> PgWireResult<DataRow> {
        if self.buf.capacity() - self.buf.len() < ROW_ROOM {
            self.buf.reserve(64 * 1024);
        }
        for (k, c) in columns.iter().enumerate() {
            let (ty, binary) = self.columns.get(k).map_or((&Type::TEXT, false), |(t, b)| (t, *b));
            let at = self.buf.len();
            self.buf.put_i32(-1);
            let written = if !c.is_valid(i) {
                false
            } else if let (true, Some(item), Some(s)) = (binary, array_item(ty), c.str_at(i)) {
                array_binary(&mut self.buf, s, &item)
            } else if binary {
                binary_value(&mut self.buf, c, i)
            } else {
                text_value(&mut self.buf, c, i, ty, &self.opts)?
            };
            if written {
                let len = i32::try_from(self.buf.len() - at - 4).unwrap_or(i32::MAX);
                if let Some(mut slot) = self.buf.get_mut(at..at + 4) {
                    slot.put_i32(len);
                }
            }
        }
        let n = i16::try_from(columns.len()).unwrap_or(i16::MAX);
        Ok(DataRow::new(self.buf.split(), n))
    }
}

/// Write value `i` of `c` in binary; false for NULL.
fn binary_value(buf: &mut BytesMut, c: &Column, i: usize) -> bool {
    match c.data() {
        ColumnData::Bool(v) => v.get(i).map(|&b| buf.put_u8(u8::from(b))).is_some(),
        ColumnData::Int32(v) => v.get(i).map(|&x| buf.put_i32(x)).is_some(),
        ColumnData::Int64(v) => v.get(i).map(|&x| buf.put_i64(x)).is_some(),
        ColumnData::Int128(v) => v.get(i).map(|&x| numeric_binary(buf, x)).is_some(),
        ColumnData::Float32(v) => v.get(i).map(|&x| buf.put_f32(x)).is_some(),
        ColumnData::Float64(v) => v.get(i).map(|&x| buf.put_f64(x)).is_some(),
        ColumnData::Timestamp(v) => v.get(i).map(|&t| buf.put_i64(pg_micros(t))).is_some(),
        ColumnData::Date(v) => v.get(i).map(|&d| buf.put_i32(d.saturating_sub(PG_EPOCH_DAYS))).is_some(),
        ColumnData::Interval(v) => v
            .get(i)
            .map(|&d| {
                buf.put_i64(d.div_euclid(1000));
                buf.put_i64(0);
            })
            .is_some(),
        ColumnData::Vector { .. } => c.vector_at(i).map(|v| vector_binary(buf, v)).is_some(),
        ColumnData::Varchar(_) | ColumnData::Symbol { .. } => {
            c.str_at(i).map(|s| buf.put_slice(s.as_bytes())).is_some()
        }
        ColumnData::Null(_) => false,
    }
}

/// An integer as PostgreSQL's binary `numeric`: the count of base-10000 digits, the weight
/// of the first (its power of 10000), the sign, the display scale (0), then the digits, most
/// significant first.
fn numeric_binary(buf: &mut BytesMut, x: i128) {
    let mut digits = Vec::new();
    let mut m = x.unsigned_abs();
    while m > 0 {
        digits.push((m % 10_000) as i16);
        m /= 10_000;
    }
    // Trailing zero digits are implied by the weight.
    let zeros = digits.iter().take_while(|&&d| d == 0).count();
    let weight = digits.len().saturating_sub(1) as i16;
    buf.put_i16((digits.len() - zeros) as i16);
    buf.put_i16(weight);
    buf.put_u16(if x < 0 { 0x4000 } else { 0 });
    buf.put_i16(0);
    for d in digits.iter().skip(zeros).rev() {
        buf.put_i16(*d);
    }
}

/// A one-dimensional `float4[]` in binary: dimensions, no NULLs, element type, then each
/// element with its length.
fn vector_binary(buf: &mut BytesMut, v: &[f32]) {
    buf.put_i32(1);
    buf.put_i32(0);
    buf.put_u32(700);
    buf.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
    buf.put_i32(1);
    for x in v {
        buf.put_i32(4);
        buf.put_f32(*x);
    }
}

/// PostgreSQL's text of an infinite float (clients parse `Infinity`, not Rust's `inf`).
fn infinity(buf: &mut BytesMut, negative: bool) -> bool {
    buf.put_slice(if negative { b"-Infinity" } else { b"Infinity" });
    true
}

/// Write value `i` of `c` (a column sent as `ty`) as PostgreSQL's text; false for NULL.
pub fn value_text(buf: &mut BytesMut, c: &Column, i: usize, ty: &Type, opts: &FormatOptions) -> PgWireResult<bool> {
    if !c.is_valid(i) {
        return Ok(false);
    }
    text_value(buf, c, i, ty, opts)
}

/// Write value `i` of `c` as PostgreSQL's text; false for NULL.
fn text_value(buf: &mut BytesMut, c: &Column, i: usize, ty: &Type, opts: &FormatOptions) -> PgWireResult<bool> {
    let is = |r: Result<IsNull, BoxError>| -> PgWireResult<bool> {
        r.map(|n| matches!(n, IsNull::No)).map_err(pgwire::error::PgWireError::ApiError)
    };
    match c.data() {
        ColumnData::Bool(v) => is(v.get(i).map_or(Ok(IsNull::Yes), |x| x.to_sql_text(ty, buf, opts))),
        ColumnData::Int32(v) => is(v.get(i).map_or(Ok(IsNull::Yes), |x| x.to_sql_text(ty, buf, opts))),
        ColumnData::Int64(v) => is(v.get(i).map_or(Ok(IsNull::Yes), |x| x.to_sql_text(ty, buf, opts))),
        ColumnData::Int128(v) => Ok(v.get(i).map(|x| buf.put_slice(x.to_string().as_bytes())).is_some()),
        ColumnData::Float32(v) => match v.get(i) {
            Some(x) if x.is_infinite() => Ok(infinity(buf, *x < 0.0)),
            x => is(x.map_or(Ok(IsNull::Yes), |x| x.to_sql_text(ty, buf, opts))),
        },
        ColumnData::Float64(v) => match v.get(i) {
            Some(x) if x.is_infinite() => Ok(infinity(buf, *x < 0.0)),
            x => is(x.map_or(Ok(IsNull::Yes), |x| x.to_sql_text(ty, buf, opts))),
        },
        ColumnData::Timestamp(v) => is(v.get(i).map_or(Ok(IsNull::Yes), |&x| Ts(x).to_sql_text(ty, buf, opts))),
        ColumnData::Date(v) => is(v.get(i).map_or(Ok(IsNull::Yes), |&x| Day(x).to_sql_text(ty, buf, opts))),
        ColumnData::Interval(v) => is(v.get(i).map_or(Ok(IsNull::Yes), |&x| Span(x).to_sql_text(ty, buf, opts))),
        ColumnData::Vector { .. } => {
            is(c.vector_at(i).map_or(Ok(IsNull::Yes), |v| v.to_vec().to_sql_text(ty, buf, opts)))
        }
        ColumnData::Varchar(_) | ColumnData::Symbol { .. } => {
            Ok(c.str_at(i).map(|s| buf.put_slice(s.as_bytes())).is_some())
        }
        ColumnData::Null(_) => Ok(false),
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
        assert_eq!(text(&Ts(1_700_000_000_120_000_000), &Type::TIMESTAMP), "2023-11-14 22:13:20.12");
        assert_eq!(text(&Ts(1_700_000_000_000_001_999), &Type::TIMESTAMP), "2023-11-14 22:13:20.000001");
        // The digit-by-digit path prints what the general one does, in its range and past it.
        let general = |ns: i64| {
            let t = zepto_storage::time::format_timestamp(ns.div_euclid(1000) * 1000);
            let (whole, frac) = t.split_once('.').expect("fraction");
            let frac = frac.get(..6).unwrap_or(frac).trim_end_matches('0');
            if frac.is_empty() {
                whole.to_string()
            } else {
                format!("{whole}.{frac}")
            }
        };
        let mut x: i64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ns = x; // any nanosecond timestamp: 1677 to 2262
            assert_eq!(text(&Ts(ns), &Type::TIMESTAMP), general(ns), "{ns}");
        }
        assert_eq!(text(&Day(19_675), &Type::DATE), "2023-11-14");
        assert_eq!(text(&Span(90_061_500_000_000), &Type::INTERVAL), "25:01:01.5");
        assert_eq!(text(&Span(-1_000_000_000), &Type::INTERVAL), "-00:00:01");
        assert_eq!(pg_micros(946_684_800_000_000_000), 0);
        assert_eq!(unix_nanos(0), Some(946_684_800_000_000_000));
        // PostgreSQL's infinities both ways.
        use zepto_storage::time::{TS_INFINITY, TS_NEG_INFINITY};
        assert_eq!((pg_micros(TS_INFINITY), pg_micros(TS_NEG_INFINITY)), (i64::MAX, i64::MIN));
        assert_eq!((unix_nanos(i64::MAX), unix_nanos(i64::MIN)), (Some(TS_INFINITY), Some(TS_NEG_INFINITY)));
        let mut out = BytesMut::new();
        Day(10_957).to_sql(&Type::DATE, &mut out).expect("binary");
        assert_eq!(&out[..], &[0, 0, 0, 0]);
    }

    #[test]
    fn rows_are_written_in_each_columns_format() {
        use pgwire::api::results::{FieldFormat, FieldInfo};
        use std::sync::Arc;
        let f = |t: Type, fmt| FieldInfo::new("c".into(), None, None, t, fmt);
        let fields = [
            f(Type::TIMESTAMP, FieldFormat::Binary),
            f(Type::FLOAT4_ARRAY, FieldFormat::Binary),
            f(Type::INT8, FieldFormat::Text),
        ];
        let mut w = RowWriter::new(&fields);
        let ts = Column::new(ColumnData::Timestamp(vec![946_684_800_000_001_999].into()), None);
        let v = Column::new(ColumnData::Vector { dim: 2, values: vec![1.0, -2.5].into() }, None);
        let n = Column::new(ColumnData::Int64(vec![0].into()), Some(zepto_storage::Bitmap::new_unset(1)));
        let row = w.row(&[Arc::new(ts), Arc::new(v), Arc::new(n)], 0).expect("a row");
        assert_eq!(row.field_count, 3);
        let mut want = Vec::new();
        want.extend(8i32.to_be_bytes());
        want.extend(1i64.to_be_bytes()); // one microsecond after 2000-01-01 (the nanoseconds cut)
        want.extend(36i32.to_be_bytes());
        for w4 in [1i32, 0, 700, 2, 1] {
            want.extend(w4.to_be_bytes());
        }
        for x in [1.0f32, -2.5] {
            want.extend(4i32.to_be_bytes());
            want.extend(x.to_be_bytes());
        }
        want.extend((-1i32).to_be_bytes()); // NULL
        assert_eq!(&row.data[..], &want[..]);
    }

    /// PostgreSQL's binary numeric of whole numbers, decoded as PostgreSQL does: the digits
    /// (base 10000, most significant first) times 10000^(weight - position), signed.
    #[test]
    fn numeric_binary_is_postgresql_s_layout() {
        for x in
            [0i128, 1, 9_999, 10_000, 100_000_000, -123_456_789, 18_446_744_073_709_551_614, i128::MAX, i128::MIN + 1]
        {
            let mut buf = BytesMut::new();
            numeric_binary(&mut buf, x);
            let w: Vec<i16> = buf.chunks(2).map(|c| i16::from_be_bytes([c[0], c[1]])).collect();
            let (ndigits, weight, sign, dscale) = (w[0] as usize, w[1] as i32, w[2] as u16, w[3]);
            assert_eq!((dscale, w.len()), (0, 4 + ndigits), "{x}");
            let mut v = 0i128;
            for (k, &d) in w[4..].iter().enumerate() {
                assert!((0..10_000).contains(&d), "{x}: digit {d}");
                v += i128::from(d) * 10_000i128.pow((weight - k as i32) as u32);
            }
            assert_eq!(if sign == 0x4000 { -v } else { v }, x, "{x}");
            assert!(ndigits == 0 || w[4 + ndigits - 1] != 0, "{x}: trailing zero digits are implied");
        }
    }
}
