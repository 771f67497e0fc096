//! A table's history: the Parquet files its older rows were moved to (the historical tier).
//!
//! The file list is table state like the rows are: it changes only through logged changes
//! ([`crate::Change::Tier`] adds files and removes their rows from memory in one step,
//! [`crate::Change::Retain`] drops old files and rows), is written in checkpoints and replayed
//! from the log. Reading the files is not this crate's business: the database installs a
//! [`crate::HistoryReader`] on the catalog, and queries ask it for the rows a scan needs.

use crate::column::Column;
use std::ops::Range;

/// One Parquet file of a table's history: rows of one UTC day, sorted by (partition key as a
/// string, NULL first; designated timestamp).
#[derive(Debug, Clone, PartialEq)]
pub struct HistFile {
    /// Path under the history root, Hive style: `<table>/date=YYYY-MM-DD/part-<seq>-<tag>.parquet`;
    /// or, for a file in the cluster's shared storage, [`SHARED`] and its path there.
    pub path: String,
    /// Rows in the file.
    pub rows: u64,
    /// File length, checked at startup.
    pub bytes: u64,
    /// Smallest designated timestamp in the file, nanoseconds since the epoch.
    pub min_ts: i64,
    /// Largest designated timestamp in the file, nanoseconds since the epoch.
    pub max_ts: i64,
}

/// The path prefix of a history file in the cluster's shared storage (written by the node
/// that owned its Kafka partition then): `shared:<path in the shared store>`. Any other path is
/// under the node's own `history/` directory.
pub const SHARED: &str = "shared:";

impl HistFile {
    /// The file's path in the shared store, if it lives there (see [`SHARED`]).
    pub fn shared_path(&self) -> Option<&str> {
        self.path.strip_prefix(SHARED)
    }
}

/// The history part of a table's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// In the order they were added.
    pub files: Vec<HistFile>,
    /// Sequence number for the next file name (names are never reused by one table).
    pub next_seq: u64,
    /// Retention: rows older than this (whole UTC days) are dropped; `None` keeps everything.
    pub ttl_ns: Option<i64>,
}

impl History {
    /// Rows in all history files (not counting rows still in memory).
    pub fn rows(&self) -> u64 {
        self.files.iter().map(|f| f.rows).sum()
    }

    /// Files with rows in `[lo, hi]`.
    pub fn overlapping(&self, lo: i64, hi: i64) -> impl Iterator<Item = &HistFile> + '_ {
        self.files.iter().filter(move |f| f.max_ts >= lo && f.min_ts <= hi)
    }
}

/// Rows of a table's history that one scan needs: one chunk per row group read.
#[derive(Debug, Default)]
pub struct HistoryRows {
    /// One chunk per row group read, in the order the units were given.
    pub chunks: Vec<HistoryChunk>,
}

/// The decoded rows of one row group of a history file (one that survived pruning), in file order:
/// sorted by partition key, then time.
#[derive(Debug)]
pub struct HistoryChunk {
    /// The requested columns, in request order; SYMBOL columns are coded against a dictionary
    /// of the file's own.
    pub columns: Vec<Column>,
    /// The runs of one partition key each (the key string; `None` for NULL keys, or every row
    /// of an unkeyed table), in row order, covering every row.
    pub runs: Vec<(Option<String>, Range<usize>)>,
}

impl HistoryChunk {
    /// Number of rows in the chunk.
    pub fn len(&self) -> usize {
        self.columns.first().map_or(0, |c| c.len())
    }

    /// True when the chunk has no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a scan of a table's history reads, after pruning (for `EXPLAIN`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryPlan {
    /// Files with at least one row group left after pruning.
    pub files: usize,
    /// Files the table's history holds.
    pub files_total: usize,
    /// Row groups left to read after pruning.
    pub row_groups: usize,
    /// Row groups in all the table's history files.
    pub row_groups_total: usize,
}

/// One unit of history reading: a row group of one of the table's files that survived
/// pruning. Units decode independently (in parallel), each into one [`HistoryChunk`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryUnit {
    /// Index into the table's [`History::files`].
    pub file: usize,
    /// Row group index within the file.
    pub row_group: usize,
    /// Rows in that row group.
    pub rows: usize,
}

pub use crate::time::NS_PER_DAY;

/// The start of the UTC day holding `ts`.
pub fn day_floor(ts: i64) -> i64 {
    // The day of '-infinity' starts before i64::MIN: it saturates there.
    ts.div_euclid(NS_PER_DAY).saturating_mul(NS_PER_DAY)
}
