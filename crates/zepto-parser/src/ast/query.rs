//! Queries: `WITH`, set operations and `VALUES`, SELECT and its clauses (`LATEST ON`,
//! `SAMPLE BY`, joins), table references and ORDER BY keys; their canonical SQL where they print.

use super::*;
use std::fmt;

/// A full query: `[WITH ctes] body [ORDER BY ...] [LIMIT n] [OFFSET m]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Common table expressions, in order: each may use the earlier ones.
    pub ctes: Vec<(String, Query)>,
    /// The SELECT, VALUES or set operation.
    pub body: SetExpr,
    /// Output ordering; empty leaves the order unspecified.
    pub order_by: Vec<OrderItem>,
    /// Most rows to return (a constant expression); negative, QuestDB's "the last n rows".
    pub limit: Option<Expr>,
    /// QuestDB's `LIMIT lo, hi`: the other end of the row range `limit` starts (0-based,
    /// exclusive; a negative bound counts from the end).
    pub limit_to: Option<Expr>,
    /// Rows to skip first (a constant expression).
    pub offset: Option<Expr>,
}

/// A set operation between two query bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    /// `UNION`: rows of either side.
    Union,
    /// `INTERSECT`: rows on both sides.
    Intersect,
    /// `EXCEPT`: rows of the left side not on the right.
    Except,
}

/// The body of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum SetExpr {
    /// A SELECT.
    Select(Box<Select>),
    /// `VALUES (...), (...)` as a query.
    Values(Vec<Vec<Expr>>),
    /// `left op [ALL] right`.
    SetOp {
        /// Which set operation.
        op: SetOp,
        /// `ALL`: keep duplicates (bag semantics).
        all: bool,
        /// The left operand.
        left: Box<SetExpr>,
        /// The right operand.
        right: Box<SetExpr>,
    },
    /// A parenthesised query used as a body (with its own ORDER BY, LIMIT or WITH).
    Query(Box<Query>),
}

/// A SELECT and its clauses.
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// `SELECT DISTINCT`: duplicate rows removed.
    pub distinct: bool,
    /// The select list.
    pub items: Vec<SelectItem>,
    /// The FROM clause; `None` for a SELECT without one (one row).
    pub from: Option<TableRef>,
    /// The WHERE predicate.
    pub where_: Option<Expr>,
    /// GROUP BY expressions (select-list positions and aliases are resolved by the binder).
    pub group_by: Vec<Expr>,
    /// The HAVING predicate.
    pub having: Option<Expr>,
    /// `QUALIFY pred`: a filter over window function results.
    pub qualify: Option<Expr>,
    /// `LATEST ON ts PARTITION BY keys` / `LATEST BY keys`: the last row per key.
    pub latest: Option<Latest>,
    /// `SAMPLE BY 1m [FROM .. TO ..] [FILL(..)] [ALIGN TO ..]`.
    pub sample_by: Option<SampleBy>,
}

/// `LATEST ON ts PARTITION BY keys` / `LATEST BY keys`: keep the last row per key.
#[derive(Debug, Clone, PartialEq)]
pub struct Latest {
    /// `None`: the designated timestamp (`LATEST BY`).
    pub ts: Option<Expr>,
    /// The partition keys.
    pub keys: Vec<Expr>,
    /// Where the clause starts.
    pub pos: Pos,
}

/// How SAMPLE BY fills buckets that have no rows.
#[derive(Debug, Clone, PartialEq)]
pub enum FillMode {
    /// Leave empty buckets out.
    None,
    /// Emit empty buckets with NULL aggregates.
    Null,
    /// Repeat the previous bucket's value.
    Prev,
    /// Interpolate linearly between the neighbouring buckets.
    Linear,
    /// Emit this constant.
    Value(Expr),
}

/// `SAMPLE BY`: fixed-width or calendar-month time buckets over the designated timestamp.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleBy {
    /// Bucket width in nanoseconds (0 for calendar months).
    pub width: i64,
    /// Bucket width in calendar months (`1M`, `3M`, `1y` = 12), 0 for fixed widths.
    pub months: i64,
    /// `FROM`: start of the range of buckets (a constant timestamp), also their alignment; `None`
    /// starts at the first bucket present.
    pub from: Option<Expr>,
    /// `TO`: end of the range of buckets (exclusive, a constant timestamp); `None` ends with the
    /// last bucket present.
    pub to: Option<Expr>,
    /// One mode for every aggregate, or one per aggregate column in select-list order.
    pub fill: Vec<FillMode>,
    /// `ALIGN TO CALENDAR [WITH OFFSET '..']` (the default; offset in ns) or `ALIGN TO FIRST
    /// OBSERVATION` (`None`).
    pub calendar_offset: Option<i64>,
    /// `ALIGN TO CALENDAR TIME ZONE 'tz'`: buckets on the zone's wall clock (the offset too),
    /// each named by the instant (UTC) it starts at.
    pub time_zone: Option<String>,
    /// Where the clause starts.
    pub pos: Pos,
}

