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
