//! The historical store: a table's older rows as Parquet files that DuckDB, Polars
//! and Spark read directly, laid out Hive style under the data directory:
//!
//! ```text
//! DIR/history/<table>/date=YYYY-MM-DD/part-<seq>-<tag>.parquet
//! ```
//!
//! # What it owns
//!
//! Writing, reading and deleting the files. Which files a table has is table state
//! (`zepto_storage::History`), changed only by logged changes; zepto-durable decides when.
//!
//! * [`mod@write`] — [`write_history`]: a snapshot's rows before a cut, one file per UTC day,
//!   sorted by (partition key as a string, NULL first; timestamp), snappy, timestamps as deltas;
//!   each published by temporary name, fsync, rename. [`encode_rows`] encodes in memory.
//! * [`read`] — [`ParquetHistory`], the catalog's `HistoryReader`: files picked by their time
//!   spans in table state (no I/O), row groups by cached footer statistics of time and key;
//!   only the scan's columns are decoded, one row group per unit of work.
//! * [`shared`] — [`SharedStore`] (`object_store`): the cluster's shared storage, a directory or
//!   an S3 bucket; history paths starting `shared:` are read there.
//! * [`mod@sweep`] — [`sweep()`]: at startup, every file a table names must be there with its
//!   length, else the start is refused; files no table names are deleted.
//!
//! # Entry points
//!
//! zepto-durable's `Durable::open` installs a [`ParquetHistory`] on the catalog and runs
//! [`sweep()`]; `Durable::tier` calls [`write_history`], then `Catalog::commit_tier`. zepto-cluster
//! writes shared files ([`encode_rows`], [`SharedStore`]). Queries read through `HistoryReader`.
//!
//! # Invariants
//!
//! * A file is published before the change naming it is logged, and never rewritten; a crash in
//!   between leaves a file no table names, which [`sweep()`] deletes.
//! * Rows are sorted by key, then time: pruning relies on it, and [`ParquetHistory`] cuts each
//!   row group into per-key runs (`HistoryChunk::runs`) on that order.
//! * Files in shared storage are not this node's: [`sweep()`] and retention leave them alone.
//!
//! # When you change …
//!
//! * The file layout or sort order: [`encode_rows`] and the reader (`row_groups`, `key_runs` in
//!   `read.rs`) together; files already written must still read.
//! * The `HistoryReader` trait (zepto-storage's `table/history_reader.rs`): the implementation
//!   here and its callers in zepto-sql (`exec/history.rs`, `exec/partials.rs`).
//! * A column type: nothing here; zepto-io converts (`arrow::to_arrow`, `read_parquet_parts`).
//! * Anything here: run zepto-durable's `tests/tiering.rs` and zepto-cluster's `history/` tests.
#![warn(missing_docs)]

pub mod read;
pub mod shared;
pub mod sweep;
pub mod write;

pub use read::{read_file, ParquetHistory};
pub use shared::SharedStore;
pub use sweep::{sweep, Swept};
pub use write::{encode_rows, write_history, Encoded, Rows, Written};

use zepto_storage::StorageError;

pub(crate) fn io_err(what: &str, e: impl std::fmt::Display) -> StorageError {
    StorageError::History(format!("history file {what}: {e}"))
}
