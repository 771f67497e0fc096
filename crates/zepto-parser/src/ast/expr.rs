//! Expressions: operators, literals, `IN` lists, function calls and window specifications,
//! and the canonical SQL they print (default column names, GROUP BY matching).

use super::*;
use std::fmt;

/// The function `x IS NOT DISTINCT FROM y` is parsed into (`IS DISTINCT FROM` is its NOT): the
/// binder turns it into `COALESCE(x = y, x IS NULL AND y IS NULL)`, and joins take it as a key
/// on which NULL matches NULL.
pub const NOT_DISTINCT: &str = "is_not_distinct_from";

/// The function QuestDB's `x IN 'text'` (a string without parentheses) is parsed into: for a
/// timestamp `x`, whether it falls in the interval the text names (`'2024-01-02'`,
/// `'2024-01-02T10;2h'`); for any other `x`, `x = 'text'`.
pub const QUESTDB_IN: &str = "questdb_in";

/// The two sides of an `x IS NOT DISTINCT FROM y` call.
fn not_distinct_args(e: &Expr) -> Option<(&Expr, &Expr)> {
    match e {
        Expr::Func(fc) if fc.name == NOT_DISTINCT => match fc.args.as_slice() {
            [a, b] => Some((a, b)),
            _ => None,
        },
        _ => None,
    }
}

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// Arithmetic negation (`-x`).
    Neg,
    /// Logical negation (`NOT x`).
    Not,
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BinaryOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`: division, always in DOUBLE.
    Div,
    /// `//`: integer division.
    IntDiv,
    /// `%`: remainder.
    Mod,
    /// `||`: string concatenation.
    Concat,
    /// `=`.
    Eq,
    /// `<>` or `!=`.
    NotEq,
    /// `<`.
    Lt,
    /// `<=`.
    LtEq,
    /// `>`.
    Gt,
    /// `>=`.
    GtEq,
    /// `AND` (three-valued).
    And,
    /// `OR` (three-valued).
    Or,
}

impl BinaryOp {
    /// The operator as SQL text (`<>` for not-equal, `//` for integer division).
    pub fn sql(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::IntDiv => "//",
            BinaryOp::Mod => "%",
            BinaryOp::Concat => "||",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
        }
    }

    /// True for `=`, `<>`, `<`, `<=`, `>`, `>=`.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq)
    }

    /// `a op b` ⇔ `b flip(op) a`.
    pub fn flip(self) -> BinaryOp {
        match self {
            BinaryOp::Lt => BinaryOp::Gt,
            BinaryOp::LtEq => BinaryOp::GtEq,
            BinaryOp::Gt => BinaryOp::Lt,
            BinaryOp::GtEq => BinaryOp::LtEq,
            o => o,
        }
    }
}

/// A literal as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// `NULL`.
    Null,
    /// `TRUE` or `FALSE`.
    Bool(bool),
    /// An integer literal (digits only, within `i64`).
    Int(i64),
    /// A number with a fraction or exponent, or an integer too large for `i64`.
    Float(f64),
    /// A string literal, unescaped.
    Str(String),
    /// Nanoseconds.
    Interval(i64),
    /// `TIMESTAMP '...'` / `DATE '...'`: text checked by the binder.
    Typed(DataType, String),
    /// `[0.1, -2, 3e4]`: a list of numbers, a `FLOAT[n]` vector (elements checked by the
    /// binder).
    Vector(Vec<f64>),
}

/// `expr [NOT] IN (v1, v2, ...)` whose items are all integer literals or all string literals
/// (a long list is most often pasted ids), packed: 8 bytes an integer where an [`Expr`] each
/// took 64, and bound straight into the binder's set. Printed as the same list of literals.
#[derive(Debug, Clone, PartialEq)]
pub struct InValues {
    /// The value looked for.
    pub expr: Expr,
    /// The candidates.
    pub values: Values,
    /// `NOT IN`.
    pub negated: bool,
    /// Where the first item is: an item's error points there and names the item.
    pub pos: Pos,
}

/// The literals of an [`InValues`] list, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Integer literals (each within `i64`).
    Ints(Vec<i64>),
    /// String literals, unescaped.
    Strs(Vec<String>),
}

impl Values {
    /// How many items.
    pub fn len(&self) -> usize {
        match self {
            Values::Ints(v) => v.len(),
            Values::Strs(v) => v.len(),
        }
    }

