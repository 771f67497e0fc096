//! The cluster as this node's engine sees it ([`zepto_sql::cluster::Cluster`]): the layout
//! from the consumer group (this node's own assignment, the coordinator's for the others),
//! fragments sent to the other nodes' Flight doors ([`crate::flight`]), and statements
//! published through the node's producer ([`crate::produce`]).
//!
//! Calls block the query's thread (each remote is asked on a thread of its own by the
//! exchange) on a small runtime of their own; connections are kept per node and reused.

use crate::produce::Producer;
use crate::status::Shared;
use crate::ClusterError;
use arrow_flight::{FlightClient, Ticket};
use futures::TryStreamExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use zepto_sql::cluster::{Cluster, Layout, Publish};
use zepto_sql::error::SqlError;
use zepto_storage::Column;

/// The longest a fragment may take on another node (its rows included).
const FETCH_LIMIT: Duration = Duration::from_secs(300);

/// See the module docs.
pub(crate) struct Peers {
    node_id: String,
    shared: Shared,
    /// Always `Some` until dropped (see the `Drop` impl).
    rt: Option<tokio::runtime::Runtime>,
    channels: Mutex<HashMap<String, Channel>>,
    producer: Arc<Producer>,
    key: Option<String>,
}

impl Peers {
    /// The cluster of node `node_id`; `key` (an admin key) is sent to the other nodes' doors.
    pub(crate) fn new(
        node_id: &str,
        shared: Shared,
        producer: Arc<Producer>,
        key: Option<String>,
    ) -> Result<Peers, ClusterError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zepto-peers")
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Config(format!("the Flight client's runtime: {e}")))?;
        Ok(Peers { node_id: node_id.to_string(), shared, rt: Some(rt), channels: Mutex::default(), producer, key })
    }

    /// A channel to the Flight door at `addr` (connected on first use, then reused).
    fn channel(&self, addr: &str) -> Result<Channel, String> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = channels.get(addr) {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| format!("Flight address '{addr}': {e}"))?
            .connect_timeout(Duration::from_secs(3))
            // A node cut off the network answers nothing, not even a reset: HTTP/2 pings
            // notice within seconds and fail the call instead of leaving the query waiting.
            .http2_keep_alive_interval(Duration::from_secs(1))
            .keep_alive_timeout(Duration::from_secs(2))
            .keep_alive_while_idle(true)
            .tcp_nodelay(true);
        let c = {
            let _entered = self.rt().enter();
            endpoint.connect_lazy()
        };
        channels.insert(addr.to_string(), c.clone());
        Ok(c)
    }

    /// The runtime the calls run on.
    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until Peers is dropped")
    }

    /// The Flight address node `node` advertises.
    fn address(&self, node: &str) -> Result<String, String> {
        self.shared.update(|s| {
            s.members
                .iter()
                .find(|m| m.node_id == node)
                .and_then(|m| m.flight.clone())
                .ok_or_else(|| format!("node {node} has no Flight address in the group (is it a ZeptoDB node?)"))
        })
    }
}

/// The last engine handle may be dropped on any thread, an async door's among them (the
/// PostgreSQL door's accept loop at shutdown): dropping a runtime there panics ("Cannot drop a
/// runtime in a context where blocking is not allowed"), so the runtime is shut down without
/// waiting for its tasks (idle connections; no call is in flight once nothing holds `Peers`).
impl Drop for Peers {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Cluster for Peers {
    fn layout(&self) -> zepto_sql::error::Result<Layout> {
        let (count, mine, members) = self.shared.update(|s| {
            let others: Vec<(String, Vec<i32>)> = s
                .members
                .iter()
                .filter(|m| m.node_id != self.node_id)
                .map(|m| (m.node_id.clone(), m.partitions.clone()))
                .collect();
            (s.partition_count, s.ready_partitions(), others)
        });
        let count = i32::try_from(count).unwrap_or(0);
        if count == 0 {
            return Err(SqlError::Execution(
                "the cluster's topic has no known partitions yet (are the brokers reachable?)".into(),
            ));
        }
        Ok(Layout::new(count, &mine, &members))
    }

    fn distributes(&self, table: &str) -> bool {
        !crate::is_system(table)
    }

    fn fetch(&self, node: &str, request: &[u8]) -> Result<(Vec<Column>, usize), String> {
        let addr = self.address(node)?;
        let mut client = FlightClient::new(self.channel(&addr)?);
        if let Some(k) = &self.key {
            client.add_header("authorization", &format!("Bearer {k}")).map_err(|e| e.to_string())?;
        }
        let ticket = Ticket { ticket: request.to_vec().into() };
        let batches = self.rt().block_on(async {
            let call = async {
                let stream = client.do_get(ticket).await.map_err(|e| format!("{addr}: {e}"))?;
                stream.try_collect::<Vec<_>>().await.map_err(|e| format!("{addr}: {e}"))
            };
            tokio::time::timeout(FETCH_LIMIT, call)
                .await
                .map_err(|_| format!("{addr}: no answer within {} s", FETCH_LIMIT.as_secs()))?
        })?;
        let Some(first) = batches.first() else { return Ok((Vec::new(), 0)) };
        let fields = first.schema().fields().clone();
        zepto_io::ipc::from_record_batches(&fields, batches).map_err(|e| e.to_string())
    }

    fn publish(&self, change: Publish<'_>) -> Result<(), String> {
        match change {
            Publish::CreateTable(sql) => self.producer.publish_statement(sql),
            Publish::Rows { table, names, columns, keys } => self.producer.publish_rows(table, names, columns, keys),
        }
    }
}
