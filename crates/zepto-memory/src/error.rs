//! What can go wrong in the agent-memory layer, each kind mapped by the doors to one status and
//! one stable error code.

use zepto_sql::SqlError;
use zepto_storage::StorageError;

/// An agent-memory request that failed; nothing of it was stored.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The request is malformed: a missing or badly typed field, a wrong embedding dimension,
    /// a tenant given two different ways. `field` names the field at fault.
    #[error("{field}: {message}")]
    BadRequest {
        /// The request field at fault (`body` for the request as a whole).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The caller may not do this (a tenant-bound key naming another tenant).
    #[error("{0}")]
    Forbidden(String),
    /// No such record in the caller's tenant (records of other tenants are reported the same
    /// way: their existence is not revealed).
    #[error("{0}")]
    NotFound(String),
    /// The tenant is at its quota and nothing can be evicted (every record is pinned).
    #[error("{0}")]
    Quota(String),
    /// A failure of the layer itself (a bug), not of the request.
    #[error("internal error: {0}")]
    Internal(String),
    /// The engine refused a statement.
    #[error(transparent)]
    Sql(#[from] SqlError),
    /// The storage refused a batch (disk full, not durable, ...).
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl MemoryError {
    /// A malformed field.
    pub fn bad(field: &str, message: impl Into<String>) -> MemoryError {
        MemoryError::BadRequest { field: field.to_string(), message: message.into() }
    }
}

/// The result of an agent-memory operation.
pub type Result<T> = std::result::Result<T, MemoryError>;
