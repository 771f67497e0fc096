//! Data parallelism for the places one request has independent pieces of work (partitions
//! to aggregate, history files to decode, columns to split): one thread per core, taking items
//! one at a time so uneven items (a Zipf-sized symbol, a larger day) balance out. What the
//! helpers allocated and did not free while working on an item is credited to the calling
//! thread when the section ends, so per-thread memory accounting ([`crate::mem`]) still sees
//! the whole request.
//!
//! Two kinds of helpers:
//! - [`try_map`], for reads (queries, file decoding), runs on the calling thread and a rayon
//!   pool started once per process: spawning two threads for each parallel section cost
//!   60-100 us on a 2-core VM, a fifth of a 0.5 ms aggregate, and waking a sleeping pool
//!   thread costs 30-50 us, so the caller starts on the items at once (`par/section.rs`).
//! - [`for_each`], for writes, on the same sections. A write holds its table's write lock
//!   while it works, and a query's pool item may wait for that lock (a correlated subquery
//!   takes a snapshot): were the write waiting for the pool's threads, neither would move. A
//!   section's caller waits only for items a pool thread has started, never for a pool
//!   thread to come free. With pinned query cores, writes run on threads of their own.

mod section;
mod stretches;

pub use stretches::try_map_stretches;

use crate::mem::{credit_thread, thread_net_bytes};
use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Threads the parallel sections use: one per core this process may run on, or per core of
/// the query threads' set when the server pins them ([`crate::affinity`]), asked once
/// (`available_parallelism` reads the cgroup and affinity each call).
pub fn threads() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| {
        crate::affinity::cores(crate::affinity::Role::Query)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// Whether the server pins its query threads: then sections run on the pool's pinned threads
/// only, and writes on threads of their own (module docs).
fn query_cores_pinned() -> bool {
    crate::affinity::cores(crate::affinity::Role::Query).is_some()
}

/// The pool, started on first use. A process forked after that (Python's `multiprocessing`)
/// has none of its threads, and waiting on them would hang: a new pool is started for the
/// new process, and the old one is left alone (dropping it would signal threads that are not
/// there). The pool is built outside the lock, so a fork meanwhile cannot leave the lock held.
/// `None` if no thread could be started: sections then run on the calling thread.
///
/// Its threads: one per core when the query threads are pinned (sections run on the pool
/// alone), else one fewer, for a section's caller works beside `threads() - 1` pool jobs and
/// a further pool thread only idles. An idle rayon thread yields the core in a loop for a
/// while before it sleeps: on two cores, a second pool thread cost 1-minute bars over 1M rows
/// 4% of their CPU and 3% of their time in context switches (1.57 -> 1.53 ms).
fn pool() -> Option<Arc<ThreadPool>> {
    static POOL: Mutex<Option<(u32, Arc<ThreadPool>)>> = Mutex::new(None);
    let pid = std::process::id();
    let current =
        |held: &Option<(u32, Arc<ThreadPool>)>| held.as_ref().filter(|(p, _)| *p == pid).map(|(_, t)| t.clone());
    if let Some(p) = current(&POOL.lock().unwrap_or_else(|e| e.into_inner())) {
        return Some(p);
    }
    let built = ThreadPoolBuilder::new()
        .num_threads(if query_cores_pinned() { threads() } else { threads().saturating_sub(1).max(1) })
        .thread_name(|i| format!("zepto-par-{i}"))
        .start_handler(|_| crate::affinity::pin(crate::affinity::Role::Query))
        .build();
    let pool = Arc::new(built.ok()?);
    let mut held = POOL.lock().unwrap_or_else(|e| e.into_inner());
    // Another thread may have built one meanwhile: the first stays (ours has run nothing).
    if let Some(p) = current(&held) {
        return Some(p);
    }
    std::mem::forget(held.replace((pid, pool.clone())));
    Some(pool)
}

thread_local! {
    /// Net bytes this thread allocated on items it ran for other threads' sections, and
    /// credited to them ([`Moved::run`]). A pool thread waiting inside one item's nested section
    /// may run another section's items meanwhile; what those leave is credited to their own
    /// caller, and must not count again for the item it interrupted.
    static CREDITED: Cell<isize> = const { Cell::new(0) };
}

/// What helpers allocated for the calling thread, credited to it when dropped.
struct Moved {
    caller: std::thread::ThreadId,
    bytes: AtomicIsize,
}

impl Moved {
    fn new() -> Moved {
        Moved { caller: std::thread::current().id(), bytes: AtomicIsize::new(0) }
    }

    /// `work` on this thread; what it left allocated counts for the caller, unless this is
    /// the caller (a pool thread may run items of its own section).
    fn run<R>(&self, work: impl FnOnce() -> R) -> R {
        let credited = || CREDITED.try_with(Cell::get).unwrap_or(0);
        let (before, credited_before) = (thread_net_bytes(), credited());
        let r = work();
        if std::thread::current().id() != self.caller {
            let left = thread_net_bytes() - before - (credited() - credited_before);
            self.bytes.fetch_add(left, Ordering::Relaxed);
            let _ = CREDITED.try_with(|c| c.set(c.get() + left));
        }
        r
    }
}

impl Drop for Moved {
    fn drop(&mut self) {
        credit_thread(*self.bytes.get_mut());
    }
}

/// `f` over `items` on up to one thread per core; results in item order. After an error no
/// later item starts, and the first error in item order is returned (every item before it
/// runs). A panic in `f` propagates. For reads: see the module docs.
///
/// The calling thread takes items too, beside `threads() - 1` pool jobs (`par/section.rs`):
/// it never sleeps waiting for a pool thread to wake. When the server pins its query
/// threads ([`crate::affinity`]), the caller may be a thread of another role, and the items
/// run on the pool's pinned threads only while the caller waits.
pub fn try_map<T: Sync, R: Send, E: Send>(items: &[T], f: impl Fn(&T) -> Result<R, E> + Sync) -> Result<Vec<R>, E> {
    let pool = if threads().min(items.len()) > 1 { pool() } else { None };
    let Some(pool) = pool else {
        return items.iter().map(f).collect();
    };
    let moved = Moved::new();
    let out = if query_cores_pinned() {
        in_pool(&pool, items, &f, &moved)
    } else {
        section::try_map(&pool, threads() - 1, items, &f, &moved)
    };
    drop(moved);
    out
}

/// [`try_map`] with every item on the pool's threads (the caller waits).
fn in_pool<T: Sync, R: Send, E: Send>(
    pool: &ThreadPool,
    items: &[T],
    f: &(impl Fn(&T) -> Result<R, E> + Sync),
    moved: &Moved,
) -> Result<Vec<R>, E> {
    let first_failed = AtomicUsize::new(usize::MAX);
    // Allocated here, so that the caller, who frees it, is the thread it counts against.
    let mut out: Vec<Option<Result<R, E>>> = Vec::with_capacity(items.len());
    pool.install(|| {
        items
            .par_iter()
            .with_max_len(1)
            .enumerate()
            .map(|(i, x)| {
                if i > first_failed.load(Ordering::Relaxed) {
                    return None;
                }
                let r = moved.run(|| f(x));
                if r.is_err() {
                    first_failed.fetch_min(i, Ordering::Relaxed);
                }
                Some(r)
            })
            .collect_into_vec(&mut out)
    });
    // Every item before the first failure ran: the results up to it are whole.
    out.into_iter().map_while(|r| r).collect()
}

/// [`try_map`] of an `f` that cannot fail.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    try_map(items, |x| Ok::<R, std::convert::Infallible>(f(x))).unwrap_or_else(|never| match never {})
}

