//! ZeptoDB's hand-written recursive-descent SQL parser, producing our own AST ([`ast`]), and
//! the error type every SQL layer reports ([`error::SqlError`], with line/column positions):
//! the first stage of the query's path (parser → binder → optimizer → physical planner →
//! executor, in `zepto-sql`, which re-exports this crate as `zepto_sql::parser`). It depends on
//! nothing of the engine but its column types.
//!
//! Why not `sqlparser`: see ARCHITECTURE.md — in short, our time-series clauses (`ASOF JOIN ...
//! ON`, `WINDOW JOIN`, `SAMPLE BY`, `LATEST ON`) are first-class here, errors carry the exact
//! line/column, and a point query's parse costs ~1-2 µs instead of ~10 µs.
//!
//! # What it owns
//!
//! This file: statements and the token cursor ([`Parser`]). [`lexer`]: tokens with positions
//! (where each starts and ends), read one at a time; `tokens.rs`: the few ahead of the parser,
//! read as it goes (a statement's tokens are never all held), parameters bound as they come.
//! `query.rs` (SELECT, set operations, FROM, joins), `expr.rs` (expressions by precedence),
//! `window.rs`, `timeseries.rs` (`LATEST ON`, `SAMPLE BY`), `copy.rs`, `materialized.rs`
//! (`CREATE`/`REFRESH`/`DROP MATERIALIZED VIEW`, which keep the view's query as text),
//! `pg_syntax.rs` (what PostgreSQL clients write in catalog queries), [`names`]
//! (schema-qualified table names), [`limits`] (request size and expression depth),
//! [`access`] (what a statement needs of its caller), [`visit`] (walking the tree).
//!
//! # Entry points
//!
//! [`parse_statement`], [`parse_statements`], [`parse_statements_with_params`], and
//! [`parse_script`] (under [`ParseLimits`], with an interrupt check: what the doors call).
//! [`param_count`] for a prepared statement. [`ast::Statement::access`] and
//! [`ast::Statement::target`] tell a door what a statement needs, before anything is planned.
//!
//! # Invariants
//!
//! - Outside text never panics the parser: no indexing, `unwrap` or `expect` outside tests
//!   (denied below), recursion capped, each expression measured against [`ParseLimits`].
//! - Parameters are bound as literal tokens, never as text: they cannot change a statement.
//! - Every error carries its position ([`error::Pos`]) when known, and a stable
//!   [`code`](error::SqlError::code).
//! - `Display` on the AST prints canonical SQL: default column names, GROUP BY matching, and
//!   the `CREATE TABLE` a cluster node sends the others all come from it.
//!
//! # When you change …
//!
//! - **A SQL function**: nothing here. Any `name(args)` becomes an [`ast::FuncCall`]; the
//!   function itself goes in `zepto-sql`'s `expr/functions.rs`. Only special syntax
//!   (`EXTRACT(f FROM x)`) is parsed here, in `expr.rs`.
//! - **A statement**: an [`ast::Statement`] variant, its parse in `Parser::statement` (and the
//!   list in its error), its arms in `access.rs` (`access`, `target`), tests in `tests.rs`, a
//!   seed in `zepto-fuzz/src/seeds.rs` (`sql`); then `zepto-sql` (see its crate doc).
//! - **A keyword that ends a clause**: add it to `RESERVED`, or it is read as an alias.
//! - **An expression node**: its `Display`, `visit.rs` (`rewrite_expr`, and `for_each_child`,
//!   through which [`limits::measure`] counts nodes), and its binding in `zepto-sql`.
//! - **A `CREATE TABLE` clause**: its `Display` must print it and parse back (cluster nodes
//!   send tables as that SQL: `zepto-sql`'s `spread.rs`, `zepto-cluster`'s `schemas.rs`).
//! - **A [`SqlError`] variant**: its `code`; its HTTP status
//!   (`zepto-server/src/error.rs`), SQLSTATE (`zepto-pg/src/error.rs`, `sqlstate`) and their
//!   docs tables. `zepto-flightsql/src/run.rs` (`status`) and `python/src/errors.rs`
//!   (`sql_error`) have catch-all arms: check them by hand.
#![warn(missing_docs)]
// The parser reads outside text: no panicking index, unwrap or expect outside tests.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

