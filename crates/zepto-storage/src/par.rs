//! Data parallelism for the few places one request has independent heavy pieces of work
//! (decoding history files, assembling partitions): scoped threads, one per core, taking items
//! one at a time so uneven items (a Zipf-sized symbol, a larger day) balance out. What the
//! helpers allocated and did not free is credited to the calling thread when they finish, so
//! per-thread memory accounting ([`crate::mem`]) still sees the whole request.

use crate::mem::{credit_thread, thread_net_bytes};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Threads the parallel sections use: one per core this process may run on, asked once
/// (`available_parallelism` reads the cgroup and affinity each call).
pub fn threads() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// One helper's results (item index, result) and its net allocation.
type Done<R, E> = (Vec<(usize, Result<R, E>)>, isize);

/// `f` over `items` on up to one thread per core; results in item order. After an error no new
/// items start, and the first error in item order is returned. A panic in `f` propagates.
pub fn try_map<T: Sync, R: Send, E: Send>(items: &[T], f: impl Fn(&T) -> Result<R, E> + Sync) -> Result<Vec<R>, E> {
    let threads = threads().min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let done: Vec<Done<R, E>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        let r = f(item);
                        let failed = r.is_err();
                        out.push((i, r));
                        if failed {
                            next.store(items.len(), Ordering::Relaxed);
                        }
                    }
                    (out, thread_net_bytes())
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    credit_thread(done.iter().map(|(_, bytes)| bytes).sum());
    let mut all: Vec<(usize, Result<R, E>)> = done.into_iter().flat_map(|(out, _)| out).collect();
    all.sort_unstable_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// `f` on every item, owned, on up to one thread per core, items taken one at a time (in no
/// particular order). For work that mutates disjoint things: pass `&mut` borrows as items.
pub fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Sync) {
    let threads = threads().min(items.len());
    if threads <= 1 {
        items.into_iter().for_each(f);
        return;
    }
    let queue = std::sync::Mutex::new(items);
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

    #[test]
    fn for_each_reaches_every_item_once() {
        let mut cells: Vec<u64> = vec![0; 1000];
        for_each(cells.iter_mut().enumerate().collect(), |(i, c)| *c += i as u64 + 1);
        assert!(cells.iter().enumerate().all(|(i, &c)| c == i as u64 + 1));
    }
}
