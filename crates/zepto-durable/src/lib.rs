//! Durability for the engine (issue #5), on top of the write-ahead log in `zepto-wal`:
//!
//! * [`changes`] — catalog changes as WAL records, and applying them back.
//! * [`checkpoint`] — every table as of one LSN in Arrow IPC files, published atomically by a
//!   manifest; loading verifies every checksum.
//! * [`dir`] — a data directory as one handle: lock, recovery, background checkpoints and
//!   maintenance (what every door that keeps tables durable opens).
//! * [`store`] — the [`Durable`] store: recovery (newest checkpoint + WAL tail), the catalog's
//!   change log, checkpoints that then drop the WAL segments they cover.
#![warn(missing_docs)]

pub mod changes;
pub mod checkpoint;
pub mod dir;
pub mod store;

pub use dir::{DataDir, DirOptions, Tiering};
pub use store::{Durable, Options, Recovery};

use thiserror::Error;

/// Why durability failed: recovery, logging or a checkpoint.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DurableError {
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
    /// The write-ahead log failed.
    #[error(transparent)]
    Wal(#[from] zepto_wal::WalError),
    /// A checkpoint file that fails its checks: recovery refuses to guess.
    #[error("checkpoint file {file} is damaged: {reason}")]
    Corrupt {
        /// The file.
        file: String,
        /// Which check it fails.
        reason: String,
    },
    /// A log record or checkpoint this version cannot read.
    #[error("checkpoint format: {0}")]
    Format(String),
    /// Applying a recovered change to the catalog failed.
    #[error(transparent)]
    Storage(#[from] zepto_storage::StorageError),
}

impl From<zepto_io::IoError> for DurableError {
    fn from(e: zepto_io::IoError) -> DurableError {
        DurableError::Format(e.to_string())
    }
}
