//! ZeptoDB past one machine, on Kafka (issue "Scale-out"; design in ARCHITECTURE.md, use in
//! `docs/cluster.md`).
//!
//! What: a cluster node is an ordinary `zeptodb serve` that is also a member of one Kafka
//! consumer group. Kafka's group protocol (cooperative-sticky) assigns the topic's partitions
//! to the members; a node applies the records of the partitions it owns to its own tables,
//! each record exactly once. Why Kafka: it is the replicated, partitioned log that orders,
//! stores and hands out the data, and it decides who owns what. ZeptoDB adds no consensus,
//! replication or membership protocol of its own.
//!
//! # What it owns
//!
//! `consumer/` (applying records), `produce.rs` (`/write` and SQL rows into Kafka), [`record`]
//! (a record's bytes as a `/write` request: line protocol by default, or the headers
//! `zepto-format`, `zepto-table`, `zepto-precision`), [`offsets`], [`rejected`] (records a node
//! refused, kept whole), `schemas.rs` (tables line
//! protocol made, told to every node), `peers.rs` (the engine's `Cluster`), `flight.rs` (plan
//! fragments between nodes), [`history`] (shared history), [`members`], `watch.rs` (lag).
//!
//! # Entry points
//!
//! [`Config::new`] (brokers, topic, group, node id; [`Config::with_flight`],
//! [`Config::with_shared_history`]), then [`Node::start`] with the server's engine;
//! [`Node::serve_flight`], [`Node::cluster`] (handed to the engine) and [`Node::view`] (handed
//! to the HTTP door). `zepto-cli/src/serve/cluster.rs` and `serve.rs` wire them.
//!
//! # Invariants
//!
//! - A record's rows and its offset (a row of [`offsets::TABLE`]) are one WAL record. A node
//!   resumes a partition after the last offset its own tables hold (or a newer manifest's, in
//!   shared history), never where the group last committed.
//! - A row's owner follows from its routing key (Kafka's murmur2 partitioner): a record keyed
//!   into another partition is refused, and rows kept from a revoked partition stay out of answers.
//! - A refused record is never dropped: Kafka acknowledged it to its producer, so it is kept
//!   whole (a row of [`rejected::TABLE`]) in the change that records its offset.
//! - Tables named `zepto_*` are each node's own (the offsets), never spread.
//! - The log carries rows and two statements only: `CREATE TABLE IF NOT EXISTS` and
//!   `ALTER TABLE ... ADD COLUMN IF NOT EXISTS`, which every node may run again harmlessly.
//! - No WAL record kind of its own: offsets are rows, and shared history logs
//!   `zepto_storage`'s `Change::TierShard` and `Change::AdoptShard`.
//!
//! # When you change …
//!
//! - **A record header or format**: `request` in [`record`], and what `produce.rs` writes. A new
//!   `/write` format reaches records through `IngestFormat::from_name` (`zepto-server`); CSV,
//!   JSONL and Arrow are produced as Arrow IPC. Then `docs/cluster.md` (`## Records`).
//! - **An ILP field type** (`zepto-server`): lines reach Kafka as their bytes and the owner
//!   parses them again with the same code (the nodes of a cluster run one build).
//! - **A statement that goes through the log**: `zepto-sql`'s `spread.rs` (`through_log`,
//!   `refused`) and `cluster::Publish`; here `publish` in `peers.rs`, `produce.rs`, and
//!   `run_statement` in `consumer/mod.rs` (which refuses anything else); and `zepto-sql`'s
//!   `local_cluster.rs`, on which `zepto-slt --cluster` runs the SQL corpus.
//! - **A plan fragment kind**: `zepto-sql`'s `plan/dist/fragment.rs` only; `flight.rs` just
//!   carries the bytes to `Engine::run_fragment`.
//! - **The node's status**: `zepto_server::cluster::Status`, filled here, shown by
//!   `zepto-server/src/cluster/json.rs` (`GET /cluster`) and `metrics.rs`; `docs/cluster.md`.

mod consumer;
mod flight;
pub mod history;
pub mod members;
mod node;
pub mod offsets;
mod peers;
mod produce;
pub mod record;
pub mod rejected;
mod schemas;
mod status;
mod watch;

pub use node::Node;
pub use produce::RECORD_BYTES;
pub use zepto_server::cluster::{PartitionState, Status};

use thiserror::Error;

/// Why a node could not start or run.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// A setting out of its range.
    #[error("cluster: {0}")]
    Config(String),
    /// What the Kafka client said.
    #[error("kafka: {0}")]
    Kafka(String),
    /// Reading the node's own tables failed.
    #[error("cluster: {0}")]
    Storage(String),
}

/// Where a node finds its cluster: the brokers, the topic carrying the rows, the consumer
/// group whose members the nodes are, and this node's name in it.
#[derive(Debug, Clone)]
pub struct Config {
    brokers: String,
    topic: String,
    group: String,
    node_id: String,
    flight: Option<String>,
    history: Option<history::SharedHistory>,
}

