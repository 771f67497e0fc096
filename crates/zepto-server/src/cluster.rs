//! What the HTTP door shows of a cluster node: `GET /cluster`.
//!
//! The node's cluster membership lives in its own crate (`zepto-cluster`, on Kafka), which
//! depends on this one for ingest; the server sees it only through [`ClusterView`], handed in
//! by whoever starts both (`zeptodb serve --cluster`).

use std::sync::Arc;

/// A cluster node's state as JSON (members, partition ownership, offsets and lag).
pub trait ClusterView: Send + Sync {
    /// The state now.
    fn status(&self) -> serde_json::Value;
}

/// A shared [`ClusterView`] in the server's [`crate::Config`].
#[derive(Clone)]
pub struct ClusterHandle(Arc<dyn ClusterView>);

impl ClusterHandle {
    /// Wrap `view`.
    pub fn new(view: Arc<dyn ClusterView>) -> ClusterHandle {
        ClusterHandle(view)
    }

    /// The node's state now.
    pub fn status(&self) -> serde_json::Value {
        self.0.status()
    }
}

impl std::fmt::Debug for ClusterHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterHandle")
    }
}
