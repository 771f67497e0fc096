//! The FIX door's sessions as `/metrics` shows them: the FIX crate fills in the reports, the
//! HTTP door renders them (`zepto_fix_*{session}`), so neither depends on the other.

use std::sync::Arc;

/// One FIX session's counters since the server started (over all its connections).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FixSessionReport {
    /// The session (`OURS-THEIRS` CompIDs).
    pub session: String,
    /// Logged on now.
    pub connected: bool,
    /// Messages processed in sequence.
    pub messages: u64,
    /// Rows stored.
    pub rows: u64,
    /// Gaps detected (a ResendRequest sent).
    pub gaps: u64,
    /// Messages rejected or ignored as garbled.
    pub rejects: u64,
    /// Of the last stored batch: from the newest message's SendingTime (52) to its rows being
    /// stored (queryable), nanoseconds.
    pub lag_ns: Option<i64>,
}

/// What the server asks of a FIX door.
pub trait FixSessions: Send + Sync {
    /// Every session seen since start, by name.
    fn reports(&self) -> Vec<FixSessionReport>;
}

/// A shared [`FixSessions`] in the server's [`crate::Config`].
#[derive(Clone)]
pub struct FixHandle(Arc<dyn FixSessions>);

impl FixHandle {
    /// Wrap `sessions`.
    pub fn new(sessions: Arc<dyn FixSessions>) -> FixHandle {
        FixHandle(sessions)
    }

    /// The reports now.
    pub fn reports(&self) -> Vec<FixSessionReport> {
        self.0.reports()
    }
}

impl std::fmt::Debug for FixHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FixHandle")
    }
}