/// Tables every node keeps for itself (the offsets it applied, ...), never spread.
pub(crate) fn is_system(table: &str) -> bool {
    table.len() >= 6 && table[..6].eq_ignore_ascii_case("zepto_")
}

/// Separates a node's id from its Flight address in its Kafka client id.
const FLIGHT_SEP: char = '|';

/// A member's node id and Flight address from its Kafka client id (`ID|HOST:PORT`, or just
/// `ID` for a node without a Flight door).
pub(crate) fn node_of(client_id: &str) -> (&str, Option<&str>) {
    match client_id.split_once(FLIGHT_SEP) {
        Some((id, flight)) if !flight.is_empty() => (id, Some(flight)),
        _ => (client_id.trim_end_matches(FLIGHT_SEP), None),
    }
}

impl Config {
    /// A Kafka client's settings for this node: the brokers, and the node's id as client id.
    fn client(&self) -> rdkafka::ClientConfig {
        let mut c = rdkafka::ClientConfig::new();
        // The group coordinator tells every member the others' client ids: how nodes find
        // each other's Flight doors.
        let id = match &self.flight {
            Some(f) => format!("{}{FLIGHT_SEP}{f}", self.node_id),
            None => self.node_id.clone(),
        };
        c.set("bootstrap.servers", &self.brokers).set("client.id", id);
        c
    }

    /// Checked settings: `brokers` a comma-separated `host:port` list, `topic` and `group`
    /// Kafka names (letters, digits, `.`, `_`, `-`; at most 249), `node_id` any non-empty name.
    pub fn new(brokers: &str, topic: &str, group: &str, node_id: &str) -> Result<Config, ClusterError> {
        if brokers.split(',').any(|b| !b.trim().contains(':')) {
            return Err(ClusterError::Config(format!("brokers '{brokers}': expected host:port[,host:port...]")));
        }
        for (what, name) in [("topic", topic), ("group", group)] {
            let legal = name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            if name.is_empty() || name.len() > 249 || !legal || name == "." || name == ".." {
                return Err(ClusterError::Config(format!(
                    "{what} '{name}': use 1 to 249 letters, digits, '.', '_' or '-'"
                )));
            }
        }
        if node_id.trim().is_empty() || node_id.contains(FLIGHT_SEP) {
            return Err(ClusterError::Config(format!("node id '{node_id}': non-empty, without '{FLIGHT_SEP}'")));
        }
        Ok(Config {
            brokers: brokers.to_string(),
            topic: topic.to_string(),
            group: group.to_string(),
            node_id: node_id.to_string(),
            flight: None,
            history: None,
        })
    }

    /// These settings, the node answering queries of the others on the Arrow Flight door at
    /// `addr` (host:port, as the others reach it).
    pub fn with_flight(mut self, addr: &str) -> Config {
        self.flight = Some(addr.to_string());
        self
    }

    /// These settings, the node keeping its partitions' rows in shared storage
    /// ([`history`]).
    pub fn with_shared_history(mut self, history: history::SharedHistory) -> Config {
        self.history = Some(history);
        self
    }

    /// The shared-history settings, if the node keeps shared history.
    pub fn shared_history(&self) -> Option<&history::SharedHistory> {
        self.history.as_ref()
    }

    /// The address of this node's Flight door, if it has one.
    pub fn flight(&self) -> Option<&str> {
        self.flight.as_deref()
    }

    /// The bootstrap brokers.
    pub fn brokers(&self) -> &str {
        &self.brokers
    }

    /// The topic carrying the rows.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// The consumer group whose members the nodes are.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// This node's name (its Kafka client id and group instance id).
    pub fn node_id(&self) -> &str {
        &self.node_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_range_are_refused() {
        assert!(Config::new("127.0.0.1:9092", "zepto", "zepto", "n1").is_ok());
        assert!(Config::new("a:1,b:2", "t.1_x-y", "g", "n").is_ok());
        for (b, t, g, n) in [
            ("localhost", "t", "g", "n"),
            ("a:1,", "t", "g", "n"),
            ("a:1", "", "g", "n"),
            ("a:1", "t'; DROP", "g", "n"),
            ("a:1", "..", "g", "n"),
            ("a:1", "t", "g/h", "n"),
            ("a:1", "t", "g", " "),
            ("a:1", "t", "g", "a|b"),
        ] {
            assert!(Config::new(b, t, g, n).is_err(), "{b} {t} {g} {n}");
        }
        assert!(Config::new("a:1", &"x".repeat(250), "g", "n").is_err());
    }

    #[test]
    fn client_ids_carry_the_flight_address() {
        assert_eq!(node_of("n1|127.0.0.1:9000"), ("n1", Some("127.0.0.1:9000")));
        assert_eq!(node_of("n1"), ("n1", None));
        assert_eq!(node_of("n1|"), ("n1", None));
    }
}
