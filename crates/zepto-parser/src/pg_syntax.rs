//! The PostgreSQL forms its clients write into catalog queries:
//!
//! - casts to object-identifier types (`'trades'::regclass`, `c.oid::pg_catalog.regclass`,
//!   `t.oid::regtype`, `x::oid`) and to `pg_catalog.`-qualified type names (`::pg_catalog.text`,
//!   `::name`, `::"char"`): the `reg*` ones become calls of the function of that name, which the
//!   engine's catalog answers both ways (name to id, id to name);
//! - functions called by their schema (`pg_catalog.format_type(...)`);
//! - columns named with their table's schema (`pg_catalog.pg_class.relname`) or database;
//! - `x = ANY (ARRAY[...])`, `x <> ALL (...)` and the other quantified comparisons, over an
//!   `ARRAY[...]` list or a subquery;
//! - the niladic `current_user`, `session_user`, `current_catalog`, `current_schema`;
//! - regular-expression matches `~`, `~*`, `!~`, `!~*` (as `regexp_matches`), also written
//!   `OPERATOR(pg_catalog.~)`, and `COLLATE name` after a value (read and dropped: text
//!   compares by its bytes, PostgreSQL's "C" collation);
//! - `LIKE pattern ESCAPE 'c'`.

use super::ast::{BinaryOp, Expr, FuncCall, SystemSchema};
use super::lexer::Tok;
use super::Parser;
use crate::error::{Pos, Result, SqlError};
use zepto_storage::DataType;

/// What a cast converts to: a type, or an object-identifier type (a function of that name).
pub(super) enum CastTarget {
    Type(DataType),
    Object(&'static str),
    /// `T[]`: an array of `T`.
    Array(DataType),
}

/// The object-identifier types, and the function each cast becomes.
const OBJECT_TYPES: [(&str, &str); 3] =
    [("regclass", "regclass"), ("regtype", "regtype"), ("regnamespace", "regnamespace")];

/// Functions PostgreSQL calls without parentheses.
const NILADIC: [&str; 5] = ["current_user", "session_user", "user", "current_catalog", "current_schema"];

/// A comparison operator as the parser reads it.
pub(super) enum CompareOp {
    /// `=`, `<>`, `<`, ...
    Plain(BinaryOp),
    /// A regular-expression match: (negated, ignoring case).
    Regex(bool, bool),
}

impl Parser<'_> {
    /// The comparison operator next, consumed (also in PostgreSQL's `OPERATOR(schema.op)`
    /// spelling), or `None`.
    pub(super) fn compare_op(&mut self) -> Result<Option<CompareOp>> {
        let wrapped = self.is_kw("operator") && matches!(self.peek_at(1), Tok::Op("("));
        if wrapped {
            self.advance();
            self.advance();
            if matches!(self.peek(), Tok::Ident(_)) && matches!(self.peek_at(1), Tok::Op(".")) {
                self.advance();
                self.advance();
            }
        }
        let op = match self.peek() {
            Tok::Op("=") | Tok::Op("==") => Some(CompareOp::Plain(BinaryOp::Eq)),
            Tok::Op("<>") | Tok::Op("!=") => Some(CompareOp::Plain(BinaryOp::NotEq)),
            Tok::Op("<") => Some(CompareOp::Plain(BinaryOp::Lt)),
            Tok::Op("<=") => Some(CompareOp::Plain(BinaryOp::LtEq)),
            Tok::Op(">") => Some(CompareOp::Plain(BinaryOp::Gt)),
            Tok::Op(">=") => Some(CompareOp::Plain(BinaryOp::GtEq)),
            Tok::Op("~") => Some(CompareOp::Regex(false, false)),
            Tok::Op("~*") => Some(CompareOp::Regex(false, true)),
            Tok::Op("!~") => Some(CompareOp::Regex(true, false)),
            Tok::Op("!~*") => Some(CompareOp::Regex(true, true)),
            _ => None,
        };
        match (op, wrapped) {
            (Some(op), _) => {
                self.advance();
                if wrapped {
                    self.expect_op(")")?;
                }
                Ok(Some(op))
            }
            (None, true) => Err(self.unexpected("a comparison operator")),
            (None, false) => Ok(None),
        }
    }

