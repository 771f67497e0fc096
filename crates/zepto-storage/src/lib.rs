//! ZeptoDB storage: the in-memory columnar engine every door reads and writes.
//!
//! * [`Column`] — a typed column in an Arrow-compatible layout (values vector, LSB-first
//!   validity bitmap, `i64` offsets + bytes for strings, `u32` codes for symbols).
//! * [`Dict`] — the per-table symbol dictionary (append-only, so a code never changes meaning).
//! * [`Table`] — rows split into [`Partition`]s by the partition key (first `SYMBOL` column by
//!   default) and kept sorted by the designated timestamp inside each partition, so "one symbol,
//!   a time range" is two binary searches.
//! * [`Catalog`] — named tables behind snapshot isolation: readers clone an `Arc<Table>` and never
//!   block a writer for longer than the pointer copy; writers validate a whole batch before they
//!   take the lock, so a bad batch changes nothing.
#![warn(missing_docs)]

pub mod bitmap;
pub mod catalog;
pub mod column;
pub mod dict;
pub mod error;
pub mod history;
pub mod index;
pub mod logged;
pub mod mem;
pub mod par;
pub mod rng;
pub mod strings;
pub mod table;
pub mod time;
pub mod types;
pub mod value;
pub mod vector;

pub use bitmap::Bitmap;
pub use catalog::{Catalog, Change, ChangeLog};
pub use column::{Column, ColumnBuilder, ColumnData, Span};
pub use dict::Dict;
pub use error::StorageError;
pub use history::{HistFile, History, HistoryChunk, HistoryPlan, HistoryRows, HistoryUnit};
pub use index::IndexDef;
pub use logged::Logged;
pub use strings::StrVec;
pub use table::{ColumnDef, HistoryReader, Partition, Schema, Shard, Table, TableOptions};
pub use types::DataType;
pub use value::Value;
