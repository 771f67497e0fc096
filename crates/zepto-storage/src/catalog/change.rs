//! What the catalog logs: each [`Change`] as the write-ahead log records it, and the
//! [`ChangeLog`] trait every change goes through before it is applied (the WAL when the
//! database is durable).

use super::Catalog;
use crate::column::Column;
use crate::error::StorageError;
use crate::history::HistFile;
use crate::index::IndexDef;
use crate::table::{ColumnDef, Schema, Shard};

/// One change to the catalog, as the write-ahead log records it.
#[derive(Debug)]
pub enum Change<'a> {
    /// An empty table with its layout (the columns chosen as partition key and timestamp).
    CreateTable {
        /// The new table's name.
        name: &'a str,
        /// Its columns, in order.
        schema: &'a Schema,
        /// The column partitioning its rows, if any.
        partition_key: Option<&'a str>,
        /// The designated timestamp column, if any (rows are kept sorted by it).
        timestamp: Option<&'a str>,
    },
    /// A table dropped with its rows and history.
    DropTable {
        /// The table dropped.
        name: &'a str,
    },
    /// A column added at the end of a table's schema (NULL in existing rows).
    AddColumn {
        /// The table altered.
        table: &'a str,
        /// The new column.
        def: &'a ColumnDef,
    },
    /// A validated batch, in schema order.
    Append {
        /// The table appended to.
        table: &'a str,
        /// One column per schema column, all of one length.
        columns: &'a [Column],
    },
    /// Rows removed: per partition slot, its row positions (ascending).
    Delete {
        /// The table deleted from.
        table: &'a str,
        /// Per partition slot, the row positions removed (ascending).
        rows: &'a [(u32, Vec<u32>)],
    },
    /// Values replaced in place: `values[k]` holds column `columns[k]`'s new values for the
    /// selected rows, in selection order (never the partition key or designated timestamp,
    /// whose changes move rows: those are a `Delete` and an `Append`).
    Update {
        /// The table updated.
        table: &'a str,
        /// Per partition slot, the row positions updated (ascending).
        rows: &'a [(u32, Vec<u32>)],
        /// Schema positions of the updated columns.
        columns: &'a [usize],
        /// New values, one column per entry of `columns`, one value per selected row.
        values: &'a [Column],
    },
    /// Rows before `before` moved to the history `files` (already durable when this is logged).
    Tier {
        /// The table tiered.
        table: &'a str,
        /// Cut-off, nanoseconds since the epoch: rows with an earlier timestamp moved.
        before: i64,
        /// The history files that now hold them.
        files: &'a [HistFile],
    },
    /// One shard's rows before `before` moved to history `files` in shared storage (already
    /// durable there when this is logged): see [`crate::Table::tier_shard`].
    TierShard {
        /// The table tiered.
        table: &'a str,
        /// The shard's keys.
        shard: Shard<'a>,
        /// Cut-off, nanoseconds since the epoch.
        before: i64,
        /// The history files that now hold the rows.
        files: &'a [HistFile],
    },
    /// A shard taken over from a snapshot in shared storage: see [`crate::Table::adopt_shard`].
    AdoptShard {
        /// The table.
        table: &'a str,
        /// The shard's keys.
        shard: Shard<'a>,
        /// History files with this path prefix (the shard's earlier ones) are forgotten.
        prefix: &'a str,
        /// The snapshot's history files of the shard.
        files: &'a [HistFile],
    },
    /// Retention: rows before `before` dropped, and the history files wholly before it.
    Retain {
        /// The table whose retention ran.
        table: &'a str,
        /// Cut-off, nanoseconds since the epoch: rows and files wholly before it dropped.
        before: i64,
    },
    /// A secondary index recorded (`CREATE INDEX`); its structure is built from the rows.
    CreateIndex {
        /// The table indexed.
        table: &'a str,
        /// The index.
        def: &'a IndexDef,
    },
    /// A secondary index forgotten (`DROP INDEX`).
    DropIndex {
        /// The table that held it.
        table: &'a str,
        /// The index's name.
        name: &'a str,
    },
    /// A table's retention (TTL) set or cleared.
    SetTtl {
        /// The table.
        table: &'a str,
        /// How long rows are kept, in nanoseconds; `None` keeps them forever.
        ttl_ns: Option<i64>,
    },
    /// A table's `DEDUP UPSERT KEYS` set (or, empty, cleared): see
    /// [`Table::set_dedup`](crate::table::Table::set_dedup).
    SetDedup {
        /// The table.
        table: &'a str,
        /// The key columns' names; empty turns deduplication off.
        keys: &'a [String],
    },
    /// A materialized view created (its rows are derived: only the definition is logged).
    CreateView {
        /// The view.
        def: &'a crate::view::ViewDef,
    },
    /// A materialized view dropped.
    DropView {
        /// The view's name.
        name: &'a str,
    },
}

