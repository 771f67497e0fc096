//! Tokenizer: identifiers, quoted identifiers, string and number literals, operators. Every
//! token carries its position so errors can point at line and column.

use crate::error::{Pos, Result, SqlError};

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Bare word as written (keywords are matched case-insensitively by the parser).
    Ident(String),
    /// `"quoted identifier"`.
    QIdent(String),
    /// `'string'` with `''` unescaped.
    Str(String),
    /// Numeric literal text.
    Num(String),
    /// Operator or punctuation.
    Op(&'static str),
    /// A query parameter: `$n` (n as written) or `?` (numbered left to right from 1).
    Param(usize),
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

const OPS: [&str; 24] = [
    "::", "<=", ">=", "<>", "!=", "||", "//", "==", "(", ")", ",", ".", ";", "+", "-", "*", "/", "%", "<", ">", "=",
    "[", "]", ":",
];

/// Line and column of byte offsets visited in increasing order. The column is counted on from
/// the last offset asked for, never from the start of the line, so a whole pass over a
/// one-line script of any length is linear (a 1M-item IN list is one line).
struct Lines<'a> {
    sql: &'a str,
    line: u32,
    /// Offset of the last position asked for, and its column.
    at: usize,
    column: u32,
}

impl<'a> Lines<'a> {
    fn new(sql: &'a str) -> Lines<'a> {
        Lines { sql, line: 1, at: 0, column: 1 }
    }

    /// A line starts at offset `start` (just after a newline).
    fn newline(&mut self, start: usize) {
        self.line += 1;
        self.at = start;
        self.column = 1;
    }

    fn pos(&mut self, offset: usize) -> Pos {
        debug_assert!(offset >= self.at, "positions are asked for in increasing order");
        let gap = self.sql.get(self.at..offset).map_or(0, |s| s.chars().count());
        self.column = self.column.saturating_add(u32::try_from(gap).unwrap_or(u32::MAX));
        self.at = offset;
        Pos { offset, line: self.line, column: self.column }
    }
}

/// How often (in tokens) the lexer asks whether it should stop.
const CHECK_EVERY_TOKENS: usize = 1 << 14;

/// Split `sql` into tokens. `interrupt` is asked every few thousand tokens whether to stop
/// (deadline, cancellation, memory): a long script is stopped while it is being read.
pub fn tokenize(sql: &str, interrupt: &dyn Fn() -> Result<()>) -> Result<Vec<Token>> {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0usize;
    let mut lines = Lines::new(sql);
    let (mut anonymous, mut numbered) = (0usize, false);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            i += 1;
            lines.newline(i);
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let start = lines.pos(i);
            i += 2;
            loop {
                if i + 1 >= b.len() {
                    return Err(SqlError::Parse { message: "unterminated comment".into(), pos: start });
                }
                if b[i] == b'*' && b[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                if b[i] == b'\n' {
                    lines.newline(i + 1);
                }
                i += 1;
            }
            continue;
        }
        if out.len() % CHECK_EVERY_TOKENS == CHECK_EVERY_TOKENS - 1 {
            interrupt()?;
        }
        let pos = lines.pos(i);
        if c == b'\'' || c == b'"' {
            let quote = c;
            let mut s = String::new();
            i += 1;
            let mut seg = i;
            loop {
                if i >= b.len() {
                    let what = if quote == b'\'' { "string literal" } else { "quoted identifier" };
                    return Err(SqlError::Parse { message: format!("unterminated {what}"), pos });
                }
                if b[i] == quote {
                    s.push_str(&sql[seg..i]);
                    if b.get(i + 1) == Some(&quote) {
                        s.push(quote as char);
                        i += 2;
                        seg = i;
                        continue;
                    }
                    i += 1;
                    break;
                }
                if b[i] == b'\n' {
                    lines.newline(i + 1);
                }
                i += 1;
            }
            out.push(Token { tok: if quote == b'\'' { Tok::Str(s) } else { Tok::QIdent(s) }, pos });
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i < b.len() && b[i] == b'.' && b.get(i + 1) != Some(&b'.') {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let save = i;
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                if i < b.len() && b[i].is_ascii_digit() {
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                } else {
                    i = save;
                }
            }
            if i < b.len() && (b[i].is_ascii_alphabetic() || b[i] == b'_') {
                // `1h`, `500ms` style durations are a number immediately followed by a word:
                // keep the number; the parser decides.
            }
            out.push(Token { tok: Tok::Num(sql[start..i].to_string()), pos });
            continue;
        }
        if c == b'?' || (c == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let n = if c == b'?' {
                i += 1;
                anonymous += 1;
                anonymous
            } else {
                let start = i + 1;
                i = start;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                numbered = true;
                match sql[start..i].parse::<usize>() {
                    Ok(n) if n >= 1 => n,
                    _ => {
                        return Err(SqlError::Parse { message: format!("bad parameter '{}'", &sql[start - 1..i]), pos })
                    }
                }
            };
            if numbered && anonymous > 0 {
                return Err(SqlError::Parse { message: "mix of '?' and '$n' parameters".into(), pos });
            }
            out.push(Token { tok: Tok::Param(n), pos });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$' || b[i] >= 0x80) {
                i += 1;
            }
            out.push(Token { tok: Tok::Ident(sql[start..i].to_string()), pos });
            continue;
        }
        match OPS.iter().find(|op| sql[i..].starts_with(**op)) {
            Some(op) => {
                i += op.len();
                out.push(Token { tok: Tok::Op(op), pos });
            }
            None => {
                let ch = sql[i..].chars().next().unwrap_or('?');
                return Err(SqlError::Parse { message: format!("unexpected character '{ch}'"), pos });
            }
        }
    }
    out.push(Token { tok: Tok::Eof, pos: lines.pos(b.len()) });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_kinds() {
        let t = tokenize("SELECT a,\n  'it''s' -- c\n  >= 1.5e3", &|| Ok(())).expect("lexes");
        assert_eq!(t[0].tok, Tok::Ident("SELECT".into()));
        assert_eq!(t[3].tok, Tok::Str("it's".into()));
        assert_eq!((t[3].pos.line, t[3].pos.column), (2, 3));
        assert_eq!(t[4].tok, Tok::Op(">="));
        assert_eq!(t[5].tok, Tok::Num("1.5e3".into()));
        assert!(tokenize("'open", &|| Ok(())).is_err());
        assert!(tokenize("a @ b", &|| Ok(())).is_err());
        assert!(tokenize("a ? $1", &|| Ok(())).is_err());
        let t = tokenize("x = ? AND y = ?", &|| Ok(())).expect("lexes");
        assert_eq!((t[2].tok.clone(), t[6].tok.clone()), (Tok::Param(1), Tok::Param(2)));
    }
}