    /// Whether there are none (never, for a list the parser made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Item `i` as the literal it was written as.
    pub fn literal(&self, i: usize) -> Option<Literal> {
        match self {
            Values::Ints(v) => v.get(i).map(|&x| Literal::Int(x)),
            Values::Strs(v) => v.get(i).map(|s| Literal::Str(s.clone())),
        }
    }

    /// Write item `i` as [`Literal`]'s `Display` does.
    fn write(&self, f: &mut fmt::Formatter<'_>, i: usize) -> fmt::Result {
        match self {
            Values::Ints(v) => v.get(i).map_or(Ok(()), |x| write!(f, "{x}")),
            Values::Strs(v) => v.get(i).map_or(Ok(()), |s| write!(f, "'{}'", s.replace('\'', "''"))),
        }
    }
}

/// An expression as written. `Clone` is written out (not derived) so that it can grow the
/// stack on deep trees: the binder clones expressions, and a derived clone of a chain 1,000
/// `AND`s deep overflows a small thread stack.
#[derive(Debug, PartialEq)]
pub enum Expr {
    /// A column reference, `name` or `table.name`.
    Column {
        /// The qualifier (table or alias), if written.
        table: Option<String>,
        /// The column name.
        name: String,
        /// Where the reference is.
        pos: Pos,
    },
    /// A literal and its position.
    Lit(Literal, Pos),
    /// A unary operation.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        expr: Box<Expr>,
    },
    /// A binary operation.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The left operand.
        left: Box<Expr>,
        /// The right operand.
        right: Box<Expr>,
        /// Where the operator is.
        pos: Pos,
    },
    /// A function call (aggregate, scalar or window).
    Func(Box<FuncCall>),
    /// `CASE [operand] WHEN ... THEN ... [ELSE ...] END`.
    Case {
        /// `CASE x WHEN v ...`: compared with each WHEN value; `None` for `CASE WHEN cond ...`.
        operand: Option<Box<Expr>>,
        /// `WHEN ... THEN ...` pairs, in order.
        whens: Vec<(Expr, Expr)>,
        /// The ELSE result; `None` is NULL.
        else_: Option<Box<Expr>>,
    },
    /// `CAST(expr AS type)`, `expr::type` or `TRY_CAST` (NULL instead of an error).
    Cast {
        /// The value cast.
        expr: Box<Expr>,
        /// The target type.
        to: DataType,
        /// `TRY_CAST`: NULL where the cast fails, instead of an error.
        try_: bool,
        /// Where the cast is.
        pos: Pos,
    },
    /// `expr [NOT] IN (list)`.
    InList {
        /// The value looked for.
        expr: Box<Expr>,
        /// The candidates.
        list: Vec<Expr>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `expr [NOT] IN (v1, v2, ...)` of literals of one kind, packed ([`InValues`]).
    InValues(Box<InValues>),
    /// `expr [NOT] IN (query)`.
    InSubquery {
        /// The value looked for.
        expr: Box<Expr>,
        /// The one-column query whose rows are the candidates.
        query: Box<Query>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `[NOT] EXISTS (query)`.
    Exists {
        /// The query tested for rows.
        query: Box<Query>,
        /// `NOT EXISTS`.
        negated: bool,
    },
    /// A scalar subquery (one column, at most one row).
    Subquery(Box<Query>),
    /// `expr [NOT] BETWEEN lo AND hi` (inclusive).
    Between {
        /// The value tested.
        expr: Box<Expr>,
        /// The lower bound (inclusive).
        lo: Box<Expr>,
        /// The upper bound (inclusive).
        hi: Box<Expr>,
        /// `NOT BETWEEN`.
        negated: bool,
    },
    /// `expr [NOT] LIKE | ILIKE pattern`.
    Like {
        /// The string tested.
        expr: Box<Expr>,
        /// The pattern (`%` any run, `_` one character).
        pattern: Box<Expr>,
        /// `NOT LIKE`.
        negated: bool,
        /// `ILIKE`: ignore case.
        case_insensitive: bool,
    },
    /// `expr IS [NOT] NULL`.
    IsNull {
        /// The value tested.
        expr: Box<Expr>,
        /// `IS NOT NULL`.
        negated: bool,
    },
}

/// The function name `(composite).field` parses to: `FIELD_OF(composite, 'field')`.
pub const FIELD_OF: &str = "field_of";

/// The function name `ARRAY(subquery)` parses to: `ARRAY_QUERY((SELECT coalesce(array_agg(x),
/// '{}') FROM (subquery) AS array_query(x)))`, an array of the subquery's first column.
pub const ARRAY_QUERY: &str = "array_query";

/// The function name `x op ANY (a)` / `x op ALL (a)` of an array expression `a` parses to:
/// `ARRAY_QUANTIFIED(x, a, 'op', any)`.
pub const ARRAY_QUANTIFIED: &str = "array_quantified";

/// The function name `x::T[]` parses to: `ARRAY_CAST(x, 'T')`.
pub const ARRAY_CAST: &str = "array_cast";

/// The function name `ARRAY[a, b]` parses to.
pub const ARRAY_VALUE: &str = "array_value";

/// A function call as written.
#[derive(Debug, Clone, PartialEq)]
pub struct FuncCall {
    /// The function name as written.
    pub name: String,
    /// The arguments.
    pub args: Vec<Expr>,
    /// `f(DISTINCT ...)`.
    pub distinct: bool,
    /// `count(*)`.
    pub star: bool,
    /// `percentile_cont(q) WITHIN GROUP (ORDER BY x)`.
    pub within_group: Option<Box<OrderItem>>,
    /// `string_agg(x, ',' ORDER BY y)`: the order an aggregate reads its rows in.
    pub order_by: Vec<OrderItem>,
    /// `first_value(x IGNORE NULLS)` / `lag(x) IGNORE NULLS OVER (...)`.
    pub ignore_nulls: bool,
    /// `OVER (...)`: a window function call.
    pub over: Option<Box<WindowSpec>>,
    /// Where the call starts.
    pub pos: Pos,
}

impl FuncCall {
    /// A plain call `name(args)` (no DISTINCT, star, WITHIN GROUP, IGNORE NULLS or OVER).
    pub fn new(name: &str, args: Vec<Expr>, pos: Pos) -> FuncCall {
        FuncCall {
            name: name.to_string(),
            args,
            distinct: false,
            star: false,
            within_group: None,
            order_by: Vec::new(),
            ignore_nulls: false,
            over: None,
            pos,
        }
    }
}

/// `OVER (PARTITION BY ... ORDER BY ... [ROWS|RANGE frame])`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WindowSpec {
    /// `OVER w` / `OVER (w ORDER BY ...)`: a window named in the `WINDOW` clause (resolved away
    /// by the parser).
    pub base: Option<String>,
    /// Window partition keys.
    pub partition_by: Vec<Expr>,
    /// Window ordering.
    pub order_by: Vec<OrderItem>,
    /// The frame; `None` is the default frame.
    pub frame: Option<WindowFrame>,
}

