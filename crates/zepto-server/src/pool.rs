//! The query pool: threads of their own for SQL statements, at a lower CPU priority than
//! ingest.
//!
//! Why: ingest batches run on tokio's blocking pool, queries here. Two things keep a query
//! load from starving ingestion (the docs promise that it never does):
//! - threads: however many queries wait or run, ingest never waits for a thread a query holds
//!   (before, long scripts were parsed on the shared blocking pool without a query slot, so two
//!   dozen megabyte-sized `IN` lists took every thread);
//! - CPU: query threads run at nice +10 (and the helper threads a query starts inherit it), so
//!   on a machine whose cores are all busy with queries an ingest thread still gets most of a
//!   core when it needs one (CFS weights 1024 against 110).
//!
//! A job that panics is caught: its answer channel closes (the request gets an internal
//! error) and the thread goes on.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Niceness of query threads (0 is the default; 19 the lowest priority).
pub const QUERY_NICE: i32 = 10;

/// Niceness of the quick lane's threads: above heavy statements' (CFS weights 335 against
/// 110), so a short statement gets a core's share while the heavy ones run, still below
/// ingest's.
pub const QUICK_NICE: i32 = 5;

/// Stack of each query thread: deep plans grow their stack on demand anyway (`recursive`);
/// this only makes that rarer. Virtual memory, committed as used.
const STACK_BYTES: usize = 16 << 20;

/// The query threads: a fixed set fed from one queue of jobs, at nice +10.
pub struct QueryPool {
    tx: Mutex<Sender<Job>>,
}

impl QueryPool {
    /// `threads` query threads (at least one) at niceness `nice`.
    pub fn new(threads: usize, nice: i32) -> std::io::Result<QueryPool> {
        let (tx, rx) = channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for k in 0..threads.max(1) {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("zepto-query-{k}"))
                .stack_size(STACK_BYTES)
                .spawn(move || work(&rx, nice))?;
        }
        Ok(QueryPool { tx: Mutex::new(tx) })
    }

    /// Run `job` on a query thread. `false` if the pool is gone (the server is stopping).
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) -> bool {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        tx.send(Box::new(job)).is_ok()
    }
}

fn work(rx: &Mutex<Receiver<Job>>, nice: i32) {
    lower_priority(nice);
    zepto_storage::affinity::pin(zepto_storage::affinity::Role::Query);
    loop {
        // The lock is held only while waiting for the next job: one thread waits, the others
        // wait for the lock, and each job goes to exactly one thread.
        let job = match rx.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(j) => j,
            Err(_) => return, // the pool was dropped
        };
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// Nice this thread to `nice` (Linux sets niceness per thread); threads it starts inherit it.
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions; setpriority on our own thread id only changes
        // this thread's scheduling weight, and a failure (a sandbox refusing it) is harmless.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_jobs_and_survives_panics() {
        let pool = QueryPool::new(2, QUERY_NICE).expect("pool");
        let (tx, rx) = channel();
        assert!(pool.spawn(|| panic!("a job that panics")));
        for i in 0..10 {
            let tx = tx.clone();
            assert!(pool.spawn(move || tx.send(i).expect("send")));
        }
        let mut got: Vec<i32> = (0..10).map(|_| rx.recv().expect("result")).collect();
        got.sort_unstable();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        #[cfg(target_os = "linux")]
        {
            // Where this process may lower a thread's priority at all (a sandbox may refuse),
            // query threads run lowered.
            let may = std::thread::spawn(|| unsafe {
                // SAFETY: changes only the probe thread's own priority.
                libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, QUERY_NICE) == 0
            })
            .join()
            .expect("probe");
            let (tx, rx) = channel();
            pool.spawn(move || {
                // SAFETY: reads this thread's own priority.
                let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
                tx.send(nice).expect("send");
            });
            let nice = rx.recv().expect("nice");
            assert!(!may || nice >= QUERY_NICE, "query threads run at a lower priority ({nice})");
        }
    }
}
