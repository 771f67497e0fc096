//! The abstract syntax tree: what the parser produces and the binder consumes. `Display`
//! prints canonical SQL, used for default column names and for matching GROUP BY expressions.

use crate::error::Pos;
use std::fmt;
use zepto_storage::DataType;

#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    Query(Box<Query>),
    CreateTable(CreateTable),
    CreateTableAs {
        name: String,
        if_not_exists: bool,
        query: Box<Query>,
    },
    DropTable {
        name: String,
        if_exists: bool,
        pos: Pos,
    },
    AlterAddColumn {
        table: String,
        column: String,
        data_type: DataType,
        if_not_exists: bool,
        pos: Pos,
    },
    /// `ALTER TABLE t SET TTL 30 DAYS | '12 hours' | NONE`: retention (whole UTC days).
    AlterSetTtl {
        table: String,
        ttl_ns: Option<i64>,
        pos: Pos,
    },
    /// `ALTER TABLE t CONVERT PARTITION TO PARQUET WHERE ts < '2024-01-02'` (QuestDB's
    /// spelling): rows before `before` move to the Parquet history.
    AlterTier {
        table: String,
        column: String,
        before: i64,
        pos: Pos,
    },
    Insert {
        table: String,
        columns: Vec<String>,
        source: InsertSource,
        pos: Pos,
    },
    CopyFrom {
        table: String,
        path: String,
        options: Vec<(String, String)>,
        pos: Pos,
    },
    CopyTo {
        query: Box<Query>,
        path: String,
        options: Vec<(String, String)>,
    },
    /// `DELETE FROM t [WHERE ...]`.
    Delete {
        table: String,
        filter: Option<Expr>,
        pos: Pos,
    },
    /// `UPDATE t SET col = expr, ... [WHERE ...]`.
    Update {
        table: String,
        sets: Vec<(String, Expr, Pos)>,
        filter: Option<Expr>,
        pos: Pos,
    },
    ShowTables,
    /// Write a checkpoint now (durable databases).
    Checkpoint,
    Describe {
        table: String,
        pos: Pos,
    },
    /// `EXPLAIN [ANALYZE] query`: the physical plan (ANALYZE: run, with each operator's stats).
    Explain {
        query: Box<Query>,
        analyze: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    pub name: String,
    pub if_not_exists: bool,
    pub columns: Vec<(String, DataType)>,
    pub timestamp: Option<String>,
    pub partition_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum InsertSource {
    Values(Vec<Vec<Expr>>),
    Query(Box<Query>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub ctes: Vec<(String, Query)>,
    pub body: SetExpr,
    pub order_by: Vec<OrderItem>,
    pub limit: Option<Expr>,
    pub offset: Option<Expr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Union,
    Intersect,
    Except,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SetExpr {
    Select(Box<Select>),
    Values(Vec<Vec<Expr>>),
    SetOp { op: SetOp, all: bool, left: Box<SetExpr>, right: Box<SetExpr> },
    Query(Box<Query>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    pub distinct: bool,
    pub items: Vec<SelectItem>,
    pub from: Option<TableRef>,
    pub where_: Option<Expr>,
    pub group_by: Vec<Expr>,
    pub having: Option<Expr>,
    /// `QUALIFY pred`: a filter over window function results.
    pub qualify: Option<Expr>,
    /// `LATEST ON ts PARTITION BY keys` / `LATEST BY keys`: the last row per key.
    pub latest: Option<Latest>,
    /// `SAMPLE BY 1m [FROM .. TO ..] [FILL(..)] [ALIGN TO ..]`.
    pub sample_by: Option<SampleBy>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Latest {
    /// `None`: the designated timestamp (`LATEST BY`).
    pub ts: Option<Expr>,
    pub keys: Vec<Expr>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FillMode {
    None,
    Null,
    Prev,
    Linear,
    Value(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SampleBy {
    /// Bucket width in nanoseconds (0 for calendar months).
    pub width: i64,
    /// Bucket width in calendar months (`1M`, `3M`, `1y` = 12), 0 for fixed widths.
    pub months: i64,
    pub from: Option<Expr>,
    pub to: Option<Expr>,
    /// One mode for every aggregate, or one per aggregate column in select-list order.
    pub fill: Vec<FillMode>,
    /// `ALIGN TO CALENDAR [WITH OFFSET '..']` (the default; offset in ns) or `ALIGN TO FIRST
    /// OBSERVATION` (`None`).
    pub calendar_offset: Option<i64>,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SelectItem {
    Expr {
        expr: Expr,
        alias: Option<String>,
    },
    /// `*` or `t.*`, with optional `EXCLUDE (a, b)`.
    Wildcard {
        table: Option<String>,
        exclude: Vec<String>,
        pos: Pos,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    Cross,
    /// `ASOF JOIN`: each left row with the nearest right row satisfying the inequality.
    Asof,
    /// `ASOF LEFT JOIN` / `LEFT ASOF JOIN`: unmatched left rows kept with NULLs.
    AsofLeft,
    /// `WINDOW JOIN`: aggregates over the right rows in a time window around each left row.
    Window,
    /// `SPLICE JOIN`: a full as-of merge of two time series (every row of both sides).
    Splice,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TableRef {
    Table {
        name: String,
        alias: Option<String>,
        pos: Pos,
    },
    /// `(query) AS t(a, b)`: `columns` renames the first output columns.
    Subquery {
        query: Box<Query>,
        alias: Option<String>,
        columns: Vec<String>,
    },
    Join {
        left: Box<TableRef>,
        right: Box<TableRef>,
        kind: JoinKind,
        on: Option<Expr>,
        using: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    pub expr: Expr,
    pub desc: bool,
    /// `Some(true)` = NULLS FIRST, `Some(false)` = NULLS LAST, `None` = default (last).
    pub nulls_first: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
    Concat,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
}

impl BinaryOp {
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

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// Nanoseconds.
    Interval(i64),
    /// `TIMESTAMP '...'` / `DATE '...'`: text checked by the binder.
    Typed(DataType, String),
}

/// An expression as written. `Clone` is written out (not derived) so that it can grow the
/// stack on deep trees: the binder clones expressions, and a derived clone of a chain 1,000
/// `AND`s deep overflows a small thread stack.
#[derive(Debug, PartialEq)]
pub enum Expr {
    Column { table: Option<String>, name: String, pos: Pos },
    Lit(Literal, Pos),
    Unary { op: UnaryOp, expr: Box<Expr> },
    Binary { op: BinaryOp, left: Box<Expr>, right: Box<Expr>, pos: Pos },
    Func(Box<FuncCall>),
    Case { operand: Option<Box<Expr>>, whens: Vec<(Expr, Expr)>, else_: Option<Box<Expr>> },
    Cast { expr: Box<Expr>, to: DataType, try_: bool, pos: Pos },
    InList { expr: Box<Expr>, list: Vec<Expr>, negated: bool },
    InSubquery { expr: Box<Expr>, query: Box<Query>, negated: bool },
    Exists { query: Box<Query>, negated: bool },
    Subquery(Box<Query>),
    Between { expr: Box<Expr>, lo: Box<Expr>, hi: Box<Expr>, negated: bool },
    Like { expr: Box<Expr>, pattern: Box<Expr>, negated: bool, case_insensitive: bool },
    IsNull { expr: Box<Expr>, negated: bool },
}

#[derive(Debug, Clone, PartialEq)]
pub struct FuncCall {
    pub name: String,
    pub args: Vec<Expr>,
    pub distinct: bool,
    /// `count(*)`.
    pub star: bool,
    /// `percentile_cont(q) WITHIN GROUP (ORDER BY x)`.
    pub within_group: Option<Box<OrderItem>>,
    /// `first_value(x IGNORE NULLS)` / `lag(x) IGNORE NULLS OVER (...)`.
    pub ignore_nulls: bool,
    /// `OVER (...)`: a window function call.
    pub over: Option<Box<WindowSpec>>,
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
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<OrderItem>,
    pub frame: Option<WindowFrame>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Box<Expr>),
    CurrentRow,
    Following(Box<Expr>),
    UnboundedFollowing,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
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
            _ => None,
        }
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
            Literal::Typed(t, s) => write!(f, "{t} '{}'", s.replace('\'', "''")),
        }
    }
}

impl fmt::Display for OrderItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.expr)?;
        if self.desc {
            f.write_str(" DESC")?;
        }
        match self.nulls_first {
            Some(true) => f.write_str(" NULLS FIRST"),
            Some(false) => f.write_str(" NULLS LAST"),
            None => Ok(()),
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
            Expr::Unary { op: UnaryOp::Not, expr } => write!(f, "(NOT {expr})"),
            Expr::Binary { op, left, right, .. } => write!(f, "({left} {} {right})", op.sql()),
            Expr::Func(fc) => {
                write!(f, "{}(", fc.name)?;
                if fc.distinct {
                    f.write_str("DISTINCT ")?;
                }
                if fc.star {
                    f.write_str("*")?;
                }
                comma(f, &fc.args)?;
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