/// The unit of a window frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    /// `ROWS`: offsets count rows.
    Rows,
    /// `RANGE`: offsets are distances on the ORDER BY value (nanoseconds for timestamps).
    Range,
}

/// One end of a window frame.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    /// `UNBOUNDED PRECEDING`.
    UnboundedPreceding,
    /// `n PRECEDING`.
    Preceding(Box<Expr>),
    /// `CURRENT ROW`.
    CurrentRow,
    /// `n FOLLOWING`.
    Following(Box<Expr>),
    /// `UNBOUNDED FOLLOWING`.
    UnboundedFollowing,
}

/// `ROWS|RANGE BETWEEN start AND end`.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowFrame {
    /// Rows or range.
    pub units: FrameUnits,
    /// The frame's start.
    pub start: FrameBound,
    /// The frame's end.
    pub end: FrameBound,
    /// Where the frame starts.
    pub pos: Pos,
}

impl fmt::Display for FrameBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameBound::UnboundedPreceding => f.write_str("UNBOUNDED PRECEDING"),
            FrameBound::Preceding(e) => write!(f, "{e} PRECEDING"),
            FrameBound::CurrentRow => f.write_str("CURRENT ROW"),
            FrameBound::Following(e) => write!(f, "{e} FOLLOWING"),
            FrameBound::UnboundedFollowing => f.write_str("UNBOUNDED FOLLOWING"),
        }
    }
}

