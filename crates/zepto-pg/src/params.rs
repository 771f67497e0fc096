//! A Bind message's parameters as the engine's [`ParamValue`]s, read in the format (text or
//! binary) and type the client gave each: integers, floats, booleans, timestamps (binary
//! microseconds since 2000-01-01, or text with or without a UTC offset), `float4[]` vectors,
//! and text. A parameter of no declared type (OID 0) is text, which the statement's context
//! casts, as PostgreSQL's `unknown` literals are.

use crate::error::user_error;
use crate::types::unix_nanos;

/// Days from the Unix epoch to PostgreSQL's.
const PG_EPOCH_DAYS: i32 = 10_957;
use pgwire::api::portal::Format;
use pgwire::error::PgWireResult;
use postgres_types::Type;
use zepto_sql::parser::ParamValue;

/// Whether value `i` of a message with format codes `f` is binary.
pub fn is_binary(f: &Format, i: usize) -> bool {
    match f {
        Format::UnifiedText => false,
        Format::UnifiedBinary => true,
        // One code applies to every value; otherwise one each (a missing one: text).
        Format::Individual(codes) if codes.len() == 1 => codes.first() == Some(&1),
        Format::Individual(codes) => codes.get(i) == Some(&1),
    }
}

/// Parameter `i` (`None`: SQL NULL) of type `ty`, in binary if `binary`.
pub fn decode(i: usize, ty: &Type, value: Option<&[u8]>, binary: bool) -> PgWireResult<ParamValue> {
    let Some(v) = value else { return Ok(ParamValue::Null) };
    let bad = |what: &str| user_error("22P02", format!("parameter ${}: not a valid {what}", i + 1));
    if binary {
        return match *ty {
            Type::INT2 => Ok(ParamValue::Int(i16::from_be_bytes(fixed(v).ok_or_else(|| bad("int2"))?).into())),
            Type::INT4 => Ok(ParamValue::Int(i32::from_be_bytes(fixed(v).ok_or_else(|| bad("int4"))?).into())),
            Type::INT8 => Ok(ParamValue::Int(i64::from_be_bytes(fixed(v).ok_or_else(|| bad("int8"))?))),
            Type::FLOAT4 => Ok(ParamValue::Float(f32::from_be_bytes(fixed(v).ok_or_else(|| bad("float4"))?).into())),
            Type::FLOAT8 => Ok(ParamValue::Float(f64::from_be_bytes(fixed(v).ok_or_else(|| bad("float8"))?))),
            Type::BOOL => Ok(ParamValue::Bool(fixed::<1>(v).ok_or_else(|| bad("bool"))? != [0])),
            Type::TIMESTAMP | Type::TIMESTAMPTZ => {
                let us = i64::from_be_bytes(fixed(v).ok_or_else(|| bad("timestamp"))?);
                Ok(ParamValue::Timestamp(unix_nanos(us).ok_or_else(|| bad("timestamp in range"))?))
            }
            Type::DATE => {
                let days = i32::from_be_bytes(fixed(v).ok_or_else(|| bad("date"))?);
                let date = zepto_storage::time::format_date(days.saturating_add(PG_EPOCH_DAYS));
                Ok(ParamValue::Str(date))
            }
            Type::INTERVAL => binary_interval(v).map(ParamValue::Str).ok_or_else(|| bad("interval without months")),
            Type::FLOAT4_ARRAY | Type::FLOAT8_ARRAY => {
                binary_vector(v).map(ParamValue::Vector).ok_or_else(|| bad("float array without NULLs"))
            }
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON => {
                text_of(v).map(ParamValue::Str).ok_or_else(|| bad("UTF-8 text"))
            }
            _ => Err(user_error(
                "0A000",
                format!("parameter ${}: binary values of type {} are not supported; send it as text", i + 1, ty.name()),
            )),
        };
    }
    let s = std::str::from_utf8(v).map_err(|_| bad("UTF-8 text"))?;
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 => s.trim().parse().map(ParamValue::Int).map_err(|_| bad("integer")),
        Type::FLOAT4 | Type::FLOAT8 => s.trim().parse().map(ParamValue::Float).map_err(|_| bad("number")),
        Type::BOOL => match s.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "1" | "y" | "yes" | "on" => Ok(ParamValue::Bool(true)),
            "f" | "false" | "0" | "n" | "no" | "off" => Ok(ParamValue::Bool(false)),
            _ => Err(bad("boolean")),
        },
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            text_timestamp(s).map(ParamValue::Timestamp).ok_or_else(|| bad("timestamp"))
        }
        Type::FLOAT4_ARRAY | Type::FLOAT8_ARRAY | Type::INT4_ARRAY | Type::INT8_ARRAY | Type::NUMERIC_ARRAY => {
            text_vector(s).map(ParamValue::Vector).ok_or_else(|| bad("array of numbers"))
        }
        _ => Ok(ParamValue::Str(s.to_string())),
    }
}

fn fixed<const N: usize>(v: &[u8]) -> Option<[u8; N]> {
    v.try_into().ok()
}

fn text_of(v: &[u8]) -> Option<String> {
    std::str::from_utf8(v).ok().map(str::to_string)
}

