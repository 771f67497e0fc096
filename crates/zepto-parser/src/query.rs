//! SELECT queries: WITH, set operations, the SELECT core, FROM with joins, ORDER BY/LIMIT.

use super::ast::*;
use super::lexer::Tok;
use super::Parser;
use crate::error::{Result, SqlError};

impl Parser<'_> {
    /// A query; its expressions are measured against the limits on their own (a subquery
    /// inside an expression is not part of that expression's depth).
    #[recursive::recursive]
    pub(super) fn query(&mut self) -> Result<Query> {
        let outer = std::mem::replace(&mut self.expr_nesting, 0);
        let q = self.query_body();
        self.expr_nesting = outer;
        q
    }

    fn query_body(&mut self) -> Result<Query> {
        self.enter()?;
        let mut ctes = Vec::new();
        if self.eat_kw("with") {
            self.eat_kw("recursive");
            loop {
                let name = self.ident()?;
                self.expect_kw("as")?;
                self.eat_kw("materialized");
                self.expect_op("(")?;
                let q = self.query()?;
                self.expect_op(")")?;
                ctes.push((name, q));
                if !self.eat_op(",") {
                    break;
                }
            }
        }
        let body = self.set_expr(0)?;
        let mut order_by = Vec::new();
        if self.is_kw("order") {
            self.advance();
            self.expect_kw("by")?;
            order_by = if self.at_order_all() { vec![self.order_all()?] } else { self.order_items()? };
        }
        let (mut limit, mut limit_to, mut offset) = (None, None, None);
        loop {
            if self.eat_kw("limit") {
                limit = Some(self.expr()?);
                if self.eat_op(",") {
                    limit_to = Some(self.expr()?);
                }
            } else if self.eat_kw("offset") {
                offset = Some(self.expr()?);
                self.eat_kw("rows");
            } else {
                break;
            }
        }
        self.leave();
        Ok(Query { ctes, body, order_by, limit, limit_to, offset })
    }

    pub(super) fn order_items(&mut self) -> Result<Vec<OrderItem>> {
        let mut items = Vec::new();
        loop {
            let expr = self.expr()?;
            let (desc, nulls_first) = self.order_direction()?;
            items.push(OrderItem { expr, desc, nulls_first, all: false });
            if !self.eat_op(",") {
                return Ok(items);
            }
        }
    }

    /// `[ASC | DESC] [NULLS FIRST | NULLS LAST]`.
    fn order_direction(&mut self) -> Result<(bool, Option<bool>)> {
        let desc = self.either_kw("desc", "asc");
        let nulls_first = if self.eat_kw("nulls") {
            if self.eat_kw("first") {
                Some(true)
            } else {
                self.expect_kw("last")?;
                Some(false)
            }
        } else {
            None
        };
        Ok((desc, nulls_first))
    }

    /// Whether a query's ORDER BY is DuckDB's `ALL` (the bare word, not a column `"all"`, and
    /// not the start of an expression such as `all(...)`).
    fn at_order_all(&self) -> bool {
        self.is_kw("all") && !matches!(self.peek_at(1), Tok::Op(o) if !matches!(*o, ";" | ")" | ","))
    }

    /// `ALL [ASC | DESC] [NULLS ...]`, alone: every output column.
    fn order_all(&mut self) -> Result<OrderItem> {
        let pos = self.pos();
        self.expect_kw("all")?;
        let (desc, nulls_first) = self.order_direction()?;
        if matches!(self.peek(), Tok::Op(",")) {
            return Err(SqlError::Parse { message: "ORDER BY ALL takes no other keys".into(), pos: self.pos() });
        }
        Ok(OrderItem { expr: Expr::Lit(Literal::Null, pos), desc, nulls_first, all: true })
    }

    /// Set operations; INTERSECT binds tighter than UNION/EXCEPT.
    fn set_expr(&mut self, min_prec: u8) -> Result<SetExpr> {
        let mut left = self.set_primary()?;
        loop {
            let (op, prec) = if self.is_kw("union") {
                (SetOp::Union, 1)
            } else if self.is_kw("except") {
                (SetOp::Except, 1)
            } else if self.is_kw("intersect") {
                (SetOp::Intersect, 2)
            } else {
                break;
            };
            if prec < min_prec {
                break;
            }
            self.advance();
            let all = self.eat_kw("all");
            if !all {
                self.eat_kw("distinct");
            }
            let right = self.set_expr(prec + 1)?;
            left = SetExpr::SetOp { op, all, left: Box::new(left), right: Box::new(right) };
        }
        Ok(left)
    }

    fn set_primary(&mut self) -> Result<SetExpr> {
        if self.eat_op("(") {
            let q = self.query()?;
            self.expect_op(")")?;
            return Ok(SetExpr::Query(Box::new(q)));
        }
        if self.eat_kw("values") {
            return Ok(SetExpr::Values(self.values_rows()?));
        }
        let (distinct, mut items, from) = if self.is_kw("from") {
            // DuckDB's FROM-first: `FROM t [SELECT items] ...`; without SELECT, every column.
            let pos = self.pos();
            self.advance();
            let from = self.parse_from()?;
            let (distinct, items) = if self.eat_kw("select") {
                self.select_list()?
            } else {
                (false, vec![SelectItem::Wildcard { table: None, exclude: Vec::new(), pos }])
            };
            (distinct, items, Some(from))
        } else {
            self.expect_kw("select")?;
            let (distinct, items) = self.select_list()?;
            let from = if self.eat_kw("from") { Some(self.parse_from()?) } else { None };
            (distinct, items, from)
        };
        let mut latest = self.latest_clause()?;
        let where_ = if self.eat_kw("where") { Some(self.expr()?) } else { None };
        if latest.is_none() {
            latest = self.latest_clause()?;
        }
        let sample_by = self.sample_by_clause()?;
        let mut group_by = Vec::new();
        if self.is_kw("group") {
            self.advance();
            self.expect_kw("by")?;
            if !self.eat_kw("all") {
                loop {
                    group_by.push(self.expr()?);
                    if !self.eat_op(",") {
                        break;
                    }
                }
            }
        }
        let mut having = if self.eat_kw("having") { Some(self.expr()?) } else { None };
        let mut named = Vec::new();
        if self.eat_kw("window") {
            loop {
                let name = self.ident()?;
                self.expect_kw("as")?;
                self.expect_op("(")?;
                let spec = self.window_spec(&named)?;
                named.push((name, spec));
                if !self.eat_op(",") {
                    break;
                }
            }
        }
        let mut qualify = if self.eat_kw("qualify") { Some(self.expr()?) } else { None };
        if !named.is_empty() {
            let mut err = None;
            let mut resolve = |e: &mut Expr| {
                if let Err(x) = super::window::resolve_named(e, &named) {
                    err.get_or_insert(x);
                }
            };
            for it in &mut items {
                if let SelectItem::Expr { expr, .. } = it {
                    super::visit::rewrite_expr(expr, &mut resolve);
                }
            }
            for e in having.iter_mut().chain(qualify.iter_mut()) {
                super::visit::rewrite_expr(e, &mut resolve);
            }
            if let Some(e) = err {
                return Err(e);
            }
        }
        Ok(SetExpr::Select(Box::new(Select {
            distinct,
            items,
            from,
            where_,
            group_by,
            having,
            qualify,
            latest,
            sample_by,
        })))
    }

    /// `[DISTINCT | ALL] item, ...` after SELECT (a trailing comma allowed, as DuckDB does).
    fn select_list(&mut self) -> Result<(bool, Vec<SelectItem>)> {
        let distinct = self.either_kw("distinct", "all");
        let mut items = Vec::new();
        loop {
            items.push(self.select_item()?);
            if !self.eat_op(",") {
                break;
            }
            if self.is_kw("from") || self.at_clause_end() {
                break;
            }
        }
        Ok((distinct, items))
    }

    /// Whether the next token ends a select list that has no FROM after it (FROM-first, or a
    /// trailing comma before WHERE and the like).
    fn at_clause_end(&self) -> bool {
        matches!(self.peek(), Tok::Eof | Tok::Op(";") | Tok::Op(")"))
            || [
                "where",
                "group",
                "having",
                "order",
                "limit",
                "offset",
                "window",
                "qualify",
                "union",
                "except",
                "intersect",
            ]
            .iter()
            .any(|k| self.is_kw(k))
    }

    fn select_item(&mut self) -> Result<SelectItem> {
        let pos = self.pos();
        if self.eat_op("*") {
            return Ok(SelectItem::Wildcard { table: None, exclude: self.exclude()?, pos });
        }
        if matches!(self.peek(), Tok::Ident(_) | Tok::QIdent(_))
            && matches!(self.peek_at(1), Tok::Op("."))
            && matches!(self.peek_at(2), Tok::Op("*"))
        {
            let t = self.any_ident()?;
            self.advance();
            self.advance();
            return Ok(SelectItem::Wildcard { table: Some(t), exclude: self.exclude()?, pos });
        }
        let expr = self.expr()?;
        let alias = self.alias()?;
        Ok(SelectItem::Expr { expr, alias })
    }

    fn exclude(&mut self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        if self.eat_kw("exclude") {
            if self.eat_op("(") {
                loop {
                    out.push(self.ident()?);
                    if self.eat_op(")") {
                        break;
                    }
                    self.expect_op(",")?;
                }
            } else {
                out.push(self.ident()?);
            }
        }
        Ok(out)
    }

    /// `[AS] name` (a bare word must not be reserved).
    fn alias(&mut self) -> Result<Option<String>> {
        if self.eat_kw("as") {
            return Ok(Some(self.any_ident()?));
        }
        match self.peek() {
            Tok::QIdent(_) => Ok(Some(self.any_ident()?)),
            Tok::Ident(_) => Ok(self.ident().ok()),
            _ => Ok(None),
        }
    }

    fn parse_from(&mut self) -> Result<TableRef> {
        let mut left = self.table_primary()?;
        loop {
            if self.eat_op(",") {
                let right = self.table_primary()?;
                left = TableRef::Join {
                    left: Box::new(left),
                    right: Box::new(right),
                    kind: JoinKind::Cross,
                    on: None,
                    using: vec![],
                };
                continue;
            }
            let kind = if self.eat_kw("cross") {
                self.expect_kw("join")?;
                JoinKind::Cross
            } else if self.eat_kw("join") {
                JoinKind::Inner
            } else if self.eat_kw("inner") {
                self.expect_kw("join")?;
                JoinKind::Inner
            } else if self.eat_kw("asof") {
                let k = if self.eat_kw("left") {
                    JoinKind::AsofLeft
                } else if self.eat_kw("right") {
                    JoinKind::AsofRight
                } else if self.eat_kw("full") {
                    JoinKind::AsofFull
                } else if self.eat_kw("semi") {
                    JoinKind::AsofSemi
                } else if self.eat_kw("anti") {
                    JoinKind::AsofAnti
                } else {
                    JoinKind::Asof
                };
                // OUTER only after a side: `ASOF OUTER JOIN` names no side.
                if matches!(k, JoinKind::AsofLeft | JoinKind::AsofRight | JoinKind::AsofFull) {
                    self.eat_kw("outer");
                }
                self.expect_kw("join")?;
                k
            } else if self.is_kw("splice") && self.is_kw_at(1, "join") {
                self.advance();
                self.advance();
                JoinKind::Splice
            } else if self.is_kw("window") && self.is_kw_at(1, "join") {
                self.advance();
                self.advance();
                JoinKind::Window
            } else if let Some(k) = self.side_asof() {
                self.advance();
                self.advance();
                self.expect_kw("join")?;
                k
            } else if self.is_kw("left") || self.is_kw("right") || self.is_kw("full") {
                let k = match self.advance() {
                    Tok::Ident(s) if s.eq_ignore_ascii_case("left") => JoinKind::Left,
                    Tok::Ident(s) if s.eq_ignore_ascii_case("right") => JoinKind::Right,
                    _ => JoinKind::Full,
                };
                self.eat_kw("outer");
                self.expect_kw("join")?;
                k
            } else {
                break;
            };
            let right = self.table_primary()?;
            let (mut on, mut using) = (None, Vec::new());
            if kind != JoinKind::Cross {
                if self.eat_kw("on") {
                    let cond = self.expr()?;
                    // `ASOF JOIN ... ON ... TOLERANCE <distance>`: carried inside the condition
                    // as a marker call the binder takes apart again.
                    on = Some(if kind.is_asof() && self.is_kw("tolerance") {
                        let pos = self.pos();
                        self.advance();
                        let tol = self.expr()?;
                        let marker = Expr::Func(Box::new(FuncCall::new("asof_tolerance", vec![tol], pos)));
                        Expr::Binary { op: BinaryOp::And, left: Box::new(cond), right: Box::new(marker), pos }
                    } else {
                        cond
                    });
                } else if self.eat_kw("using") {
                    self.expect_op("(")?;
                    loop {
                        using.push(self.ident()?);
                        if self.eat_op(")") {
                            break;
                        }
                        self.expect_op(",")?;
                    }
                } else {
                    return Err(self.unexpected("ON or USING"));
                }
            }
            left = TableRef::Join { left: Box::new(left), right: Box::new(right), kind, on, using };
        }
        Ok(left)
    }

    /// `LEFT ASOF`, `RIGHT ASOF` or `FULL ASOF` ahead (the side first: DuckDB's order is
    /// `ASOF LEFT`, both are taken): that ASOF kind, nothing consumed.
    fn side_asof(&self) -> Option<JoinKind> {
        if !self.is_kw_at(1, "asof") {
            return None;
        }
        [("left", JoinKind::AsofLeft), ("right", JoinKind::AsofRight), ("full", JoinKind::AsofFull)]
            .into_iter()
            .find_map(|(w, k)| self.is_kw(w).then_some(k))
    }

    fn table_primary(&mut self) -> Result<TableRef> {
        let pos = self.pos();
        if self.eat_op("(") {
            if self.starts_query() {
                let query = Box::new(self.query()?);
                self.expect_op(")")?;
                let (alias, columns) = self.alias_with_columns()?;
                return Ok(TableRef::Subquery { query, alias, columns });
            }
            let inner = self.parse_from()?;
            self.expect_op(")")?;
            return Ok(inner);
        }
        let (system, name) = self.read_table_name()?;
        // A table function, perhaps called by its schema (`pg_catalog.unnest(a)`).
        if self.eat_op("(") {
            let mut args = Vec::new();
            while !self.eat_op(")") {
                if !args.is_empty() {
                    self.expect_op(",")?;
                }
                args.push(self.expr()?);
            }
            let (alias, columns) = self.alias_with_columns()?;
            return Ok(TableRef::Function { name, args, alias, columns, pos });
        }
        let alias = self.table_alias()?;
        Ok(TableRef::Table { name, system, alias, pos })
    }

    /// `[AS] alias [(a, b, ...)]`: a subquery's or table function's name and column renames.
    fn alias_with_columns(&mut self) -> Result<(Option<String>, Vec<String>)> {
        let alias = self.alias()?;
        let mut columns = Vec::new();
        if alias.is_some() && self.eat_op("(") {
            loop {
                columns.push(self.any_ident()?);
                if self.eat_op(")") {
                    break;
                }
                self.expect_op(",")?;
            }
        }
        Ok((alias, columns))
    }

    fn table_alias(&mut self) -> Result<Option<String>> {
        let a = self.alias()?;
        // Column aliases `t(a, b)` are supported on subqueries only; say so clearly.
        if a.is_some() && matches!(self.peek(), Tok::Op("(")) {
            return Err(
                self.unexpected("a join, WHERE or end of FROM (column alias lists are only supported on subqueries and table functions)")
            );
        }
        Ok(a)
    }
}
