//! What one run of a physical plan carries down to every operator, passed explicitly.
//!
//! An [`ExecContext`] is the query's [`RunContext`] (its control — cancel flag, deadline,
//! memory limit — with the memory baseline of the thread it runs on, and the parallelism
//! threshold) plus the profile EXPLAIN ANALYZE prints: per plan node, the operator that ran
//! it, its output rows and batches, its time (inclusive of its inputs, as PostgreSQL reports
//! it) and the peak memory the query's thread held above its start while it ran. Operators
//! that read their (filtered) scan input partition by partition run those nodes fused: the
//! input nodes are recorded as fused into their parent.
//!
//! Operators check it ([`ExecContext::check`]) and run partition-wise work through it
//! ([`ExecContext::par_map`]), which gives each helper thread a context of its own, its
//! baseline set so that it counts from what the query already held: no operator reads a
//! thread-local. What one run starts on its thread (a correlated subquery's binding and run)
//! gets the run's [`RunContext`] ([`ExecContext::run_context`]).

use crate::error::Result;
use crate::interrupt::RunContext;
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
    /// Rows the node produced.
    pub rows: usize,
    /// Batches the node produced.
    pub batches: usize,
    /// Wall-clock time spent in the node, its inputs included.
    pub elapsed: Duration,
    /// Peak bytes the query thread held above what it held when the operator started.
    pub peak_bytes: usize,
    /// Run inside its parent's operator (a scan or filter read partition by partition).
    pub fused: bool,
}

/// The context of one run of a physical plan (or of one helper thread's share of it).
#[derive(Debug)]
pub struct ExecContext {
    /// Per plan node (by address: the plan is borrowed for the whole run), when profiling.
    profile: Option<Mutex<HashMap<usize, OpStats>>>,
    /// The query's control, memory baseline (this thread's) and parallelism threshold.
    run: RunContext,
}

/// A started operator's clock and memory baseline (see [`ExecContext::start`]).
pub(crate) struct Started {
    at: Instant,
    net: isize,
    outer_peak: isize,
}

impl ExecContext {
    /// A run of a plan as part of the query `run`, recording nothing.
    pub fn new(run: &RunContext) -> ExecContext {
        ExecContext { profile: None, run: run.clone() }
    }

    /// A run of a plan as part of the query `run` that records every node's [`OpStats`].
    pub fn profiling(run: &RunContext) -> ExecContext {
        ExecContext { profile: Some(Mutex::new(HashMap::new())), run: run.clone() }
    }

    /// The query this run belongs to, as a context for what the run starts on this thread
    /// (a correlated subquery's binding and run).
    pub fn run_context(&self) -> &RunContext {
        &self.run
    }

    /// Fail if the query was cancelled, ran past its deadline or holds more memory than its
    /// limit (the memory this thread allocated since the query, or its share, started).
    pub fn check(&self) -> Result<()> {
        self.run.check()
    }

    /// [`ExecContext::check`] every `every` iterations of a loop (`every` a power of two).
    #[inline]
    pub fn check_every(&self, i: usize, every: usize) -> Result<()> {
        debug_assert!(every.is_power_of_two());
        if i & (every - 1) == 0 {
            self.check()
        } else {
            Ok(())
        }
    }

    /// `f` over `items` (`rows` input rows in all) on up to one thread per core
    /// ([`zepto_storage::par::try_map`]; results in item order), each call with the context
    /// of the thread it runs on. Helpers share the query's control, so cancellation and the
    /// deadline reach them, and count against the memory limit from what the query already
    /// holds plus their own growth (not the other helpers'; the query thread's check after the
    /// section sees everything, as what they allocated is credited to it when they finish).
    /// Below the parallelism threshold, or with one item, everything runs here.
    pub fn par_map<T: Sync, R: Send>(
        &self,
        items: &[T],
        rows: usize,
        f: impl Fn(&ExecContext, &T) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        if rows < self.run.parallel_min_rows() || items.len() < 2 {
            return items.iter().map(|x| f(self, x)).collect();
        }
        let (held, caller) = (self.run.held(), std::thread::current().id());
        zepto_storage::par::try_map(items, |x| {
            let helper = self.on_thread(held, caller);
            let c = helper.as_ref().unwrap_or(self);
            c.check()?;
            f(c, x)
        })
    }

