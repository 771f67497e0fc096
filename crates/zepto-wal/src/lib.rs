//! The write-ahead log: every write is framed, checksummed and appended to a segment
//! file before it is acknowledged; replay on startup gives the records back in order.
//!
//! # What it owns
//!
//! The log alone: a payload is opaque bytes, the log knows nothing of tables. zepto-durable
//! decides what a record holds, writes checkpoints, and drops the segments they cover.
//!
//! * [`mod@format`] — the bytes on disk: segment `<first LSN, 20 digits>.wal`, header (magic,
//!   version, first LSN), record frame (length, CRC-32, LSN, payload).
//! * [`writer`] — [`Wal`]: appends with group commit under a [`SyncMode`] (`always`,
//!   `interval=<ms>`, `none`), segment rotation, deletion of covered segments.
//! * [`reader`] — [`replay`]: the records after a checkpoint's LSN, in order; a torn tail is cut
//!   and reported, corruption refused or cut off as [`RecoveryMode`] says.
//! * [`since`] — [`read_since`]: the records after an LSN, read back from the live log without
//!   changing it (for subscribers resuming from the log).
//! * [`storage`] — the [`Storage`] trait: [`DirStorage`] (a directory) and [`MemStorage`] (in
//!   memory; injects short writes, fsync failures, a full disk and crashes for tests).
//!
//! # Entry points
//!
//! [`replay`] at startup, then [`Wal::open`] at [`ReplayReport::next_lsn`]; [`Wal::append`]
//! (or [`Wal::append_owned`], which does not copy a large payload) per record; [`Wal::rotate`]
//! and [`Wal::remove_through`] around a checkpoint; [`Wal::sync`] to force the disk in any mode.
//!
//! # Invariants
//!
//! * LSNs are 1, 2, 3, ... without gaps (replay takes a gap for corruption); each record's CRC
//!   covers its length, LSN and payload. Payloads over [`format::MAX_PAYLOAD`] are refused.
//! * An append returns once its record is written, and under [`SyncMode::Always`] fsynced.
//! * A failed write is rolled back (segment cut back, LSNs handed out again) and later appends
//!   try again. Only a failed fsync under `interval` or `none` (written records may be lost), or
//!   a failed roll-back, poisons the log: appends fail ([`WalError::Poisoned`]) until a restart.
//! * Nothing is deleted that recovery may need: [`Wal::remove_through`] keeps the current
//!   segment, and point-in-time recovery keeps damaged and dropped segments aside.
//!
//! # When you change …
//!
//! * A WAL record kind: not here; see `zepto_storage::Change` and zepto-durable's `changes.rs`.
//! * The frame or the header: bump [`format::VERSION`] and teach the reader (it accepts only that
//!   version) to still read the previous one; the layout in `format.rs`'s doc; the `wal` seeds in
//!   `zepto-fuzz/src/seeds.rs`.
//! * The [`Storage`] trait: both implementations, and its other users, zepto-durable's
//!   checkpoints (`checkpoint/mod.rs`) and zepto-history (`read.rs`, `write.rs`, `sweep.rs`).
//! * A [`WalError`] variant: zepto-durable's `store.rs` maps it (`NoSpace` to `DiskFull`).
//! * [`SyncMode`] or [`RecoveryMode`]: `parse` reads `--sync` (zepto-durable `dir.rs`) and
//!   `--wal-recovery` (zepto-cli `serve.rs`); both are in `docs/durability.md`.
#![warn(missing_docs)]

pub mod format;
mod pending;
pub mod reader;
pub mod since;
pub mod storage;
pub mod writer;

pub use reader::{replay, Corruption, RecoveryMode, ReplayOptions, ReplayReport};
pub use since::{oldest, read_since, Since};
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
    /// A segment written by a newer ZeptoDB (a higher format version after the magic): replay
    /// refuses it, whatever the recovery mode, and leaves the log as it is. Treated as damage,
    /// point-in-time recovery would have cut every record from there on.
    #[error(
        "{file} was written by a newer ZeptoDB (WAL format {version}; this build reads format {}): start that version or a later one, or restore a backup",
        format::VERSION
    )]
    NewerFormat {
        /// The segment.
        file: String,
        /// The format version it carries.
        version: u32,
    },
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