    /// `l ~ r` (negated, ignoring case) as a call of `regexp_matches`.
    pub(super) fn regex_match(l: Expr, r: Expr, negated: bool, ci: bool, pos: Pos) -> Expr {
        let mut args = vec![l, r];
        if ci {
            args.push(Expr::Lit(crate::ast::Literal::Str("i".into()), pos));
        }
        let m = Expr::Func(Box::new(FuncCall::new("regexp_matches", args, pos)));
        if negated {
            Expr::Unary { op: crate::ast::UnaryOp::Not, expr: Box::new(m) }
        } else {
            m
        }
    }

    /// `pattern` after `LIKE`, with its `ESCAPE 'c'` if one follows: rewritten with LIKE's own
    /// escape, the backslash (`like_escape(p, 'c')`).
    pub(super) fn like_escape(&mut self, pattern: Expr, pos: Pos) -> Result<Expr> {
        if !self.eat_kw("escape") {
            return Ok(pattern);
        }
        let esc = self.string_lit()?;
        if esc.chars().count() > 1 {
            return Err(SqlError::Parse { message: "ESCAPE takes one character".into(), pos });
        }
        if esc == "\\" {
            return Ok(pattern);
        }
        let esc = Expr::Lit(crate::ast::Literal::Str(esc), pos);
        Ok(Expr::Func(Box::new(FuncCall::new("like_escape", vec![pattern, esc], pos))))
    }

    /// `COLLATE name` (a qualified or quoted name), if it comes next: read and dropped.
    pub(super) fn skip_collate(&mut self) -> Result<()> {
        while self.eat_kw("collate") {
            self.any_ident()?;
            while self.eat_op(".") {
                self.any_ident()?;
            }
        }
        Ok(())
    }

    /// The type after `::` or `AS` in a cast: `pg_catalog.` may qualify it; the
    /// object-identifier types and PostgreSQL's internal names (`oid`, `name`, `"char"`) are
    /// known here, the rest are [`Parser::data_type`]'s.
    pub(super) fn cast_target(&mut self) -> Result<CastTarget> {
        let t = self.cast_type()?;
        match t {
            CastTarget::Type(dt) if matches!(self.peek(), Tok::Op("[")) && matches!(self.peek_at(1), Tok::Op("]")) => {
                self.advance();
                self.advance();
                Ok(CastTarget::Array(dt))
            }
            t => Ok(t),
        }
    }

    fn cast_type(&mut self) -> Result<CastTarget> {
        let qualified = matches!(self.peek(), Tok::Ident(s) if s.eq_ignore_ascii_case(SystemSchema::PgCatalog.name()))
            && matches!(self.peek_at(1), Tok::Op("."));
        if qualified {
            self.advance();
            self.advance();
        }
        let word = match self.peek() {
            Tok::Ident(s) | Tok::QIdent(s) => s.to_ascii_lowercase(),
            _ => return self.data_type().map(CastTarget::Type),
        };
        if let Some((_, f)) = OBJECT_TYPES.iter().find(|(t, _)| *t == word) {
            self.advance();
            return Ok(CastTarget::Object(f));
        }
        let internal = match word.as_str() {
            "oid" | "xid" | "cid" | "int2" | "smallint" => Some(DataType::Int32),
            "name" | "char" | "bpchar" | "regconfig" => Some(DataType::Varchar),
            _ => None,
        };
        match internal {
            Some(dt) => {
                self.advance();
                // `char(3)`, `bpchar(10)`: the length is accepted and ignored, as for VARCHAR(n).
                if self.eat_op("(") {
                    while !self.eat_op(")") {
                        if self.peek() == &Tok::Eof {
                            return Err(self.unexpected("')'"));
                        }
                        self.advance();
                    }
                }
                Ok(CastTarget::Type(dt))
            }
            None => self.data_type().map(CastTarget::Type),
        }
    }

    /// `e` cast to `to` (at `pos`).
    pub(super) fn cast_to(e: Expr, to: CastTarget, try_: bool, pos: Pos) -> Expr {
        match to {
            CastTarget::Type(to) => Expr::Cast { expr: Box::new(e), to, try_, pos },
            CastTarget::Object(f) => Expr::Func(Box::new(FuncCall::new(f, vec![e], pos))),
            CastTarget::Array(item) => {
                let item = Expr::Lit(crate::ast::Literal::Str(item.sql_name().into_owned()), pos);
                Expr::Func(Box::new(FuncCall::new(crate::ast::ARRAY_CAST, vec![e, item], pos)))
            }
        }
    }

