//! Tokenizer: identifiers, quoted identifiers, string and number literals, operators. Every
//! token carries its position so errors can point at line and column.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::error::{Pos, Result, SqlError};
use smol_str::SmolStr;

/// One token's kind and text.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// Bare word as written (keywords are matched case-insensitively by the parser).
    Ident(String),
    /// `"quoted identifier"`.
    QIdent(String),
    /// `'string'` with `''` unescaped.
    Str(String),
    /// Numeric literal text, inline (no allocation below 24 bytes).
    Num(SmolStr),
    /// Operator or punctuation.
    Op(&'static str),
    /// A query parameter: `$n` (n as written) or `?` (numbered left to right from 1).
    Param(usize),
    /// `[x, y, ...]` where an expression starts, of signed plain numbers on one line: read at
    /// once (`number_list`), not as a token per number and comma (a 384-number query vector
    /// was a sixth of an ANN query's time). The parser takes it as it takes the tokens.
    Vector(Vec<f64>),
    /// End of input (always the last token).
    Eof,
}

/// A token, where it starts and where it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Where it starts in the text.
    pub pos: Pos,
    /// Byte offset just past its last character (a statement's source text is cut from its
    /// first token's `pos.offset` to its last token's `end`; see `CREATE MATERIALIZED VIEW`).
    pub end: usize,
}

const OPS: [&str; 33] = [
    "!~*", "!~", "~*", "::", "<<", ">>", "<=", ">=", "<>", "!=", "||", "//", "==", "(", ")", ",", ".", ";", "+", "-",
    "*", "/", "%", "<", ">", "=", "[", "]", ":", "~", "&", "|", "#",
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

/// Split `sql` into tokens, all at once (the parser reads them as it goes, through
/// [`Lexer`]). `interrupt` is asked every few thousand tokens whether to stop (deadline,
/// cancellation, memory): a long script is stopped while it is being read.
pub fn tokenize(sql: &str, interrupt: &dyn Fn() -> Result<()>) -> Result<Vec<Token>> {
    let mut lexer = Lexer::new(sql, interrupt);
    let mut out = Vec::new();
    loop {
        let t = lexer.next_token()?;
        let end = t.tok == Tok::Eof;
        out.push(t);
        if end {
            return Ok(out);
        }
    }
}

/// The tokens of a text, one at a time: a statement is parsed as it is read, so its tokens
/// are never all held at once (a 1M-item `IN` list's two million tokens took 112 MB). After
/// the last token, [`Lexer::next_token`] gives `Eof` again and again.
pub struct Lexer<'a> {
    sql: &'a str,
    /// Where the next token is looked for.
    i: usize,
    lines: Lines<'a>,
    /// `?` parameters so far, and whether a `$n` was seen (the two do not mix).
    anonymous: usize,
    numbered: bool,
    /// Tokens handed out so far.
    count: usize,
    /// Whether a `[` here starts an operand (a vector literal), after the token before it
    /// ([`starts_operand`]).
    operand_next: bool,
    interrupt: &'a dyn Fn() -> Result<()>,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `sql`, asking `interrupt` every few thousand tokens.
    pub fn new(sql: &'a str, interrupt: &'a dyn Fn() -> Result<()>) -> Lexer<'a> {
        Lexer {
            sql,
            i: 0,
            lines: Lines::new(sql),
            anonymous: 0,
            numbered: false,
            count: 0,
            operand_next: true,
            interrupt,
        }
    }

    /// The next token (`Eof` at the end and after it).
    pub fn next_token(&mut self) -> Result<Token> {
        self.skip_blank()?;
        if self.count % CHECK_EVERY_TOKENS == CHECK_EVERY_TOKENS - 1 {
            (self.interrupt)()?;
        }
        let t = self.token()?;
        self.count += 1;
        self.operand_next = starts_operand(Some(&t));
        Ok(t)
    }

    /// Past whitespace and comments, counting lines.
    fn skip_blank(&mut self) -> Result<()> {
        let b = self.sql.as_bytes();
        while let Some(&c) = b.get(self.i) {
            if c == b'\n' {
                self.i += 1;
                self.lines.newline(self.i);
            } else if c.is_ascii_whitespace() {
                self.i += 1;
            } else if c == b'-' && b.get(self.i + 1) == Some(&b'-') {
                self.i = skip_while(b, self.i, |c| c != b'\n');
            } else if c == b'/' && b.get(self.i + 1) == Some(&b'*') {
                self.i = block_comment(b, self.i, &mut self.lines)?;
            } else {
                break;
            }
        }
        Ok(())
    }

    /// The token at `self.i` (just past blanks), and move past it.
    fn token(&mut self) -> Result<Token> {
        let (sql, b, i) = (self.sql, self.sql.as_bytes(), self.i);
        let pos = self.lines.pos(i);
        let Some(&c) = b.get(i) else {
            return Ok(Token { tok: Tok::Eof, pos, end: b.len() });
        };
        let (tok, end) = if c == b'\'' || c == b'"' {
            quoted(sql, i, &mut self.lines, pos)?
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            // `1h`, `500ms` style durations are a number immediately followed by a word: the
            // number ends before the word, and the parser decides.
            let end = number_end(b, i);
            (Tok::Num(SmolStr::new(&sql[i..end])), end)
        } else if c == b'?' || (c == b'$' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            self.param(pos)?
        } else if matches!(c, b'E' | b'e') && b.get(i + 1) == Some(&b'\'') {
            escape_string(sql, i + 1, &mut self.lines, pos)?
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let end = skip_while(b, i, |c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80);
            (Tok::Ident(sql[i..end].to_string()), end)
        } else if let Some((v, end)) = (c == b'[' && self.operand_next).then(|| number_list(sql, i)).flatten() {
            (Tok::Vector(v), end)
        } else {
            operator(sql, i, pos)?
        };
        self.i = end;
        Ok(Token { tok, pos, end })
    }

    /// The parameter (`?` or `$n`) at `self.i`, and where it ends.
    fn param(&mut self, pos: Pos) -> Result<(Tok, usize)> {
        let (sql, b, i) = (self.sql, self.sql.as_bytes(), self.i);
        let (n, end) = if b.get(i) == Some(&b'?') {
            self.anonymous += 1;
            (self.anonymous, i + 1)
        } else {
            let end = skip_while(b, i + 1, |c| c.is_ascii_digit());
            self.numbered = true;
            match sql[i + 1..end].parse::<usize>() {
                Ok(n) if n >= 1 => (n, end),
                _ => return Err(SqlError::Parse { message: format!("bad parameter '{}'", &sql[i..end]), pos }),
            }
        };
        if self.numbered && self.anonymous > 0 {
            return Err(SqlError::Parse { message: "mix of '?' and '$n' parameters".into(), pos });
        }
        Ok((Tok::Param(n), end))
    }
}

