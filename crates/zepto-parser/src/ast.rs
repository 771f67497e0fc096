//! The abstract syntax tree: what the parser produces and the binder consumes. `Display`
//! prints canonical SQL, used for default column names and for matching GROUP BY expressions.

use crate::error::Pos;
use std::fmt;
use zepto_storage::DataType;

/// One SQL statement as parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// A query (SELECT, VALUES, set operations, WITH).
    Query(Box<Query>),
    /// `CREATE TABLE [IF NOT EXISTS] name (columns) [TIMESTAMP(col)] [PARTITION BY col]`.
    CreateTable(CreateTable),
    /// `CREATE TABLE [IF NOT EXISTS] name AS query`.
    CreateTableAs {
        /// The new table's name.
        name: String,
        /// Succeed without change if the table exists.
        if_not_exists: bool,
        /// The query whose result fills the table.
        query: Box<Query>,
    },
    /// `CREATE MATERIALIZED VIEW [IF NOT EXISTS] name AS query` (or QuestDB's `AS (query)`): a
    /// view that keeps its query's result.
    CreateMaterializedView {
        /// The view's name (read as a table name: schema-qualified, quoted or bare).
        name: String,
        /// Succeed without change if the view exists.
        if_not_exists: bool,
        /// The view's query.
        query: Box<Query>,
        /// The query's text exactly as written: from its first token to its last, inside the
        /// parentheses of `AS (query)`, without a trailing `;` or surrounding whitespace. The
        /// log keeps it and recovery parses it again, into `query` (positions then count from
        /// the start of this text). It never holds parameters.
        sql: String,
        /// Where the view is named.
        pos: Pos,
    },
    /// `CREATE INDEX [IF NOT EXISTS] name ON t [USING method] (column) [WITH (k = v, ...)]`.
    CreateIndex {
        /// The index's name.
        name: String,
        /// The table indexed.
        table: String,
        /// The column indexed.
        column: String,
        /// The method (`hnsw`), lower-cased; `None` when `USING` is left out.
        method: Option<String>,
        /// The `WITH` options, keys lower-cased, values as written (strings unquoted).
        options: Vec<(String, String)>,
        /// Succeed without change if an index of that name exists.
        if_not_exists: bool,
        /// Where the table is named.
        pos: Pos,
    },
    /// `DROP INDEX [IF EXISTS] name`.
    DropIndex {
        /// The index to drop.
        name: String,
        /// Succeed without change if it does not exist.
        if_exists: bool,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `DROP TABLE [IF EXISTS] name`.
    DropTable {
        /// The table to drop.
        name: String,
        /// Succeed without change if it does not exist.
        if_exists: bool,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `REFRESH MATERIALIZED VIEW name [FULL]`: recompute the whole view (`FULL`, QuestDB's
    /// word, changes nothing; its `INCREMENTAL` and `RANGE` refreshes are refused).
    RefreshMaterializedView {
        /// The view to refresh.
        name: String,
        /// Where the view is named.
        pos: Pos,
    },
    /// `DROP MATERIALIZED VIEW [IF EXISTS] name`.
    DropMaterializedView {
        /// The view to drop.
        name: String,
        /// Succeed without change if it does not exist.
        if_exists: bool,
        /// Where the view is named.
        pos: Pos,
    },
    /// `ALTER TABLE t ADD [COLUMN] [IF NOT EXISTS] name type`.
    AlterAddColumn {
        /// The table altered.
        table: String,
        /// The new column's name.
        column: String,
        /// The new column's type.
        data_type: DataType,
        /// Succeed without change if the column exists.
        if_not_exists: bool,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `ALTER TABLE t SET TTL 30 DAYS | '12 hours' | NONE`: retention (whole UTC days).
    AlterSetTtl {
        /// The table altered.
        table: String,
        /// How long rows are kept, in nanoseconds; `None` for `NONE` (keep forever).
        ttl_ns: Option<i64>,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `ALTER TABLE t DEDUP ENABLE UPSERT KEYS (cols) | DEDUP DISABLE` (QuestDB's spelling).
    AlterDedup {
        /// The table altered.
        table: String,
        /// The key columns; empty for `DISABLE`.
        keys: Vec<String>,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `ALTER TABLE t CONVERT PARTITION TO PARQUET WHERE ts < '2024-01-02'` (QuestDB's
    /// spelling): rows before `before` move to the Parquet history.
    AlterTier {
        /// The table tiered.
        table: String,
        /// The timestamp column named in the `WHERE`.
        column: String,
        /// Cut-off, nanoseconds since the epoch: rows before it move (`<=` is made exclusive).
        before: i64,
        /// Where the column is named.
        pos: Pos,
    },
    /// `INSERT INTO t [(columns)] VALUES ... | query`.
    Insert {
        /// The target table.
        table: String,
        /// The target columns as listed; empty means every column in schema order.
        columns: Vec<String>,
        /// The rows to insert.
        source: InsertSource,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `COPY t [(columns)] FROM 'path' | STDIN [WITH (options)]`: load rows into a table.
    CopyFrom {
        /// The target table.
        table: String,
        /// The columns the rows hold, in their order; empty means every column in schema order.
        columns: Vec<String>,
        /// Where the rows come from.
        source: CopyEnd,
        /// `WITH (key value, ...)` pairs (or the older `CSV HEADER DELIMITER ','` words), keys
        /// lower-cased; a key alone has the value `true`.
        options: Vec<(String, String)>,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `COPY (query) | t [(columns)] TO 'path' | STDOUT [WITH (options)]`: write a query's rows.
    CopyTo {
        /// The rows to write (a table name is read as `SELECT columns FROM t`).
        query: Box<Query>,
        /// Where the rows go.
        target: CopyEnd,
        /// As for [`Statement::CopyFrom`].
        options: Vec<(String, String)>,
    },
    /// `DELETE FROM t [WHERE ...]`.
    Delete {
        /// The table deleted from.
        table: String,
        /// Which rows; `None` deletes every row.
        filter: Option<Expr>,
        /// Where the table is named.
        pos: Pos,
    },
    /// `UPDATE t SET col = expr, ... [WHERE ...]`.
    Update {
        /// The table updated.
        table: String,
        /// `col = expr` assignments, each with the position of its column name.
        sets: Vec<(String, Expr, Pos)>,
        /// Which rows; `None` updates every row.
        filter: Option<Expr>,
        /// Where the table is named.
        pos: Pos,
    },
    /// `SHOW TABLES`: the tables this session may see.
    ShowTables,
    /// `SET name = value` (or `TO`): a setting for the statements after it in the same
    /// script (a session's, for doors that keep sessions).
    Set {
        /// The setting's name, lower-cased.
        name: String,
        /// The value as written (an identifier, keyword, number or string), lower-cased unless
        /// it was a quoted string.
        value: String,
        /// Where the name is.
        pos: Pos,
    },
    /// Write a checkpoint now (durable databases).
    Checkpoint,
    /// `BACKUP TO 'dir'`: an online backup of a durable database into a directory.
    Backup {
        /// The backup directory, as written.
        dest: String,
        /// Where the statement starts.
        pos: Pos,
    },
    /// `DESCRIBE t`: the table's columns and types.
    Describe {
        /// The table described.
        table: String,
        /// Where the table is named.
        pos: Pos,
    },
    /// `EXPLAIN [ANALYZE] query`: the physical plan (ANALYZE: run, with each operator's stats).
    Explain {
        /// The query explained.
        query: Box<Query>,
        /// `EXPLAIN ANALYZE`: run the query and report what each operator did.
        analyze: bool,
    },
}

/// `CREATE TABLE`: a new table's name, columns and layout.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    /// The table's name.
    pub name: String,
    /// Succeed without change if the table exists.
    pub if_not_exists: bool,
    /// Column names and types, in order.
    pub columns: Vec<(String, DataType)>,
    /// The designated timestamp column from `TIMESTAMP(col)`; `None` picks the first TIMESTAMP
    /// column.
    pub timestamp: Option<String>,
    /// The partition key column from `PARTITION BY col`; `None` picks the first SYMBOL column.
    pub partition_by: Option<String>,
    /// `DEDUP UPSERT KEYS (cols)`: an append replaces the stored row with equal values in these
    /// columns (empty: no deduplication).
    pub dedup_keys: Vec<String>,
}

/// An identifier as a quoted one (`"a""b"`), which reads back exactly as it was.
pub fn quote_ident(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

fn quoted(f: &mut fmt::Formatter<'_>, ident: &str) -> fmt::Result {
    f.write_str(&quote_ident(ident))
}

impl fmt::Display for CreateTable {
    /// Canonical SQL that parses back to the same statement, identifiers quoted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.if_not_exists { "CREATE TABLE IF NOT EXISTS " } else { "CREATE TABLE " })?;
        quoted(f, &self.name)?;
        f.write_str(" (")?;
        for (i, (name, ty)) in self.columns.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            quoted(f, name)?;
            write!(f, " {}", ty.sql_name())?;
        }
        f.write_str(")")?;
        if let Some(ts) = &self.timestamp {
            f.write_str(" TIMESTAMP(")?;
            quoted(f, ts)?;
            f.write_str(")")?;
        }
        if let Some(key) = &self.partition_by {
            f.write_str(" PARTITION BY ")?;
            quoted(f, key)?;
        }
        if !self.dedup_keys.is_empty() {
            f.write_str(" DEDUP UPSERT KEYS (")?;
            for (i, k) in self.dedup_keys.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                quoted(f, k)?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// Where INSERT's rows come from.
#[derive(Debug, Clone, PartialEq)]
pub enum InsertSource {
    /// `VALUES (...), (...)`: rows of expressions.
    Values(Vec<Vec<Expr>>),
    /// A query's result.
    Query(Box<Query>),
}

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

/// The far end of a COPY: a file on the server, or the client over its connection
/// (`STDIN`, `STDOUT`; only a door that can stream rows, the PostgreSQL one, runs those).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyEnd {
    /// A file (checked against the engine's file policy).
    File(String),
    /// The client's connection.
    Client,
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
