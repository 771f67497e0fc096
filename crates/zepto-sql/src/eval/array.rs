//! PostgreSQL arrays as ZeptoDB holds them: a VARCHAR of PostgreSQL's array text
//! (`{1,2}`, `{a,"b c",NULL}`), one dimension, its element type known to the binder
//! ([`crate::plan::Field::array_of`]) rather than to the value. The catalogs' `int2vector` and
//! `oidvector` columns (`pg_index.indkey`) hold PostgreSQL's text of those instead: the items
//! separated by spaces. ZeptoDB has no array column type; arrays exist for the catalogs and
//! the functions PostgreSQL clients call on them (`unnest`, `generate_subscripts`,
//! `array_to_string`, `ARRAY[...]`, `a[i]`).
//!
//! Reading accepts both texts; writing always gives the `{...}` form, quoting an item as
//! PostgreSQL's `array_out` does.

use crate::error::{Result, SqlError};
use crate::expr::functions::ScalarFunc;
use crate::parser::ast::BinaryOp;
use std::borrow::Cow;
use zepto_storage::{Bitmap, Column, ColumnData, DataType, StrVec, Value};

/// The items of array text `text` (`None` for a NULL item): `{...}` array text, or the
/// space-separated text of a vector type. A nested array, or text that is neither, is an
/// error naming the byte offset.
pub fn parse(text: &str) -> Result<Vec<Option<String>>> {
    let t = text.trim();
    // `[1:2]={a,b}`: explicit bounds, which only shift subscripts; the items are the same.
    let t = match t.strip_prefix('[') {
        Some(_) => t.split_once('=').map_or(t, |(_, r)| r.trim_start()),
        None => t,
    };
    let Some(body) = t.strip_prefix('{') else {
        return Ok(t.split_ascii_whitespace().map(|s| Some(s.to_string())).collect());
    };
    let bad =
        |at: usize, what: &str| SqlError::Execution(format!("malformed array literal {text:?} at offset {at}: {what}"));
    let mut items = Vec::new();
    let mut chars = body.char_indices().peekable();
    let mut expect_item = true;
    loop {
        let Some((at, c)) = chars.next() else {
            return Err(bad(text.len(), "no closing '}'"));
        };
        match c {
            '}' if items.is_empty() || !expect_item => {
                return match chars.find(|(_, c)| !c.is_whitespace()) {
                    Some((i, _)) => Err(bad(i + 1, "text after the closing '}'")),
                    None => Ok(items),
                };
            }
            ',' if !expect_item => expect_item = true,
            c if c.is_whitespace() => {}
            '{' => return Err(bad(at, "multidimensional arrays are not supported")),
            '}' | ',' => return Err(bad(at, "an empty item")),
            '"' if expect_item => {
                let mut item = String::new();
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => item.extend(chars.next().map(|(_, c)| c)),
                        Some((_, c)) => item.push(c),
                        None => return Err(bad(text.len(), "an unterminated quoted item")),
                    }
                }
                items.push(Some(item));
                expect_item = false;
            }
            c if expect_item => {
                let mut item = String::from(c);
                while let Some(&(_, n)) = chars.peek() {
                    if n == ',' || n == '}' {
                        break;
                    }
                    item.push(n);
                    chars.next();
                }
                let item = item.trim_end();
                items.push((!item.eq_ignore_ascii_case("null")).then(|| item.to_string()));
                expect_item = false;
            }
            _ => return Err(bad(at, "expected ',' or '}'")),
        }
    }
}

/// Append `item` to array text being written (the caller writes the braces and commas):
/// bare when it can be, else quoted with `"` and `\` escaped; `None` as `NULL`.
pub fn push_item(buf: &mut String, item: Option<&str>) {
    let Some(item) = item else {
        buf.push_str("NULL");
        return;
    };
    let plain = !item.is_empty()
        && !item.eq_ignore_ascii_case("null")
        && !item.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if plain {
        buf.push_str(item);
        return;
    }
    buf.push('"');
    for c in item.chars() {
        if matches!(c, '"' | '\\') {
            buf.push('\\');
        }
        buf.push(c);
    }
    buf.push('"');
}

/// The array text of `items`.
pub fn format<'a>(items: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut buf = String::from("{");
    for (k, item) in items.into_iter().enumerate() {
        if k > 0 {
            buf.push(',');
        }
        push_item(&mut buf, item);
    }
    buf.push('}');
    buf
}

