//! ZeptoDB storage: the in-memory columnar engine every door reads and writes.
//!
//! # What it owns
//!
//! * [`Column`] — a typed column in Arrow's layout (values vector, validity [`Bitmap`], offsets
//!   and bytes for strings, `u32` codes for symbols); [`DataType`] the types, [`Value`] a scalar.
//! * [`Table`] — a [`Schema`], a symbol [`Dict`], and rows split into [`Partition`]s by the
//!   partition key (first `SYMBOL` column by default), time-sorted inside each; small partitions
//!   packed (`table/pack.rs`); ingest batches spread thin over many partitions deferred and
//!   split among them in larger runs (`table/defer.rs`); its [`History`] (Parquet file names
//!   only) and [`IndexDef`]s.
//! * [`Catalog`] — tables by name, snapshot reads, and the one place tables change: each change
//!   is a [`Change`] handed to the [`ChangeLog`] before it is applied, and published to the
//!   catalog's [`feed`] (numbered; appended batches kept only while someone subscribes) after;
//!   the materialized views of a changed table are kept with it ([`view`]: prepared when the
//!   change is logged, committed once applied).
//! * Shared helpers: [`time`] (nanosecond calendar), [`vector`] (distance kernels), [`par`] (one
//!   thread per core), [`mem`] (per-thread memory accounting), [`affinity`] (which cores each
//!   role's threads run on).
//!
//! It imports no other ZeptoDB crate: the WAL and the Parquet history plug in through
//! [`ChangeLog`] (zepto-durable's `Durable`) and [`HistoryReader`] (zepto-history).
//!
//! # Entry points
//!
//! Readers: [`Catalog::snapshot`], an `Arc<Table>` that never changes. Writers: typed methods
//! ([`Catalog::create`], [`Catalog::append`], [`Catalog::add_column`], ...), or
//! [`Catalog::modify`] / [`Catalog::write_many`] (DELETE, UPDATE) or
//! [`Catalog::write_many_deferred`] (ILP batches), whose closure checks, calls
//! [`Catalog::log`], then applies under [`Logged::apply`]. Recovery calls
//! [`Catalog::restore`], replays through the same methods, then [`Catalog::set_log`].
//!
//! # Invariants
//!
//! * Under the table's write lock a change is checked, logged, then applied: log order is apply
//!   order, and a refused change alters nothing. Once durably logged it is applied or the
//!   process stops ([`logged`]), which is why lock poisoning is ignored.
//! * Readers never see half a change: writers go through `Arc::make_mut` (copy-on-write while a
//!   snapshot lives). A symbol code never changes meaning (dictionaries are append-only).
//! * Nobody reads a table's deferred rows (`table/defer.rs`): snapshots, consistent cuts and
//!   every change other than a deferring append fold them into the partitions first.
//! * Partitions are time-sorted (NULLs first) by construction; [`Table::from_parts`] re-checks
//!   all of it when a checkpoint loads.
//!
//! # When you change …
//!
//! * A WAL record kind (an operation, or table state such as TTL or dedup keys): a [`Change`]
//!   variant and the [`Catalog`] method that logs it; its kind number in zepto-durable's
//!   `changes.rs` (`encode`, `apply`), table state also in its `checkpoint/table_file.rs`; a seed
//!   in `zepto-fuzz/src/seeds.rs` (`changes`); the restart test in zepto-durable's `store.rs`.
//! * A column type: [`DataType`] (the WAL spells it by `sql_name`, so `from_sql` must read it
//!   back), [`ColumnData`], [`Value`]; then zepto-io, the checkpoint's `arrow_type`, zepto-sql's
//!   `eval/cast.rs`, zepto-pg's `types.rs` (`grep -rn 'DataType::Date' crates` finds them all).
//! * A [`StorageError`] variant: its mapping in zepto-parser's and zepto-server's `error.rs`.
#![warn(missing_docs)]

pub mod affinity;
pub mod bitmap;
pub mod buf;
pub mod catalog;
pub mod column;
pub mod dict;
pub mod error;
pub mod feed;
pub mod history;
pub mod hugetlb;
pub mod index;
pub mod logged;
pub mod mem;
pub mod narrow;
pub mod par;
pub mod prefetch;
pub mod rng;
pub mod series_memo;
mod short_memo;
pub mod strings;
pub mod summary;
pub mod table;
pub mod time;
pub mod types;
pub mod value;
pub mod vector;
pub mod view;

pub use bitmap::Bitmap;
pub use catalog::{dedup_names, Catalog, Change, ChangeLog, Layout, Redefined, Stamp, StampedTable};
pub use column::{Column, ColumnBuilder, ColumnData, Span, ValidRun};
pub use dict::Dict;
pub use error::StorageError;
pub use history::{HistFile, History, HistoryChunk, HistoryPlan, HistoryRows, HistoryUnit};
pub use index::IndexDef;
pub use logged::Logged;
pub use strings::StrVec;
pub use table::{ColumnDef, ColumnSplit, HistoryReader, KeyGroups, Partition, Schema, Shard, Table, TableOptions};
pub use types::DataType;
pub use value::Value;
pub use view::{Delta, Upkeep, ViewCompiler, ViewCut, ViewDef, ViewStats};
