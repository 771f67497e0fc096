//! SQL errors with stable codes (mapped to HTTP statuses by the server) and input positions.

use thiserror::Error;
use zepto_storage::StorageError;

/// A place in the SQL text: byte offset and 1-based line/column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// Byte offset from the start of the text.
    pub offset: usize,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

/// Why a statement failed; [`SqlError::code`] gives its stable code name.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SqlError {
    /// The text is not valid SQL.
    #[error("{message} at line {}, column {}", pos.line, pos.column)]
    Parse {
        /// What is wrong.
        message: String,
        /// Where in the text.
        pos: Pos,
    },
    /// Valid syntax that cannot be planned (unknown column, wrong argument types, ...).
    #[error("{}", with_pos(message, pos))]
    Plan {
        /// What is wrong.
        message: String,
        /// Where in the text, when known.
        pos: Option<Pos>,
    },
    /// A table named by the statement does not exist.
    #[error("{}", with_pos(&format!("table '{name}' does not exist"), pos))]
    TableNotFound {
        /// The name as written.
        name: String,
        /// Where it was named, when known.
        pos: Option<Pos>,
    },
    /// CREATE TABLE named a table that exists (without IF NOT EXISTS).
    #[error("table '{0}' already exists")]
    TableExists(String),
    /// A column named by the statement does not exist in its scope.
    #[error("{}", with_pos(message, pos))]
    ColumnNotFound {
        /// The full message, as displayed.
        message: String,
        /// Where it was named, when known.
        pos: Option<Pos>,
        /// The qualifier written (`t` in `t.x`), if any.
        table: Option<String>,
        /// The column name as written.
        name: String,
    },
    /// A value that does not fit (bad cast, overflow, bad literal).
    #[error("{0}")]
    Execution(String),
    /// Reading or writing a file or the log failed (including a change that could not be made
    /// durable: it was not applied).
    #[error("{0}")]
    Io(String),
    /// A file named by COPY is missing, refused or not what it claims to be.
    #[error("{path}: {reason}")]
    File {
        /// The file as named in the statement.
        path: String,
        /// Which kind of problem (it picks the error code).
        problem: FileProblem,
        /// What exactly is wrong.
        reason: String,
    },
    /// A request is larger or deeper than the parser accepts ([`crate::ParseLimits`]).
    #[error("{0}")]
    LimitExceeded(String),
    /// The disk is full: a write was not logged and not applied (it may be retried once space
    /// is freed).
    #[error("{0}")]
    DiskFull(String),
    /// A limit was hit (memory, result size).
    #[error("{0}")]
    ResourcesExhausted(String),
    /// The query ran past its time limit.
    #[error("{0}")]
    Timeout(String),
    /// The query was cancelled (its client went away, or the server is shutting down).
    #[error("query cancelled")]
    Cancelled,
    /// The caller may not do this (role or table grant).
    #[error("{0}")]
    PermissionDenied(String),
    /// Feature recognised but not supported yet.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// A service the statement needs did not answer (a cluster's log): nothing was changed,
    /// and the statement may be retried.
    #[error("{0}")]
    Unavailable(String),
    /// A broken internal invariant: a bug, not a user mistake.
    #[error("internal error (this is a bug): {0}")]
    Internal(String),
}

/// What is wrong with a file COPY was asked to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileProblem {
    /// It does not exist (or its directory does not).
    NotFound,
    /// It is in a place COPY may not touch, or not a regular file.
    Denied,
    /// Its contents are not valid for the format (bad CSV row, not Parquet, not UTF-8).
    Malformed,
}

fn with_pos(message: &str, pos: &Option<Pos>) -> String {
    match pos {
        Some(p) => format!("{message} at line {}, column {}", p.line, p.column),
        None => message.to_string(),
    }
}

impl SqlError {
    /// Stable code names (SPEC §2).
    pub fn code(&self) -> &'static str {
        match self {
            SqlError::Parse { .. } => "SQL_PARSE",
            SqlError::Plan { .. } => "SQL_PLAN",
            SqlError::TableNotFound { .. } => "TABLE_NOT_FOUND",
            SqlError::TableExists(_) => "TABLE_EXISTS",
            SqlError::ColumnNotFound { .. } => "COLUMN_NOT_FOUND",
            SqlError::Execution(_) => "EXECUTION",
            SqlError::Io(_) => "IO",
            SqlError::File { problem: FileProblem::NotFound, .. } => "FILE_NOT_FOUND",
            SqlError::File { problem: FileProblem::Denied, .. } => "FILE_ACCESS_DENIED",
            SqlError::File { problem: FileProblem::Malformed, .. } => "BAD_FILE",
            SqlError::LimitExceeded(_) => "LIMIT_EXCEEDED",
            SqlError::DiskFull(_) => "DISK_FULL",
            SqlError::ResourcesExhausted(_) => "RESOURCES_EXHAUSTED",
            SqlError::Timeout(_) => "TIMEOUT",
            SqlError::Cancelled => "CANCELLED",
            SqlError::PermissionDenied(_) => "PERMISSION_DENIED",
            SqlError::NotSupported(_) => "NOT_SUPPORTED",
            SqlError::Unavailable(_) => "UNAVAILABLE",
            SqlError::Internal(_) => "INTERNAL",
        }
    }

    /// Where in the SQL text the error is, for the errors that know.
    pub fn pos(&self) -> Option<Pos> {
        match self {
            SqlError::Parse { pos, .. } => Some(*pos),
            SqlError::Plan { pos, .. } | SqlError::ColumnNotFound { pos, .. } | SqlError::TableNotFound { pos, .. } => {
                *pos
            }
            _ => None,
        }
    }

    /// A [`SqlError::Plan`] error.
    pub fn plan(message: impl Into<String>, pos: Option<Pos>) -> SqlError {
        SqlError::Plan { message: message.into(), pos }
    }

    /// An [`SqlError::Execution`] error.
    pub fn exec(message: impl Into<String>) -> SqlError {
        SqlError::Execution(message.into())
    }
}

impl From<StorageError> for SqlError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::TableNotFound(name) => SqlError::TableNotFound { name, pos: None },
            StorageError::TableExists(n) => SqlError::TableExists(n),
            StorageError::ColumnNotFound { ref column, .. } => {
                SqlError::ColumnNotFound { message: e.to_string(), pos: None, table: None, name: column.clone() }
            }
            StorageError::ColumnExists(_) | StorageError::Invalid(_) => {
                SqlError::Plan { message: e.to_string(), pos: None }
            }
            StorageError::Durability(m) => SqlError::Io(format!("not durable, not applied: {m}")),
            StorageError::DiskFull(_) => SqlError::DiskFull(e.to_string()),
            StorageError::Internal(m) => SqlError::Internal(m),
            StorageError::Conflict(_) => SqlError::Execution(e.to_string()),
            StorageError::History(m) => SqlError::Io(m),
        }
    }
}

/// A result whose error is a [`SqlError`].
pub type Result<T> = std::result::Result<T, SqlError>;