/// The operator at `i`, and where it ends. The first byte first: most operators are one byte
/// (a comma between each of a long vector's or IN list's numbers), and a `starts_with` per
/// entry is a `memcmp` call.
fn operator(sql: &str, i: usize, pos: Pos) -> Result<(Tok, usize)> {
    let (b, c) = (sql.as_bytes(), sql.as_bytes().get(i).copied());
    let rest = b.get(i..).unwrap_or_default();
    match OPS.iter().find(|op| op.as_bytes().first().copied() == c && rest.starts_with(op.as_bytes())) {
        Some(op) => Ok((Tok::Op(op), i + op.len())),
        None => {
            let ch = sql.get(i..).and_then(|r| r.chars().next()).unwrap_or('?');
            Err(SqlError::Parse { message: format!("unexpected character '{ch}'"), pos })
        }
    }
}

/// The end of the block comment starting at `i` (`/*`), counting its lines.
fn block_comment(b: &[u8], mut i: usize, lines: &mut Lines) -> Result<usize> {
    let at = |i: usize| b.get(i).copied();
    let start = lines.pos(i);
    i += 2;
    loop {
        let (Some(c), Some(next)) = (at(i), at(i + 1)) else {
            return Err(SqlError::Parse { message: "unterminated comment".into(), pos: start });
        };
        if c == b'*' && next == b'/' {
            return Ok(i + 2);
        }
        if c == b'\n' {
            lines.newline(i + 1);
        }
        i += 1;
    }
}