/// `f` on every item, owned, on up to one thread per core, items taken one at a time (in no
/// particular order). For work that mutates disjoint things: pass `&mut` borrows as items.
///
/// Writes call it holding a table's write lock, and a query's pool item may wait for that
/// lock (module docs): the caller takes items itself beside pool jobs (`par/section.rs`) and
/// waits only for items a pool thread has started, so pool threads stuck on the lock hold
/// nothing up. When the server pins its threads, the pool's cores are the queries', and a
/// write runs on scoped threads of its own, which keep the writer's cores.
pub fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Sync) {
    let threads = threads().min(items.len());
    if threads <= 1 {
        items.into_iter().for_each(f);
        return;
    }
    let pool = if query_cores_pinned() { None } else { pool() };
    if let Some(pool) = pool {
        let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|x| Mutex::new(Some(x))).collect();
        let moved = Moved::new();
        let one = |slot: &Mutex<Option<T>>| {
            let item = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(x) = item {
                f(x);
            }
            Ok::<(), std::convert::Infallible>(())
        };
        let _ = section::try_map(&pool, threads - 1, &slots, &one, &moved);
        return;
    }
    on_scoped_threads(items, threads, f);
}

/// [`for_each`] on `threads` scoped threads of its own (the writer's cores, when pinned).
fn on_scoped_threads<T: Send>(items: Vec<T>, threads: usize, f: impl Fn(T) + Sync) {
    let queue = Mutex::new(items);
    let bytes: isize = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    loop {
                        let item = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                        let Some(item) = item else { break };
                        f(item);
                    }
                    thread_net_bytes()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).sum()
    });
    credit_thread(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_item_order_and_reports_the_first_error() {
        let items: Vec<u64> = (0..1000).collect();
        let out: Result<Vec<u64>, String> = try_map(&items, |&i| Ok(i * i));
        assert_eq!(out.expect("no item fails"), items.iter().map(|i| i * i).collect::<Vec<_>>());
        let err = try_map(&items, |&i| if i % 7 == 3 { Err(i) } else { Ok(i) });
        // Items past a failure may or may not have run, but the error reported is the first
        // failing item among those that ran, and item 3 always runs before anything stops.
        assert_eq!(err, Err(3));
        let empty: Vec<u8> = Vec::new();
        assert_eq!(try_map(&empty, |&b| Ok::<u8, ()>(b)), Ok(vec![]));
    }

    /// A write holding a lock that the pool's items wait for still finishes: `for_each` does not
    /// wait on the pool (with it, this test hangs until its timeout).
    #[test]
    fn a_write_under_a_lock_does_not_wait_on_the_pool() {
        use std::sync::mpsc;
        use std::time::Duration;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let lock = Arc::new(Mutex::new(()));
            let held = lock.lock().unwrap_or_else(|e| e.into_inner());
            let waiting = lock.clone();
            let readers = std::thread::spawn(move || {
                try_map(&vec![0; 2 * threads()], |_| {
                    drop(waiting.lock().unwrap_or_else(|e| e.into_inner()));
                    Ok::<_, ()>(())
                })
            });
            // Let the readers take every pool thread and block on the lock.
            std::thread::sleep(Duration::from_millis(100));
            let mut cells = vec![0u64; 100];
            for_each(cells.iter_mut().collect(), |c| *c += 1);
            drop(held);
            let read = readers.join().is_ok_and(|r| r.is_ok());
            let _ = tx.send((cells.iter().sum::<u64>(), read));
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok((100, true)));
    }

    /// The paths taken when the server pins its query threads (the tests above take the
    /// caller-first sections).
    #[test]
    fn the_pinned_paths_keep_item_order_the_first_error_and_every_item() {
        let pool = ThreadPoolBuilder::new().num_threads(2).build().expect("a pool of two threads");
        let items: Vec<u64> = (0..1000).collect();
        let moved = Moved::new();
        let doubled = in_pool(&pool, &items, &|&i: &u64| Ok::<u64, u64>(i * 2), &moved);
        assert_eq!(doubled, Ok(items.iter().map(|i| i * 2).collect()));
        assert_eq!(in_pool(&pool, &items, &|&i: &u64| if i % 7 == 3 { Err(i) } else { Ok(i) }, &moved), Err(3));
        let mut cells: Vec<u64> = vec![0; 1000];
        on_scoped_threads(cells.iter_mut().enumerate().collect(), 2, |(i, c)| *c += i as u64 + 1);
        assert!(cells.iter().enumerate().all(|(i, &c)| c == i as u64 + 1));
    }

    #[test]
    fn for_each_reaches_every_item_once() {
        let mut cells: Vec<u64> = vec![0; 1000];
        for_each(cells.iter_mut().enumerate().collect(), |(i, c)| *c += i as u64 + 1);
        assert!(cells.iter().enumerate().all(|(i, &c)| c == i as u64 + 1));
    }
}