/// A timestamp as text: ISO date and time, then an optional UTC offset (`+00`, `+05:30`, `Z`).
fn text_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(ns) = zepto_storage::time::parse_timestamp(s) {
        return Some(ns);
    }
    let s = s.strip_suffix('Z').unwrap_or(s);
    let at = s.rfind(['+', '-']).filter(|&p| p > 10)?;
    let (local, offset) = s.split_at(at);
    let ns = zepto_storage::time::parse_timestamp(local.trim())?;
    let sign: i64 = if offset.starts_with('-') { -1 } else { 1 };
    let digits: String = offset.get(1..)?.chars().filter(char::is_ascii_digit).collect();
    let (h, m) = match digits.len() {
        2 => (digits.parse::<i64>().ok()?, 0),
        4 => (digits.get(..2)?.parse::<i64>().ok()?, digits.get(2..)?.parse::<i64>().ok()?),
        _ => return None,
    };
    ns.checked_sub(sign * (h * 3600 + m * 60) * 1_000_000_000)
}

/// `{1,2.5,-3}` (or `[1,2.5,-3]`).
fn text_vector(s: &str) -> Option<Vec<f32>> {
    let inner = s.trim().strip_prefix(['{', '['])?.strip_suffix(['}', ']'])?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    inner.split(',').map(|x| x.trim().parse::<f32>().ok().filter(|f| f.is_finite())).collect()
}

/// A binary one-dimensional `float4[]` or `float8[]` without NULLs.
fn binary_vector(v: &[u8]) -> Option<Vec<f32>> {
    let word = |at: usize| v.get(at..at + 4).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes);
    let (ndim, elem) = (word(0)?, word(8)?);
    if ndim == 0 {
        return Some(Vec::new());
    }
    let len = usize::try_from(word(12)?).ok()?;
    let width = match elem {
        700 => 4,
        701 => 8,
        _ => return None,
    };
    if ndim != 1 {
        return None;
    }
    let mut out = Vec::with_capacity(len.min(65_535));
    let mut at = 20usize;
    for _ in 0..len {
        if word(at)? != width {
            return None;
        }
        let bytes = v.get(at + 4..at + 4 + width as usize)?;
        out.push(match width {
            4 => f32::from_be_bytes(bytes.try_into().ok()?),
            _ => f64::from_be_bytes(bytes.try_into().ok()?) as f32,
        });
        at += 4 + width as usize;
    }
    Some(out)
}

/// A binary `interval` (microseconds, days, months) as interval text; `None` with months
/// (whose length in time depends on the date).
fn binary_interval(v: &[u8]) -> Option<String> {
    let us = i64::from_be_bytes(v.get(..8)?.try_into().ok()?);
    let days = i32::from_be_bytes(v.get(8..12)?.try_into().ok()?);
    let months = i32::from_be_bytes(v.get(12..16)?.try_into().ok()?);
    if months != 0 || v.len() != 16 {
        return None;
    }
    let total = i64::from(days).checked_mul(86_400_000_000)?.checked_add(us)?;
    Some(format!("{total} microseconds"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_decode_from_text_and_binary() {
        let t = |ty: &Type, s: &str| decode(0, ty, Some(s.as_bytes()), false).expect(s);
        assert_eq!(t(&Type::INT8, "42"), ParamValue::Int(42));
        assert_eq!(t(&Type::UNKNOWN, "IBM"), ParamValue::Str("IBM".into()));
        assert_eq!(t(&Type::BOOL, "t"), ParamValue::Bool(true));
        let ns = 1_704_067_200_000_000_000;
        assert_eq!(t(&Type::TIMESTAMPTZ, "2024-01-01 00:00:00+00"), ParamValue::Timestamp(ns));
        assert_eq!(t(&Type::TIMESTAMPTZ, "2024-01-01 05:30:00+05:30"), ParamValue::Timestamp(ns));
        assert_eq!(t(&Type::TIMESTAMP, "2024-01-01T00:00:00"), ParamValue::Timestamp(ns));
        assert_eq!(t(&Type::FLOAT4_ARRAY, "{1,2.5,-3}"), ParamValue::Vector(vec![1.0, 2.5, -3.0]));
        let b = |ty: &Type, v: &[u8]| decode(0, ty, Some(v), true);
        assert_eq!(b(&Type::INT2, &5i16.to_be_bytes()).expect("int2"), ParamValue::Int(5));
        assert_eq!(b(&Type::FLOAT8, &1.5f64.to_be_bytes()).expect("f8"), ParamValue::Float(1.5));
        let us = (ns / 1000 - 946_684_800_000_000).to_be_bytes();
        assert_eq!(b(&Type::TIMESTAMP, &us).expect("ts"), ParamValue::Timestamp(ns));
        assert!(b(&Type::INT8, &[1, 2]).is_err(), "a wrong length is an error, not a panic");
        assert_eq!(decode(0, &Type::INT8, None, true).expect("null"), ParamValue::Null);
        let mut arr = Vec::new();
        for w in [1i32, 0, 700, 2, 1] {
            arr.extend(w.to_be_bytes());
        }
        for x in [1.0f32, 2.0] {
            arr.extend(4i32.to_be_bytes());
            arr.extend(x.to_be_bytes());
        }
        assert_eq!(b(&Type::FLOAT4_ARRAY, &arr).expect("vector"), ParamValue::Vector(vec![1.0, 2.0]));
        assert!(b(&Type::FLOAT4_ARRAY, &arr[..30]).is_err());
        assert!(is_binary(&Format::Individual(vec![1]), 3), "one code applies to all");
        assert!(!is_binary(&Format::Individual(vec![1, 0]), 5));
    }
}
