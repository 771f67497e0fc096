//! Distributed queries: one query answered by every node of a cluster, each over the rows of
//! the Kafka partitions it owns ([`scope`]).
//!
//! The node asked plans the query as usual, then (`distribute`, before the physical choices)
//! replaces every scan of a table the cluster spreads with an **Exchange**: the scan and its
//! filters as a [`fragment::Fragment`], run over this node's partitions here and
//! sent to every other owner with the partitions it answers for; their rows come back and
//! are concatenated. A GROUP BY whose aggregates all merge over such a scan is split with the
//! one accumulator's partial states: every owner aggregates its rows into states
//! (`PartialAggregate`), and this node merges them per group (`MergeAggregate`). Everything
//! above (joins, window functions, ORDER BY, LIMIT) runs here over the gathered rows. EXPLAIN
//! prints the exchanges with the partitions each node answers for.
//!
//! Who owns what, and how a fragment reaches another node, is the [`crate::cluster::Cluster`]
//! the door handed the engine.

pub(crate) mod distribute;
pub mod fragment;
pub mod scope;

pub use scope::{routing_key, routing_keys, Scope};
