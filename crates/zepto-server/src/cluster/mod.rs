//! What the HTTP door shows of a cluster node: `GET /cluster`.
//!
//! The node's cluster membership lives in its own crate (`zepto-cluster`, on Kafka), which
//! depends on this one for ingest; the server sees it only through [`ClusterView`], handed in
//! by whoever starts both (`zeptodb serve --cluster`).

mod json;
mod status;

pub use json::to_json;
pub use status::{Member, PartitionState, Placement, Status};

use crate::auth::Principal;
use crate::error::ApiError;
use crate::ingest::WriteRequest;
use std::sync::Arc;
use zepto_sql::Engine;

/// A cluster node as the HTTP door sees it.
pub trait ClusterView: Send + Sync {
    /// The node's state now (partition ownership, offsets and lag).
    fn status(&self) -> Status;

    /// Store a `/write` batch through the cluster (checked here for `who`, then handed to the
    /// cluster's log); the rows once the log has them all.
    fn write(&self, engine: &Engine, who: &Principal, req: &WriteRequest, body: &[u8]) -> Result<usize, ApiError>;
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
    pub fn status(&self) -> Status {
        self.0.status()
    }

    /// See [`ClusterView::write`].
    pub fn write(&self, engine: &Engine, who: &Principal, req: &WriteRequest, body: &[u8]) -> Result<usize, ApiError> {
        self.0.write(engine, who, req, body)
    }
}

impl std::fmt::Debug for ClusterHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterHandle")
    }
}
