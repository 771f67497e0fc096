//! The parser's window on a script's tokens: read from the [`Lexer`] as the parser moves on,
//! parameters bound as they are met, so that only the tokens ahead of the parser are held
//! (a few, or a parenthesis's worth where the parser looks for its end).
//!
//! A lexer error (or an interrupt) met ahead of the parser is kept, and an `Eof` at its
//! position ends the tokens there: whatever the parser makes of that end, [`Tokens::finish`]
//! reports the kept error instead, as reading the whole text first did.

use crate::error::{Pos, Result, SqlError};
use crate::lexer::{Lexer, Tok, Token};
use crate::ParamValue;
use std::collections::VecDeque;

/// Tokens kept ahead of the parser: the current one and the three after it, as far as the
/// parser looks without [`Tokens::fill`].
const AHEAD: usize = 4;

/// The tokens from the parser's position on (module docs).
pub(crate) struct Tokens<'a> {
    lexer: Lexer<'a>,
    params: &'a [ParamValue],
    /// The highest parameter number bound so far.
    used: usize,
    /// The current token first; ends with `Eof` once the lexer has ended (or failed).
    ahead: VecDeque<Token>,
    /// The lexer's or a parameter's error, met ahead of the parser.
    error: Option<SqlError>,
    /// Byte offset just past the last token taken (0 before any).
    prev_end: usize,
}

impl<'a> Tokens<'a> {
    pub(crate) fn new(lexer: Lexer<'a>, params: &'a [ParamValue]) -> Tokens<'a> {
        let mut t =
            Tokens { lexer, params, used: 0, ahead: VecDeque::with_capacity(2 * AHEAD), error: None, prev_end: 0 };
        t.fill(AHEAD);
        t
    }

    /// The `k`-th token from the current one; past the end, the last (`Eof`).
    pub(crate) fn get(&self, k: usize) -> &Token {
        debug_assert!(k < AHEAD || k < self.ahead.len() || self.ended(), "token {k} ahead was not read");
        self.ahead.get(k).or(self.ahead.back()).unwrap_or(&EOF_AT_START)
    }

    /// Byte offset just past the last token taken.
    pub(crate) fn prev_end(&self) -> usize {
        self.prev_end
    }

    /// Take the current token and move past it; at the end, `Eof` (the cursor stays on it).
    pub(crate) fn advance(&mut self) -> Tok {
        if self.ahead.len() <= 1 && self.ended() {
            return Tok::Eof;
        }
        let Some(t) = self.ahead.pop_front() else { return Tok::Eof };
        self.prev_end = t.end;
        self.fill(AHEAD);
        t.tok
    }

    /// Read on until `n` tokens are ahead (or the end).
    pub(crate) fn fill(&mut self, n: usize) {
        while self.ahead.len() < n && !self.ended() {
            if let Err(e) = self.pull() {
                let pos = match &e {
                    SqlError::Parse { pos, .. } => *pos,
                    _ => self.ahead.back().map_or(Pos { offset: 0, line: 1, column: 1 }, |t| t.pos),
                };
                let end = self.ahead.back().map_or(0, |t| t.end).max(pos.offset);
                self.error = Some(e);
                self.ahead.push_back(Token { tok: Tok::Eof, pos, end });
            }
        }
    }

    /// Whether the last token read is the end.
    fn ended(&self) -> bool {
        self.ahead.back().is_some_and(|t| t.tok == Tok::Eof)
    }

    /// One token more from the lexer, a parameter as the tokens of its value.
    fn pull(&mut self) -> Result<()> {
        let t = self.lexer.next_token()?;
        let Tok::Param(n) = t.tok else {
            self.ahead.push_back(t);
            return Ok(());
        };
        let v = self.params.get(n - 1).ok_or_else(|| SqlError::Parse {
            message: format!("no value for parameter ${n} ({} given)", self.params.len()),
            pos: t.pos,
        })?;
        self.used = self.used.max(n);
        bind(&mut self.ahead, v, n, t.pos, t.end)
    }

    /// What the parser's `parsed` becomes: the error met ahead of the parser, if any (the text
    /// is wrong before whatever the parser made of its end); else, for a whole script parsed,
    /// an error when a parameter given was never used.
    pub(crate) fn finish<T>(&mut self, parsed: Result<T>) -> Result<T> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let v = parsed?;
        if self.used < self.params.len() {
            return Err(SqlError::Parse {
                message: format!("{} parameters given but the statement uses {}", self.params.len(), self.used),
                pos: Pos { offset: 0, line: 1, column: 1 },
            });
        }
        Ok(v)
    }
}