impl fmt::Display for WindowSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        let mut sep = "";
        if let Some(b) = &self.base {
            f.write_str(b)?;
            sep = " ";
        }
        if !self.partition_by.is_empty() {
            f.write_str("PARTITION BY ")?;
            comma(f, &self.partition_by)?;
            sep = " ";
        }
        if !self.order_by.is_empty() {
            write!(f, "{sep}ORDER BY ")?;
            comma(f, &self.order_by)?;
            sep = " ";
        }
        if let Some(fr) = &self.frame {
            let u = if fr.units == FrameUnits::Rows { "ROWS" } else { "RANGE" };
            write!(f, "{sep}{u} BETWEEN {} AND {}", fr.start, fr.end)?;
        }
        f.write_str(")")
    }
}

impl Clone for Expr {
    #[recursive::recursive]
    fn clone(&self) -> Expr {
        match self {
            Expr::Column { table, name, pos } => Expr::Column { table: table.clone(), name: name.clone(), pos: *pos },
            Expr::Lit(l, pos) => Expr::Lit(l.clone(), *pos),
            Expr::Unary { op, expr } => Expr::Unary { op: *op, expr: expr.clone() },
            Expr::Binary { op, left, right, pos } => {
                Expr::Binary { op: *op, left: left.clone(), right: right.clone(), pos: *pos }
            }
            Expr::Func(f) => Expr::Func(f.clone()),
            Expr::Case { operand, whens, else_ } => {
                Expr::Case { operand: operand.clone(), whens: whens.clone(), else_: else_.clone() }
            }
            Expr::Cast { expr, to, try_, pos } => Expr::Cast { expr: expr.clone(), to: *to, try_: *try_, pos: *pos },
            Expr::InList { expr, list, negated } => {
                Expr::InList { expr: expr.clone(), list: list.clone(), negated: *negated }
            }
            Expr::InValues(v) => Expr::InValues(v.clone()),
            Expr::InSubquery { expr, query, negated } => {
                Expr::InSubquery { expr: expr.clone(), query: query.clone(), negated: *negated }
            }
            Expr::Exists { query, negated } => Expr::Exists { query: query.clone(), negated: *negated },
            Expr::Subquery(q) => Expr::Subquery(q.clone()),
            Expr::Between { expr, lo, hi, negated } => {
                Expr::Between { expr: expr.clone(), lo: lo.clone(), hi: hi.clone(), negated: *negated }
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => Expr::Like {
                expr: expr.clone(),
                pattern: pattern.clone(),
                negated: *negated,
                case_insensitive: *case_insensitive,
            },
            Expr::IsNull { expr, negated } => Expr::IsNull { expr: expr.clone(), negated: *negated },
        }
    }
}

impl Expr {
    /// Where the expression is in the text, for the kinds that record it.
    pub fn pos(&self) -> Option<Pos> {
        match self {
            Expr::Column { pos, .. } | Expr::Lit(_, pos) | Expr::Binary { pos, .. } | Expr::Cast { pos, .. } => {
                Some(*pos)
            }
            Expr::Func(f) => Some(f.pos),
            Expr::Unary { expr, .. }
            | Expr::IsNull { expr, .. }
            | Expr::Between { expr, .. }
            | Expr::Like { expr, .. } => expr.pos(),
            Expr::InList { expr, .. } | Expr::InSubquery { expr, .. } => expr.pos(),
            Expr::InValues(v) => v.expr.pos(),
            _ => None,
        }
    }

