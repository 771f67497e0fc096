//! What a node knows of its place in the cluster, for `GET /cluster` and the metrics.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One partition this node owns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionState {
    /// The last offset applied (its rows are in this node's tables), if any.
    pub applied: Option<i64>,
    /// The partition's high watermark (the offset the next record will get) when last asked.
    pub high_watermark: Option<i64>,
}

impl PartitionState {
    /// Records the broker holds that this node has not applied yet.
    pub fn lag(&self) -> Option<i64> {
        let next = self.applied.map_or(0, |a| a + 1);
        self.high_watermark.map(|h| (h - next).max(0))
    }
}

/// A node's state: its settings, the partitions it owns, what it applied.
#[derive(Debug, Clone, Default)]
pub struct Status {
    /// The node's name.
    pub node_id: String,
    /// The consumer group.
    pub group: String,
    /// The topic.
    pub topic: String,
    /// The bootstrap brokers.
    pub brokers: String,
    /// The partitions Kafka assigned to this node, by number.
    pub partitions: BTreeMap<i32, PartitionState>,
    /// Records applied since start.
    pub records_applied: u64,
    /// Rows those records held.
    pub rows_applied: u64,
    /// Records refused as malformed since start (their offsets are recorded, their rows not).
    pub records_rejected: u64,
    /// Assignments and revocations since start.
    pub rebalances: u64,
    /// The last error (a refused record, or the client's), if any.
    pub last_error: Option<String>,
    /// The group's members and their partitions, as the coordinator last said.
    pub members: Vec<crate::members::Member>,
    /// The topic's partitions, as the brokers last said (0 before they answered).
    pub partition_count: usize,
}

impl Status {
    /// As JSON, for `GET /cluster`.
    pub fn to_json(&self) -> serde_json::Value {
        let partitions: Vec<serde_json::Value> = self
            .partitions
            .iter()
            .map(|(p, s)| {
                serde_json::json!({
                    "partition": p,
                    "applied_offset": s.applied,
                    "high_watermark": s.high_watermark,
                    "lag": s.lag(),
                })
            })
            .collect();
        let members: Vec<serde_json::Value> = self
            .members
            .iter()
            .map(|m| serde_json::json!({"node_id": m.client_id, "host": m.host, "partitions": m.partitions}))
            .collect();
        serde_json::json!({
            "node_id": self.node_id,
            "members": members,
            "partition_count": self.partition_count,
            "group": self.group,
            "topic": self.topic,
            "brokers": self.brokers,
            "partitions": partitions,
            "records_applied": self.records_applied,
            "rows_applied": self.rows_applied,
            "records_rejected": self.records_rejected,
            "rebalances": self.rebalances,
            "last_error": self.last_error,
        })
    }
}

/// The shared status a node's consumer updates and the server reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared(pub(crate) Arc<Mutex<Status>>);

impl Shared {
    /// Change the status under its lock.
    pub(crate) fn update<R>(&self, f: impl FnOnce(&mut Status) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A copy of the status now.
    pub(crate) fn get(&self) -> Status {
        self.update(|s| s.clone())
    }
}