/// What [`Tokens::get`] gives before anything is read (never: a lexer always ends with `Eof`).
static EOF_AT_START: Token = Token { tok: Tok::Eof, pos: Pos { offset: 0, line: 1, column: 1 }, end: 0 };

/// Parameter `$n`'s value `v` as the tokens it becomes, all at the parameter's place in the
/// text. Values are substituted as literal tokens, never as text, so a parameter can never
/// change the statement's shape.
fn bind(out: &mut VecDeque<Token>, v: &ParamValue, n: usize, pos: Pos, end: usize) -> Result<()> {
    let one = |tok: Tok| Token { tok, pos, end };
    match v {
        ParamValue::Null => out.push_back(one(Tok::Ident("NULL".into()))),
        ParamValue::Bool(b) => out.push_back(one(Tok::Ident(if *b { "TRUE" } else { "FALSE" }.into()))),
        ParamValue::Str(s) => out.push_back(one(Tok::Str(s.clone()))),
        ParamValue::Timestamp(ns) => {
            out.push_back(one(Tok::Ident("TIMESTAMP".into())));
            out.push_back(one(Tok::Str(zepto_storage::time::format_timestamp(*ns))));
        }
        ParamValue::Int(i) if *i >= 0 => out.push_back(one(Tok::Num(smol_str::format_smolstr!("{i}")))),
        ParamValue::Float(f) if f.is_finite() && *f >= 0.0 => {
            out.push_back(one(Tok::Num(smol_str::format_smolstr!("{f:?}"))))
        }
        ParamValue::Float(f) if !f.is_finite() => {
            return Err(SqlError::Parse { message: format!("parameter ${n} is not a finite number"), pos })
        }
        ParamValue::Int(i) => push_negative(out, i.unsigned_abs().to_string(), one),
        ParamValue::Float(f) => push_negative(out, format!("{:?}", -f), one),
        ParamValue::Vector(v) => push_vector(out, v, one).map_err(|()| SqlError::Parse {
            message: format!("parameter ${n} holds a value that is not a finite number"),
            pos,
        })?,
    }
    Ok(())
}

/// A vector as the tokens of an array literal: `[`, the numbers (a negative one as `-`, `n`)
/// separated by `,`, `]`. Each `f32` is written in its shortest form that reads back exactly.
/// Nothing is added when an element is not finite.
fn push_vector(out: &mut VecDeque<Token>, v: &[f32], one: impl Fn(Tok) -> Token) -> std::result::Result<(), ()> {
    if v.iter().any(|x| !x.is_finite()) {
        return Err(());
    }
    out.reserve(v.len() * 3 + 2);
    out.push_back(one(Tok::Op("[")));
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            out.push_back(one(Tok::Op(",")));
        }
        if x.is_sign_negative() && *x != 0.0 {
            out.push_back(one(Tok::Op("-")));
        }
        out.push_back(one(Tok::Num(smol_str::format_smolstr!("{:?}", x.abs()))));
    }
    out.push_back(one(Tok::Op("]")));
    Ok(())
}

/// A negative number, parenthesized so it binds as one operand: `( - n )`.
fn push_negative(out: &mut VecDeque<Token>, digits: String, one: impl Fn(Tok) -> Token) {
    for tok in [Tok::Op("("), Tok::Op("-"), Tok::Num(digits.into()), Tok::Op(")")] {
        out.push_back(one(tok));
    }
}
