//! The node's [`Status`], shared between the threads that update it and the door that reads it.

use std::sync::{Arc, Mutex};
use zepto_server::cluster::Status;

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