/// The string literal (`'`) or quoted identifier (`"`) starting at `i`, doubled quotes
/// unescaped, and where it ends.
fn quoted(sql: &str, mut i: usize, lines: &mut Lines, pos: Pos) -> Result<(Tok, usize)> {
    let b = sql.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let quote = at(i).unwrap_or(b'\'');
    let mut s = String::new();
    i += 1;
    let mut seg = i;
    loop {
        let Some(c) = at(i) else {
            let what = if quote == b'\'' { "string literal" } else { "quoted identifier" };
            return Err(SqlError::Parse { message: format!("unterminated {what}"), pos });
        };
        if c == quote {
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
        if c == b'\n' {
            lines.newline(i + 1);
        }
        i += 1;
    }
    Ok((if quote == b'\'' { Tok::Str(s) } else { Tok::QIdent(s) }, i))
}

/// PostgreSQL's escape string `E'...'` whose quote is at `i`: backslash escapes (`\n`, `\t`,
/// `\r`, `\b`, `\f`, octal `\101` and hex `\x41` bytes, `\uXXXX` and `\UXXXXXXXX`
/// characters; a backslash before any other character is that character) and doubled quotes
/// undone, and where it ends. The bytes must make UTF-8 text without NUL.
fn escape_string(sql: &str, i: usize, lines: &mut Lines, pos: Pos) -> Result<(Tok, usize)> {
    let b = sql.as_bytes();
    let bad = |what: &str| SqlError::Parse { message: format!("E'...' string: {what}"), pos };
    let mut out: Vec<u8> = Vec::new();
    let mut k = i + 1;
    loop {
        let c = *b.get(k).ok_or_else(|| bad("unterminated"))?;
        k += 1;
        match c {
            b'\'' if b.get(k) == Some(&b'\'') => {
                out.push(b'\'');
                k += 1;
            }
            b'\'' => break,
            b'\\' => {
                let e = *b.get(k).ok_or_else(|| bad("unterminated"))?;
                k += 1;
                match e {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'0'..=b'7' => out.push(escaped_byte(b, &mut k, u32::from(e - b'0'), 8, 2)),
                    b'x' if b.get(k).is_some_and(u8::is_ascii_hexdigit) => out.push(escaped_byte(b, &mut k, 0, 16, 2)),
                    b'u' | b'U' => {
                        let n = if e == b'u' { 4 } else { 8 };
                        let hex = sql.get(k..k + n).filter(|h| h.bytes().all(|d| d.is_ascii_hexdigit()));
                        let ch = hex.and_then(|h| u32::from_str_radix(h, 16).ok()).and_then(char::from_u32);
                        let ch = ch.ok_or_else(|| bad("\\u takes 4 hex digits, \\U 8, naming a character"))?;
                        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                        k += n;
                    }
                    other => out.push(other),
                }
            }
            b'\n' => {
                lines.newline(k);
                out.push(c);
            }
            c => out.push(c),
        }
    }
    if out.contains(&0) {
        return Err(bad("a zero byte is not allowed"));
    }
    let s = String::from_utf8(out).map_err(|_| bad("its escapes do not make UTF-8 text"))?;
    Ok((Tok::Str(s), k))
}

/// The byte of a numeric escape: `v` so far, then up to `more` digits in `radix` at `b[*k..]`.
fn escaped_byte(b: &[u8], k: &mut usize, mut v: u32, radix: u32, more: usize) -> u8 {
    for _ in 0..more {
        match b.get(*k).and_then(|&c| char::from(c).to_digit(radix)) {
            Some(d) => {
                v = v * radix + d;
                *k += 1;
            }
            None => break,
        }
    }
    (v & 0xff) as u8
}

/// The first position from `i` on whose byte fails `keep` (or the end).
fn skip_while(b: &[u8], i: usize, keep: impl Fn(u8) -> bool) -> usize {
    i + b.get(i..).unwrap_or_default().iter().take_while(|&&c| keep(c)).count()
}

/// Whether a `[` after `prev` starts an operand (a vector literal), not a subscript of what
/// comes before it (a column, a `)`, a `]`) or part of a type (`FLOAT[3]`, `ARRAY[`): it does
/// after an operator or punctuation other than `)` and `]`, and at the start.
fn starts_operand(prev: Option<&Token>) -> bool {
    match prev.map(|t| &t.tok) {
        None => true,
        Some(Tok::Op(op)) => !matches!(*op, ")" | "]"),
        Some(_) => false,
    }
}

/// The `[x, y, ...]` at `i` ([`Tok::Vector`]): numbers, each with at most one sign, separated
/// by commas and spaces, and where it ends; `None` for anything else (a newline, a comment, a
/// parameter, an empty or over-long list, a number the tokens would not read the same way),
/// which is then read token by token and the parser says what is wrong.
fn number_list(sql: &str, i: usize) -> Option<(Vec<f64>, usize)> {
    let b = sql.as_bytes();
    let blank = |j: usize| skip_while(b, j, |c| matches!(c, b' ' | b'\t' | b'\r'));
    let mut out = Vec::new();
    let mut j = i + 1;
    loop {
        j = blank(j);
        // One sign (`--` starts a comment: not read here).
        let neg = match b.get(j) {
            Some(b'-') if b.get(j + 1) != Some(&b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        j = blank(j);
        let c = *b.get(j)?;
        if !(c.is_ascii_digit() || (c == b'.' && b.get(j + 1).is_some_and(u8::is_ascii_digit))) {
            return None;
        }
        let end = number_end(b, j);
        let x: f64 = sql.get(j..end)?.parse().ok()?;
        out.push(if neg { -x } else { x });
        if out.len() > zepto_storage::types::MAX_VECTOR_DIM {
            return None;
        }
        j = blank(end);
        match b.get(j)? {
            b',' => j += 1,
            b']' => return Some((out, j + 1)),
            _ => return None,
        }
    }
}

/// Where the number starting at `i` ends: digits, an optional fraction (not `..`), and an
/// optional exponent that has digits (else the `e` is not part of it).
fn number_end(b: &[u8], i: usize) -> usize {
    let digits = |i: usize| skip_while(b, i, |c| c.is_ascii_digit());
    let mut i = digits(i);
    if b.get(i) == Some(&b'.') && b.get(i + 1) != Some(&b'.') {
        i = digits(i + 1);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(b.get(i + 1), Some(b'+' | b'-')));
        if b.get(i + 1 + sign).is_some_and(u8::is_ascii_digit) {
            i = digits(i + 1 + sign);
        }
    }
    i
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
        let sql = "SELECT a,\n  'it''s' -- c\n  >= 1.5e3";
        let spans: Vec<&str> = t.iter().map(|t| &sql[t.pos.offset..t.end]).collect();
        assert_eq!(spans, ["SELECT", "a", ",", "'it''s'", ">=", "1.5e3", ""], "each token's text, start to end");
        let t = tokenize("E'x\\'' \"q\"\"\" $12", &|| Ok(())).expect("lexes");
        assert_eq!(t.iter().map(|t| (t.pos.offset, t.end)).collect::<Vec<_>>(), [(0, 6), (7, 12), (13, 16), (16, 16)]);
        assert!(tokenize("'open", &|| Ok(())).is_err());
        assert!(tokenize("a @ b", &|| Ok(())).is_err());
        assert!(tokenize("a ? $1", &|| Ok(())).is_err());
        let t = tokenize(r"E'a\nb\\c\'d''e\x41\101\u00e9\xC3\xA9' x", &|| Ok(())).expect("an escape string");
        assert_eq!(t[0].tok, Tok::Str("a\nb\\c'd'eAAéé".into()), "hex escapes are bytes");
        for bad in [r"E'\0'", r"E'\xff'", r"E'\u12'"] {
            assert!(tokenize(bad, &|| Ok(())).is_err(), "{bad}");
        }
        assert_eq!(t[1].tok, Tok::Ident("x".into()));
        assert!(tokenize(r"E'open\'", &|| Ok(())).is_err());
        let t = tokenize("e 'x'", &|| Ok(())).expect("a word, then a string");
        assert_eq!(t[0].tok, Tok::Ident("e".into()));
        let t = tokenize("x = ? AND y = ?", &|| Ok(())).expect("lexes");
        assert_eq!((t[2].tok.clone(), t[6].tok.clone()), (Tok::Param(1), Tok::Param(2)));
    }

    #[test]
    fn numbers_end_where_they_should_and_truncated_input_is_an_error() {
        for (text, num) in [
            ("1e", "1"),
            ("1e+", "1"),
            ("1e-7x", "1e-7"),
            ("1.5E3", "1.5E3"),
            ("1..2", "1"),
            ("1.", "1."),
            (".5", ".5"),
            ("500ms", "500"),
        ] {
            let t = tokenize(text, &|| Ok(())).expect("lexes");
            assert_eq!(t[0].tok, Tok::Num(num.into()), "{text}");
        }
        for bad in ["/* open", "/*", "'", "\"x", "$0", "@"] {
            assert!(tokenize(bad, &|| Ok(())).is_err(), "{bad}");
        }
        assert_eq!(tokenize("-- only a comment", &|| Ok(())).expect("lexes").len(), 1);
    }
}
