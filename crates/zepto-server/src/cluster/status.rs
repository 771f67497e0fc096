//! What a cluster node knows of its place in the cluster, typed: the cluster crate fills it in,
//! the HTTP door shows it (`GET /cluster`, `/metrics`).

use std::collections::BTreeMap;

/// One member of the cluster's consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The node's id.
    pub node_id: String,
    /// The address of its Arrow Flight door (queries between nodes), if it has one.
    pub flight: Option<String>,
    /// The host it connects from.
    pub host: String,
    /// The partitions of the cluster's topic assigned to it, ascending.
    pub partitions: Vec<i32>,
}

/// One partition this node owns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartitionState {
    /// The last offset applied (its rows are in this node's tables), if any.
    pub applied: Option<i64>,
    /// The partition's high watermark (the offset the next record will get) when last asked.
    pub high_watermark: Option<i64>,
    /// Where the partition's log ended when this node first asked after being assigned it
    /// (0 for a partition with nothing to replay). Until the node has applied up to there,
    /// its rows of the partition are not whole, and it answers no query for it.
    pub replay_to: Option<i64>,
    /// With shared history: the offset of the newest manifest of the partition this node
    /// sealed or took over (its rows up to there are in shared storage).
    pub sealed: Option<i64>,
}

impl PartitionState {
    /// The node has replayed the partition up to where its log ended when it got it: its
    /// answers for the partition hold every row acknowledged before then.
    pub fn ready(&self) -> bool {
        self.replay_to.is_some_and(|t| self.applied.map_or(0, |a| a + 1) >= t)
    }

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
    pub members: Vec<Member>,
    /// The topic's partitions, as the brokers last said (0 before they answered).
    pub partition_count: usize,
    /// Where the node keeps shared history, if it does.
    pub shared_history: Option<String>,
}

impl Status {
    /// The partitions this node answers queries for: those it owns and has replayed
    /// ([`PartitionState::ready`]), ascending.
    pub fn ready_partitions(&self) -> Vec<i32> {
        self.partitions.iter().filter(|(_, p)| p.ready()).map(|(&n, _)| n).collect()
    }

    /// Where Kafka's default partitioner puts `key`'s records, and whether this node owns that
    /// partition now; `None` while the topic's partition count is unknown.
    pub fn locate(&self, key: &str) -> Option<Placement> {
        let count = i32::try_from(self.partition_count).ok().filter(|&n| n > 0)?;
        let partition = zepto_sql::eval::partitioner::kafka_partition(key.as_bytes(), i64::from(count));
        let here = i32::try_from(partition).is_ok_and(|p| self.partitions.contains_key(&p));
        Some(Placement { partition, here })
    }
}

/// Where a key's rows live (see [`Status::locate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// The Kafka partition.
    pub partition: i64,
    /// This node owns it.
    pub here: bool,
}