    /// The expression's text (its `Display`), if it is at most `limit` bytes: the binder
    /// matches expressions by text against a few known ones (select items, grouping keys), and
    /// a text longer than all of them matches none, so a long one (a vector of 384 numbers) is
    /// not written out whole to learn that.
    pub fn text_within(&self, limit: usize) -> Option<String> {
        use fmt::Write;
        let mut w = Bounded { text: String::new(), limit, over: false };
        let written = write!(w, "{self}");
        (written.is_ok() && !w.over).then_some(w.text)
    }
}

/// A text that refuses to grow past `limit` bytes ([`Expr::text_within`]).
struct Bounded {
    text: String,
    limit: usize,
    over: bool,
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.over || self.text.len() + s.len() > self.limit {
            self.over = true;
            return Err(fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}

fn comma<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{x}")?;
    }
    Ok(())
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Null => f.write_str("NULL"),
            Literal::Bool(b) => write!(f, "{}", if *b { "true" } else { "false" }),
            Literal::Int(v) => write!(f, "{v}"),
            Literal::Float(v) => write!(f, "{v}"),
            Literal::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Literal::Interval(ns) => write!(f, "INTERVAL '{}'", zepto_storage::time::format_interval(*ns)),
            // An integer past BIGINT (HUGEINT) reads back from its digits.
            Literal::Typed(DataType::Int128, s) => f.write_str(s),
            Literal::Typed(t, s) => write!(f, "{t} '{}'", s.replace('\'', "''")),
            Literal::Vector(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x:?}")?;
                }
                f.write_str("]")
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Column { table: Some(t), name, .. } => write!(f, "{t}.{name}"),
            Expr::Column { table: None, name, .. } => f.write_str(name),
            Expr::Lit(l, _) => write!(f, "{l}"),
            Expr::Unary { op: UnaryOp::Neg, expr } => write!(f, "-{expr}"),
            Expr::Unary { op: UnaryOp::Not, expr } => match not_distinct_args(expr) {
                Some((a, b)) => write!(f, "({a} IS DISTINCT FROM {b})"),
                None => write!(f, "(NOT {expr})"),
            },
            Expr::Binary { op, left, right, .. } => write!(f, "({left} {} {right})", op.sql()),
            e @ Expr::Func(_) if not_distinct_args(e).is_some() => match not_distinct_args(e) {
                Some((a, b)) => write!(f, "({a} IS NOT DISTINCT FROM {b})"),
                None => Ok(()),
            },
            Expr::Func(fc) => {
                write!(f, "{}(", fc.name)?;
                if fc.distinct {
                    f.write_str("DISTINCT ")?;
                }
                if fc.star {
                    f.write_str("*")?;
                }
                comma(f, &fc.args)?;
                for (k, o) in fc.order_by.iter().enumerate() {
                    f.write_str(if k == 0 { " ORDER BY " } else { ", " })?;
                    write!(f, "{o}")?;
                }
                if fc.ignore_nulls {
                    f.write_str(" IGNORE NULLS")?;
                }
                f.write_str(")")?;
                if let Some(o) = &fc.within_group {
                    write!(f, " WITHIN GROUP (ORDER BY {o})")?;
                }
                if let Some(w) = &fc.over {
                    write!(f, " OVER {w}")?;
                }
                Ok(())
            }
            Expr::Case { operand, whens, else_ } => {
                f.write_str("CASE")?;
                if let Some(o) = operand {
                    write!(f, " {o}")?;
                }
                for (w, t) in whens {
                    write!(f, " WHEN {w} THEN {t}")?;
                }
                if let Some(e) = else_ {
                    write!(f, " ELSE {e}")?;
                }
                f.write_str(" END")
            }
            Expr::Cast { expr, to, try_, .. } => {
                write!(f, "{}({expr} AS {to})", if *try_ { "TRY_CAST" } else { "CAST" })
            }
            Expr::InList { expr, list, negated } => {
                write!(f, "({expr} {}IN (", if *negated { "NOT " } else { "" })?;
                comma(f, list)?;
                f.write_str("))")
            }
            Expr::InValues(v) => {
                write!(f, "({} {}IN (", v.expr, if v.negated { "NOT " } else { "" })?;
                for i in 0..v.values.len() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    v.values.write(f, i)?;
                }
                f.write_str("))")
            }
            Expr::InSubquery { expr, negated, .. } => {
                write!(f, "({expr} {}IN (SUBQUERY))", if *negated { "NOT " } else { "" })
            }
            Expr::Exists { negated, .. } => {
                write!(f, "{}EXISTS(SUBQUERY)", if *negated { "NOT " } else { "" })
            }
            Expr::Subquery(_) => f.write_str("(SUBQUERY)"),
            Expr::Between { expr, lo, hi, negated } => {
                write!(f, "({expr} {}BETWEEN {lo} AND {hi})", if *negated { "NOT " } else { "" })
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => write!(
                f,
                "({expr} {}{} {pattern})",
                if *negated { "NOT " } else { "" },
                if *case_insensitive { "ILIKE" } else { "LIKE" }
            ),
            Expr::IsNull { expr, negated } => {
                write!(f, "({expr} IS {}NULL)", if *negated { "NOT " } else { "" })
            }
        }
    }
}