    /// Whether the next tokens are `pg_catalog . name (` (or `information_schema . name (`,
    /// as `_pg_expandarray` is called): a function called by its schema.
    pub(super) fn at_qualified_call(&self, word: &str) -> bool {
        SystemSchema::by_name(word).is_some()
            && matches!(self.peek_at(1), Tok::Op("."))
            && matches!(self.peek_at(2), Tok::Ident(_) | Tok::QIdent(_))
            && matches!(self.peek_at(3), Tok::Op("("))
    }

    /// `ARRAY(q)`: the array of `q`'s first column, `{}` when it has no rows.
    pub(super) fn array_of_query(q: crate::ast::Query, pos: Pos) -> Expr {
        use crate::ast::{Literal, Query, Select, SelectItem, SetExpr, TableRef, ARRAY_QUERY};
        let x = Expr::Column { table: None, name: "x".into(), pos };
        let agg = Expr::Func(Box::new(FuncCall::new("array_agg", vec![x], pos)));
        let empty = Expr::Lit(Literal::Str("{}".into()), pos);
        let value = Expr::Func(Box::new(FuncCall::new("coalesce", vec![agg, empty], pos)));
        let from =
            TableRef::Subquery { query: Box::new(q), alias: Some(ARRAY_QUERY.into()), columns: vec!["x".into()] };
        let select = Select {
            distinct: false,
            items: vec![SelectItem::Expr { expr: value, alias: None }],
            from: Some(from),
            where_: None,
            group_by: Vec::new(),
            having: None,
            qualify: None,
            latest: None,
            sample_by: None,
        };
        let query = Query {
            ctes: Vec::new(),
            body: SetExpr::Select(Box::new(select)),
            order_by: Vec::new(),
            limit: None,
            limit_to: None,
            offset: None,
        };
        Expr::Func(Box::new(FuncCall::new(ARRAY_QUERY, vec![Expr::Subquery(Box::new(query))], pos)))
    }

    /// PostgreSQL's special forms that start with `word`: `trim(both 'x' from s)`,
    /// `ARRAY[a, b]` and `ARRAY(subquery)`; `None` when `word` starts none of them.
    pub(super) fn pg_form(&mut self, word: &str, pos: Pos) -> Result<Option<Expr>> {
        let lw = word.to_ascii_lowercase();
        Ok(Some(match lw.as_str() {
            // `trim([both | leading | trailing] [chars] from s)`: trim, ltrim or rtrim(s, chars).
            "trim" if matches!(self.peek_at(1), Tok::Op("(")) && self.trim_has_from() => {
                self.advance();
                self.advance();
                let name = match () {
                    _ if self.eat_kw("leading") => "ltrim",
                    _ if self.eat_kw("trailing") => "rtrim",
                    _ => {
                        self.eat_kw("both");
                        "trim"
                    }
                };
                let chars = if self.is_kw("from") { None } else { Some(self.expr()?) };
                self.expect_kw("from")?;
                let mut args = vec![self.expr()?];
                args.extend(chars);
                self.expect_op(")")?;
                Expr::Func(Box::new(FuncCall::new(name, args, pos)))
            }
            "array" if matches!(self.peek_at(1), Tok::Op("[")) => {
                let items = self.array_items()?;
                Expr::Func(Box::new(FuncCall::new(crate::ast::ARRAY_VALUE, items, pos)))
            }
            "array" if matches!(self.peek_at(1), Tok::Op("(")) => {
                self.advance();
                self.advance();
                let q = self.query()?;
                self.expect_op(")")?;
                Self::array_of_query(q, pos)
            }
            _ => return Ok(None),
        }))
    }

    /// Whether the `trim(` ahead is SQL's form with `BOTH`/`LEADING`/`TRAILING` or `FROM`
    /// (the parenthesis's depth-one words before its close), not a plain call.
    pub(super) fn trim_has_from(&mut self) -> bool {
        let mut depth = 0usize;
        for k in 1.. {
            self.toks.fill(k + 1);
            match self.peek_at(k) {
                Tok::Op("(") => depth += 1,
                Tok::Op(")") if depth <= 1 => return false,
                Tok::Op(")") => depth -= 1,
                Tok::Eof => return false,
                Tok::Ident(w)
                    if depth == 1
                        && ["from", "both", "leading", "trailing"].iter().any(|k| w.eq_ignore_ascii_case(k)) =>
                {
                    return true
                }
                _ => {}
            }
        }
        false
    }

