//! What one run of a physical plan carries down to every operator, passed explicitly.
//!
//! Today that is the profile EXPLAIN ANALYZE prints: per plan node, the operator that ran it,
//! its output rows and batches, its time (inclusive of its inputs, as PostgreSQL reports it)
//! and the peak memory the query's thread held above its start while it ran. Operators that
//! read their (filtered) scan input partition by partition run those nodes fused: the input
//! nodes are recorded as fused into their parent.
//!
//! The deadline, memory limit and cancel flag still reach operators through
//! [`super::interrupt`]'s thread-local control; moving them here is the next step.

use crate::plan::Plan;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use zepto_storage::mem::{reset_thread_peak, thread_net_bytes, thread_peak_bytes};

/// One plan node's run.
#[derive(Debug, Clone, PartialEq)]
pub struct OpStats {
    /// The operator that ran the node (see [`Plan::operator`]).
    pub operator: &'static str,
    pub rows: usize,
    pub batches: usize,
    pub elapsed: Duration,
    /// Peak bytes the query thread held above what it held when the operator started.
    pub peak_bytes: usize,
    /// Run inside its parent's operator (a scan or filter read partition by partition).
    pub fused: bool,
}

/// The context of one run of a physical plan.
#[derive(Debug, Default)]
pub struct ExecContext {
    /// Per plan node (by address: the plan is borrowed for the whole run), when profiling.
    profile: Option<Mutex<HashMap<usize, OpStats>>>,
}

/// A started operator's clock and memory baseline (see [`ExecContext::start`]).
pub(crate) struct Started {
    at: Instant,
    net: isize,
    outer_peak: isize,
}

impl ExecContext {
    /// A run that records nothing.
    pub fn new() -> ExecContext {
        ExecContext::default()
    }

    /// A run that records every node's [`OpStats`].
    pub fn profiling() -> ExecContext {
        ExecContext { profile: Some(Mutex::new(HashMap::new())) }
    }

    /// Whether this run records stats.
    pub fn is_profiling(&self) -> bool {
        self.profile.is_some()
    }

    /// What the run recorded for `node`.
    pub fn stats(&self, node: &Plan) -> Option<OpStats> {
        let p = self.profile.as_ref()?;
        let map = p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(&key(node)).cloned()
    }

    /// Start measuring an operator.
    pub(crate) fn start(&self) -> Option<Started> {
        self.profile.as_ref()?;
        let net = thread_net_bytes();
        let outer_peak = thread_peak_bytes();
        reset_thread_peak(net);
        Some(Started { at: Instant::now(), net, outer_peak })
    }

    /// Record that `operator` ran `node` and produced `batches` holding `rows` rows.
    pub(crate) fn finish(
        &self,
        started: Option<Started>,
        node: &Plan,
        operator: &'static str,
        rows: usize,
        batches: usize,
    ) {
        let (Some(p), Some(s)) = (&self.profile, started) else { return };
        let peak = thread_peak_bytes();
        reset_thread_peak(peak.max(s.outer_peak));
        let stats = OpStats {
            operator,
            rows,
            batches,
            elapsed: s.at.elapsed(),
            peak_bytes: usize::try_from(peak - s.net).unwrap_or(0),
            fused: false,
        };
        p.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key(node), stats);
    }

    /// Record that `node` (a scan, or a filter over one) ran inside its parent's operator.
    pub(crate) fn fused(&self, node: &Plan) {
        let Some(p) = &self.profile else { return };
        let mut map = p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut at = node;
        loop {
            let operator = match at {
                Plan::Scan { .. } => "Scan",
                Plan::Filter { .. } => "Filter",
                _ => "?",
            };
            let stats = OpStats { operator, rows: 0, batches: 0, elapsed: Duration::ZERO, peak_bytes: 0, fused: true };
            map.insert(key(at), stats);
            match at.inputs().as_slice() {
                [one] => at = one,
                _ => break,
            }
        }
    }
}

fn key(node: &Plan) -> usize {
    node as *const Plan as usize
}
