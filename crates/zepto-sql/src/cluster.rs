//! What the engine knows of a cluster it is a member of: who owns which Kafka partition
//! ([`Layout`]), and a way to run a plan fragment on another node ([`Cluster::fetch`]).
//!
//! The engine knows nothing of Kafka or of the network: the door that starts a cluster node
//! hands the engine a [`Cluster`] (`zepto-cluster`: the consumer group's assignment, Arrow
//! Flight between nodes; [`crate::local_cluster`]: engines in one process). How a query is
//! spread over the members is the planner's ([`crate::plan::dist`]).

use crate::error::Result;
use std::collections::BTreeSet;
use std::sync::Arc;
use zepto_storage::Column;

/// A cluster as the engine sees it.
pub trait Cluster: Send + Sync {
    /// Which node owns which partition now; an error while that is not known.
    fn layout(&self) -> Result<Layout>;

    /// Whether the rows of `table` are spread over the cluster's nodes (tables its log
    /// feeds), rather than each node's own (system tables).
    fn distributes(&self, table: &str) -> bool;

    /// Run an encoded [`crate::plan::dist::fragment::Request`] on `node`: its result's columns and row count.
    fn fetch(&self, node: &str, request: &[u8]) -> std::result::Result<(Vec<Column>, usize), String>;

    /// Send `change` through the cluster's log to the nodes that store it; returns once the
    /// log holds all of it (an error: not all of it, see [`Publish`]).
    fn publish(&self, change: Publish<'_>) -> std::result::Result<(), String>;
}

/// A change to a table the cluster spreads, as the log carries it (a member engine sends
/// CREATE TABLE, INSERT and COPY FROM on such tables through it).
#[derive(Debug, Clone, Copy)]
pub enum Publish<'a> {
    /// A `CREATE TABLE IF NOT EXISTS` statement (canonical SQL) every node runs.
    CreateTable(&'a str),
    /// Rows of `table` (columns named `names`), each row's routing key in `keys`
    /// ([`crate::plan::dist::routing_key`]): every row reaches the node owning its key's
    /// partition. Rows of one key are stored all or none; a failure may leave other keys' rows
    /// in the log (the error says how many records were not taken).
    Rows {
        /// The table.
        table: &'a str,
        /// Its columns' names, in order.
        names: &'a [String],
        /// The rows, one column per name.
        columns: &'a [Column],
        /// Each row's routing key.
        keys: &'a [String],
    },
}

/// A shared [`Cluster`], as plans and run contexts hold it.
#[derive(Clone)]
pub struct ClusterRef(Arc<dyn Cluster>);

impl ClusterRef {
    /// Wrap `cluster`.
    pub fn new(cluster: Arc<dyn Cluster>) -> ClusterRef {
        ClusterRef(cluster)
    }

    /// The cluster.
    pub fn get(&self) -> &dyn Cluster {
        &*self.0
    }
}

impl std::fmt::Debug for ClusterRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cluster")
    }
}

/// One other node's share of an exchange: its id, its partitions, and the request it runs.
#[derive(Debug, Clone)]
pub struct Remote {
    /// The node's id.
    pub node: String,
    /// The partitions it answers for.
    pub partitions: Vec<i32>,
    /// The encoded [`crate::plan::dist::fragment::Request`].
    pub request: Arc<[u8]>,
}

/// The partitions of the topic and the nodes that own them, as the node planning a query
/// sees them: every partition goes to one source (this node when it owns it, else the first
/// member listing it), so that no partition is answered twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    count: i32,
    mine: Vec<i32>,
    others: Vec<(String, Vec<i32>)>,
}

impl Layout {
    /// `count` partitions; this node owns `mine`; `members` are the other nodes (by id) and
    /// what the group coordinator says each owns. Partitions out of `0..count` are ignored.
    pub fn new(count: i32, mine: &[i32], members: &[(String, Vec<i32>)]) -> Layout {
        let valid = |p: &i32| (0..count).contains(p);
        let mine: BTreeSet<i32> = mine.iter().copied().filter(valid).collect();
        let mut taken = mine.clone();
        let mut others: Vec<(String, Vec<i32>)> = Vec::new();
        for (node, parts) in members {
            let theirs: Vec<i32> = parts.iter().copied().filter(valid).filter(|p| taken.insert(*p)).collect();
            if !theirs.is_empty() {
                others.push((node.clone(), theirs));
            }
        }
        Layout { count, mine: mine.into_iter().collect(), others }
    }

    /// The topic's partition count.
    pub fn count(&self) -> i32 {
        self.count
    }

    /// The partitions this node answers for, ascending.
    pub fn mine(&self) -> &[i32] {
        &self.mine
    }

    /// The other nodes with the partitions each answers for.
    pub fn others(&self) -> &[(String, Vec<i32>)] {
        &self.others
    }

    /// Partitions nobody owns now (a node died and Kafka has not moved its partitions yet).
    pub fn missing(&self) -> Vec<i32> {
        let owned: BTreeSet<i32> = self.mine.iter().chain(self.others.iter().flat_map(|(_, p)| p)).copied().collect();
        (0..self.count).filter(|p| !owned.contains(p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_partition_has_one_source() {
        let members = vec![("b".to_string(), vec![1, 2, 3]), ("c".to_string(), vec![3, 4, 9])];
        let l = Layout::new(6, &[0, 1], &members);
        assert_eq!(l.mine(), &[0, 1]);
        assert_eq!(l.others(), &[("b".to_string(), vec![2, 3]), ("c".to_string(), vec![4])]);
        assert_eq!(l.missing(), vec![5]);
    }
}
