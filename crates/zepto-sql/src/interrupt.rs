//! Cooperative interruption of a running query: cancellation, a deadline and a memory limit,
//! and the context that carries them down.
//!
//! A door (the HTTP server, the Python bindings) creates a [`QueryControl`] and may cancel it
//! from any thread. It hands the control to the engine inside a [`RunContext`] made on the
//! thread that runs the query (`Engine::execute_in` and its siblings; the plain methods use
//! [`RunContext::unlimited`]). The design rule is "pass context down explicitly, not through
//! thread-locals": nothing reads the control from a thread-local or a global. Parsing,
//! binding, the executor, COPY and the result's final copy all get the context passed down and
//! check it — parsing per statement and every so many tokens, binding per query and every so
//! many expression nodes, the executor before and after every plan node and every so often
//! inside loops whose length the input decides (join probes, gathers; through
//! [`crate::exec::ExecContext`], which adds the EXPLAIN ANALYZE profile). A check is a few
//! compares, so calling it per node or per 64K rows costs nothing measurable.
//!
//! The memory limit counts the net bytes the query's thread allocated since its context was
//! made ([`zepto_storage::mem`]): so a context belongs to its thread (it is not `Send`), and a
//! request worked on by two threads (the server parses on one and runs on another) makes one on
//! each; helper threads get one of their own that counts from what the query already held. It
//! needs the counting global allocator, which the `zeptodb` binary installs. Without it the
//! limit never trips. The context also carries the parallelism threshold, which the engine
//! sets from its own setting (`Engine::with_parallel_min_rows`) rather than a global.

use crate::error::{Result, SqlError};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use zepto_storage::mem::thread_net_bytes;

/// How a user raises the memory limit, said in every error it causes (the server's flag, the
/// Python keyword).
const RAISE_MEMORY: &str = " (--query-memory-mb, or connect(query_memory_mb=) in Python, raises it)";

/// How a user raises the time limit, said in every error it causes.
const RAISE_TIMEOUT: &str = " (--query-timeout, or connect(query_timeout=) in Python, raises it)";

/// Limits and the cancel flag of one query.
#[derive(Debug)]
pub struct QueryControl {
    cancelled: AtomicBool,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    mem_limit: Option<usize>,
    /// The most bytes one thread of the query was seen holding at a check: what a server-wide
    /// memory guard compares to choose which query to stop.
    held: AtomicUsize,
    /// Why the query was stopped for memory from outside ([`QueryControl::exhaust`]).
    exhausted: OnceLock<String>,
}

impl QueryControl {
    /// A control for one query: `timeout` from now (wall clock) and `mem_limit` bytes the query's
    /// thread may hold; `None` is unlimited.
    pub fn new(timeout: Option<Duration>, mem_limit: Option<usize>) -> Arc<QueryControl> {
        Arc::new(QueryControl {
            cancelled: AtomicBool::new(false),
            deadline: timeout.and_then(|t| Instant::now().checked_add(t)),
            timeout,
            mem_limit,
            held: AtomicUsize::new(0),
            exhausted: OnceLock::new(),
        })
    }

    /// Stop the query at its next check with `RESOURCES_EXHAUSTED` and `reason` (a server's
    /// memory guard, when the process as a whole holds too much).
    pub fn exhaust(&self, reason: String) {
        let _ = self.exhausted.set(reason);
        self.cancel();
    }

    /// The most bytes one of the query's threads was seen holding at a check.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Ask the query to stop at its next check (it then fails with `CANCELLED`).
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// True once [`QueryControl::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// The time left before the deadline (zero once past it); `None` without one.
    pub fn time_left(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The bytes one thread of the query may hold; `None` when unlimited.
    pub fn mem_limit(&self) -> Option<usize> {
        self.mem_limit
    }
}

impl QueryControl {
    /// Fail if the query was cancelled, ran past its deadline, or `held` bytes exceed its
    /// memory limit.
    pub fn check(&self, held: isize) -> Result<()> {
        self.held.fetch_max(held.max(0) as usize, Ordering::Relaxed);
        if self.is_cancelled() {
            return Err(match self.exhausted.get() {
                Some(reason) => SqlError::ResourcesExhausted(reason.clone()),
                None => SqlError::Cancelled,
            });
        }
        if let (Some(d), Some(t)) = (self.deadline, self.timeout) {
            if Instant::now() >= d {
                return Err(SqlError::Timeout(format!(
                    "query exceeded its time limit of {}{RAISE_TIMEOUT}",
                    fmt_duration(t)
                )));
            }
        }
        if let Some(limit) = self.mem_limit {
            let used = held.max(0) as usize;
            if used > limit {
                return Err(SqlError::ResourcesExhausted(format!(
                    "query memory limit of {} exceeded (it held {}){RAISE_MEMORY}",
                    fmt_bytes(limit),
                    fmt_bytes(used)
                )));
            }
        }
        Ok(())
    }