pub mod access;
pub mod ast;
mod copy;
pub mod error;
mod expr;
pub mod lexer;
pub mod limits;
mod materialized;
pub mod names;
mod pg_syntax;
mod query;
mod timeseries;
mod tokens;
pub mod visit;
mod window;

use crate::error::{Pos, Result, SqlError};
use ast::*;
use lexer::{Lexer, Tok};
pub use limits::ParseLimits;
use tokens::Tokens;
use zepto_storage::DataType;

/// Words that end an expression or clause, so they are never taken as an implicit alias.
const RESERVED: &[&str] = &[
    "select",
    "from",
    "where",
    "group",
    "having",
    "order",
    "limit",
    "offset",
    "union",
    "intersect",
    "except",
    "join",
    "inner",
    "left",
    "right",
    "full",
    "cross",
    "outer",
    "on",
    "using",
    "as",
    "and",
    "or",
    "not",
    "is",
    "in",
    "between",
    "like",
    "ilike",
    "case",
    "when",
    "then",
    "else",
    "end",
    "with",
    "by",
    "asc",
    "desc",
    "nulls",
    "into",
    "values",
    "asof",
    "window",
    "splice",
    "sample",
    "latest",
    "natural",
    "qualify",
    "within",
    "over",
    "all",
    "distinct",
    "exclude",
];

/// A recursive-descent parser over a text's tokens, read as it goes, held to [`ParseLimits`];
/// entry points are the `parse_*` functions.
pub struct Parser<'a> {
    toks: Tokens<'a>,
    depth: usize,
    limits: ParseLimits,
    /// `expr()` calls under way since the innermost query began: an expression is measured
    /// against the limits when the outermost one completes.
    expr_nesting: usize,
    /// Expression nodes of the current statement so far.
    elements: usize,
}

/// Nesting limit of the recursive descent: deeper input is rejected instead of overflowing
/// the parser's stack. Left-deep chains are loops, held by [`ParseLimits::max_depth`] instead.
const MAX_DEPTH: usize = 200;

/// A value bound to a query parameter (`?` or `$n`).
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer (BIGINT).
    Int(i64),
    /// A float (DOUBLE).
    Float(f64),
    /// A string (VARCHAR, or whatever the context casts it to).
    Str(String),
    /// Nanoseconds since the epoch (UTC), bound as a `TIMESTAMP '...'` literal with all nine
    /// fractional digits: a TIMESTAMP value, not text.
    Timestamp(i64),
    /// A vector of finite REALs, bound as an array literal `[x, y, ...]` (a `FLOAT[n]` where a
    /// vector is expected, e.g. in the distance functions).
    Vector(Vec<f32>),
}

/// How many parameters `sql` takes: its highest `$n` (each `?` counts as the next number);
/// 0 when it has none. A door that prepares statements (PostgreSQL's Parse) asks this before
/// any value is bound.
pub fn param_count(sql: &str) -> Result<usize> {
    let mut lexer = Lexer::new(sql, &|| Ok(()));
    let mut most = 0;
    loop {
        match lexer.next_token()?.tok {
            Tok::Param(n) => most = most.max(n),
            Tok::Eof => return Ok(most),
            _ => {}
        }
    }
}

/// Parse a script of `;`-separated statements.
pub fn parse_statements(sql: &str) -> Result<Vec<Statement>> {
    parse_statements_with_params(sql, &[])
}

/// Parse a script whose `?`/`$n` placeholders take `params` (1-based). Values are substituted
/// as literal tokens, never as text, so a parameter can never change the statement's shape.
/// Default [`ParseLimits`], never interrupted.
pub fn parse_statements_with_params(sql: &str, params: &[ParamValue]) -> Result<Vec<Statement>> {
    parse_script(sql, params, &ParseLimits::default(), &|| Ok(()))
}