impl<'a> Change<'a> {
    /// The changes that make `table` (empty) as it is laid out: its creation, then its
    /// deduplication keys (`dedup`, from [`dedup_names`]) when it has any.
    pub fn creation(table: &'a crate::table::Table, dedup: &'a [String]) -> Vec<Change<'a>> {
        let col_name = |i: Option<usize>| i.map(|i| table.schema().columns[i].name.as_str());
        let mut changes = vec![Change::CreateTable {
            name: table.name(),
            schema: table.schema(),
            partition_key: col_name(table.key_col()),
            timestamp: col_name(table.ts_col()),
        }];
        if !dedup.is_empty() {
            changes.push(Change::SetDedup { table: table.name(), keys: dedup });
        }
        changes
    }
}

/// The names of `table`'s deduplication keys (none: it keeps every row).
pub fn dedup_names(table: &crate::table::Table) -> Vec<String> {
    table.dedup_keys().iter().map(|&i| table.schema().columns[i].name.clone()).collect()
}

/// Where changes go before they are applied. `log` returns only once the changes are as
/// durable as the log promises; an error means they must not be applied.
pub trait ChangeLog: Send + Sync {
    /// Make `changes` durable (as one unit, in order) before the caller applies them, as the
    /// record it returns the log sequence number of (one more than the last one's). On error
    /// nothing may be applied.
    fn log(&self, changes: &[Change<'_>]) -> Result<u64, StorageError>;

    /// `table`'s change-feed events in the records after LSN `after` through `upto` (logged
    /// already), read back from the log a page of about `max_bytes` at a time: what a
    /// subscriber resuming from a position the feed no longer holds reads
    /// (`feed::cursor`).
    fn read_since(
        &self,
        _catalog: &Catalog,
        _table: &str,
        _after: u64,
        _upto: u64,
        _max_bytes: usize,
    ) -> Result<crate::feed::cursor::LogRead, StorageError> {
        Err(StorageError::Durability("this change log cannot be read back".into()))
    }

    /// The first LSN the log still holds (`None`: it holds none), for [`ChangeLog::read_since`].
    fn oldest_held(&self) -> Result<Option<u64>, StorageError> {
        Err(StorageError::Durability("this change log cannot be read back".into()))
    }

    /// Write a checkpoint of `catalog` (the `CHECKPOINT` statement); a one-line summary.
    fn checkpoint(&self, catalog: &Catalog) -> Result<String, StorageError>;

    /// Move `table`'s rows before `before` to its Parquet history (the `ALTER TABLE ...
    /// CONVERT PARTITION TO PARQUET` statement); a one-line summary.
    fn tier(&self, catalog: &Catalog, table: &str, before: i64) -> Result<String, StorageError>;

    /// Apply `table`'s retention as of `now` (nanoseconds since the epoch); a summary.
    fn retain(&self, catalog: &Catalog, table: &str, now: i64) -> Result<String, StorageError>;

    /// Back `catalog` up into `dest` (a directory, or an object store's `s3://` location)
    /// while writes go on (the `BACKUP TO` statement); a one-line summary.
    fn backup(&self, _catalog: &Catalog, _dest: &str) -> Result<String, StorageError> {
        Err(StorageError::Durability("this change log cannot take backups".into()))
    }
}
