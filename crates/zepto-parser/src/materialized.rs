//! `CREATE`, `REFRESH` and `DROP MATERIALIZED VIEW`. A view's query is kept as the text it
//! was written as (the write-ahead log stores it and recovery parses it again), so its parse
//! cuts that text out of the statement: from its first token's start to its last token's end
//! ([`crate::lexer::Token::end`]).

use super::ast::Statement;
use super::lexer::Tok;
use super::Parser;
use crate::error::{Result, SqlError};

impl Parser<'_> {
    /// `VIEW [IF NOT EXISTS] name AS query`, or QuestDB's `AS (query)`, after `CREATE
    /// MATERIALIZED`; `src` is the script the tokens were read from.
    pub(super) fn create_materialized_view(&mut self, src: &str) -> Result<Statement> {
        self.expect_kw("view")?;
        let if_not_exists = self.eat_kw("if") && {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
            true
        };
        let pos = self.pos();
        let name = self.table_name()?;
        if !self.eat_kw("as") {
            return Err(self.unexpected("AS and the view's query"));
        }
        let wrapped = self.parenthesised_to_the_end();
        if wrapped {
            self.advance();
        }
        let qpos = self.pos();
        let query = Box::new(self.query()?);
        let end = self.prev_end();
        if wrapped {
            self.expect_op(")")?;
        }
        let cut = |m: &str| SqlError::Parse { message: m.into(), pos: qpos };
        let sql = src.get(qpos.offset..end).ok_or_else(|| cut("the view's query is not in the statement's text"))?;
        // A bound value is not in the text: the view would read differently after recovery.
        if crate::param_count(sql)? > 0 {
            return Err(cut("a materialized view's query cannot take parameters: it is stored as written"));
        }
        Ok(Statement::CreateMaterializedView { name, if_not_exists, query, sql: sql.to_string(), pos })
    }

    /// `MATERIALIZED VIEW name [FULL]`, after `REFRESH` (QuestDB's incremental and range
    /// refreshes are refused: a refresh here recomputes the whole view).
    pub(super) fn refresh_materialized_view(&mut self) -> Result<Statement> {
        self.expect_kw("materialized")?;
        self.expect_kw("view")?;
        let pos = self.pos();
        let name = self.table_name()?;
        if let Tok::Ident(word) = self.peek() {
            if word.eq_ignore_ascii_case("incremental") || word.eq_ignore_ascii_case("range") {
                let message = format!(
                    "REFRESH MATERIALIZED VIEW ... {} is not supported: a refresh recomputes the whole view \
                     (REFRESH MATERIALIZED VIEW name [FULL])",
                    word.to_ascii_uppercase()
                );
                return Err(SqlError::Parse { message, pos: self.pos() });
            }
        }
        self.eat_kw("full");
        Ok(Statement::RefreshMaterializedView { name, pos })
    }

    /// `VIEW [IF EXISTS] name`, after `DROP MATERIALIZED`.
    pub(super) fn drop_materialized_view(&mut self) -> Result<Statement> {
        self.expect_kw("view")?;
        let if_exists = self.eat_kw("if") && {
            self.expect_kw("exists")?;
            true
        };
        let pos = self.pos();
        let name = self.table_name()?;
        Ok(Statement::DropMaterializedView { name, if_exists, pos })
    }

    /// Whether a `(` here closes just before the end of the statement (`;` or the end of
    /// input): QuestDB's `AS (query)`, whose query is the text inside. `AS (q1) UNION (q2)`
    /// is not: its query is all of it.
    fn parenthesised_to_the_end(&mut self) -> bool {
        if !matches!(self.peek(), Tok::Op("(")) {
            return false;
        }
        let mut depth = 0usize;
        for k in 0.. {
            self.toks.fill(k + 2);
            match self.peek_at(k) {
                Tok::Op("(") => depth += 1,
                Tok::Op(")") if depth <= 1 => return matches!(self.peek_at(k + 1), Tok::Op(";") | Tok::Eof),
                Tok::Op(")") => depth -= 1,
                Tok::Op(";") | Tok::Eof => return false,
                _ => {}
            }
        }
        false
    }
}
