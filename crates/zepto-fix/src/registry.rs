//! The acceptor's sessions: which are logged on now (a session cannot be logged on twice at
//! once), and each one's counters since the server started, over all its connections, for
//! `/metrics` ([`Registry::reports`]).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// What a session has done, for the log and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages processed in sequence.
    pub messages: u64,
    /// Rows stored.
    pub rows: u64,
    /// Gaps detected (a ResendRequest sent).
    pub gaps: u64,
    /// Messages rejected (Reject sent) or ignored as garbled.
    pub rejects: u64,
}

impl Stats {
    /// Both counts added.
    pub fn plus(&self, o: &Stats) -> Stats {
        Stats {
            messages: self.messages + o.messages,
            rows: self.rows + o.rows,
            gaps: self.gaps + o.gaps,
            rejects: self.rejects + o.rejects,
        }
    }
}

/// Every session the acceptor has seen.
#[derive(Debug, Default)]
pub struct Registry(Mutex<BTreeMap<String, Entry>>);

#[derive(Debug, Default)]
struct Entry {
    connected: bool,
    /// Counters of the connections that ended.
    ended: Stats,
    /// Counters of the connection logged on now.
    current: Stats,
    lag_ns: Option<i64>,
}

/// One session's counters (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionReport {
    /// `OURS-THEIRS` CompIDs.
    pub session: String,
    /// Logged on now.
    pub connected: bool,
    /// Counters since start.
    pub stats: Stats,
    /// Of the last stored batch: from its newest message's SendingTime to stored, ns.
    pub lag_ns: Option<i64>,
}

impl Registry {
    fn entries(&self) -> MutexGuard<'_, BTreeMap<String, Entry>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Log `name` on; false when it is logged on already.
    pub(crate) fn claim(&self, name: &str) -> bool {
        let mut all = self.entries();
        let e = all.entry(name.to_string()).or_default();
        if e.connected {
            return false;
        }
        e.connected = true;
        e.current = Stats::default();
        true
    }

    /// `name`'s connection ended.
    pub(crate) fn release(&self, name: &str) {
        if let Some(e) = self.entries().get_mut(name) {
            e.ended = e.ended.plus(&e.current);
            e.current = Stats::default();
            e.connected = false;
        }
    }

    /// `name`'s connection has counted `stats` so far; its last batch's lag, if it stored one.
    pub(crate) fn publish(&self, name: &str, stats: Stats, lag_ns: Option<i64>) {
        if let Some(e) = self.entries().get_mut(name) {
            e.current = stats;
            if lag_ns.is_some() {
                e.lag_ns = lag_ns;
            }
        }
    }

    /// Every session's counters, by name.
    pub fn reports(&self) -> Vec<SessionReport> {
        self.entries()
            .iter()
            .map(|(name, e)| SessionReport {
                session: name.clone(),
                connected: e.connected,
                stats: e.ended.plus(&e.current),
                lag_ns: e.lag_ns,
            })
            .collect()
    }
}
