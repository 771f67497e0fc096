//! Cooperative interruption of a running query: cancellation, a deadline and a memory limit.
//!
//! A door (the HTTP server) creates a [`QueryControl`], installs it on the thread that runs
//! the query with [`QueryControl::enter`], and may cancel it from any thread. Parsing and
//! binding call [`check`]; the executor takes the control into its
//! [`super::ExecContext`] when a run starts and checks that, before and after every plan node
//! and every so often inside loops whose length the input decides (join probes, gathers). A
//! check is a few compares, so calling it per node or per 64K rows costs nothing measurable.
//!
//! The memory limit counts the net bytes the query's thread allocated since `enter`
//! ([`zepto_storage::mem`]); it needs the counting global allocator, which the `zeptodb`
//! binary installs. Without it the limit never trips.

use crate::error::{Result, SqlError};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
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

    /// Install on the current thread until the guard drops.
    pub fn enter(self: &Arc<Self>) -> Entered {
        let base = thread_net_bytes();
        let prev = CURRENT.with(|c| c.replace(Some(Active { ctl: self.clone(), base })));
        Entered { prev }
    }
}

struct Active {
    ctl: Arc<QueryControl>,
    /// The thread's net allocation when the query started.
    base: isize,
}

thread_local! {
    static CURRENT: RefCell<Option<Active>> = const { RefCell::new(None) };
}

/// Restores the previous control (if any) when dropped.
pub struct Entered {
    prev: Option<Active>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CURRENT.with(|c| *c.borrow_mut() = prev);
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
}

/// The control installed on this thread and the thread's memory baseline for it: what an
/// [`super::ExecContext`] takes when a run starts.
pub fn current() -> (Option<Arc<QueryControl>>, isize) {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(a) => (Some(a.ctl.clone()), a.base),
        None => (None, thread_net_bytes()),
    })
}

/// Fail if the query installed on this thread was cancelled, ran past its deadline or holds
/// more memory than its limit: for parsing and binding, which run before an
/// [`super::ExecContext`] exists. Outside a controlled query this always succeeds.
pub fn check() -> Result<()> {
    CURRENT.with(|c| match c.borrow().as_ref() {
        Some(a) => a.ctl.check(thread_net_bytes().saturating_sub(a.base)),
        None => Ok(()),
    })
}

/// Fail now if taking `bytes` more would put the current query over its memory limit: for
/// reads whose size is known before they start (a file COPY loads), so the limit holds before
/// the memory is taken rather than after. Outside a controlled query this always succeeds.
pub fn reserve(bytes: u64) -> Result<()> {
    CURRENT.with(|c| {
        let c = c.borrow();
        let Some((a, limit)) = c.as_ref().and_then(|a| a.ctl.mem_limit.map(|l| (a, l))) else { return Ok(()) };
        let used = thread_net_bytes().saturating_sub(a.base).max(0) as u64;
        if used.saturating_add(bytes) > limit as u64 {
            return Err(SqlError::ResourcesExhausted(format!(
                "query memory limit of {} would be exceeded: it holds {} and needs {} more{RAISE_MEMORY}",
                fmt_bytes(limit),
                fmt_bytes(used as usize),
                fmt_bytes(usize::try_from(bytes).unwrap_or(usize::MAX))
            )));
        }
        Ok(())
    })
}

/// Below this many input rows, work stays on the query's thread: starting helpers costs tens
/// of microseconds, the whole budget of a point query. Tests lower it (see
/// [`set_parallel_min_rows`]) so small inputs take the parallel path too.
static PAR_MIN_ROWS: AtomicUsize = AtomicUsize::new(100_000);

/// Run partition-wise work on helper threads from `rows` input rows on: the default every
/// [`super::ExecContext`] starts with (process-wide; tests lower it).
pub fn set_parallel_min_rows(rows: usize) {
    PAR_MIN_ROWS.store(rows, Ordering::Relaxed);
}

/// The parallelism threshold new runs start with.
pub fn parallel_min_rows() -> usize {
    PAR_MIN_ROWS.load(Ordering::Relaxed)
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
    fn cancel_and_deadline() {
        assert!(check().is_ok());
        let q = QueryControl::new(None, None);
        {
            let _g = q.enter();
            assert!(check().is_ok());
            q.cancel();
            assert_eq!(check(), Err(SqlError::Cancelled));
        }
        assert!(check().is_ok(), "the guard uninstalls the control");
        let q = QueryControl::new(Some(Duration::ZERO), None);
        let _g = q.enter();
        assert!(matches!(check(), Err(SqlError::Timeout(_))));
    }
}
