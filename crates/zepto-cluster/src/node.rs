//! A cluster node: its consumer thread ([`crate::consumer`]), its producer
//! ([`crate::produce`]) and its status, as the HTTP door sees them ([`ClusterView`]).

use crate::consumer;
use crate::produce::Producer;
use crate::status::Shared;
use crate::{ClusterError, Config};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use zepto_server::auth::{KeyStore, Principal};
use zepto_server::cluster::ClusterView;
use zepto_server::cluster::Status;
use zepto_server::error::ApiError;
use zepto_server::ingest::WriteRequest;
use zepto_sql::cluster::ClusterRef;
use zepto_sql::Engine;

/// A running cluster node. Stops consuming (and leaves the group) when stopped or dropped.
pub struct Node {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    view: Arc<View>,
    engine: Engine,
    node_id: String,
}

/// What the HTTP door calls: the status, and `/write` through Kafka.
struct View {
    shared: Shared,
    producer: Arc<Producer>,
}

impl ClusterView for View {
    fn status(&self) -> Status {
        self.shared.get()
    }

    fn write(&self, engine: &Engine, who: &Principal, req: &WriteRequest, body: &[u8]) -> Result<usize, ApiError> {
        self.producer.write(engine, who, req, body)
    }
}

impl Node {
    /// Join `config`'s group, start applying the records of the partitions Kafka assigns,
    /// and be ready to produce `/write` batches. Fails on bad settings; an unreachable broker
    /// is not an error here (the node keeps trying; the status shows the last error).
    pub fn start(engine: Engine, config: &Config) -> Result<Node, ClusterError> {
        let shared = Shared::default();
        shared.update(|s| {
            s.node_id = config.node_id().to_string();
            s.group = config.group().to_string();
            s.topic = config.topic().to_string();
            s.brokers = config.brokers().to_string();
            s.shared_history = config.shared_history().map(|h| h.store().location().to_string());
        });
        let producer = Producer::new(config)?;
        if let Err(e) = producer.ensure_topic() {
            shared.update(|s| s.last_error = Some(format!("topic {}: {e}", config.topic())));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let watch = crate::watch::spawn(config, shared.clone(), stop.clone())?;
        let view = Arc::new(View { shared: shared.clone(), producer: Arc::new(producer) });
        let node_id = config.node_id().to_string();
        let mut node = Node { stop, threads: vec![watch], view, engine: engine.clone(), node_id };
        // On an error here, dropping `node` stops the watch thread.
        node.threads.push(consumer::spawn(engine, config, shared, node.view.producer.clone(), node.stop.clone())?);
        Ok(node)
    }

    /// Answer the other nodes' query fragments on `listener` (the Flight door whose address
    /// the node's config advertises), accepting only admin keys of `keys` when it has any.
    pub fn serve_flight(&mut self, listener: std::net::TcpListener, keys: Arc<KeyStore>) -> Result<(), ClusterError> {
        let door =
            crate::flight::spawn(listener, self.engine.clone(), self.view.shared.clone(), keys, self.stop.clone())?;
        self.threads.push(door);
        Ok(())
    }

    /// The cluster as this node's queries see it: the partitions' owners, the other nodes'
    /// Flight doors (sending `key`, an admin key, when given), and the producer its
    /// statements publish through.
    pub fn cluster(&self, key: Option<String>) -> Result<ClusterRef, ClusterError> {
        let peers = crate::peers::Peers::new(&self.node_id, self.view.shared.clone(), self.view.producer.clone(), key)?;
        Ok(ClusterRef::new(Arc::new(peers)))
    }

    /// The node's state now.
    pub fn status(&self) -> Status {
        self.view.shared.get()
    }

    /// The node as the HTTP door sees it (`GET /cluster`, `/write`).
    pub fn view(&self) -> Arc<dyn ClusterView> {
        self.view.clone()
    }

    /// Stop consuming and leave the group (the partitions move to the other members).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.halt();
    }
}
