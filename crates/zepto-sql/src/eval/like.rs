//! LIKE / ILIKE: `%` matches any run of characters, `_` exactly one; `\` escapes. SYMBOL
//! columns are matched once per dictionary entry.

use super::{and_validity, Opnd};
use crate::error::Result;
use zepto_storage::{Column, ColumnData, Value};

/// `like_escape(pattern, esc)` over `n` rows of `cols` (NULL in, NULL out).
pub fn escape_column(cols: &[std::borrow::Cow<'_, Column>], n: usize) -> Result<Column> {
    let mut out = zepto_storage::StrVec::with_capacity(n, n * 8);
    let mut valid = zepto_storage::Bitmap::new_set(n);
    for i in 0..n {
        match (cols.first().and_then(|c| c.str_at(i)), cols.get(1).and_then(|c| c.str_at(i))) {
            (Some(p), Some(esc)) => out.push(&with_backslash_escape(p, esc)?),
            _ => {
                out.push("");
                valid.set(i, false);
            }
        }
    }
    Ok(Column::new(ColumnData::Varchar(out), Some(valid)))
}

/// `pattern` written with escape character `esc` (SQL's `ESCAPE 'c'`; empty: none) rewritten
/// with LIKE's own escape, the backslash: `esc` + c becomes `\c`, a backslash becomes `\\`.
pub fn with_backslash_escape(pattern: &str, esc: &str) -> Result<String> {
    let mut esc_chars = esc.chars();
    let esc = match (esc_chars.next(), esc_chars.next()) {
        (e, None) => e,
        _ => return Err(crate::error::SqlError::exec(format!("ESCAPE takes one character, not '{esc}'"))),
    };
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == esc {
            let next = chars.next().ok_or_else(|| {
                crate::error::SqlError::exec(format!("LIKE pattern '{pattern}' ends with its escape character"))
            })?;
            out.push('\\');
            out.push(next);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Iterative wildcard match with single-star backtracking: O(len(s) * len(p)) worst case.
pub fn like_match(s: &str, p: &str, ci: bool) -> bool {
    let norm = |x: &str| -> Vec<char> {
        if ci {
            x.chars().flat_map(char::to_lowercase).collect()
        } else {
            x.chars().collect()
        }
    };
    let (s, p) = (norm(s), norm(p));
    // Tokens: Some(c) literal, None for '_' ; '%' handled as star.
    #[derive(Clone, Copy, PartialEq)]
    enum T {
        Lit(char),
        Any,
        Star,
    }
    let mut toks = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            '\\' if i + 1 < p.len() => {
                toks.push(T::Lit(p[i + 1]));
                i += 1;
            }
            '%' => toks.push(T::Star),
            '_' => toks.push(T::Any),
            c => toks.push(T::Lit(c)),
        }
        i += 1;
    }
    let (mut si, mut pi) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while si < s.len() {
        match toks.get(pi) {
            Some(T::Lit(c)) if *c == s[si] => {
                si += 1;
                pi += 1;
            }
            Some(T::Any) => {
                si += 1;
                pi += 1;
            }
            Some(T::Star) => {
                star = Some(pi);
                mark = si;
                pi += 1;
            }
            _ => match star {
                Some(sp) => {
                    pi = sp + 1;
                    mark += 1;
                    si = mark;
                }
                None => return false,
            },
        }
    }
    toks[pi..].iter().all(|t| *t == T::Star)
}

pub fn like(x: &Column, p: Opnd, negated: bool, ci: bool, n: usize) -> Result<Column> {
    let validity = and_validity(x.validity(), p.validity(n).as_ref());
    let v: Vec<bool> = match &p {
        Opnd::Lit(Value::Str(pat)) => match &x.data() {
            ColumnData::Symbol { codes, dict } => {
                let table: Vec<bool> = dict.iter().map(|s| like_match(s, pat, ci) != negated).collect();
                codes.iter().map(|&c| table.get(c as usize).copied().unwrap_or(false)).collect()
            }
            _ => (0..n).map(|i| x.str_at(i).is_some_and(|s| like_match(s, pat, ci) != negated)).collect(),
        },
        Opnd::Col(pc) => (0..n)
            .map(|i| match (x.str_at(i), pc.str_at(i)) {
                (Some(s), Some(pat)) => like_match(s, pat, ci) != negated,
                _ => false,
            })
            .collect(),
        Opnd::Lit(_) => vec![false; n],
    };
    Ok(Column::new(ColumnData::Bool(v.into()), validity))
}

#[cfg(test)]
mod tests {
    use super::like_match;

    #[test]
    fn wildcards() {
        assert!(like_match("hello", "h%o", false));
        assert!(like_match("hello", "h_llo", false));
        assert!(!like_match("hello", "h_lo", false));
        assert!(like_match("", "%", false));
        assert!(like_match("a%b", "a\\%b", false));
        assert!(like_match("HeLLo", "hello", true));
        assert!(like_match("abcabc", "%abc", false));
        assert!(!like_match("abc", "", false));
    }
}