/// [`parse_statements_with_params`] under `limits`, asking `interrupt` every so often whether
/// to stop (a door passes its query's deadline, cancel flag and memory check, so a long script
/// is stopped while it is read).
pub fn parse_script(
    sql: &str,
    params: &[ParamValue],
    limits: &ParseLimits,
    interrupt: &dyn Fn() -> Result<()>,
) -> Result<Vec<Statement>> {
    limits.check_size(sql)?;
    let toks = Tokens::new(Lexer::new(sql, interrupt), params);
    let mut p = Parser { toks, depth: 0, limits: *limits, expr_nesting: 0, elements: 0 };
    let parsed = p.script(sql, interrupt);
    p.toks.finish(parsed)
}

impl Parser<'_> {
    /// The statements of the whole text (`sql`, whose tokens these are).
    fn script(&mut self, sql: &str, interrupt: &dyn Fn() -> Result<()>) -> Result<Vec<Statement>> {
        let mut out = Vec::new();
        loop {
            while self.eat_op(";") {}
            if self.peek() == &Tok::Eof {
                return Ok(out);
            }
            self.limits.check_statements(out.len() + 1, self.pos())?;
            interrupt()?;
            self.elements = 0;
            out.push(self.statement(sql)?);
            if !self.eat_op(";") && self.peek() != &Tok::Eof {
                return Err(self.unexpected("';' or end of input"));
            }
        }
    }
}

