//! Regular-expression matching (`regexp_matches`, PostgreSQL's `~` and `~*`), with the
//! `regex` crate: time linear in the text whatever the pattern, so no pattern a client sends
//! can stall a query. A pattern is compiled once for the rows that share it (the usual case,
//! a constant, is compiled once per batch).

use crate::error::{Result, SqlError};
use regex::{Regex, RegexBuilder};
use zepto_storage::{Bitmap, Column, ColumnData};

/// The most a compiled pattern may take.
const PATTERN_BYTES: usize = 1 << 20;

/// `regexp_matches(s, pattern[, options])` over `n` rows of `cols` (NULL in, NULL out).
pub fn matches(cols: &[std::borrow::Cow<'_, Column>], n: usize) -> Result<Column> {
    let mut valid = Bitmap::new_set(n);
    let mut out = Vec::with_capacity(n);
    let mut last: Option<(String, String, Regex)> = None;
    for i in 0..n {
        let s = cols.first().and_then(|c| c.str_at(i));
        let p = cols.get(1).and_then(|c| c.str_at(i));
        let flags = cols.get(2).map_or(Some(""), |c| c.str_at(i));
        let (Some(s), Some(p), Some(flags)) = (s, p, flags) else {
            valid.set(i, false);
            out.push(false);
            continue;
        };
        let reuse = last.as_ref().is_some_and(|(lp, lf, _)| lp == p && lf == flags);
        if !reuse {
            last = Some((p.to_string(), flags.to_string(), compile(p, flags)?));
        }
        out.push(last.as_ref().is_some_and(|(_, _, re)| re.is_match(s)));
    }
    Ok(Column::new(ColumnData::Bool(out.into()), Some(valid)))
}

/// `pattern` compiled under `flags` (`i`: ignore case, `c`: respect it, `s`/`n`/`m`: `.`
/// and anchors across lines as PostgreSQL's).
fn compile(pattern: &str, flags: &str) -> Result<Regex> {
    let mut b = RegexBuilder::new(pattern);
    b.size_limit(PATTERN_BYTES).dfa_size_limit(PATTERN_BYTES);
    for f in flags.chars() {
        match f {
            'i' => b.case_insensitive(true),
            'c' => b.case_insensitive(false),
            's' => b.dot_matches_new_line(true),
            'n' | 'm' => b.multi_line(true),
            'g' => &mut b,
            other => return Err(SqlError::exec(format!("regexp_matches: unknown option '{other}'"))),
        };
    }
    b.build().map_err(|e| SqlError::exec(format!("invalid regular expression '{pattern}': {e}")))
}
