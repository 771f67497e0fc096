//! A cluster of engines in one process: every node's fragments travel as encoded requests
//! and come back through Arrow IPC bytes, as between machines, without a network. What a
//! member publishes every node applies to its own engine, whole, as every node of a real
//! cluster would if it owned every partition: each answers for the partitions it owns. The
//! differential tests run the SQL corpus on such a cluster (`zepto-slt --cluster N`), and
//! an embedding program may use it to split one database over several engines.

use crate::cluster::{Cluster, ClusterRef, Layout, Publish};
use crate::engine::Engine;
use crate::error::{Result, SqlError};
use crate::interrupt::RunContext;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use zepto_storage::Column;

/// One node: its engine as a member and its own (which applies what is published), the
/// partitions it owns, and those the others see it owning (the group coordinator's view,
/// which may lag during a rebalance).
#[derive(Clone)]
struct Node {
    engine: Engine,
    own: Engine,
    owns: Vec<i32>,
    seen_owning: Vec<i32>,
}

/// The nodes of an in-process cluster over `count` partitions.
pub struct LocalCluster {
    count: i32,
    distributed: fn(&str) -> bool,
    nodes: Mutex<BTreeMap<String, Node>>,
}

impl LocalCluster {
    /// A cluster over `count` partitions, spreading the tables `distributed` accepts.
    pub fn new(count: i32, distributed: fn(&str) -> bool) -> Arc<LocalCluster> {
        Arc::new(LocalCluster { count, distributed, nodes: Mutex::default() })
    }

    fn nodes(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Node>> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Add `engine` as node `id` owning `owns`: the engine as a member, to run queries on.
    pub fn join(self: &Arc<Self>, id: &str, engine: &Engine, owns: &[i32]) -> Engine {
        let view = View { me: id.to_string(), cluster: Arc::downgrade(self) };
        let member = engine.with_cluster(ClusterRef::new(Arc::new(view)));
        let node =
            Node { engine: member.clone(), own: engine.clone(), owns: owns.to_vec(), seen_owning: owns.to_vec() };
        self.nodes().insert(id.to_string(), node);
        member
    }

    /// Node `id` now owns `owns`, and the others see it owning `seen`.
    pub fn assign(&self, id: &str, owns: &[i32], seen: &[i32]) {
        if let Some(n) = self.nodes().get_mut(id) {
            n.owns = owns.to_vec();
            n.seen_owning = seen.to_vec();
        }
    }
}

/// The cluster as node `me` sees it.
struct View {
    me: String,
    cluster: Weak<LocalCluster>,
}

impl View {
    fn cluster(&self) -> Result<Arc<LocalCluster>> {
        self.cluster.upgrade().ok_or_else(|| SqlError::Execution("the in-process cluster is gone".into()))
    }
}

impl Cluster for View {
    fn layout(&self) -> Result<Layout> {
        let c = self.cluster()?;
        let nodes = c.nodes();
        let mine = nodes.get(&self.me).map(|n| n.owns.clone()).unwrap_or_default();
        let others: Vec<(String, Vec<i32>)> =
            nodes.iter().filter(|(id, _)| **id != self.me).map(|(id, n)| (id.clone(), n.seen_owning.clone())).collect();
        Ok(Layout::new(c.count, &mine, &others))
    }

    fn distributes(&self, table: &str) -> bool {
        // A cluster that is gone spreads everything: planning then fails on its layout,
        // rather than answering from this node's rows alone.
        self.cluster.upgrade().is_none_or(|c| (c.distributed)(table))
    }

    fn fetch(&self, node: &str, request: &[u8]) -> std::result::Result<(Vec<Column>, usize), String> {
        let c = self.cluster().map_err(|e| e.to_string())?;
        let n = c.nodes().get(node).cloned().ok_or_else(|| format!("no node '{node}'"))?;
        let b = n.engine.run_fragment(&RunContext::unlimited(), request, &n.owns).map_err(|e| e.to_string())?;
        let names: Vec<String> = (0..b.columns.len()).map(|i| format!("c{i}")).collect();
        let cols: Vec<&Column> = b.columns.iter().map(|c| &**c).collect();
        let bytes = zepto_io::ipc::write_ipc_stream(&names, &cols, b.rows).map_err(|e| e.to_string())?;
        let (_, cols, rows) = zepto_io::ipc::read_ipc_stream_any(&bytes).map_err(|e| e.to_string())?;
        Ok((cols, rows))
    }

    fn publish(&self, change: Publish<'_>) -> std::result::Result<(), String> {
        let c = self.cluster().map_err(|e| e.to_string())?;
        let nodes: Vec<Node> = c.nodes().values().cloned().collect();
        for n in nodes {
            match change {
                Publish::CreateTable(sql) => n.own.execute(sql).map(drop).map_err(|e| e.to_string())?,
                Publish::Rows { table, columns, .. } => {
                    n.own.catalog().append(table, columns.to_vec()).map(drop).map_err(|e| e.to_string())?;
                }
            }
        }
        Ok(())
    }
}