/// A text column of `n` rows from `f` (`None` is NULL).
fn text_map(_: &[Cow<'_, Column>], n: usize, mut f: impl FnMut(usize) -> Option<String>) -> Column {
    let mut out = StrVec::with_capacity(n, n * 8);
    let mut valid = Bitmap::new_set(n);
    for r in 0..n {
        match f(r) {
            Some(s) => out.push(&s),
            None => {
                valid.set(r, false);
                out.push("");
            }
        }
    }
    Column::new(ColumnData::Varchar(out), Some(valid))
}

/// `string_to_array(s, sep, null_text)` of one row.
fn string_to_array(s: &str, sep: Option<&str>, null_text: Option<&str>) -> String {
    if s.is_empty() {
        return "{}".to_string();
    }
    let parts: Vec<String> = match sep {
        None => s.chars().map(String::from).collect(),
        Some("") => vec![s.to_string()],
        Some(d) => s.split(d).map(str::to_string).collect(),
    };
    format(parts.iter().map(|p| Some(p.as_str()).filter(|p| Some(*p) != null_text)))
}

/// PostgreSQL's reserved words: `quote_ident` quotes them.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "system_user",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

/// `quote_ident(s)` of one value.
pub fn quote_ident(s: &str) -> String {
    let mut chars = s.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        && !RESERVED.contains(&s);
    if plain {
        return s.to_string();
    }
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// `parse_ident(s)` of one value: its parts as array text, or an error naming the offset.
fn parse_ident(s: &str) -> Result<String> {
    let bad = |at: usize, what: &str| {
        SqlError::Execution(format!("string is not a valid identifier: {s:?} at offset {at}: {what}"))
    };
    let mut parts = Vec::new();
    let mut it = s.char_indices().peekable();
    loop {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        let mut part = String::new();
        match it.peek().copied() {
            Some((_, '"')) => {
                it.next();
                loop {
                    match it.next() {
                        Some((_, '"')) if it.next_if(|(_, c)| *c == '"').is_some() => part.push('"'),
                        Some((_, '"')) => break,
                        Some((_, c)) => part.push(c),
                        None => return Err(bad(s.len(), "an unclosed quote")),
                    }
                }
                if part.is_empty() {
                    return Err(bad(s.len(), "an empty quoted identifier"));
                }
            }
            _ => {
                while let Some((_, c)) = it.next_if(|(_, c)| c.is_alphanumeric() || *c == '_' || *c == '$') {
                    part.extend(c.to_lowercase());
                }
                if part.is_empty() {
                    return Err(bad(it.peek().map_or(s.len(), |p| p.0), "no identifier"));
                }
            }
        }
        parts.push(part);
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
        match it.next() {
            None => return Ok(format(parts.iter().map(|p| Some(p.as_str())))),
            Some((_, '.')) => {}
            Some((at, _)) => return Err(bad(at, "expected '.'")),
        }
    }
}

/// The array functions over evaluated argument columns `c` of `n` rows.
pub(super) fn call(f: ScalarFunc, c: &[Cow<'_, Column>], n: usize) -> Result<Column> {
    match f {
        ScalarFunc::ArrayToString => array_to_string_column(c, n),
        ScalarFunc::ArraySubscript => array_subscript_column(c, n),
        ScalarFunc::ArrayValue => Ok(array_value_column(c, n)),
        ScalarFunc::ArrayCat => array_cat_column(c, n),
        ScalarFunc::ArrayBound { upper, dim } => array_bound_column(c, n, upper, dim),
        ScalarFunc::Quantified { op, any } => quantified_column(c, n, op, any),
        ScalarFunc::StringToArray => Ok(text_map(c, n, |r| {
            let text = |k: usize| c.get(k).and_then(|x| x.str_at(r).filter(|_| x.is_valid(r)));
            text(0).map(|s| string_to_array(s, text(1), text(2)))
        })),
        ScalarFunc::ParseIdent => {
            let mut bad = None;
            let out = text_map(c, n, |r| {
                let s = c[0].str_at(r).filter(|_| c[0].is_valid(r))?;
                parse_ident(s).map_err(|e| bad = Some(e)).ok()
            });
            bad.map_or(Ok(out), Err)
        }
        ScalarFunc::QuoteIdent => Ok(text_map(c, n, |r| c[0].str_at(r).filter(|_| c[0].is_valid(r)).map(quote_ident))),
        f => Err(SqlError::Internal(format!("{f:?} is not an array function"))),
    }
}

/// `array_to_string(a, sep [, null_text])` row by row (NULL when the array or separator is).
fn array_to_string_column(c: &[Cow<'_, Column>], n: usize) -> Result<Column> {
    let mut out = StrVec::with_capacity(n, n * 8);
    let mut valid = Bitmap::new_set(n);
    for r in 0..n {
        let text = |k: usize| c.get(k).and_then(|x| x.str_at(r).filter(|_| x.is_valid(r)));
        let (Some(a), Some(sep)) = (text(0), text(1)) else {
            valid.set(r, false);
            out.push("");
            continue;
        };
        let items = parse(a)?;
        let shown = items.iter().filter_map(|i| i.as_deref().or(text(2)));
        out.push(&shown.collect::<Vec<_>>().join(sep));
    }
    Ok(Column::new(ColumnData::Varchar(out), Some(valid)))
}

/// `x op ANY|ALL (a)` row by row: each item of `a` read as `x`'s type and compared,
/// three-valued (a NULL `x` or item is unknown unless another item decides).
fn quantified_column(c: &[Cow<'_, Column>], n: usize, op: BinaryOp, any: bool) -> Result<Column> {
    let ty = c[0].data_type();
    let mut out = Vec::with_capacity(n);
    let mut valid = Bitmap::new_set(n);
    for r in 0..n {
        let Some(text) = c[1].str_at(r).filter(|_| c[1].is_valid(r)) else {
            valid.set(r, false);
            out.push(false);
            continue;
        };
        let x = c[0].get(r);
        let mut unknown = false;
        let mut decided = false;
        for item in parse(text)? {
            let v = match item {
                Some(s) if ty == DataType::Varchar => Some(Value::Str(s)),
                Some(s) => Some(
                    super::cast::parse_value(&s, ty)
                        .ok_or_else(|| SqlError::exec(format!("array item {s:?} is not a {ty}")))?,
                ),
                None => None,
            };
            match v.as_ref().and_then(|v| same_type_cmp(&x, v)) {
                Some(ord) if op_holds(op, ord) == any => {
                    decided = true;
                    break;
                }
                Some(_) => {}
                None => unknown = true,
            }
        }
        let result = if decided { any } else { !any };
        valid.set(r, decided || !unknown);
        out.push(result);
    }
    Ok(Column::new(ColumnData::Bool(out.into()), Some(valid)))
}

/// `array_upper`, `array_lower` and `cardinality` row by row.
fn array_bound_column(c: &[Cow<'_, Column>], n: usize, upper: bool, dim: bool) -> Result<Column> {
    let mut out = Vec::with_capacity(n);
    let mut valid = Bitmap::new_set(n);
    for r in 0..n {
        let text = c[0].str_at(r).filter(|_| c[0].is_valid(r));
        let first_dim = !dim || c.get(1).is_some_and(|d| d.get(r).as_i64() == Some(1));
        let v = match text {
            Some(t) if first_dim => {
                let len = i32::try_from(parse(t)?.len()).unwrap_or(i32::MAX);
                match (dim, len, upper) {
                    (false, len, _) => Some(len),
                    (true, 0, _) => None,
                    (true, len, true) => Some(len),
                    (true, _, false) => Some(1),
                }
            }
            _ => None,
        };
        valid.set(r, v.is_some());
        out.push(v.unwrap_or(0));
    }
    Ok(Column::new(ColumnData::Int32(out.into()), Some(valid)))
}

/// Whether `op` holds for two values ordered `ord`.
fn op_holds(op: BinaryOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match op {
        BinaryOp::Eq => ord == Equal,
        BinaryOp::NotEq => ord != Equal,
        BinaryOp::Lt => ord == Less,
        BinaryOp::LtEq => ord != Greater,
        BinaryOp::Gt => ord == Greater,
        _ => ord != Less,
    }
}

/// The order of two values of one type; `None` when either is NULL (or they differ in type).
fn same_type_cmp(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Int32(x), Value::Int32(y)) | (Value::Date(x), Value::Date(y)) => Some(x.cmp(y)),
        (Value::Int64(x), Value::Int64(y)) | (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        (Value::Int64(x), Value::Interval(y)) | (Value::Interval(x), Value::Int64(y)) => Some(x.cmp(y)),
        (Value::Interval(x), Value::Interval(y)) => Some(x.cmp(y)),
        (Value::Int128(x), Value::Int128(y)) => Some(x.cmp(y)),
        (Value::Float32(x), Value::Float32(y)) => Some(super::sql_order::sql_cmp(*x, *y)),
        (Value::Float64(x), Value::Float64(y)) => Some(super::sql_order::sql_cmp(*x, *y)),
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// `ARRAY[a, b, ...]` row by row: each row's items (NULLs included) as array text.
fn array_value_column(c: &[Cow<'_, Column>], n: usize) -> Column {
    let mut out = StrVec::with_capacity(n, n * 8);
    let mut item = String::new();
    let mut buf = String::new();
    for r in 0..n {
        buf.clear();
        buf.push('{');
        for (k, x) in c.iter().enumerate() {
            if k > 0 {
                buf.push(',');
            }
            if !x.is_valid(r) {
                push_item(&mut buf, None);
                continue;
            }
            item.clear();
            match x.get(r) {
                Value::Bool(v) => item.push(if v { 't' } else { 'f' }),
                Value::Str(s) => item.push_str(&s),
                v => item.push_str(&v.to_string()),
            }
            push_item(&mut buf, Some(&item));
        }
        buf.push('}');
        out.push(&buf);
    }
    Column::new(ColumnData::Varchar(out), None)
}

/// `a || b` of arrays row by row: the items of both; a NULL side counts as empty, NULL when
/// both are (PostgreSQL's `array_cat`).
fn array_cat_column(c: &[Cow<'_, Column>], n: usize) -> Result<Column> {
    let mut out = StrVec::with_capacity(n, n * 8);
    let mut valid = Bitmap::new_set(n);
    for r in 0..n {
        let side = |k: usize| c.get(k).and_then(|x| x.str_at(r).filter(|_| x.is_valid(r)));
        if side(0).is_none() && side(1).is_none() {
            valid.set(r, false);
            out.push("");
            continue;
        }
        let mut items = Vec::new();
        for s in [side(0), side(1)].into_iter().flatten() {
            items.extend(parse(s)?);
        }
        out.push(&format(items.iter().map(Option::as_deref)));
    }
    Ok(Column::new(ColumnData::Varchar(out), Some(valid)))
}

/// `a[i]` row by row: item `i` (from 1) as text; NULL for a NULL array or index, an index
/// past either end, or a NULL item.
fn array_subscript_column(c: &[Cow<'_, Column>], n: usize) -> Result<Column> {
    let mut out = StrVec::with_capacity(n, n * 4);
    let mut valid = Bitmap::new_set(n);
    for r in 0..n {
        let a = c[0].str_at(r).filter(|_| c[0].is_valid(r));
        let i = c[1].get(r).as_i64().and_then(|k| usize::try_from(k).ok()).and_then(|k| k.checked_sub(1));
        let item = match (a, i) {
            (Some(a), Some(i)) => parse(a)?.into_iter().nth(i).flatten(),
            _ => None,
        };
        valid.set(r, item.is_some());
        out.push(item.as_deref().unwrap_or(""));
    }
    Ok(Column::new(ColumnData::Varchar(out), Some(valid)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(t: &str) -> Vec<Option<String>> {
        parse(t).expect(t)
    }

    fn owned(v: &[Option<&str>]) -> Vec<Option<String>> {
        v.iter().map(|o| o.map(String::from)).collect()
    }

    #[test]
    fn array_text_reads_back_what_format_writes() {
        let cases: &[&[Option<&str>]] =
            &[&[], &[Some("a")], &[Some(""), None, Some("NULL"), Some("b c"), Some("x,\"y\"\\z"), Some("{}")]];
        for c in cases {
            let text = format(c.iter().copied());
            assert_eq!(items(&text), owned(c), "{text}");
        }
        assert_eq!(format([Some("a b"), None, Some("1")]), r#"{"a b",NULL,1}"#);
    }

    #[test]
    fn vectors_bounds_and_spacing_are_read() {
        assert_eq!(items("1 2  3"), owned(&[Some("1"), Some("2"), Some("3")]));
        assert!(items("").is_empty() && items("{}").is_empty());
        assert_eq!(items("[0:1]={4,5}"), owned(&[Some("4"), Some("5")]));
        assert_eq!(items("{ a , b }"), owned(&[Some("a"), Some("b")]));
    }

    #[test]
    fn malformed_text_is_an_error_with_its_offset() {
        for bad in ["{a", "{a,b", "{{1}}", "{a}x", "{\"a", "{a,,b}", "{a,}"] {
            let e = parse(bad).expect_err(bad).to_string();
            assert!(e.contains("malformed array literal") && e.contains("offset"), "{bad}: {e}");
        }
    }
}
