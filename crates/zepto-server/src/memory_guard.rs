//! The server's memory guard: when the process as a whole holds more than
//! `--max-server-memory-mb`, the running query holding the most is stopped with
//! `RESOURCES_EXHAUSTED`, before the kernel's OOM killer stops everything.
//!
//! Why: `--query-memory-mb` bounds one query, but not how many run at once, and with no
//! per-query limit (the default) one cross join could take the machine. ClickHouse has the
//! same two layers (`max_memory_usage` per query, `max_server_memory_usage`, 90% of RAM by
//! default, process-wide); DuckDB a process-wide `memory_limit` (80% of RAM).
//!
//! How: a thread samples the process's resident memory every [`PERIOD`] while a query runs,
//! and every [`IDLE`] otherwise, woken when one starts (Linux `/proc`; the guard is off where
//! that cannot be read). Over the limit, it asks the query that was seen
//! holding the most ([`QueryControl::held`]) to stop ([`QueryControl::exhaust`]); the query
//! fails at its next check and frees what it held. It then waits [`SETTLE`] for the memory to
//! come back before it stops another. Queries holding less than [`MIN_VICTIM`] are left alone:
//! then it is the tables, not a query, that fill memory (`--memory-budget-mb` tiers them to
//! disk), and stopping queries would not help; that is said once in the log.

use crate::state::State;
use std::sync::{Arc, Weak};
use std::time::Duration;
use zepto_sql::interrupt::QueryControl;

/// How often resident memory is sampled: a query allocating 1 GiB/s overshoots the limit by
/// about 10 MiB before it is asked to stop.
pub const PERIOD: Duration = Duration::from_millis(10);

/// How often memory is sampled while no query runs (only to warn that the tables, not a
/// query, fill it): an idle server is not woken a hundred times a second.
pub const IDLE: Duration = Duration::from_secs(1);

/// How long after stopping a query the guard waits before it stops another.
pub const SETTLE: Duration = Duration::from_millis(200);

/// Queries holding less than this are never stopped by the guard.
pub const MIN_VICTIM: usize = 8 << 20;

/// The default limit: 90% of the machine's memory, or of the cgroup's limit when lower (as
/// ClickHouse's `max_server_memory_usage`). `None` where neither can be read.
pub fn default_limit() -> Option<usize> {
    let total = meminfo_total()?;
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|s| s.trim().parse::<usize>().ok());
    let base = cgroup.map_or(total, |c| c.min(total));
    Some(base / 10 * 9)
}

fn meminfo_total() -> Option<usize> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_whitespace().nth(1)?.parse::<usize>().ok().map(|kib| kib * 1024)
}

/// Resident bytes of this process, or `None` off Linux.
fn resident_bytes() -> Option<usize> {
    zepto_storage::mem::process_rss_bytes().and_then(|b| usize::try_from(b).ok())
}

/// Start the guard for `limit` bytes; it ends when the server's state is dropped.
pub fn start(state: &Arc<State>, limit: usize) -> std::io::Result<()> {
    if resident_bytes().is_none() {
        eprintln!("zeptodb: --max-server-memory-mb needs /proc/self/statm (Linux); the guard is off");
        return Ok(());
    }
    let weak = Arc::downgrade(state);
    std::thread::Builder::new().name("zepto-memory-guard".into()).spawn(move || watch(&weak, limit))?;
    Ok(())
}

fn watch(state: &Weak<State>, limit: usize) {
    let Some(starts) = state.upgrade().map(|s| s.query_starts.clone()) else { return };
    let mut warned = false;
    loop {
        // With no query running there is no one to stop: sleep until one starts (or IDLE
        // passes, to warn of tables outgrowing the limit), not every PERIOD.
        let seen = starts.count();
        let idle = state.upgrade().is_some_and(|s| s.running.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
        if idle {
            starts.wait_past(seen, IDLE);
        } else {
            std::thread::sleep(PERIOD);
        }
        let Some(state) = state.upgrade() else { return };
        let Some(rss) = resident_bytes() else { return };
        if rss <= limit {
            warned = false;
            continue;
        }
        match heaviest(&state) {
            Some(q) => {
                state.metrics.queries_stopped_for_memory.inc();
                q.exhaust(reason(limit, rss, q.held()));
                drop(state);
                std::thread::sleep(SETTLE);
            }
            None if !warned => {
                warned = true;
                eprintln!(
                    "zeptodb: WARNING the process holds {} MiB, over --max-server-memory-mb ({} MiB), \
                     and no query holds {} MiB or more: the tables fill memory (see --memory-budget-mb)",
                    rss >> 20,
                    limit >> 20,
                    MIN_VICTIM >> 20
                );
            }
            None => {}
        }
    }
}

/// The running query seen holding the most, if it holds at least [`MIN_VICTIM`].
fn heaviest(state: &State) -> Option<Arc<QueryControl>> {
    let running = state.running.lock().unwrap_or_else(|e| e.into_inner());
    running.values().filter(|q| q.held() >= MIN_VICTIM && !q.is_cancelled()).max_by_key(|q| q.held()).cloned()
}

fn reason(limit: usize, rss: usize, held: usize) -> String {
    format!(
        "the server's memory limit of {} MiB was reached (it held {} MiB) and this query held the \
         most ({} MiB); --max-server-memory-mb raises the limit, --query-memory-mb bounds each query",
        limit >> 20,
        rss >> 20,
        held >> 20
    )
}
