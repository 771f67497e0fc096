//! `COPY`: rows between a table (or a query) and a file on the server or the client's
//! connection, in PostgreSQL's grammar:
//!
//! ```text
//! COPY t [(a, b)] FROM { 'path' | STDIN } [ [WITH] (option value, ...) | older options ]
//! COPY { t [(a, b)] | (query) } TO { 'path' | STDOUT } [ ... ]
//! ```
//!
//! The older options are the words PostgreSQL took before 9.0 and `psql`'s `\copy` still
//! passes on as typed: `BINARY`, `CSV`, `HEADER`, `DELIMITER [AS] 'c'`, `NULL [AS] 's'`,
//! `QUOTE [AS] 'q'`, `ESCAPE [AS] 'e'`, `ENCODING 'e'`, `FORCE QUOTE cols | *`,
//! `FORCE NOT NULL cols`. Both spellings become the same `(key, value)` pairs (keys in lower
//! case, `format` for `CSV`/`BINARY`); what each means is the reader's and writer's to say.

use super::ast::{CopyEnd, Query, Select, SelectItem, SetExpr, Statement, TableRef};
use super::lexer::Tok;
use super::Parser;
use crate::ast::Expr;
use crate::error::{Pos, Result};

impl Parser<'_> {
    /// The rest of a `COPY` statement (after the keyword at `pos`).
    pub(super) fn copy(&mut self, pos: Pos) -> Result<Statement> {
        if self.eat_op("(") {
            let query = Box::new(self.query()?);
            self.expect_op(")")?;
            self.expect_kw("to")?;
            let target = self.copy_end("stdout")?;
            let options = self.copy_options()?;
            return Ok(Statement::CopyTo { query, target, options });
        }
        let table_pos = self.pos();
        let (system, table) = self.read_table_name()?;
        let columns = if self.eat_op("(") { self.copy_columns()? } else { Vec::new() };
        if self.eat_kw("to") {
            let target = self.copy_end("stdout")?;
            let options = self.copy_options()?;
            let query = Box::new(select_columns(system, table, &columns, table_pos));
            return Ok(Statement::CopyTo { query, target, options });
        }
        let table = crate::names::writable((system, table), table_pos)?;
        self.expect_kw("from")?;
        let source = self.copy_end("stdin")?;
        let options = self.copy_options()?;
        Ok(Statement::CopyFrom { table, columns, source, options, pos })
    }

    /// `'path'`, or the keyword `client` (`STDIN` or `STDOUT`) naming the connection.
    fn copy_end(&mut self, client: &str) -> Result<CopyEnd> {
        if self.eat_kw(client) {
            return Ok(CopyEnd::Client);
        }
        match self.peek() {
            Tok::Str(_) => Ok(CopyEnd::File(self.string_lit()?)),
            _ => Err(self.unexpected(&format!("a quoted file name or {}", client.to_ascii_uppercase()))),
        }
    }

    /// `a, b)`: the names in a column list (its `(` already read).
    fn copy_columns(&mut self) -> Result<Vec<String>> {
        let mut out = vec![self.any_ident()?];
        while self.eat_op(",") {
            out.push(self.any_ident()?);
        }
        self.expect_op(")")?;
        Ok(out)
    }

    /// The options: `[WITH] (key [value], ...)`, or the older words, or none.
    fn copy_options(&mut self) -> Result<Vec<(String, String)>> {
        let with = self.eat_kw("with");
        if self.eat_op("(") {
            return self.copy_option_list();
        }
        let mut out = Vec::new();
        while let Some(pair) = self.older_copy_option()? {
            out.push(pair);
        }
        if with && out.is_empty() {
            return Err(self.unexpected("'(' and COPY options"));
        }
        Ok(out)
    }

    /// `key [value], ...)`: a value is a string, a word, a number, `*` or a column list.
    fn copy_option_list(&mut self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        loop {
            let k = self.any_ident()?.to_ascii_lowercase();
            let v = match self.peek().clone() {
                Tok::Op(",") | Tok::Op(")") => "true".to_string(),
                Tok::Op("*") => {
                    self.advance();
                    "*".to_string()
                }
                Tok::Op("(") => {
                    self.advance();
                    self.copy_columns()?.join(",")
                }
                Tok::Str(s) | Tok::Ident(s) => {
                    self.advance();
                    s
                }
                Tok::Num(s) => {
                    self.advance();
                    s.to_string()
                }
                _ => return Err(self.unexpected("an option value")),
            };
            out.push((k, v));
            if self.eat_op(")") {
                return Ok(out);
            }
            self.expect_op(",")?;
        }
    }

    /// One of the older options as a `(key, value)` pair, or `None` when the next word is not
    /// one.
    fn older_copy_option(&mut self) -> Result<Option<(String, String)>> {
        let pair = |k: &str, v: String| Ok(Some((k.to_string(), v)));
        for format in ["csv", "binary", "text"] {
            if self.eat_kw(format) {
                return pair("format", format.to_string());
            }
        }
        if self.eat_kw("header") {
            return pair("header", "true".to_string());
        }
        for key in ["delimiter", "null", "quote", "escape", "encoding"] {
            if self.eat_kw(key) {
                self.eat_kw("as");
                return pair(key, self.string_lit()?);
            }
        }
        if !self.eat_kw("force") {
            return Ok(None);
        }
        if self.eat_kw("not") {
            self.expect_kw("null")?;
            return pair("force_not_null", self.older_column_list()?);
        }
        self.expect_kw("quote")?;
        if self.eat_op("*") {
            return pair("force_quote", "*".to_string());
        }
        pair("force_quote", self.older_column_list()?)
    }

    /// `a, b` (no parentheses, as the older `FORCE` options list columns), joined by commas.
    fn older_column_list(&mut self) -> Result<String> {
        let mut out = vec![self.any_ident()?];
        while self.eat_op(",") {
            out.push(self.any_ident()?);
        }
        Ok(out.join(","))
    }
}

/// `SELECT columns FROM table` (every column when `columns` is empty): what `COPY t TO` writes.
fn select_columns(system: Option<crate::ast::SystemSchema>, table: String, columns: &[String], pos: Pos) -> Query {
    let items = if columns.is_empty() {
        vec![SelectItem::Wildcard { table: None, exclude: vec![], pos }]
    } else {
        let column = |name: &String| Expr::Column { table: None, name: name.clone(), pos };
        columns.iter().map(|c| SelectItem::Expr { expr: column(c), alias: None }).collect()
    };
    Query {
        ctes: vec![],
        body: SetExpr::Select(Box::new(Select {
            distinct: false,
            items,
            from: Some(TableRef::Table { name: table, system, alias: None, pos }),
            where_: None,
            group_by: vec![],
            having: None,
            qualify: None,
            latest: None,
            sample_by: None,
        })),
        order_by: vec![],
        limit: None,
        limit_to: None,
        offset: None,
    }
}