    /// The context for work of this query on the current thread: `None` on the query's own
    /// thread (`caller`; this context serves), else a helper's, sharing the query's control,
    /// its memory counted from what the thread holds beyond the query's `held` bytes.
    fn on_thread(&self, held: isize, caller: std::thread::ThreadId) -> Option<ExecContext> {
        (std::thread::current().id() != caller).then(|| {
            let base = thread_net_bytes().saturating_sub(held);
            ExecContext::new(&self.run.on_helper(base))
        })
    }

    /// [`ExecContext::par_map`] taking neighbouring items in stretches
    /// ([`zepto_storage::par::try_map_stretches`]: each core its share of `items` by
    /// `weight`, then the others' from their back), `join` making one or a few results of each
    /// stretch on the core that ran it. Results in item order.
    pub fn par_map_stretches<T: Sync, R: Send, S: Send>(
        &self,
        items: &[T],
        rows: usize,
        weight: impl Fn(&T) -> usize,
        f: impl Fn(&ExecContext, &T) -> Result<R> + Sync,
        join: impl Fn(Vec<R>) -> Vec<S> + Sync,
    ) -> Result<Vec<S>> {
        if rows < self.run.parallel_min_rows() || items.len() < 2 {
            let out = items.iter().map(|x| self.check().and_then(|()| f(self, x))).collect::<Result<Vec<R>>>()?;
            return Ok(join(out));
        }
        let (held, caller) = (self.run.held(), std::thread::current().id());
        // Each thread's context, made once on it (`on_thread`, as `par_map`'s).
        let enter = || self.on_thread(held, caller);
        let on = |c: &Option<ExecContext>, x: &T| {
            let c = c.as_ref().unwrap_or(self);
            c.check()?;
            f(c, x)
        };
        zepto_storage::par::try_map_stretches(items, weight, enter, on, |_, rs| join(rs))
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
                Plan::Project { .. } => "Project",
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

impl ExecContext {
    /// Move what the run recorded for the nodes of `ran` (a copy of `node`'s subtree, as an
    /// operator rewrote it to run) to the nodes of `node`, which EXPLAIN ANALYZE prints.
    pub(crate) fn adopt(&self, ran: &Plan, node: &Plan) {
        let Some(p) = &self.profile else { return };
        let mut map = p.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut pairs = vec![(ran, node)];
        while let Some((r, n)) = pairs.pop() {
            if let Some(stats) = map.remove(&key(r)) {
                map.insert(key(n), stats);
            }
            debug_assert_eq!(r.inputs().len(), n.inputs().len(), "a copy has the same shape");
            pairs.extend(r.inputs().into_iter().zip(n.inputs()));
        }
    }
}

fn key(node: &Plan) -> usize {
    node as *const Plan as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SqlError;
    use crate::interrupt::QueryControl;

    /// Helper threads get a context carrying the query's control (not a thread-local): a
    /// cancel reaches the work they do.
    #[test]
    fn helpers_run_under_the_query_control() {
        let q = QueryControl::new(None, None);
        let ctx = ExecContext::new(&RunContext::new(Some(q.clone())).with_parallel_min_rows(0));
        let items: Vec<usize> = (0..64).collect();
        let seen = ctx
            .par_map(&items, usize::MAX, |c, _| {
                std::thread::sleep(Duration::from_millis(1));
                Ok((std::thread::current().id(), c.run.control().is_some()))
            })
            .expect("runs");
        assert!(seen.iter().all(|&(_, has)| has), "every item saw the control");
        let me = std::thread::current().id();
        let cores = zepto_storage::par::threads();
        assert!(cores < 2 || seen.iter().any(|&(t, _)| t != me), "helpers took some items");
        q.cancel();
        let r = ctx.par_map(&items, usize::MAX, |c, _| c.check());
        assert_eq!(r.err(), Some(SqlError::Cancelled));
    }
}