/// Parse exactly one statement.
pub fn parse_statement(sql: &str) -> Result<Statement> {
    let mut v = parse_statements(sql)?;
    match v.len() {
        1 => Ok(v.remove(0)),
        0 => Err(SqlError::Parse { message: "empty statement".into(), pos: Pos { offset: 0, line: 1, column: 1 } }),
        _ => Err(SqlError::Parse {
            message: "expected a single statement".into(),
            pos: Pos { offset: 0, line: 1, column: 1 },
        }),
    }
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks.get(0).tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks.get(k).tok
    }

    fn pos(&self) -> Pos {
        self.toks.get(0).pos
    }

    /// Byte offset just past the last token taken (0 before any): a token taken keeps its
    /// place in the text.
    fn prev_end(&self) -> usize {
        self.toks.prev_end()
    }

    /// The current token, and move past it (at the end, `Eof`, and the cursor stays).
    fn advance(&mut self) -> Tok {
        self.toks.advance()
    }

    fn describe(t: &Tok) -> String {
        match t {
            Tok::Ident(s) => format!("'{s}'"),
            Tok::QIdent(s) => format!("\"{s}\""),
            Tok::Str(s) => format!("string '{s}'"),
            Tok::Num(s) => format!("number {s}"),
            Tok::Op(o) => format!("'{o}'"),
            Tok::Param(n) => format!("parameter ${n}"),
            // Read at once, but what the text has there is a `[`.
            Tok::Vector(_) => "'['".into(),
            Tok::Eof => "end of input".into(),
        }
    }

    fn unexpected(&self, wanted: &str) -> SqlError {
        SqlError::Parse {
            message: format!("expected {wanted}, found {}", Self::describe(self.peek())),
            pos: self.pos(),
        }
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    /// Whether a query starts here: SELECT, WITH, VALUES, DuckDB's FROM-first, or `(`.
    fn starts_query(&self) -> bool {
        ["select", "with", "values", "from"].iter().any(|k| self.is_kw(k)) || matches!(self.peek(), Tok::Op("("))
    }

    fn is_kw_at(&self, k: usize, kw: &str) -> bool {
        matches!(self.peek_at(k), Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.advance();
            true
        } else {
            false
        }
    }

    /// An optional choice of two keywords: true after `yes`, false after `no` or neither.
    fn either_kw(&mut self, yes: &str, no: &str) -> bool {
        self.eat_kw(yes) || {
            self.eat_kw(no);
            false
        }
    }

    fn expect_kw(&mut self, kw: &str) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.unexpected(&kw.to_ascii_uppercase()))
        }
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Tok::Op(o) if *o == op) {
            self.advance();
            true
        } else {
            false
        }
    }

    fn expect_op(&mut self, op: &str) -> Result<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(self.unexpected(&format!("'{op}'")))
        }
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let pos = self.pos();
            return Err(SqlError::LimitExceeded(format!(
                "statement nested more than {MAX_DEPTH} levels deep (parentheses, subqueries, unary \
                 operators) at line {}, column {}: a fixed limit of the parser",
                pos.line, pos.column
            )));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// One more link of a left-deep chain that a loop builds (`a AND b AND ...`, `x::T::U`):
    /// refused at once when the chain alone goes past the depth limit, before a tree too deep
    /// even to drop is built. Complete expressions are measured exactly
    /// ([`limits::ParseLimits::check_expr`]).
    fn link(&self, links: &mut usize, pos: Pos) -> Result<()> {
        *links += 1;
        let depth = *links + self.depth;
        if depth > self.limits.max_depth {
            return Err(self.limits.too_deep(depth, pos));
        }
        Ok(())
    }

    /// An identifier (bare non-reserved word or quoted).
    fn ident(&mut self) -> Result<String> {
        match self.peek().clone() {
            Tok::Ident(s) if !RESERVED.contains(&s.to_ascii_lowercase().as_str()) => {
                self.advance();
                Ok(s)
            }
            Tok::QIdent(s) => {
                self.advance();
                Ok(s)
            }
            _ => Err(self.unexpected("an identifier")),
        }
    }

    /// Any word, reserved or not (after `.` or where context makes it a name).
    fn any_ident(&mut self) -> Result<String> {
        match self.peek().clone() {
            Tok::Ident(s) | Tok::QIdent(s) => {
                self.advance();
                Ok(s)
            }
            _ => Err(self.unexpected("an identifier")),
        }
    }

    /// A TTL: `NONE`, `0`, `<n> <unit>` (`30 DAYS`), `'30 days'` or `INTERVAL '30 days'`.
    fn ttl(&mut self) -> Result<Option<i64>> {
        let pos = self.pos();
        let bad = |m: String| SqlError::Parse { message: m, pos };
        if self.eat_kw("none") {
            return Ok(None);
        }
        self.eat_kw("interval");
        let text = match self.peek().clone() {
            Tok::Str(s) => {
                self.advance();
                s
            }
            Tok::Num(n) => {
                self.advance();
                if n == "0" {
                    return Ok(None);
                }
                match self.peek().clone() {
                    Tok::Ident(u) => {
                        self.advance();
                        format!("{n} {u}")
                    }
                    _ => return Err(self.unexpected("a unit (e.g. DAYS)")),
                }
            }
            _ => return Err(self.unexpected("a TTL (e.g. 30 DAYS, '12 hours' or NONE)")),
        };
        match zepto_storage::time::parse_interval(&text) {
            Some(ns) if ns > 0 => Ok(Some(ns)),
            _ => Err(bad(format!("'{text}' is not a positive duration"))),
        }
    }

    /// A timestamp: `'2024-01-02 09:30:00'`, `TIMESTAMP '...'` or integer nanoseconds.
    fn timestamp_lit(&mut self) -> Result<i64> {
        let pos = self.pos();
        self.eat_kw("timestamp");
        match self.peek().clone() {
            Tok::Str(s) => {
                self.advance();
                zepto_storage::time::parse_timestamp(&s)
                    .ok_or_else(|| SqlError::Parse { message: format!("'{s}' is not a timestamp"), pos })
            }
            Tok::Num(n) => {
                self.advance();
                n.parse()
                    .map_err(|_| SqlError::Parse { message: format!("{n} is not a timestamp in nanoseconds"), pos })
            }
            _ => Err(self.unexpected("a timestamp")),
        }
    }

    fn data_type(&mut self) -> Result<DataType> {
        let pos = self.pos();
        let name = self.any_ident()?;
        let mut full = name.clone();
        if name.eq_ignore_ascii_case("double") && self.eat_kw("precision") {
            full = "DOUBLE".into();
        }
        if name.eq_ignore_ascii_case("character") && self.eat_kw("varying") {
            full = "VARCHAR".into();
        }
        if ["decimal", "numeric", "dec"].iter().any(|d| name.eq_ignore_ascii_case(d)) {
            let message = format!(
                "{} is not supported (ZeptoDB has no exact decimal type): use DOUBLE, or BIGINT holding \
                 the value in its smallest unit (cents, ticks)",
                name.to_ascii_uppercase()
            );
            return Err(SqlError::Parse { message, pos });
        }
        // The narrow integers (QuestDB's SHORT and BYTE) are held as INTEGER, and a CHAR as
        // VARCHAR: every value they can hold fits, and a table's schema shows what it became.
        let lower = full.to_ascii_lowercase();
        if matches!(lower.as_str(), "smallint" | "int2" | "short" | "tinyint" | "int1" | "byte") {
            full = "INTEGER".into();
        } else if matches!(lower.as_str(), "char" | "character") {
            full = "VARCHAR".into();
        }
        let dt = DataType::from_sql(&full)
            .filter(|t| *t != DataType::Interval || name.eq_ignore_ascii_case("interval"))
            .ok_or_else(|| SqlError::Parse { message: format!("unknown type '{name}'"), pos })?;
        // VARCHAR(n), DECIMAL-like precision arguments are accepted and ignored.
        if self.eat_op("(") {
            while !self.eat_op(")") {
                if self.peek() == &Tok::Eof {
                    return Err(self.unexpected("')'"));
                }
                self.advance();
            }
        }
        // `T[]` (no dimension) is an array type, which only a cast takes ([`Parser::cast_target`]).
        if matches!(self.peek(), Tok::Op("[")) && !matches!(self.peek_at(1), Tok::Op("]")) {
            return self.vector_type(dt, pos);
        }
        Ok(dt)
    }

    /// `FLOAT[n]` (also `REAL[n]`, `FLOAT4[n]`): the element type read, the `[n]` next.
    fn vector_type(&mut self, elem: DataType, pos: Pos) -> Result<DataType> {
        self.advance();
        let dim = match self.advance() {
            Tok::Num(n) => n,
            _ => return Err(SqlError::Parse { message: "a vector type needs its dimension: FLOAT[n]".into(), pos }),
        };
        self.expect_op("]")?;
        if elem != DataType::Float32 {
            return Err(SqlError::Parse {
                message: format!("arrays of {elem} are not supported; vectors are FLOAT[n]"),
                pos,
            });
        }
        dim.parse::<usize>().ok().and_then(DataType::vector).ok_or_else(|| SqlError::Parse {
            message: format!("FLOAT[{dim}]: a vector's dimension is 1 to {}", zepto_storage::types::MAX_VECTOR_DIM),
            pos,
        })
    }

    /// `SET name = value` / `SET name TO value` (after `SET`).
    fn set(&mut self) -> Result<Statement> {
        let pos = self.pos();
        let name = self.ident()?.to_ascii_lowercase();
        if !self.eat_op("=") && !self.eat_kw("to") {
            return Err(self.unexpected("'=' or TO"));
        }
        let value = match self.peek().clone() {
            Tok::Str(s) => s,
            Tok::Ident(s) => s.to_ascii_lowercase(),
            Tok::Num(s) => s.to_ascii_lowercase(),
            _ => return Err(self.unexpected("a value")),
        };
        self.advance();
        Ok(Statement::Set { name, value, pos })
    }

    /// One statement of `src` (the script its tokens were read from).
    fn statement(&mut self, src: &str) -> Result<Statement> {
        let pos = self.pos();
        if self.starts_query() {
            return Ok(Statement::Query(Box::new(self.query()?)));
        }
        if self.eat_kw("explain") {
            let analyze = self.eat_kw("analyze");
            return Ok(Statement::Explain { query: Box::new(self.query()?), analyze });
        }
        if self.eat_kw("create") {
            if self.eat_kw("index") {
                return self.create_index();
            }
            if self.eat_kw("materialized") {
                return self.create_materialized_view(src);
            }
            return self.create_table();
        }
        if self.eat_kw("drop") {
            if self.eat_kw("index") {
                return self.drop_index(pos);
            }
            if self.eat_kw("materialized") {
                return self.drop_materialized_view();
            }
            return self.drop_table(pos);
        }
        if self.eat_kw("alter") {
            return self.alter_table(pos);
        }
        if self.eat_kw("refresh") {
            return self.refresh_materialized_view();
        }
        if self.eat_kw("insert") {
            return self.insert(pos);
        }
        if self.eat_kw("copy") {
            return self.copy(pos);
        }
        if self.eat_kw("show") {
            self.expect_kw("tables")?;
            return Ok(Statement::ShowTables);
        }
        if self.eat_kw("set") {
            return self.set();
        }
        if self.eat_kw("delete") {
            return self.delete();
        }
        if self.eat_kw("update") {
            return self.update();
        }
        if self.eat_kw("checkpoint") {
            return Ok(Statement::Checkpoint);
        }
        if self.is_kw("backup") && self.is_kw_at(1, "to") {
            let pos = self.pos();
            self.advance();
            self.advance();
            let dest = self.string_lit()?;
            return Ok(Statement::Backup { dest, pos });
        }
        if self.eat_kw("describe") || self.eat_kw("desc") {
            let pos = self.pos();
            let table = self.table_name()?;
            return Ok(Statement::Describe { table, pos });
        }
        Err(self.unexpected(
            "a statement (SELECT, FROM, WITH, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, REFRESH, COPY, SHOW, DESCRIBE, EXPLAIN, CHECKPOINT)",
        ))
    }

    /// `DROP TABLE [IF EXISTS] name`, after `DROP`.
    fn drop_table(&mut self, pos: Pos) -> Result<Statement> {
        self.expect_kw("table")?;
        let if_exists = self.eat_kw("if") && {
            self.expect_kw("exists")?;
            true
        };
        let name = self.table_name()?;
        Ok(Statement::DropTable { name, if_exists, pos })
    }

    /// `[IF NOT EXISTS] name ON t [USING method] (column) [WITH (k = v, ...)]`, after
    /// `CREATE INDEX` (DuckDB vss's spelling: `USING HNSW (emb) WITH (metric = 'cosine')`).
    fn create_index(&mut self) -> Result<Statement> {
        let if_not_exists = self.eat_kw("if") && {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
            true
        };
        let name = self.ident()?;
        self.expect_kw("on")?;
        let pos = self.pos();
        let table = self.table_name()?;
        let method = if self.eat_kw("using") { Some(self.any_ident()?.to_ascii_lowercase()) } else { None };
        self.expect_op("(")?;
        let column = self.ident()?;
        if !self.eat_op(")") {
            return Err(self.unexpected("')': an index covers one column"));
        }
        let options = if self.eat_kw("with") { self.index_options()? } else { Vec::new() };
        Ok(Statement::CreateIndex { name, table, column, method, options, if_not_exists, pos })
    }

    /// `(k = v, ...)` after `WITH` in `CREATE INDEX`; a value is a string, number or word.
    fn index_options(&mut self) -> Result<Vec<(String, String)>> {
        self.expect_op("(")?;
        let mut out = Vec::new();
        loop {
            let k = self.any_ident()?.to_ascii_lowercase();
            self.expect_op("=")?;
            let v = match self.peek().clone() {
                Tok::Str(s) | Tok::Ident(s) => {
                    self.advance();
                    s
                }
                Tok::Num(s) => {
                    self.advance();
                    s.to_string()
                }
                _ => return Err(self.unexpected("an option value (a string, a number or a word)")),
            };
            out.push((k, v));
            if self.eat_op(")") {
                return Ok(out);
            }
            self.expect_op(",")?;
        }
    }

    /// `[IF EXISTS] name`, after `DROP INDEX`.
    fn drop_index(&mut self, pos: Pos) -> Result<Statement> {
        let if_exists = self.eat_kw("if") && {
            self.expect_kw("exists")?;
            true
        };
        let name = self.ident()?;
        Ok(Statement::DropIndex { name, if_exists, pos })
    }

    /// `UPSERT KEYS (col, ...)`, after `DEDUP` (CREATE TABLE) or `DEDUP ENABLE` (ALTER TABLE).
    fn dedup_keys(&mut self) -> Result<Vec<String>> {
        self.expect_kw("upsert")?;
        self.expect_kw("keys")?;
        self.expect_op("(")?;
        let mut keys = vec![self.ident()?];
        while self.eat_op(",") {
            keys.push(self.ident()?);
        }
        self.expect_op(")")?;
        Ok(keys)
    }

    /// `ALTER TABLE t SET TTL ... | CONVERT PARTITION ... | DEDUP ... | ADD [COLUMN] ...`, after
    /// `ALTER`.
    fn alter_table(&mut self, pos: Pos) -> Result<Statement> {
        self.expect_kw("table")?;
        let table = self.table_name()?;
        if self.eat_kw("set") {
            self.expect_kw("ttl")?;
            let ttl_ns = self.ttl()?;
            return Ok(Statement::AlterSetTtl { table, ttl_ns, pos });
        }
        if self.eat_kw("convert") {
            return self.alter_tier(table);
        }
        if self.eat_kw("dedup") {
            if self.eat_kw("disable") {
                return Ok(Statement::AlterDedup { table, keys: Vec::new(), pos });
            }
            self.expect_kw("enable")?;
            let keys = self.dedup_keys()?;
            return Ok(Statement::AlterDedup { table, keys, pos });
        }
        self.expect_kw("add")?;
        self.eat_kw("column");
        let if_not_exists = self.eat_kw("if") && {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
            true
        };
        let column = self.ident()?;
        let data_type = self.data_type()?;
        Ok(Statement::AlterAddColumn { table, column, data_type, if_not_exists, pos })
    }

    /// `PARTITION TO PARQUET WHERE ts < | <= time`, after `ALTER TABLE t CONVERT`.
    fn alter_tier(&mut self, table: String) -> Result<Statement> {
        for kw in ["partition", "to", "parquet", "where"] {
            self.expect_kw(kw)?;
        }
        let cpos = self.pos();
        let column = self.ident()?;
        let inclusive = if self.eat_op("<") {
            false
        } else if self.eat_op("<=") {
            true
        } else {
            return Err(self.unexpected("'<' or '<=' (rows before a time move)"));
        };
        let at = self.timestamp_lit()?;
        let before = if inclusive { at.saturating_add(1) } else { at };
        Ok(Statement::AlterTier { table, column, before, pos: cpos })
    }

    /// `FROM t [WHERE ...]`, after `DELETE`.
    fn delete(&mut self) -> Result<Statement> {
        self.expect_kw("from")?;
        let pos = self.pos();
        let table = self.table_name()?;
        let filter = if self.eat_kw("where") { Some(self.expr()?) } else { None };
        Ok(Statement::Delete { table, filter, pos })
    }

    /// `t SET c = e, ... [WHERE ...]`, after `UPDATE`.
    fn update(&mut self) -> Result<Statement> {
        let pos = self.pos();
        let table = self.table_name()?;
        self.expect_kw("set")?;
        let mut sets = Vec::new();
        loop {
            let cpos = self.pos();
            let column = self.ident()?;
            self.expect_op("=")?;
            sets.push((column, self.expr()?, cpos));
            if !self.eat_op(",") {
                break;
            }
        }
        let filter = if self.eat_kw("where") { Some(self.expr()?) } else { None };
        Ok(Statement::Update { table, sets, filter, pos })
    }

    fn create_table(&mut self) -> Result<Statement> {
        if self.eat_kw("or") {
            self.expect_kw("replace")?;
        }
        self.expect_kw("table")?;
        let if_not_exists = self.eat_kw("if") && {
            self.expect_kw("not")?;
            self.expect_kw("exists")?;
            true
        };
        let name = self.table_name()?;
        if self.eat_kw("as") {
            let query = Box::new(self.query()?);
            return Ok(Statement::CreateTableAs { name, if_not_exists, query });
        }
        self.expect_op("(")?;
        let mut columns = Vec::new();
        loop {
            let col = self.ident()?;
            let dt = self.data_type()?;
            // Column constraints we accept and do not enforce yet.
            loop {
                if self.eat_kw("not") {
                    self.expect_kw("null")?;
                } else if self.eat_kw("null") {
                } else if self.eat_kw("primary") {
                    self.expect_kw("key")?;
                } else {
                    break;
                }
            }
            columns.push((col, dt));
            if self.eat_op(")") {
                break;
            }
            self.expect_op(",")?;
        }
        let (mut timestamp, mut partition_by, mut dedup_keys) = (None, None, Vec::new());
        loop {
            if self.eat_kw("timestamp") {
                self.expect_op("(")?;
                timestamp = Some(self.ident()?);
                self.expect_op(")")?;
            } else if self.eat_kw("partition") {
                self.expect_kw("by")?;
                let key = self.ident()?;
                // QuestDB's time partitioning (PARTITION BY DAY) unless a column has that name:
                // rows are kept in time order in every partition here, so it needs no column.
                let time_unit =
                    ["none", "hour", "day", "week", "month", "year"].iter().any(|u| key.eq_ignore_ascii_case(u));
                if !time_unit || columns.iter().any(|(c, _)| c.eq_ignore_ascii_case(&key)) {
                    partition_by = Some(key);
                }
            } else if self.eat_kw("bypass") {
                self.expect_kw("wal")?;
            } else if self.eat_kw("wal") {
                // QuestDB's WAL tables: every table here is logged.
            } else if self.eat_kw("dedup") {
                dedup_keys = self.dedup_keys()?;
            } else {
                break;
            }
        }
        Ok(Statement::CreateTable(CreateTable { name, if_not_exists, columns, timestamp, partition_by, dedup_keys }))
    }

    fn insert(&mut self, pos: Pos) -> Result<Statement> {
        self.expect_kw("into")?;
        let table = self.table_name()?;
        let mut columns = Vec::new();
        if matches!(self.peek(), Tok::Op("("))
            && !(self.is_kw_at(1, "select") || self.is_kw_at(1, "with") || self.is_kw_at(1, "from"))
        {
            self.advance();
            loop {
                columns.push(self.ident()?);
                if self.eat_op(")") {
                    break;
                }
                self.expect_op(",")?;
            }
        }
        let source = if self.eat_kw("values") {
            InsertSource::Values(self.values_rows()?)
        } else {
            InsertSource::Query(Box::new(self.query()?))
        };
        Ok(Statement::Insert { table, columns, source, pos })
    }

    fn values_rows(&mut self) -> Result<Vec<Vec<Expr>>> {
        let mut rows = Vec::new();
        loop {
            self.expect_op("(")?;
            let mut row = Vec::new();
            loop {
                row.push(self.expr()?);
                if self.eat_op(")") {
                    break;
                }
                self.expect_op(",")?;
            }
            rows.push(row);
            if !self.eat_op(",") {
                break;
            }
        }
        Ok(rows)
    }

    fn string_lit(&mut self) -> Result<String> {
        match self.peek().clone() {
            Tok::Str(s) => {
                self.advance();
                Ok(s)
            }
            _ => Err(self.unexpected("a quoted string")),
        }
    }
}

#[cfg(test)]
mod tests;