    /// A niladic function named by `word` (not followed by `(`), if it is one.
    pub(super) fn niladic(&mut self, word: &str, pos: Pos) -> Option<Expr> {
        let lw = word.to_ascii_lowercase();
        if !NILADIC.contains(&lw.as_str()) || matches!(self.peek_at(1), Tok::Op("(") | Tok::Op(".")) {
            return None;
        }
        self.advance();
        Some(Expr::Func(Box::new(FuncCall::new(&lw, vec![], pos))))
    }

    /// A column reference: `c`, `t.c`, `schema.t.c` or `database.schema.t.c` (the schema one
    /// of ours, the database this one); the table part qualifies the column.
    pub(super) fn column_ref(&mut self) -> Result<Expr> {
        let pos = self.pos();
        let mut parts = vec![self.any_ident()?];
        while parts.len() < 4 && self.eat_op(".") {
            parts.push(self.any_ident()?);
        }
        let name = parts.pop().unwrap_or_default();
        let table = parts.pop();
        if let Some(schema) = parts.pop() {
            let known = schema.eq_ignore_ascii_case(crate::names::PUBLIC) || SystemSchema::by_name(&schema).is_some();
            if !known {
                return Err(SqlError::Plan { message: format!("schema '{schema}' does not exist"), pos: Some(pos) });
            }
        }
        if let Some(db) = parts.pop().filter(|d| !d.eq_ignore_ascii_case(crate::names::DATABASE)) {
            return Err(SqlError::Plan { message: format!("database '{db}' does not exist"), pos: Some(pos) });
        }
        Ok(Expr::Column { table, name, pos })
    }

    /// After `l op`: `ANY | SOME | ALL (ARRAY[...] | subquery)`, if that follows.
    pub(super) fn quantified(&mut self, l: &Expr, op: BinaryOp, pos: Pos) -> Result<Option<Expr>> {
        let any = self.is_kw("any") || self.is_kw("some");
        if !(any || self.is_kw("all")) || !matches!(self.peek_at(1), Tok::Op("(")) {
            return Ok(None);
        }
        self.advance();
        self.advance();
        if self.is_kw("select") || self.is_kw("with") {
            let query = Box::new(self.query()?);
            self.expect_op(")")?;
            return match (op, any) {
                (BinaryOp::Eq, true) => Ok(Some(Expr::InSubquery { expr: Box::new(l.clone()), query, negated: false })),
                (BinaryOp::NotEq, false) => {
                    Ok(Some(Expr::InSubquery { expr: Box::new(l.clone()), query, negated: true }))
                }
                _ => Err(SqlError::Parse {
                    message: "only = ANY and <> ALL take a subquery here; use IN, NOT IN or EXISTS".into(),
                    pos,
                }),
            };
        }
        if !(self.is_kw("array") && matches!(self.peek_at(1), Tok::Op("["))) {
            // Any other array: a column (`oid = ANY (pol.polroles)`), a function's result.
            let array = self.expr()?;
            self.expect_op(")")?;
            let args = vec![
                l.clone(),
                array,
                Expr::Lit(crate::ast::Literal::Str(op.sql().to_string()), pos),
                Expr::Lit(crate::ast::Literal::Bool(any), pos),
            ];
            return Ok(Some(Expr::Func(Box::new(FuncCall::new(crate::ast::ARRAY_QUANTIFIED, args, pos)))));
        }
        let items = self.array_items()?;
        self.expect_op(")")?;
        // x op ANY (a, b) is (x op a) OR (x op b), NULLs and all; ALL is AND. An empty array
        // makes ANY false and ALL true.
        let joiner = if any { BinaryOp::Or } else { BinaryOp::And };
        let each = items.into_iter().map(|r| Expr::Binary { op, left: Box::new(l.clone()), right: Box::new(r), pos });
        let folded = each.reduce(|a, b| Expr::Binary { op: joiner, left: Box::new(a), right: Box::new(b), pos });
        Ok(Some(folded.unwrap_or(Expr::Lit(crate::ast::Literal::Bool(!any), pos))))
    }

    /// `ARRAY[a, b, ...]`'s elements (the keyword read here); a bare array is not a value
    /// ZeptoDB has.
    pub(super) fn array_items(&mut self) -> Result<Vec<Expr>> {
        if !self.eat_kw("array") {
            return Err(self.unexpected("ARRAY[...] or a subquery"));
        }
        self.expect_op("[")?;
        let mut items = Vec::new();
        if self.eat_op("]") {
            return Ok(items);
        }
        loop {
            items.push(self.expr()?);
            if self.eat_op("]") {
                return Ok(items);
            }
            self.expect_op(",")?;
        }
    }
}