    /// Fail now if taking `bytes` more, on top of the `held` bytes the query's thread holds,
    /// would put the query over its memory limit: for reads whose size is known before they
    /// start (a file COPY loads), so the limit holds before the memory is taken rather than
    /// after. Without a memory limit this always succeeds.
    pub fn reserve(&self, held: isize, bytes: u64) -> Result<()> {
        let Some(limit) = self.mem_limit else { return Ok(()) };
        let used = held.max(0) as u64;
        if used.saturating_add(bytes) > limit as u64 {
            return Err(SqlError::ResourcesExhausted(format!(
                "query memory limit of {} would be exceeded: it holds {} and needs {} more{RAISE_MEMORY}",
                fmt_bytes(limit),
                fmt_bytes(usize::try_from(used).unwrap_or(usize::MAX)),
                fmt_bytes(usize::try_from(bytes).unwrap_or(usize::MAX))
            )));
        }
        Ok(())
    }
}

/// Below this many input rows, work stays on the query's thread by default: starting helpers
/// costs tens of microseconds, the whole budget of a point query (`Engine::with_parallel_min_rows`
/// changes it per engine; tests lower it so small inputs take the parallel path too).
pub const DEFAULT_PARALLEL_MIN_ROWS: usize = 100_000;

/// One query's control on the thread that runs it: what a door hands the engine, and what the
/// engine hands every stage of the query.
///
/// Its memory baseline is the thread's it was made on, so it cannot be sent to another
/// thread (make one there instead):
///
/// ```compile_fail
/// fn send<T: Send>(_: T) {}
/// send(zepto_sql::RunContext::unlimited());
/// ```
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The query's limits and cancel flag, if a door set them.
    control: Option<Arc<QueryControl>>,
    /// This thread's net allocation when the query (its share of it) started.
    base: isize,
    /// Partition-wise work goes to helper threads from this many input rows on.
    par_min_rows: usize,
    /// The graphs of the catalog's vector indexes (set by the engine; without it every vector
    /// search scans exactly).
    indexes: Option<Arc<zepto_ann::Registry>>,
    /// The session's settings (the planner reads them).
    settings: crate::settings::Settings,
    /// The cluster the query spans, if the node is one's member (the planner distributes
    /// scans of its tables, see [`crate::plan::dist`]).
    cluster: Option<crate::cluster::ClusterRef>,
    /// Partitions the query answered without (`allow_partial`), shared by every context of
    /// the query.
    missing: Arc<Mutex<Vec<i32>>>,
    /// The baseline is this thread's: not `Send` (a `MutexGuard` is `Sync` but not `Send`).
    _thread: PhantomData<MutexGuard<'static, ()>>,
}

impl Default for RunContext {
    fn default() -> Self {
        RunContext::unlimited()
    }
}

impl RunContext {
    /// A query under `control` (none: unlimited), its memory counted from what this thread
    /// holds now. Make it on the thread that runs the query.
    pub fn new(control: Option<Arc<QueryControl>>) -> RunContext {
        RunContext::with_base(control, thread_net_bytes(), DEFAULT_PARALLEL_MIN_ROWS)
    }

    /// A query without limits that cannot be cancelled (tests, the CLI, embedded use).
    pub fn unlimited() -> RunContext {
        RunContext::new(None)
    }

    fn with_base(control: Option<Arc<QueryControl>>, base: isize, par_min_rows: usize) -> RunContext {
        RunContext {
            control,
            base,
            par_min_rows,
            indexes: None,
            settings: Default::default(),
            cluster: None,
            missing: Arc::default(),
            _thread: PhantomData,
        }
    }

    /// The same query with partition-wise work going to helper threads from `rows` input rows
    /// on (the engine sets its own threshold on every context it is handed).
    pub(crate) fn with_parallel_min_rows(&self, rows: usize) -> RunContext {
        RunContext { par_min_rows: rows, ..self.clone() }
    }

    /// The same query searching the vector index graphs of `indexes` (the engine sets its
    /// registry on every context it is handed).
    pub(crate) fn with_indexes(&self, indexes: &Arc<zepto_ann::Registry>) -> RunContext {
        RunContext { indexes: Some(indexes.clone()), ..self.clone() }
    }

    /// The same query under the session's `settings` (the engine sets its own on every
    /// context it is handed).
    pub(crate) fn with_settings(&self, settings: crate::settings::Settings) -> RunContext {
        RunContext { settings, ..self.clone() }
    }

    /// The same query spanning `cluster` (the engine sets its own on every context it is
    /// handed).
    pub(crate) fn with_cluster(&self, cluster: Option<&crate::cluster::ClusterRef>) -> RunContext {
        RunContext { cluster: cluster.cloned(), ..self.clone() }
    }

