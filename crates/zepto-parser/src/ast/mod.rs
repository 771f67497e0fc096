//! The abstract syntax tree: what the parser produces and the binder consumes. `Display`
//! prints canonical SQL, used for default column names and for matching GROUP BY expressions.
//!
//! * this file: statements ([`Statement`]), `CREATE TABLE`, where `INSERT` takes its rows and
//!   the far end of a `COPY`;
//! * `query.rs`: queries, their set operations, SELECT clauses, table references, ORDER BY;
//! * `expr.rs`: expressions, operators, literals, function calls and window specifications.

use crate::error::Pos;
use std::fmt;
use zepto_storage::DataType;

mod expr;
mod query;

pub use expr::*;
pub use query::*;

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

/// The far end of a COPY: a file on the server, or the client over its connection
/// (`STDIN`, `STDOUT`; only a door that can stream rows, the PostgreSQL one, runs those).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyEnd {
    /// A file (checked against the engine's file policy).
    File(String),
    /// The client's connection.
    Client,
}

/// Where INSERT's rows come from.
#[derive(Debug, Clone, PartialEq)]
pub enum InsertSource {
    /// `VALUES (...), (...)`: rows of expressions.
    Values(Vec<Vec<Expr>>),
    /// A query's result.
    Query(Box<Query>),
}
