//! Expressions by precedence climbing: OR < AND < NOT < comparison/IS/IN/BETWEEN/LIKE < `||`
//! < `+ -` < `* / // %` < unary minus < `::` cast < primary.

use super::ast::*;
use super::lexer::Tok;
use super::pg_syntax::CompareOp;
use super::{Parser, RESERVED};
use crate::error::{Result, SqlError};
use zepto_storage::{time, DataType};

impl Parser<'_> {
    /// One whole expression. The descent recurses here for every nested expression, so this
    /// is where the stack grows on demand (`#[recursive]`).
    #[recursive::recursive]
    pub(super) fn expr(&mut self) -> Result<Expr> {
        let start = self.pos();
        self.enter()?;
        self.expr_nesting += 1;
        let e = self.or_expr();
        self.expr_nesting -= 1;
        self.leave();
        let e = e?;
        if self.expr_nesting == 0 {
            let limits = self.limits;
            limits.check_expr(&e, start, &mut self.elements)?;
        }
        Ok(e)
    }

    fn or_expr(&mut self) -> Result<Expr> {
        let mut l = self.and_expr()?;
        let mut links = 0;
        while self.is_kw("or") {
            let pos = self.pos();
            self.advance();
            self.link(&mut links, pos)?;
            let r = self.and_expr()?;
            l = Expr::Binary { op: BinaryOp::Or, left: Box::new(l), right: Box::new(r), pos };
        }
        Ok(l)
    }

    fn and_expr(&mut self) -> Result<Expr> {
        let mut l = self.not_expr()?;
        let mut links = 0;
        while self.is_kw("and") {
            let pos = self.pos();
            self.advance();
            self.link(&mut links, pos)?;
            let r = self.not_expr()?;
            l = Expr::Binary { op: BinaryOp::And, left: Box::new(l), right: Box::new(r), pos };
        }
        Ok(l)
    }

    fn not_expr(&mut self) -> Result<Expr> {
        if self.is_kw("not") && !self.is_kw_at(1, "exists") {
            self.advance();
            self.enter()?;
            let e = self.not_expr();
            self.leave();
            return Ok(Expr::Unary { op: UnaryOp::Not, expr: Box::new(e?) });
        }
        self.comparison()
    }

    /// What follows `x [NOT] IN`: a subquery, a list, or QuestDB's string (`ts IN
    /// '2024-01-02'`: an interval for a timestamp, else equality; see [`QUESTDB_IN`]).
    fn in_predicate(&mut self, l: Expr, negated: bool, pos: crate::error::Pos) -> Result<Expr> {
        if let Tok::Str(text) = self.peek().clone() {
            self.advance();
            let lit = Expr::Lit(Literal::Str(text), pos);
            let call = Expr::Func(Box::new(FuncCall::new(QUESTDB_IN, vec![l, lit], pos)));
            return Ok(if negated { Expr::Unary { op: UnaryOp::Not, expr: Box::new(call) } } else { call });
        }
        self.expect_op("(")?;
        if self.is_kw("select") || self.is_kw("with") || self.is_kw("from") {
            let q = self.query()?;
            self.expect_op(")")?;
            return Ok(Expr::InSubquery { expr: Box::new(l), query: Box::new(q), negated });
        }
        let mut items = Items::Exprs(Vec::new());
        loop {
            // A lone literal (most items of a long list) skips the climb through every level
            // of precedence; the enclosing expression's limits still count it.
            let lone = matches!(self.peek(), Tok::Num(_) | Tok::Str(_))
                && matches!(self.peek_at(1), Tok::Op(",") | Tok::Op(")"));
            items.push(if lone { self.primary()? } else { self.expr()? });
            if self.eat_op(")") {
                break;
            }
            self.expect_op(",")?;
        }
        Ok(match items {
            Items::Packed(values, at) => {
                let pos = at.first().copied().unwrap_or(pos);
                Expr::InValues(Box::new(InValues { expr: l, values, negated, pos }))
            }
            Items::Exprs(list) => Expr::InList { expr: Box::new(l), list, negated },
        })
    }

    fn comparison(&mut self) -> Result<Expr> {
        let mut l = self.concat_expr()?;
        let mut links = 0;
        loop {
            let pos = self.pos();
            self.link(&mut links, pos)?;
            match self.compare_op()? {
                Some(CompareOp::Plain(op)) => {
                    if let Some(q) = self.quantified(&l, op, pos)? {
                        l = q;
                        continue;
                    }
                    let r = self.concat_expr()?;
                    l = Expr::Binary { op, left: Box::new(l), right: Box::new(r), pos };
                    continue;
                }
                Some(CompareOp::Regex(negated, ci)) => {
                    let r = self.concat_expr()?;
                    l = Self::regex_match(l, r, negated, ci, pos);
                    continue;
                }
                None => {}
            }
            if self.is_kw("is") {
                self.advance();
                let negated = self.eat_kw("not");
                if self.eat_kw("null") {
                    l = Expr::IsNull { expr: Box::new(l), negated };
                } else if self.eat_kw("distinct") {
                    // x IS [NOT] DISTINCT FROM y: equality where NULL equals NULL (never NULL).
                    self.expect_kw("from")?;
                    let r = self.concat_expr()?;
                    let same = Expr::Func(Box::new(FuncCall::new(NOT_DISTINCT, vec![l, r], pos)));
                    l = if negated { same } else { Expr::Unary { op: UnaryOp::Not, expr: Box::new(same) } };
                } else if self.is_kw("true") || self.is_kw("false") {
                    let v = self.eat_kw("true");
                    self.eat_kw("false");
                    // x IS TRUE  ⇔  coalesce(x = true, false)
                    let cmp = Expr::Binary {
                        op: BinaryOp::Eq,
                        left: Box::new(l),
                        right: Box::new(Expr::Lit(Literal::Bool(v), pos)),
                        pos,
                    };
                    let is = Expr::Func(Box::new(FuncCall::new(
                        "coalesce",
                        vec![cmp, Expr::Lit(Literal::Bool(false), pos)],
                        pos,
                    )));
                    l = if negated { Expr::Unary { op: UnaryOp::Not, expr: Box::new(is) } } else { is };
                } else {
                    return Err(self.unexpected("NULL, TRUE, FALSE or DISTINCT FROM after IS"));
                }
                continue;
            }
            let negated = self.is_kw("not")
                && (self.is_kw_at(1, "in")
                    || self.is_kw_at(1, "between")
                    || self.is_kw_at(1, "like")
                    || self.is_kw_at(1, "ilike"));
            if negated {
                self.advance();
            }
            if self.eat_kw("in") {
                l = self.in_predicate(l, negated, pos)?;
            } else if self.eat_kw("between") {
                let lo = self.concat_expr()?;
                self.expect_kw("and")?;
                let hi = self.concat_expr()?;
                l = Expr::Between { expr: Box::new(l), lo: Box::new(lo), hi: Box::new(hi), negated };
            } else if self.is_kw("like") || self.is_kw("ilike") {
                let ci = self.is_kw("ilike");
                self.advance();
                let pattern = self.concat_expr()?;
                let pattern = self.like_escape(pattern, pos)?;
                l = Expr::Like { expr: Box::new(l), pattern: Box::new(pattern), negated, case_insensitive: ci };
            } else if negated {
                return Err(self.unexpected("IN, BETWEEN, LIKE or ILIKE after NOT"));
            } else {
                return Ok(l);
            }
        }
    }

    /// `||` and the bitwise operators (`&`, `|`, `#`, `<<`, `>>`): PostgreSQL's "any other
    /// operator" level, between comparison and `+`/`-`, left to right.
    fn concat_expr(&mut self) -> Result<Expr> {
        let mut l = self.additive()?;
        let mut links = 0;
        loop {
            let bitwise = match self.peek() {
                Tok::Op("||") => None,
                Tok::Op("&") => Some("bit_and_op"),
                Tok::Op("|") => Some("bit_or_op"),
                Tok::Op("#") => Some("bit_xor_op"),
                Tok::Op("<<") => Some("shift_left_op"),
                Tok::Op(">>") => Some("shift_right_op"),
                _ => return Ok(l),
            };
            let pos = self.pos();
            self.advance();
            self.link(&mut links, pos)?;
            let r = self.additive()?;
            l = match bitwise {
                None => Expr::Binary { op: BinaryOp::Concat, left: Box::new(l), right: Box::new(r), pos },
                Some(f) => Expr::Func(Box::new(FuncCall::new(f, vec![l, r], pos))),
            };
        }
    }

    fn additive(&mut self) -> Result<Expr> {
        let mut l = self.multiplicative()?;
        let mut links = 0;
        loop {
            let pos = self.pos();
            self.link(&mut links, pos)?;
            let op = match self.peek() {
                Tok::Op("+") => BinaryOp::Add,
                Tok::Op("-") => BinaryOp::Sub,
                _ => return Ok(l),
            };
            self.advance();
            let r = self.multiplicative()?;
            l = Expr::Binary { op, left: Box::new(l), right: Box::new(r), pos };
        }
    }

    fn multiplicative(&mut self) -> Result<Expr> {
        let mut l = self.unary()?;
        let mut links = 0;
        loop {
            let pos = self.pos();
            self.link(&mut links, pos)?;
            let op = match self.peek() {
                Tok::Op("*") => BinaryOp::Mul,
                Tok::Op("/") => BinaryOp::Div,
                Tok::Op("//") => BinaryOp::IntDiv,
                Tok::Op("%") => BinaryOp::Mod,
                _ => return Ok(l),
            };
            self.advance();
            let r = self.unary()?;
            l = Expr::Binary { op, left: Box::new(l), right: Box::new(r), pos };
        }
    }

    fn unary(&mut self) -> Result<Expr> {
        let pos = self.pos();
        if self.eat_op("-") {
            self.enter()?;
            let e = self.unary();
            self.leave();
            let e = e?;
            // Fold negative numeric literals so i64::MIN and -1 stay literals.
            return Ok(match e {
                Expr::Lit(Literal::Int(v), _) => Expr::Lit(Literal::Int(v.wrapping_neg()), pos),
                // -9223372036854775808 is BIGINT's least value; other HUGEINT digits stay HUGEINT.
                Expr::Lit(Literal::Typed(DataType::Int128, t), _) if t == "9223372036854775808" => {
                    Expr::Lit(Literal::Int(i64::MIN), pos)
                }
                Expr::Lit(Literal::Typed(DataType::Int128, t), _) => {
                    let neg = t.strip_prefix('-').map_or_else(|| format!("-{t}"), str::to_string);
                    Expr::Lit(Literal::Typed(DataType::Int128, neg), pos)
                }
                Expr::Lit(Literal::Float(v), _) => Expr::Lit(Literal::Float(-v), pos),
                Expr::Lit(Literal::Interval(v), _) => Expr::Lit(Literal::Interval(-v), pos),
                e => Expr::Unary { op: UnaryOp::Neg, expr: Box::new(e) },
            });
        }
        if self.eat_op("+") {
            self.enter()?;
            let e = self.unary();
            self.leave();
            return e;
        }
        let mut e = self.primary()?;
        let mut links = 0;
        while matches!(self.peek(), Tok::Op("[")) {
            let pos = self.pos();
            self.advance();
            self.link(&mut links, pos)?;
            let index = self.expr()?;
            self.expect_op("]")?;
            e = Expr::Func(Box::new(FuncCall::new("array_subscript", vec![e, index], pos)));
        }
        while matches!(self.peek(), Tok::Op("::")) {
            let pos = self.pos();
            self.advance();
            self.link(&mut links, pos)?;
            let to = self.cast_target()?;
            e = Self::cast_to(e, to, false, pos);
        }
        self.skip_collate()?;
        Ok(e)
    }

    fn number(&self, text: &str, pos: crate::error::Pos) -> Result<Expr> {
        if !text.contains(['.', 'e', 'E']) {
            if let Ok(v) = text.parse::<i64>() {
                return Ok(Expr::Lit(Literal::Int(v), pos));
            }
            // Past BIGINT: a HUGEINT (DuckDB's type for these literals); `-` before
            // 9223372036854775808 makes it BIGINT's least value again.
            if text.parse::<i128>().is_ok() {
                return Ok(Expr::Lit(Literal::Typed(DataType::Int128, text.to_string()), pos));
            }
        }
        text.parse::<f64>()
            .map(|v| Expr::Lit(Literal::Float(v), pos))
            .map_err(|_| SqlError::Parse { message: format!("invalid number '{text}'"), pos })
    }

    fn primary(&mut self) -> Result<Expr> {
        let pos = self.pos();
        // A literal's text is taken from the token, not copied: a long IN list is mostly these.
        if matches!(self.peek(), Tok::Num(_) | Tok::Str(_)) {
            return match self.advance() {
                Tok::Num(n) => self.number(&n, pos),
                Tok::Str(s) => Ok(Expr::Lit(Literal::Str(s), pos)),
                _ => Err(self.unexpected("a literal")),
            };
        }
        match self.peek().clone() {
            Tok::Op("(") => {
                self.advance();
                if self.is_kw("select") || self.is_kw("with") || self.is_kw("from") {
                    let q = self.query()?;
                    self.expect_op(")")?;
                    return Ok(Expr::Subquery(Box::new(q)));
                }
                let mut e = self.expr()?;
                self.expect_op(")")?;
                // `(composite).field`: a field of a composite value (`(_pg_expandarray(a)).n`).
                while matches!(self.peek(), Tok::Op(".")) && matches!(self.peek_at(1), Tok::Ident(_) | Tok::QIdent(_)) {
                    self.advance();
                    let field = self.any_ident()?;
                    let name = Expr::Lit(Literal::Str(field.to_ascii_lowercase()), pos);
                    e = Expr::Func(Box::new(FuncCall::new(crate::ast::FIELD_OF, vec![e, name], pos)));
                }
                Ok(e)
            }
            Tok::QIdent(_) => self.column_ref(),
            Tok::Ident(word) => self.word(&word, pos),
            Tok::Op("[") => {
                self.advance();
                self.vector_literal(pos)
            }
            Tok::Vector(_) => match self.advance() {
                Tok::Vector(v) => Ok(Expr::Lit(Literal::Vector(v), pos)),
                _ => Err(self.unexpected("a vector")),
            },
            _ => Err(self.unexpected("an expression")),
        }
    }

    /// `[x, y, ...]` after its `[`: signed number literals only (a vector constant).
    fn vector_literal(&mut self, pos: crate::error::Pos) -> Result<Expr> {
        let mut items = Vec::new();
        if self.eat_op("]") {
            return Err(SqlError::Parse { message: "an empty list is not a vector".into(), pos });
        }
        loop {
            let neg = if self.eat_op("-") {
                true
            } else {
                self.eat_op("+");
                false
            };
            let at = self.pos();
            let x = match self.advance() {
                Tok::Num(n) => n
                    .parse::<f64>()
                    .map_err(|_| SqlError::Parse { message: format!("invalid number '{n}'"), pos: at })?,
                _ => {
                    return Err(SqlError::Parse {
                        message: "a list literal holds numbers only (a FLOAT[n] vector)".into(),
                        pos: at,
                    })
                }
            };
            items.push(if neg { -x } else { x });
            if items.len() > zepto_storage::types::MAX_VECTOR_DIM {
                return Err(SqlError::Parse {
                    message: format!("a vector has at most {} elements", zepto_storage::types::MAX_VECTOR_DIM),
                    pos,
                });
            }
            if self.eat_op("]") {
                return Ok(Expr::Lit(Literal::Vector(items), pos));
            }
            self.expect_op(",")?;
        }
    }

    fn word(&mut self, word: &str, pos: crate::error::Pos) -> Result<Expr> {
        if let Some(e) = self.pg_form(word, pos)? {
            return Ok(e);
        }
        let lw = word.to_ascii_lowercase();
        match lw.as_str() {
            "null" => {
                self.advance();
                return Ok(Expr::Lit(Literal::Null, pos));
            }
            "true" | "false" => {
                self.advance();
                return Ok(Expr::Lit(Literal::Bool(lw == "true"), pos));
            }
            "case" => {
                self.advance();
                return self.case_expr();
            }
            "cast" | "try_cast" if matches!(self.peek_at(1), Tok::Op("(")) => {
                self.advance();
                self.advance();
                let e = self.expr()?;
                self.expect_kw("as")?;
                let to = self.cast_target()?;
                self.expect_op(")")?;
                return Ok(Self::cast_to(e, to, lw == "try_cast", pos));
            }
            "exists" | "not" if self.is_kw("exists") || self.is_kw_at(1, "exists") => {
                let negated = self.eat_kw("not");
                self.expect_kw("exists")?;
                self.expect_op("(")?;
                let q = self.query()?;
                self.expect_op(")")?;
                return Ok(Expr::Exists { query: Box::new(q), negated });
            }
            "interval" if !matches!(self.peek_at(1), Tok::Op("(") | Tok::Op(",") | Tok::Op(")")) => {
                self.advance();
                return self.interval(pos);
            }
            // DuckDB's `INTERVAL (n) MINUTE`: n (any expression) times one unit.
            "interval" if matches!(self.peek_at(1), Tok::Op("(")) => {
                self.advance();
                self.advance();
                let n = self.expr()?;
                self.expect_op(")")?;
                let unit = self.any_ident()?;
                let ns = time::unit_ns(&unit).ok_or_else(|| SqlError::Parse {
                    message: format!("'{unit}' is not an interval unit (second, minute, hour, day, ...)"),
                    pos,
                })?;
                let one = Expr::Lit(Literal::Interval(ns), pos);
                return Ok(Expr::Binary { op: BinaryOp::Mul, left: Box::new(n), right: Box::new(one), pos });
            }
            "timestamp" | "date" | "timestamp_ns" if matches!(self.peek_at(1), Tok::Str(_)) => {
                self.advance();
                let Tok::Str(s) = self.advance() else { unreachable!("peeked a string") };
                let dt = if lw == "date" { DataType::Date } else { DataType::Timestamp };
                return Ok(Expr::Lit(Literal::Typed(dt, s), pos));
            }
            "extract" if matches!(self.peek_at(1), Tok::Op("(")) => {
                self.advance();
                self.advance();
                let field = self.any_ident()?;
                self.expect_kw("from")?;
                let e = self.expr()?;
                self.expect_op(")")?;
                return Ok(Expr::Func(Box::new(FuncCall::new(
                    "date_part",
                    vec![Expr::Lit(Literal::Str(field.to_ascii_lowercase()), pos), e],
                    pos,
                ))));
            }
            _ => {}
        }
        if self.at_qualified_call(word) {
            self.advance();
            self.advance();
            let (Tok::Ident(name) | Tok::QIdent(name)) = self.peek().clone() else {
                return Err(self.unexpected("a function name"));
            };
            return self.function_call(&name, pos);
        }
        if matches!(self.peek_at(1), Tok::Op("(")) {
            return self.function_call(word, pos);
        }
        if let Some(e) = self.niladic(word, pos) {
            return Ok(e);
        }
        if RESERVED.contains(&lw.as_str()) {
            return Err(self.unexpected("an expression"));
        }
        self.column_ref()
    }

    fn case_expr(&mut self) -> Result<Expr> {
        let operand = if self.is_kw("when") { None } else { Some(Box::new(self.expr()?)) };
        let mut whens = Vec::new();
        while self.eat_kw("when") {
            let w = self.expr()?;
            self.expect_kw("then")?;
            let t = self.expr()?;
            whens.push((w, t));
        }
        if whens.is_empty() {
            return Err(self.unexpected("WHEN"));
        }
        let else_ = if self.eat_kw("else") { Some(Box::new(self.expr()?)) } else { None };
        self.expect_kw("end")?;
        Ok(Expr::Case { operand, whens, else_ })
    }

    /// `INTERVAL '1 minute'`, `INTERVAL '1' MINUTE`, `INTERVAL 1 MINUTE`, `INTERVAL '500ms'`.
    fn interval(&mut self, pos: crate::error::Pos) -> Result<Expr> {
        let text = match self.advance() {
            Tok::Str(s) => s,
            Tok::Num(n) => n.to_string(),
            _ => return Err(SqlError::Parse { message: "expected an interval like '1 minute'".into(), pos }),
        };
        let mut full = text.clone();
        if let Tok::Ident(u) = self.peek().clone() {
            if time::unit_ns(&u).is_some() {
                self.advance();
                full = format!("{text} {u}");
            }
        }
        let ns = time::parse_interval(&full)
            .ok_or_else(|| SqlError::Parse { message: format!("invalid interval '{full}'"), pos })?;
        Ok(Expr::Lit(Literal::Interval(ns), pos))
    }

    fn function_call(&mut self, name: &str, pos: crate::error::Pos) -> Result<Expr> {
        self.advance();
        self.expect_op("(")?;
        let mut fc = FuncCall::new(&name.to_ascii_lowercase(), vec![], pos);
        if self.eat_op("*") {
            fc.star = true;
            self.expect_op(")")?;
        } else if !self.eat_op(")") {
            fc.distinct = self.eat_kw("distinct");
            if !fc.distinct {
                self.eat_kw("all");
            }
            loop {
                fc.args.push(self.expr()?);
                if self.is_kw("ignore") || self.is_kw("respect") {
                    fc.ignore_nulls = self.is_kw("ignore");
                    self.advance();
                    self.expect_kw("nulls")?;
                    self.expect_op(")")?;
                    break;
                }
                if self.is_kw("order") && self.is_kw_at(1, "by") {
                    self.advance();
                    self.advance();
                    fc.order_by = self.order_items()?;
                    self.expect_op(")")?;
                    break;
                }
                if self.eat_op(")") {
                    break;
                }
                self.expect_op(",")?;
            }
        }
        if self.is_kw("within") {
            self.advance();
            self.expect_kw("group")?;
            self.expect_op("(")?;
            self.expect_kw("order")?;
            self.expect_kw("by")?;
            let mut items = self.order_items()?;
            self.expect_op(")")?;
            if items.len() != 1 {
                return Err(SqlError::Parse {
                    message: "WITHIN GROUP takes exactly one ORDER BY expression".into(),
                    pos,
                });
            }
            fc.within_group = Some(Box::new(items.remove(0)));
        }
        if (self.is_kw("ignore") || self.is_kw("respect")) && self.is_kw_at(1, "nulls") {
            fc.ignore_nulls = self.is_kw("ignore");
            self.advance();
            self.advance();
        }
        if self.eat_kw("over") {
            fc.over = Some(Box::new(self.over_clause()?));
        }
        Ok(Expr::Func(Box::new(fc)))
    }
}

