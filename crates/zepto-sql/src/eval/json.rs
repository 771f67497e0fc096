//! PostgreSQL's JSON constructors, `json_build_object(k, v, ...)` and `json_build_array(v,
//! ...)`: each row's arguments written as one JSON text (keys as strings, numbers and
//! booleans bare, NULL as `null`, other values as their text, quoted). The result is text
//! holding JSON; there is no JSON column type, and the PostgreSQL door sends it as `json`
//! would be sent in text format.

use crate::error::{Result, SqlError};
use std::borrow::Cow;
use std::fmt::Write;
use zepto_storage::{Column, ColumnData, StrVec, Value};

/// `json_build_object` over `n` rows of `cols` (alternating keys and values; a NULL key is
/// an error, as in PostgreSQL).
pub fn build_object(cols: &[Cow<'_, Column>], n: usize) -> Result<Column> {
    if !cols.len().is_multiple_of(2) {
        return Err(SqlError::exec("json_build_object: an odd number of arguments (keys and values pair up)"));
    }
    let mut out = StrVec::with_capacity(n, n * 16 * cols.len().max(1));
    let mut buf = String::new();
    for i in 0..n {
        buf.clear();
        buf.push('{');
        for (k, pair) in cols.chunks_exact(2).enumerate() {
            let [key, value] = pair else { continue };
            let Some(name) = key.str_at(i) else {
                return Err(SqlError::exec(format!("json_build_object: argument {} (a key) is NULL", 2 * k + 1)));
            };
            if k > 0 {
                buf.push_str(", ");
            }
            quote(&mut buf, name);
            buf.push_str(" : ");
            write_value(&mut buf, &value.get(i));
        }
        buf.push('}');
        out.push(&buf);
    }
    Ok(Column::new(ColumnData::Varchar(out), None))
}

/// `json_build_array` over `n` rows of `cols`.
pub fn build_array(cols: &[Cow<'_, Column>], n: usize) -> Column {
    let mut out = StrVec::with_capacity(n, n * 8 * cols.len().max(1));
    let mut buf = String::new();
    for i in 0..n {
        buf.clear();
        buf.push('[');
        for (k, c) in cols.iter().enumerate() {
            if k > 0 {
                buf.push_str(", ");
            }
            write_value(&mut buf, &c.get(i));
        }
        buf.push(']');
        out.push(&buf);
    }
    Column::new(ColumnData::Varchar(out), None)
}

/// One value as JSON: numbers bare (a non-finite float as its quoted text, which JSON has no
/// number for), booleans and NULL as words, anything else as its text, quoted.
fn write_value(buf: &mut String, v: &Value) {
    match v {
        Value::Null => buf.push_str("null"),
        Value::Bool(b) => buf.push_str(if *b { "true" } else { "false" }),
        Value::Int32(x) => {
            let _ = write!(buf, "{x}");
        }
        Value::Int64(x) => {
            let _ = write!(buf, "{x}");
        }
        Value::Float32(x) if x.is_finite() => {
            let _ = write!(buf, "{v}");
        }
        Value::Float64(x) if x.is_finite() => {
            let _ = write!(buf, "{v}");
        }
        Value::Str(s) => quote(buf, s),
        other => quote(buf, &other.to_string()),
    }
}

/// `s` as a JSON string.
fn quote(buf: &mut String, s: &str) {
    buf.push('"');
    for c in s.chars() {
        match c {
            '"' => buf.push_str("\\\""),
            '\\' => buf.push_str("\\\\"),
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(buf, "\\u{:04x}", u32::from(c));
            }
            c => buf.push(c),
        }
    }
    buf.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(vals: Vec<Value>) -> Cow<'static, Column> {
        let dt =
            vals.iter().map(Value::data_type).find(|t| *t != zepto_storage::DataType::Null).expect("a typed value");
        let mut b = zepto_storage::ColumnBuilder::new(dt, vals.len());
        for v in &vals {
            b.push_value(v).expect("push");
        }
        Cow::Owned(b.finish())
    }

    #[test]
    fn objects_and_arrays_are_json() {
        let k = col(vec![Value::Str("a".into()), Value::Str("b\"".into())]);
        let v = col(vec![Value::Int64(1), Value::Null]);
        let s = col(vec![Value::Str("x\ny".into()), Value::Str("é".into())]);
        let key = col(vec![Value::Str("s".into()), Value::Str("s".into())]);
        let o = build_object(&[k.clone(), v.clone(), key, s.clone()], 2).expect("pairs");
        assert_eq!(o.str_at(0), Some(r#"{"a" : 1, "s" : "x\ny"}"#));
        assert_eq!(o.str_at(1), Some(r#"{"b\"" : null, "s" : "é"}"#));
        let a = build_array(&[v, s], 2);
        assert_eq!(a.str_at(0), Some(r#"[1, "x\ny"]"#));
        assert!(build_object(&[k], 2).is_err());
    }
}
