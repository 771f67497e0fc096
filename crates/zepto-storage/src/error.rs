//! Storage errors: user mistakes (bad values, unknown tables) and internal invariant breaks.

use thiserror::Error;

/// Why a storage operation failed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum StorageError {
    /// No table has this name.
    #[error("table '{0}' does not exist")]
    TableNotFound(String),
    /// A new table was given a name already in the catalog.
    #[error("table '{0}' already exists")]
    TableExists(String),
    #[error("column '{column}' does not exist in table '{table}'")]
    /// The table has no column of this name.
    ColumnNotFound {
        /// The table searched.
        table: String,
        /// The column name asked for.
        column: String,
    },
    /// A column name used twice (in a schema, or added by ALTER TABLE).
    #[error("column '{0}' already exists")]
    ColumnExists(String),
    /// A user mistake the storage refuses (wrong value type, bad schema, rows out of bounds...).
    #[error("{0}")]
    Invalid(String),
    /// The change could not be made durable (write-ahead log failure): it was not applied.
    #[error("not durable: {0}")]
    Durability(String),
    /// The disk is full: the change was not logged and not applied; retrying once space is
    /// freed succeeds (no restart needed).
    #[error("the disk is full ({0}): nothing was applied")]
    DiskFull(String),
    /// A Parquet history file could not be written, read or found.
    #[error("{0}")]
    History(String),
    /// A concurrent change got in the way; retrying may succeed.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A broken internal invariant: a bug, not a user mistake.
    #[error("internal error (this is a bug): {0}")]
    Internal(String),
}
