//! A partition's manifest in shared storage: which files hold its rows, up to which offset.
//!
//! Layout under the store, for partition `P` of topic `T`:
//!
//! ```text
//! T/pPPPP/manifest/<offset, 20 digits>-<node>.json      one per seal; the newest counts
//! T/pPPPP/<table>/date=YYYY-MM-DD/h-<offset>-<node>-<k>.parquet   history (written once)
//! T/pPPPP/<table>/recent/r-<offset>-<node>-<k>.parquet           recent rows (per seal)
//! ```
//!
//! A manifest is published after every file it names, so any manifest a reader sees is whole.
//! The newest [`KEEP`] manifests are kept (a node reading one while a newer is published still
//! finds its files); older ones go, with the recent files only they name.

use super::partition_dir;
use crate::ClusterError;
use serde::{Deserialize, Serialize};
use zepto_history::SharedStore;
use zepto_storage::history::SHARED;
use zepto_storage::HistFile;

/// Manifests kept per partition.
pub const KEEP: usize = 3;

/// The format this build writes and reads.
const FORMAT: u32 = 1;

/// One partition's rows in shared storage, as of one offset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The manifest format (this build writes and reads 1).
    pub format: u32,
    /// The Kafka topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The topic's partition count when sealed (which keys the shard holds depends on it).
    pub partitions: i32,
    /// The last record the files include.
    pub offset: i64,
    /// The node that sealed it.
    pub node: String,
    /// When, nanoseconds since the epoch.
    pub written_ns: i64,
    /// Every table the cluster spread then (a node taking over creates those it lacks).
    pub tables: Vec<TableEntry>,
}

/// One table's shard in a manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    /// The table.
    pub name: String,
    /// `CREATE TABLE IF NOT EXISTS` for it, key and timestamp spelled out.
    pub create: String,
    /// Its columns as `(name, SQL type)`, to add those a node's copy lacks.
    pub columns: Vec<(String, String)>,
    /// The shard's partition keys the table knew.
    pub keys: Vec<String>,
    /// Whether NULL-key rows are the shard's.
    pub null_key: bool,
    /// History files (queried from shared storage).
    pub history: Vec<FileEntry>,
    /// Recent files (loaded into memory by a node taking over).
    pub recent: Vec<FileEntry>,
}

/// One Parquet file in shared storage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Its path in the store.
    pub path: String,
    /// Rows in it.
    pub rows: u64,
    /// Its length.
    pub bytes: u64,
    /// Smallest designated timestamp.
    pub min_ts: i64,
    /// Largest designated timestamp.
    pub max_ts: i64,
}

impl FileEntry {
    /// The entry of a history file named `shared:<path>` (`None` for a local one).
    pub fn of(f: &HistFile) -> Option<FileEntry> {
        let path = f.shared_path()?.to_string();
        Some(FileEntry { path, rows: f.rows, bytes: f.bytes, min_ts: f.min_ts, max_ts: f.max_ts })
    }

    /// The file as a table's history names it (`shared:<path>`).
    pub fn hist_file(&self) -> HistFile {
        HistFile {
            path: format!("{SHARED}{}", self.path),
            rows: self.rows,
            bytes: self.bytes,
            min_ts: self.min_ts,
            max_ts: self.max_ts,
        }
    }
}

fn store_err(e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Storage(format!("shared history: {e}"))
}

fn manifests(store: &SharedStore, topic: &str, p: i32) -> Result<Vec<String>, ClusterError> {
    let dir = format!("{}/manifest", partition_dir(topic, p));
    let mut names = store.list(&dir).map_err(store_err)?;
    names.retain(|n| n.ends_with(".json"));
    Ok(names)
}

impl Manifest {
    /// The newest manifest of partition `p` of `topic`, if any was published.
    pub fn latest(store: &SharedStore, topic: &str, p: i32) -> Result<Option<Manifest>, ClusterError> {
        let Some(name) = manifests(store, topic, p)?.pop() else { return Ok(None) };
        Self::read(store, &name).map(Some)
    }

    fn read(store: &SharedStore, name: &str) -> Result<Manifest, ClusterError> {
        let bytes = store.get(name).map_err(store_err)?.ok_or_else(|| store_err(format!("{name} vanished")))?;
        let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| store_err(format!("{name}: {e}")))?;
        if m.format != FORMAT {
            return Err(store_err(format!("{name}: format {} (this build reads {FORMAT})", m.format)));
        }
        Ok(m)
    }

    /// A manifest of this build's format.
    pub fn new(topic: &str, partition: i32, partitions: i32, offset: i64, node: &str, written_ns: i64) -> Manifest {
        Manifest {
            format: FORMAT,
            topic: topic.to_string(),
            partition,
            partitions,
            offset,
            node: node.to_string(),
            written_ns,
            tables: Vec::new(),
        }
    }

    /// Publish this manifest (every file it names is already there), then drop the manifests
    /// older than the newest `KEEP` (3) and the recent files only they named.
    pub fn publish(&self, store: &SharedStore) -> Result<(), ClusterError> {
        let dir = partition_dir(&self.topic, self.partition);
        let name = format!("{dir}/manifest/{:020}-{}.json", self.offset, tag(&self.node));
        let json = serde_json::to_vec_pretty(self).map_err(store_err)?;
        store.put(&name, json).map_err(store_err)?;
        let all = manifests(store, &self.topic, self.partition)?;
        if all.len() <= KEEP {
            return Ok(());
        }
        let (old, kept) = all.split_at(all.len() - KEEP);
        let mut live = std::collections::HashSet::new();
        for k in kept {
            for t in Self::read(store, k)?.tables {
                live.extend(t.recent.into_iter().map(|f| f.path));
            }
        }
        for o in old {
            if let Ok(m) = Self::read(store, o) {
                for f in m.tables.into_iter().flat_map(|t| t.recent) {
                    if !live.contains(&f.path) {
                        store.delete(&f.path).map_err(store_err)?;
                    }
                }
            }
            store.delete(o).map_err(store_err)?;
        }
        Ok(())
    }
}

/// A node id fit for a file name (letters, digits, `.`, `_`, `-`; anything else as `_`).
pub(crate) fn tag(node: &str) -> String {
    node.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
}
