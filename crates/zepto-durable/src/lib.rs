//! Durability for the engine, on top of the write-ahead log in `zepto-wal`: the
//! catalog's changes as WAL records, checkpoints, recovery, and tiering to the Parquet history.
//!
//! # What it owns
//!
//! * [`changes`] — each `zepto_storage::Change` as bytes of a record ([`changes::encode`]) and
//!   back into a catalog ([`changes::apply`]); the byte layout is that module's doc.
//! * [`checkpoint`] — every table as of one LSN, an Arrow IPC file each
//!   ([`checkpoint::table_file`]), published by a text manifest; loading checks every CRC first.
//! * [`store`] — [`Durable`], the catalog's `ChangeLog`: recovery, logging, checkpoints that then
//!   drop the WAL segments they cover, tiering and retention ([`Durable::maintain`]).
//! * [`dir`] — [`DataDir`], a data directory as one handle: `LOCK`, `wal/`, `checkpoint/`,
//!   `history/`, and the background checkpoint and maintenance threads.
//! * [`timeline`] — which history the change feed's event ids belong to: kept across restarts
//!   while nothing published can have been lost (`--sync always`), new otherwise.
//! * [`backup`] — online backups (a checkpoint's cut written elsewhere: a directory or
//!   `s3://`) and restoring one as a new data directory.
//!
//! # Entry points
//!
//! Doors call [`DataDir::open`] with [`DirOptions`] (zepto-cli's `serve` and `sql`, the Python
//! package) and [`DataDir::close`] at a clean exit; tests and zepto-slt call [`Durable::open`]
//! directly. `CHECKPOINT` and `ALTER TABLE ... CONVERT PARTITION TO PARQUET` reach
//! [`Durable::checkpoint`] and [`Durable::tier`] through the catalog's `ChangeLog`.
//!
//! # Invariants
//!
//! * A change is in the WAL before the catalog applies it. One operation's changes are one
//!   record, replayed all or not at all.
//! * Recovery loads the newest checkpoint, replays the records after its LSN (the log must reach
//!   back to it), sweeps the history, and only then becomes the change log, so replay logs
//!   nothing twice. A damaged checkpoint, or an intact record that does not apply, stops the start.
//! * A checkpoint's tables are cut with the WAL's rotation (`Catalog::consistent_cut`): it holds
//!   exactly the records up to that LSN. What it replaces is deleted only once it is published.
//! * History files are published before the change that names them is logged; retention syncs
//!   the log before it deletes files.
//! * Logs and checkpoints of earlier versions still load: kind numbers are never reused, and
//!   checkpoint metadata added later is optional when read.
//!
//! # When you change …
//!
//! * A WAL record kind: the `Change` variant and its `Catalog` method (zepto-storage's
//!   `catalog.rs`); here the next kind number in `changes.rs` (its `kinds` module, `put_change`, `apply`, the layout
//!   in its doc); table state it sets also in `checkpoint/table_file.rs`; a seed in
//!   `zepto-fuzz/src/seeds.rs` (`changes`); a step in `store.rs`'s test
//!   `every_change_and_type_survives_restarts_through_log_and_checkpoint`.
//! * How zepto-io decodes Arrow IPC (`ipc::read_ipc_stream`, `arrow::Acc`): appends, updates and
//!   checkpoints go through it, so everything written before must still read.
//! * A durability option: [`Options`], [`DirOptions`], the flag (zepto-cli), `docs/durability.md`.
#![warn(missing_docs)]

pub mod backup;
pub mod changes;
pub mod checkpoint;
pub mod dir;
pub mod identity;
pub mod store;
pub mod timeline;

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
