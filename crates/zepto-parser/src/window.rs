//! Window clauses: `OVER (PARTITION BY ... ORDER BY ... frame)`, `OVER name`, and the
//! `WINDOW name AS (...)` clause whose names are substituted into calls after the SELECT is
//! parsed (so the binder only ever sees complete specifications).

use super::ast::{Expr, FrameBound, FrameUnits, WindowFrame, WindowSpec};
use super::Parser;
use crate::error::{Result, SqlError};

impl Parser<'_> {
    /// After `OVER`: a parenthesized specification or a window name.
    pub(super) fn over_clause(&mut self) -> Result<WindowSpec> {
        if self.eat_op("(") {
            return self.window_spec(&[]);
        }
        let name = self.ident()?;
        Ok(WindowSpec { base: Some(name), ..WindowSpec::default() })
    }

    /// The inside of `( ... )`, the opening parenthesis already consumed. `named`: windows
    /// defined earlier in the same `WINDOW` clause (a definition may build on them).
    pub(super) fn window_spec(&mut self, named: &[(String, WindowSpec)]) -> Result<WindowSpec> {
        let mut spec = WindowSpec::default();
        if let super::lexer::Tok::Ident(w) = self.peek().clone() {
            let lw = w.to_ascii_lowercase();
            if !matches!(lw.as_str(), "partition" | "order" | "rows" | "range" | "groups") {
                self.advance();
                spec.base = Some(w);
            }
        }
        if self.is_kw("partition") {
            self.advance();
            self.expect_kw("by")?;
            loop {
                spec.partition_by.push(self.expr()?);
                if !self.eat_op(",") {
                    break;
                }
            }
        }
        if self.is_kw("order") {
            self.advance();
            self.expect_kw("by")?;
            spec.order_by = self.order_items()?;
        }
        let pos = self.pos();
        if self.is_kw("rows") || self.is_kw("range") {
            let units = if self.is_kw("rows") { FrameUnits::Rows } else { FrameUnits::Range };
            self.advance();
            let (start, end) = if self.eat_kw("between") {
                let s = self.frame_bound()?;
                self.expect_kw("and")?;
                (s, self.frame_bound()?)
            } else {
                (self.frame_bound()?, FrameBound::CurrentRow)
            };
            spec.frame = Some(WindowFrame { units, start, end, pos });
        } else if self.is_kw("groups") {
            return Err(SqlError::NotSupported(format!(
                "GROUPS frames at line {}, column {} (use ROWS or RANGE)",
                pos.line, pos.column
            )));
        }
        if self.is_kw("exclude") {
            let p = self.pos();
            return Err(SqlError::NotSupported(format!("frame EXCLUDE at line {}, column {}", p.line, p.column)));
        }
        self.expect_op(")")?;
        if !named.is_empty() {
            merge_base(&mut spec, named, pos)?;
        }
        Ok(spec)
    }

    fn frame_bound(&mut self) -> Result<FrameBound> {
        if self.eat_kw("unbounded") {
            if self.eat_kw("preceding") {
                return Ok(FrameBound::UnboundedPreceding);
            }
            self.expect_kw("following")?;
            return Ok(FrameBound::UnboundedFollowing);
        }
        if self.is_kw("current") {
            self.advance();
            self.expect_kw("row")?;
            return Ok(FrameBound::CurrentRow);
        }
        let e = self.expr()?;
        if self.eat_kw("preceding") {
            return Ok(FrameBound::Preceding(Box::new(e)));
        }
        if self.eat_kw("following") {
            return Ok(FrameBound::Following(Box::new(e)));
        }
        Err(self.unexpected("PRECEDING or FOLLOWING"))
    }
}

/// Fill `spec` from the named window it builds on. As in the standard, the named window may
/// supply PARTITION BY and ORDER BY; the referencing window may add ORDER BY (when the base
/// has none) and the frame.
fn merge_base(spec: &mut WindowSpec, named: &[(String, WindowSpec)], pos: crate::error::Pos) -> Result<()> {
    let Some(name) = spec.base.take() else { return Ok(()) };
    let base = named
        .iter()
        .rev()
        .find(|(n, _)| n.eq_ignore_ascii_case(&name))
        .map(|(_, s)| s)
        .ok_or_else(|| SqlError::Parse { message: format!("window '{name}' is not defined"), pos })?;
    if !spec.partition_by.is_empty() {
        return Err(SqlError::Parse { message: format!("cannot override PARTITION BY of window '{name}'"), pos });
    }
    if !spec.order_by.is_empty() && !base.order_by.is_empty() {
        return Err(SqlError::Parse { message: format!("cannot override ORDER BY of window '{name}'"), pos });
    }
    spec.partition_by = base.partition_by.clone();
    if spec.order_by.is_empty() {
        spec.order_by = base.order_by.clone();
    }
    if spec.frame.is_none() {
        spec.frame = base.frame.clone();
    }
    Ok(())
}

/// Substitute `WINDOW` clause definitions into one expression node (called bottom-up on every
/// node of the select list, HAVING and QUALIFY).
pub(super) fn resolve_named(e: &mut Expr, named: &[(String, WindowSpec)]) -> Result<()> {
    if let Expr::Func(f) = e {
        if let Some(spec) = &mut f.over {
            if spec.base.is_some() {
                merge_base(spec, named, f.pos)?;
            }
        }
    }
    Ok(())
}
