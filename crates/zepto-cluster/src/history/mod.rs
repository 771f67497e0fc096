//! Shared history: a Kafka partition's rows kept in storage every node reads, so that a node
//! taking the partition over loads them from there and replays only the log after them
//! (issue "Scale-out"), and Kafka need not keep every record forever.
//!
//! What a partition's owner keeps there, every `seal_every` (`seal`): for each table, the
//! partition's rows (its *shard*: the rows whose routing key Kafka's partitioner puts in that
//! partition) as Parquet files, and a [`Manifest`] naming them with the offset of the last
//! record they include. Rows older than the tiering cut (`--tier-after`) become *history*
//! files: they leave the owner's memory and are queried from shared storage, transparently, and
//! are written once. The others become *recent* files, rewritten at each seal, that a new owner
//! loads into memory.
//!
//! When Kafka assigns a partition (`take_over`), a node whose own tables are behind the
//! newest manifest drops its (stale) rows of the shard, names the manifest's history files as
//! its own history of the shard, loads the recent files, records the manifest's offset as
//! applied, and resumes the log after it. A node whose tables are at or past the manifest
//! keeps them (they include everything the manifest does). Both steps are logged changes
//! ([`zepto_storage::Change::TierShard`], [`zepto_storage::Change::AdoptShard`]), the offset
//! written last: a crash in between takes the partition over again on restart.

mod adopt;
mod manifest;
mod seal;

pub(crate) use adopt::take_over;
pub use manifest::{FileEntry, Manifest, TableEntry};
pub(crate) use seal::seal;

use crate::ClusterError;
use std::time::Duration;
use zepto_history::SharedStore;
use zepto_sql::eval::partitioner::kafka_partition;
use zepto_storage::Table;

/// A node's shared-history settings.
#[derive(Debug, Clone)]
pub struct SharedHistory {
    store: SharedStore,
    seal_every: Duration,
    tier_after_ns: Option<i64>,
}

impl SharedHistory {
    /// Keep partitions in `store`, sealing each owned one every `seal_every` (at least 1 s),
    /// rows older than `tier_after_ns` (whole UTC days) as history.
    pub fn new(
        store: SharedStore,
        seal_every: Duration,
        tier_after_ns: Option<i64>,
    ) -> Result<SharedHistory, ClusterError> {
        if seal_every < Duration::from_secs(1) {
            return Err(ClusterError::Config(format!("seal interval {seal_every:?}: at least 1 s")));
        }
        if tier_after_ns.is_some_and(|t| t <= 0) {
            return Err(ClusterError::Config("tier-after: a positive age".into()));
        }
        Ok(SharedHistory { store, seal_every, tier_after_ns })
    }

    /// The store.
    pub fn store(&self) -> &SharedStore {
        &self.store
    }

    /// How often an owned partition is sealed.
    pub fn seal_every(&self) -> Duration {
        self.seal_every
    }
}

/// The shard of Kafka partition `p` (of `count`) in `t`: the keys `t` knows that hash to `p`,
/// and whether the routing key of NULL-key rows (`""`) does.
pub(crate) fn shard_keys(t: &Table, p: i32, count: i32) -> (Vec<String>, bool) {
    let n = i64::from(count);
    let mine = |k: &str| kafka_partition(k.as_bytes(), n) == i64::from(p);
    let keys = match t.key_col() {
        Some(_) => t.dict().iter().filter(|k| mine(k)).map(str::to_string).collect(),
        None => Vec::new(),
    };
    (keys, mine(zepto_sql::plan::dist::routing_key(None)))
}

/// Every table the cluster spreads, by name.
pub(crate) fn cluster_tables(engine: &zepto_sql::Engine) -> Vec<String> {
    engine.catalog().table_names().into_iter().filter(|n| !crate::is_system(n)).collect()
}

/// A name fit for a path segment: a table name in lower case when it is plain (letters,
/// digits, `_`), else `x` and its bytes in hex (names are unique ignoring case).
pub(crate) fn segment(name: &str) -> String {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return name.to_ascii_lowercase();
    }
    let lower = name.to_lowercase();
    let mut s = String::from("x");
    for b in lower.bytes() {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Where partition `p` of `topic` keeps its files and manifests.
pub(crate) fn partition_dir(topic: &str, p: i32) -> String {
    format!("{topic}/p{p:04}")
}

/// A table whose history files are this node's own (tiered here, not shared) cannot be
/// sealed or taken over: its shard's older rows are in files no other node reads.
pub(crate) fn check_no_local_history(t: &Table) -> Result<(), ClusterError> {
    match t.history().files.iter().find(|f| f.shared_path().is_none()) {
        None => Ok(()),
        Some(f) => Err(ClusterError::Storage(format!(
            "table '{}' has history tiered on this node alone ({}): with shared history, tier cluster \
             tables only through it (--tier-after)",
            t.name(),
            f.path
        ))),
    }
}

#[cfg(test)]
mod tests;