    /// Note that the query answers without `partitions` (`SET allow_partial = on`).
    pub(crate) fn note_missing(&self, partitions: &[i32]) {
        let mut m = self.missing.lock().unwrap_or_else(|e| e.into_inner());
        m.extend_from_slice(partitions);
        m.sort_unstable();
        m.dedup();
    }

    /// The partitions the query answered without, ascending (empty: a whole answer).
    pub fn missing_partitions(&self) -> Vec<i32> {
        self.missing.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The cluster the query spans, if any.
    pub fn cluster(&self) -> Option<&crate::cluster::ClusterRef> {
        self.cluster.as_ref()
    }

    /// The settings the query is planned and run with.
    pub fn settings(&self) -> &crate::settings::Settings {
        &self.settings
    }

    /// The vector index graphs this query may search, if the engine gave any.
    pub fn indexes(&self) -> Option<&Arc<zepto_ann::Registry>> {
        self.indexes.as_ref()
    }

    /// The query's control, if it has one.
    pub fn control(&self) -> Option<&Arc<QueryControl>> {
        self.control.as_ref()
    }

    /// The parallelism threshold of this query.
    pub fn parallel_min_rows(&self) -> usize {
        self.par_min_rows
    }

    /// Bytes this thread holds above its baseline.
    pub(crate) fn held(&self) -> isize {
        thread_net_bytes().saturating_sub(self.base)
    }

    /// Fail if the query was cancelled, ran past its deadline or holds more memory than its
    /// limit (the memory this thread allocated since the query, or its share, started).
    /// Without a control this always succeeds.
    pub fn check(&self) -> Result<()> {
        match &self.control {
            Some(c) => c.check(self.held()),
            None => Ok(()),
        }
    }

    /// [`RunContext::check`] with the query holding `held` bytes, as counted by the caller (a
    /// read decoding on helper threads adds up what each holds).
    pub(crate) fn check_holding(&self, held: isize) -> Result<()> {
        match &self.control {
            Some(c) => c.check(held),
            None => Ok(()),
        }
    }

    /// Fail now if taking `bytes` more would put the query over its memory limit (see
    /// [`QueryControl::reserve`]). Without a control this always succeeds.
    pub fn reserve(&self, bytes: u64) -> Result<()> {
        match &self.control {
            Some(c) => c.reserve(self.held(), bytes),
            None => Ok(()),
        }
    }

    /// The same query on a helper thread whose net allocation is `base` when it holds what
    /// the query held when the helpers started (see `ExecContext::par_map`).
    pub(crate) fn on_helper(&self, base: isize) -> RunContext {
        RunContext { base, ..self.clone() }
    }
}

fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

fn fmt_bytes(b: usize) -> String {
    const MIB: usize = 1 << 20;
    if b >= MIB {
        format!("{:.1} MiB", b as f64 / MIB as f64)
    } else {
        format!("{b} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_deadline_and_memory() {
        let q = QueryControl::new(None, None);
        assert!(q.check(0).is_ok());
        q.cancel();
        assert_eq!(q.check(0), Err(SqlError::Cancelled));
        let q = QueryControl::new(Some(Duration::ZERO), None);
        assert!(matches!(q.check(0), Err(SqlError::Timeout(_))));
        let q = QueryControl::new(None, Some(1000));
        assert!(q.check(1000).is_ok());
        assert!(matches!(q.check(1001), Err(SqlError::ResourcesExhausted(_))));
        assert_eq!(q.held(), 1001);
        assert!(q.reserve(500, 500).is_ok());
        assert!(matches!(q.reserve(500, 501), Err(SqlError::ResourcesExhausted(_))));
        assert!(QueryControl::new(None, None).reserve(0, u64::MAX).is_ok());
    }

    #[test]
    fn a_run_context_checks_its_control() {
        let run = RunContext::unlimited();
        assert!(run.check().is_ok() && run.reserve(u64::MAX).is_ok() && run.control().is_none());
        assert_eq!(run.parallel_min_rows(), DEFAULT_PARALLEL_MIN_ROWS);
        assert_eq!(run.with_parallel_min_rows(0).parallel_min_rows(), 0);
        let q = QueryControl::new(None, Some(1 << 20));
        let run = RunContext::new(Some(q.clone()));
        assert!(run.check().is_ok());
        assert!(matches!(run.reserve(2 << 20), Err(SqlError::ResourcesExhausted(_))));
        q.cancel();
        assert_eq!(run.check(), Err(SqlError::Cancelled));
        assert_eq!(run.with_parallel_min_rows(0).check(), Err(SqlError::Cancelled), "clones share the control");
    }
}
