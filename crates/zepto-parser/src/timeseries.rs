//! QuestDB-style time-series clauses of a SELECT: `LATEST ON ts PARTITION BY keys` (also the
//! older `LATEST BY keys`) and `SAMPLE BY width [FROM a TO b] [FILL(...)] [ALIGN TO ...]`.

use super::ast::{FillMode, Latest, SampleBy};
use super::lexer::Tok;
use super::Parser;
use crate::error::{Result, SqlError};
use zepto_storage::time;

impl Parser<'_> {
    pub(super) fn latest_clause(&mut self) -> Result<Option<Latest>> {
        if !self.is_kw("latest") {
            return Ok(None);
        }
        let pos = self.pos();
        self.advance();
        let ts = if self.eat_kw("on") {
            let ts = self.expr()?;
            self.expect_kw("partition")?;
            self.expect_kw("by")?;
            Some(ts)
        } else {
            self.expect_kw("by")?;
            None
        };
        let mut keys = Vec::new();
        loop {
            keys.push(self.expr()?);
            if !self.eat_op(",") {
                break;
            }
        }
        Ok(Some(Latest { ts, keys, pos }))
    }

    pub(super) fn sample_by_clause(&mut self) -> Result<Option<SampleBy>> {
        if !self.is_kw("sample") {
            return Ok(None);
        }
        let pos = self.pos();
        self.advance();
        self.expect_kw("by")?;
        let (width, months) = self.sample_width()?;
        let (mut from, mut to) = (None, None);
        if self.eat_kw("from") {
            from = Some(self.expr()?);
        }
        if self.eat_kw("to") {
            to = Some(self.expr()?);
        }
        let mut fill = Vec::new();
        if self.eat_kw("fill") {
            self.expect_op("(")?;
            loop {
                fill.push(self.fill_mode()?);
                if self.eat_op(")") {
                    break;
                }
                self.expect_op(",")?;
            }
        }
        let (mut calendar_offset, mut time_zone) = (Some(0), None);
        if self.eat_kw("align") {
            self.expect_kw("to")?;
            if self.eat_kw("first") {
                self.expect_kw("observation")?;
                calendar_offset = None;
            } else {
                self.expect_kw("calendar")?;
                if self.eat_kw("time") {
                    self.expect_kw("zone")?;
                    time_zone = Some(self.string_lit()?);
                }
                if self.eat_kw("with") {
                    self.expect_kw("offset")?;
                    let p = self.pos();
                    let text = self.string_lit()?;
                    let off = parse_offset(&text).ok_or_else(|| SqlError::Parse {
                        message: format!("invalid offset '{text}' (use 'hh:mm')"),
                        pos: p,
                    })?;
                    calendar_offset = Some(off);
                }
            }
        }
        Ok(Some(SampleBy { width, months, from, to, fill, calendar_offset, time_zone, pos }))
    }

    /// `1m`, `30s`, `100T` (ms), `5U` (µs), `'15 minutes'`, `INTERVAL '1 hour'`; calendar
    /// `3M` (months) and `1y` (years). Returns (nanoseconds, months), one of them 0.
    fn sample_width(&mut self) -> Result<(i64, i64)> {
        let pos = self.pos();
        let bad = |m: String| SqlError::Parse { message: m, pos };
        let (num, unit) = match self.advance() {
            Tok::Str(s) => {
                return time::parse_interval(&s)
                    .filter(|&n| n > 0)
                    .map(|w| (w, 0))
                    .ok_or_else(|| bad(format!("invalid SAMPLE BY width '{s}'")))
            }
            Tok::Ident(w) if w.eq_ignore_ascii_case("interval") => {
                let Tok::Str(s) = self.advance() else { return Err(bad("expected an interval string".into())) };
                return time::parse_interval(&s)
                    .filter(|&n| n > 0)
                    .map(|w| (w, 0))
                    .ok_or_else(|| bad(format!("invalid SAMPLE BY width '{s}'")));
            }
            Tok::Num(n) => {
                let unit = match self.peek().clone() {
                    Tok::Ident(u) => {
                        self.advance();
                        u
                    }
                    _ => return Err(bad(format!("SAMPLE BY {n} needs a unit (s, m, h, d, T = ms, U = µs)"))),
                };
                (n, unit)
            }
            t => return Err(bad(format!("expected a SAMPLE BY width like 1m, found {}", Parser::describe(&t)))),
        };
        let n: i64 = num.parse().map_err(|_| bad(format!("invalid SAMPLE BY width '{num}{unit}'")))?;
        if unit == "M" || unit == "y" {
            let months = if unit == "y" { n.checked_mul(12) } else { Some(n) };
            return months
                .filter(|&m| m > 0 && m < 1_000_000)
                .map(|m| (0, m))
                .ok_or_else(|| bad(format!("invalid SAMPLE BY width '{num}{unit}'")));
        }
        let per = match unit.as_str() {
            "T" => time::unit_ns("ms"),
            "U" => time::unit_ns("us"),
            "n" => time::unit_ns("ns"),
            u => time::unit_ns(u),
        }
        .ok_or_else(|| bad(format!("unknown SAMPLE BY unit '{unit}'")))?;
        n.checked_mul(per)
            .filter(|&w| w > 0)
            .map(|w| (w, 0))
            .ok_or_else(|| bad(format!("invalid SAMPLE BY width '{num}{unit}'")))
    }

    fn fill_mode(&mut self) -> Result<FillMode> {
        if let Tok::Ident(w) = self.peek().clone() {
            let mode = match w.to_ascii_lowercase().as_str() {
                "none" => Some(FillMode::None),
                "null" => Some(FillMode::Null),
                "prev" => Some(FillMode::Prev),
                "linear" => Some(FillMode::Linear),
                _ => None,
            };
            if let Some(m) = mode {
                self.advance();
                return Ok(m);
            }
        }
        Ok(FillMode::Value(self.expr()?))
    }
}

/// `'hh:mm'` or `'-hh:mm'` → nanoseconds.
fn parse_offset(s: &str) -> Option<i64> {
    let (neg, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (h, m) = rest.split_once(':')?;
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    if !(0..60).contains(&m) || !(0..=23).contains(&h) {
        return None;
    }
    let ns = (h * 60 + m) * 60 * 1_000_000_000;
    Some(if neg { -ns } else { ns })
}
