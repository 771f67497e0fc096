//! The write-ahead log (issue #5): every write is framed, checksummed and appended to a segment
//! file before it is acknowledged; replay on startup gives the records back in order.
//!
//! * [`mod@format`] — segment header (magic, version, first LSN) and record framing
//!   (length, CRC-32, LSN, payload).
//! * [`storage`] — where segments live, behind a small trait: real files, or an in-memory
//!   store that injects short writes, fsync failures and crashes for tests.
//! * [`writer`] — appends with group commit under a [`SyncMode`] (`always`, `interval`,
//!   `none`); any write or fsync failure poisons the log so nothing is acknowledged that might
//!   be lost.
//! * [`reader`] — replay: a torn last record is tolerated and reported, corruption anywhere
//!   else stops with the file and offset (or truncates there when asked).
//!
//! The log knows nothing of tables: `zepto-durable` puts the engine's changes in it, writes
//! checkpoints and drops the segments they cover ([`Wal::rotate`], [`Wal::remove_through`]).
#![warn(missing_docs)]

pub mod format;
mod pending;
pub mod reader;
pub mod storage;
pub mod writer;

pub use reader::{replay, Corruption, RecoveryMode, ReplayOptions, ReplayReport};
pub use storage::{DirStorage, MemStorage, Storage};
pub use writer::{SyncMode, Wal};

use thiserror::Error;

/// Log sequence number: records are numbered 1, 2, 3, ... without gaps.
/// A log sequence number: records are numbered 1, 2, 3, ... without gaps.
pub type Lsn = u64;

/// Why the log could not do what it was asked.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum WalError {
    /// The storage failed (read, list, rename, ...).
    #[error("WAL I/O error: {0}")]
    Io(String),
    /// An earlier write or fsync failed: the log refuses writes rather than risk acknowledging
    /// a record it may not have stored.
    #[error("the WAL is poisoned by an earlier failure ({0}); restart to recover")]
    Poisoned(String),
    /// The disk is full: the batch was not logged (and nothing of it is left in the log). Later
    /// appends try again.
    #[error("the disk is full ({0}): the write was not logged and nothing was applied")]
    NoSpace(String),
    /// A write failed and was rolled back (nothing of it is left in the log). Later appends try
    /// again.
    #[error("WAL write failed ({0}): the write was not logged and nothing was applied")]
    WriteFailed(String),
    /// A record over [`format::MAX_PAYLOAD`] bytes: the caller splits its batch.
    #[error("WAL record of {0} bytes is larger than the limit")]
    TooLarge(usize),
    /// Damage that is not a torn last write: replay stops here.
    #[error("WAL corrupt in {file} at offset {offset}: {reason}")]
    Corrupt {
        /// The segment.
        file: String,
        /// Where in it the damage starts.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
}

impl From<std::io::Error> for WalError {
    fn from(e: std::io::Error) -> Self {
        WalError::Io(e.to_string())
    }
}