/// One entry of the select list.
#[derive(Debug, Clone, PartialEq)]
pub enum SelectItem {
    /// An expression, optionally named with `AS`.
    Expr {
        /// The expression.
        expr: Expr,
        /// Its output name, if given.
        alias: Option<String>,
    },
    /// `*` or `t.*`, with optional `EXCLUDE (a, b)`.
    Wildcard {
        /// The qualifier of `t.*`; `None` for `*`.
        table: Option<String>,
        /// Columns left out (`EXCLUDE`).
        exclude: Vec<String>,
        /// Where the `*` is.
        pos: Pos,
    },
}

/// The kind of a join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// `[INNER] JOIN`: matching pairs only.
    Inner,
    /// `LEFT [OUTER] JOIN`: unmatched left rows kept with NULLs.
    Left,
    /// `RIGHT [OUTER] JOIN`: unmatched right rows kept with NULLs.
    Right,
    /// `FULL [OUTER] JOIN`: unmatched rows of both sides kept with NULLs.
    Full,
    /// `CROSS JOIN` (or a comma): every pair.
    Cross,
    /// `ASOF JOIN`: each left row with the nearest right row satisfying the inequality.
    Asof,
    /// `ASOF LEFT JOIN` / `LEFT ASOF JOIN`: unmatched left rows kept with NULLs.
    AsofLeft,
    /// `ASOF RIGHT JOIN` / `RIGHT ASOF JOIN`: the matches, and every right row no left row
    /// matched, with NULLs.
    AsofRight,
    /// `ASOF FULL JOIN` / `FULL ASOF JOIN`: the matches, unmatched left rows and right rows no
    /// left row matched, with NULLs.
    AsofFull,
    /// `ASOF SEMI JOIN`: the left rows that have a match, left columns only.
    AsofSemi,
    /// `ASOF ANTI JOIN`: the left rows that have no match, left columns only.
    AsofAnti,
    /// `WINDOW JOIN`: aggregates over the right rows in a time window around each left row.
    Window,
    /// `SPLICE JOIN`: a full as-of merge of two time series (every row of both sides).
    Splice,
}

impl JoinKind {
    /// The ASOF kinds (inner, LEFT, RIGHT, FULL, SEMI, ANTI).
    pub fn is_asof(self) -> bool {
        matches!(
            self,
            JoinKind::Asof
                | JoinKind::AsofLeft
                | JoinKind::AsofRight
                | JoinKind::AsofFull
                | JoinKind::AsofSemi
                | JoinKind::AsofAnti
        )
    }
}

/// A schema of system catalogs (every table is in `public`; see `names.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemSchema {
    /// `information_schema`: the SQL standard's views of the catalog.
    InformationSchema,
    /// `pg_catalog`: PostgreSQL's catalog tables, as its clients query them.
    PgCatalog,
}

impl SystemSchema {
    /// Every system schema.
    pub const ALL: [SystemSchema; 2] = [SystemSchema::InformationSchema, SystemSchema::PgCatalog];

    /// The schema named `name` (ASCII case ignored).
    pub fn by_name(name: &str) -> Option<SystemSchema> {
        SystemSchema::ALL.into_iter().find(|s| s.name().eq_ignore_ascii_case(name))
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            SystemSchema::InformationSchema => "information_schema",
            SystemSchema::PgCatalog => "pg_catalog",
        }
    }
}

/// What FROM reads.
#[derive(Debug, Clone, PartialEq)]
pub enum TableRef {
    /// A table or CTE by name.
    Table {
        /// The table or CTE name.
        name: String,
        /// The system catalog's schema, when the name is one of its tables (`None`: a table
        /// of `public`, or a CTE).
        system: Option<SystemSchema>,
        /// `AS alias`, if given.
        alias: Option<String>,
        /// Where the name is.
        pos: Pos,
    },
    /// `(query) AS t(a, b)`: `columns` renames the first output columns.
    Subquery {
        /// The subquery.
        query: Box<Query>,
        /// Its alias, if given.
        alias: Option<String>,
        /// Column renames (`t(a, b)`), possibly fewer than its columns.
        columns: Vec<String>,
    },
    /// A table function: `range(...)` or `generate_series(...) AS t(a)`.
    Function {
        /// The function's name as written.
        name: String,
        /// Its arguments (constant expressions).
        args: Vec<Expr>,
        /// Its alias, if given.
        alias: Option<String>,
        /// Column renames (`t(a)`).
        columns: Vec<String>,
        /// Where the name is.
        pos: Pos,
    },
    /// `left JOIN right [ON expr | USING (cols)]`.
    Join {
        /// The left input.
        left: Box<TableRef>,
        /// The right input.
        right: Box<TableRef>,
        /// The kind of join.
        kind: JoinKind,
        /// The ON condition, if given.
        on: Option<Expr>,
        /// The USING columns; empty if none.
        using: Vec<String>,
    },
}

/// One ORDER BY key.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    /// The expression (select-list positions and aliases are resolved by the binder).
    pub expr: Expr,
    /// `DESC`: descending.
    pub desc: bool,
    /// `Some(true)` = NULLS FIRST, `Some(false)` = NULLS LAST, `None` = default (last).
    pub nulls_first: Option<bool>,
    /// DuckDB's `ORDER BY ALL`: every output column, left to right (the only item of a
    /// query's ORDER BY; `expr` is then a NULL literal, unused).
    pub all: bool,
}

impl fmt::Display for OrderItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.all {
            f.write_str("ALL")?;
        } else {
            write!(f, "{}", self.expr)?;
        }
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
