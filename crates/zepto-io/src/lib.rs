//! File and wire formats shared by every door: CSV, Parquet, Arrow IPC and PostgreSQL's COPY
//! formats in and out of typed columns.
//!
//! # What it owns
//!
//! Bytes to `zepto_storage::Column`s of a given schema (`&[ColumnDef]`) and back. It never
//! touches the catalog: callers apply what it decodes.
//!
//! * [`csv`] — RFC 4180 ([`csv::read_csv`], [`csv::write_csv`]) keeping SPEC §2's distinction
//!   between an empty unquoted field (NULL) and `""` (the empty string).
//! * [`parquet`] — [`parquet::read_parquet`], [`parquet::write_parquet`] (zstd, on every core),
//!   [`parquet::read_parquet_parts`] (chosen row groups, for the Parquet history).
//! * [`parquet_grouped`] — [`parquet_grouped::read_parquet_grouped`]: a bulk load's rows grouped
//!   by the table's partition key, each column split among the groups as it is decoded
//!   (`grouped.rs`); [`ipc::read_batches_grouped`] does the same for Arrow batches.
//! * [`ipc`] — Arrow IPC streams: [`ipc::read_ipc_stream`] and [`ipc::IpcResultWriter`] (HTTP
//!   `format=arrow`, WAL batches); [`ipc_check`] bounds-checks untrusted input first.
//! * [`narrow`] — columns as the narrowest Arrow arrays that hold them (the WAL's batches,
//!   [`ipc::IpcResultWriter::narrow`]).
//! * [`arrow`] — engine types to and from Arrow ([`arrow::to_arrow`], [`arrow::Acc`]; `FLOAT[n]`
//!   in [`arrow_vector`]); [`export`] shares column memory with in-process readers (Python).
//! * [`pgcopy`] — PostgreSQL's COPY text and CSV, streamed ([`pgcopy::CopyReader`]).
//! * [`mod@format`] — a cell as CSV, JSON or terminal text.
//!
//! # Entry points
//!
//! Called by zepto-sql's `copy.rs` (`COPY`), zepto-server (`ingest/mod.rs`, `encode.rs`),
//! zepto-pg's `copy.rs`, zepto-durable (WAL batches, checkpoints) and zepto-history (Parquet).
//!
//! # Invariants
//!
//! * A read is all or nothing: the first bad value stops it with an [`IoError`] naming its
//!   1-based data row (and column).
//! * Columns come back in the schema's order and types; input columns are matched by name (a
//!   CSV without a header: by position).
//! * A long read asks its [`Check`] now and then and stops ([`IoError::Stopped`]) when it errs.
//! * [`parquet::write_parquet`] writes `<path>.tmp`, syncs, then renames; a full disk is
//!   [`IoError::DiskFull`], with the partial file removed.
//! * Hostile input gives an error, never a panic ([`ipc_check::guard`]; zepto-fuzz targets).
//!
//! # When you change …
//!
//! * A column type: `to_arrow` and `Acc` (`arrow.rs`), `ipc::engine_type`, `csv::parse_field`,
//!   `format.rs`, `export.rs`; in zepto-durable, the checkpoint's `arrow_type`.
//! * How Arrow IPC or arrays decode: zepto-durable replays WAL appends and loads checkpoints
//!   through them, so every log and checkpoint written before must still read.
//! * An [`IoError`] variant: `From<IoError> for ApiError` (zepto-server `error.rs`), `bad_file`
//!   and `write_error` (zepto-sql `copy.rs`), `From<IoError> for DurableError`.
//! * A format: a module here, `format_of` in zepto-sql's `copy.rs`, `ingest/mod.rs` in
//!   zepto-server, a target in zepto-fuzz. Not here: ILP and JSON lines (zepto-server `ingest/`).
#![warn(missing_docs)]

pub mod arrow;
pub mod arrow_vector;
mod chunks;
pub mod csv;
pub mod export;
pub mod format;
mod grouped;
pub mod ipc;
pub mod ipc_check;
mod ipc_writer;
pub mod narrow;
pub mod parquet;
pub mod parquet_grouped;
mod parquet_writer;
pub mod pgcopy;
pub mod read;

use thiserror::Error;

/// Why data could not be read or written.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum IoError {
    /// Bad input data; `row` is the 1-based data row (header not counted).
    #[error("row {row}, column '{column}': {message}")]
    BadValue {
        /// The data row.
        row: usize,
        /// The column.
        column: String,
        /// What is wrong with the value.
        message: String,
    },
    /// A record that is malformed as a whole (wrong field count, bad quoting, not JSON).
    #[error("row {row}: {message}")]
    BadRow {
        /// The 1-based data row.
        row: usize,
        /// What is wrong with it.
        message: String,
    },
    /// Input that is wrong as a whole (a header naming an unknown column, a bad stream).
    #[error("{0}")]
    Invalid(String),
    /// A file that could not be opened, read or written.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A write found the disk (or the user's quota) full; the partial file was removed.
    #[error("{path}: the disk is full ({message}); nothing was written")]
    DiskFull {
        /// The file.
        path: String,
        /// The system's message.
        message: String,
    },
    /// Text that is not UTF-8 from `offset` (a byte offset from its start) on.
    #[error("not UTF-8 text (byte offset {offset})")]
    NotUtf8 {
        /// The first byte that is not part of valid UTF-8.
        offset: usize,
    },
    /// The caller's [`Check`] stopped a long read (its memory limit, deadline or
    /// cancellation); the text is the check's reason.
    #[error("stopped: {0}")]
    Stopped(String),
}

/// Asked now and then during a long read (every [`CHECK_EVERY`] CSV records, every Parquet
/// batch): an `Err` stops the read with [`IoError::Stopped`] and everything decoded so far is
/// dropped. The SQL engine passes the query's memory, deadline and cancellation check, so a
/// `COPY` whose decoded rows outgrow the query's memory limit stops while it decodes, not
/// after it has taken the memory. A read that decodes on every core asks it on each helper
/// thread too: there it must judge that thread's own growth on top of what the calling thread
/// held when the read began (a helper starts from zero).
pub type Check<'a> = &'a (dyn Fn() -> Result<(), String> + Sync);

/// True when `e`, or an error it wraps, says the disk or a quota is full (`ENOSPC`, `EDQUOT`):
/// what a writer reports as [`IoError::DiskFull`] rather than as a failure of its own.
pub fn is_disk_full(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if matches!(io.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded) {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

/// How many CSV records pass between two calls of a [`Check`].
pub const CHECK_EVERY: usize = 16_384;

/// The [`Check`] of a read that nothing limits.
pub fn unchecked() -> Result<(), String> {
    Ok(())
}

impl From<zepto_storage::StorageError> for IoError {
    fn from(e: zepto_storage::StorageError) -> IoError {
        IoError::Invalid(e.to_string())
    }
}

impl IoError {
    /// The data row the error is in, when it is in one.
    pub fn row(&self) -> Option<usize> {
        match self {
            IoError::BadValue { row, .. } | IoError::BadRow { row, .. } => Some(*row),
            _ => None,
        }
    }
}
