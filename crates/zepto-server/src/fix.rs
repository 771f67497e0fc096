//! The FIX door's sessions as `/metrics` shows them: the FIX crate fills in the reports, the
//! HTTP door renders them (`zepto_fix_*{session}`), so neither depends on the other.

use crate::metrics::{register, Labels};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
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

/// The FIX gauges of `/metrics`, per session.
#[derive(Debug)]
pub(crate) struct FixGauges {
    counts: [Family<Labels, Gauge>; 4],
    connected: Family<Labels, Gauge>,
    lag: Family<Labels, Gauge<f64, AtomicU64>>,
}

impl FixGauges {
    /// The gauges, registered in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> FixGauges {
        let counts = [
            ("zepto_fix_messages", "FIX messages processed in sequence, per session, since start"),
            ("zepto_fix_rows", "Rows FIX messages stored, per session, since start"),
            ("zepto_fix_gaps", "Sequence gaps a FIX session asked to be resent, since start"),
            ("zepto_fix_rejects", "FIX messages rejected or ignored as garbled, per session, since start"),
        ]
        .map(|(name, help)| register(registry, name, help));
        let connected = register(registry, "zepto_fix_session_connected", "1 while the FIX session is logged on");
        let lag = register(
            registry,
            "zepto_fix_lag_seconds",
            "Of a FIX session's last stored batch: from its newest message's SendingTime to stored",
        );
        FixGauges { counts, connected, lag }
    }

    /// Set them from the door's reports.
    pub(crate) fn set(&self, reports: &[FixSessionReport]) {
        let int = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        for r in reports {
            let labels = vec![("session".into(), r.session.clone())];
            for (family, n) in self.counts.iter().zip([r.messages, r.rows, r.gaps, r.rejects]) {
                family.get_or_create(&labels).set(int(n));
            }
            self.connected.get_or_create(&labels).set(i64::from(r.connected));
            if let Some(lag) = r.lag_ns {
                self.lag.get_or_create(&labels).set(lag as f64 / 1e9);
            }
        }
    }
}
