//! The historical store (issue #5): a table's older rows as Parquet files that DuckDB, Polars
//! and Spark read directly, laid out Hive style under the data directory:
//!
//! ```text
//! DIR/history/<table>/date=YYYY-MM-DD/part-<seq>.parquet
//! ```
//!
//! * [`mod@write`] — tiering: the rows of a table snapshot before a cut, one file per UTC day,
//!   sorted by (partition key, timestamp) so row-group statistics prune on both.
//! * [`read`] — [`ParquetHistory`], the catalog's [`zepto_storage::HistoryReader`]: cached
//!   footers, file pruning by time, row-group pruning by time and key, projection.
//! * [`shared`] — [`SharedStore`], the cluster's shared storage (`object_store`), where the
//!   owner of a Kafka partition keeps its history; paths starting `shared:` are read there.
//! * [`mod@sweep`] — startup check: every file the recovered tables name is there with its
//!   length; files no table names (a tiering cut short by a crash) are deleted.
//!
//! Which files belong to a table is table state (`zepto_storage::History`), changed only by
//! logged changes; this crate only writes, reads and deletes the files.
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