/// An `IN` list's items as they are read: packed ([`Values`]) while every one is an integer
/// literal, or every one a string literal, with their positions until the list ends (an item
/// that is neither turns them back into literals where they were written); else expressions.
enum Items {
    Packed(Values, Vec<crate::error::Pos>),
    Exprs(Vec<Expr>),
}

impl Items {
    fn push(&mut self, e: Expr) {
        match (&mut *self, e) {
            (Items::Packed(Values::Ints(v), at), Expr::Lit(Literal::Int(x), p)) => {
                v.push(x);
                at.push(p);
            }
            (Items::Packed(Values::Strs(v), at), Expr::Lit(Literal::Str(x), p)) => {
                v.push(x);
                at.push(p);
            }
            (Items::Exprs(list), Expr::Lit(Literal::Int(x), p)) if list.is_empty() => {
                *self = Items::Packed(Values::Ints(vec![x]), vec![p]);
            }
            (Items::Exprs(list), Expr::Lit(Literal::Str(x), p)) if list.is_empty() => {
                *self = Items::Packed(Values::Strs(vec![x]), vec![p]);
            }
            (Items::Exprs(list), e) => list.push(e),
            (Items::Packed(..), e) => {
                let Items::Packed(values, at) = std::mem::replace(self, Items::Exprs(Vec::new())) else { return };
                let lits: Vec<Literal> = match values {
                    Values::Ints(v) => v.into_iter().map(Literal::Int).collect(),
                    Values::Strs(v) => v.into_iter().map(Literal::Str).collect(),
                };
                let mut list: Vec<Expr> = lits.into_iter().zip(at).map(|(l, p)| Expr::Lit(l, p)).collect();
                list.push(e);
                *self = Items::Exprs(list);
            }
        }
    }
}
