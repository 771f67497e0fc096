//! One parallel section in which the calling thread works too: the caller and up to
//! `helpers` pool jobs claim items from one counter, and the caller waits only for items a
//! helper has claimed and not finished, never for a helper to start.
//!
//! Why: a section handed whole to the pool (`ThreadPool::install`) puts the caller to sleep
//! and wakes a pool thread, then the caller again at the end. On this project's 2-core VMs a
//! wake-up costs 30-50 us, a tenth of a 0.4 ms aggregate over 100 partitions, and a section
//! of 60 us of work took 75 us on two threads against 59 on one. Here the caller starts on
//! the first item at once; a helper that wakes late finds fewer items, or none, and the
//! caller does not wait for it.
//!
//! Helpers are `'static` pool jobs, so they reach the section (on the caller's stack) through
//! a type-erased pointer, as rayon's own jobs reach theirs. What makes that sound: a helper
//! dereferences it only for an item it claimed below the item count, and counts the item
//! done only after it is through with it; the caller does not return, nor drop the section,
//! before every item is counted done. After its last count a helper touches only [`Claims`],
//! which it co-owns. Items never unwind: a panic is caught, kept, and resumed on the caller
//! (unless an earlier item returned an error, which one thread would have stopped at).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::Moved;
use rayon::ThreadPool;

/// What a helper may touch at any time: the claim counter, the finished count, and whom to
/// wake when the last item finishes.
struct Claims {
    /// The next item to claim (past `n` once all are claimed).
    next: AtomicUsize,
    /// Items finished (run, skipped after a failure, or caught panicking).
    done: AtomicUsize,
    /// Items in the section.
    n: usize,
    /// The calling thread, parked while helpers finish their items.
    caller: std::thread::Thread,
}

impl Claims {
    /// Claim items and run each with `run` until none is left.
    fn drain(&self, run: impl Fn(usize), wake_caller: bool) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.n {
                return;
            }
            run(i);
            let finished = self.done.fetch_add(1, Ordering::AcqRel) + 1;
            if wake_caller && finished == self.n {
                self.caller.unpark();
            }
        }
    }

    /// Wait until every item is finished: a short spin (a helper's last item is often a
    /// moment from its end, and a parked caller takes as long to wake as a pool thread), then
    /// parked until the helper that finishes the last one wakes us.
    fn wait_all(&self) {
        let start = std::time::Instant::now();
        while start.elapsed() < SPIN {
            for _ in 0..64 {
                if self.done.load(Ordering::Acquire) == self.n {
                    return;
                }
                std::hint::spin_loop();
            }
        }
        while self.done.load(Ordering::Acquire) < self.n {
            std::thread::park();
        }
    }
}

/// How long the caller spins before it parks: below the 30-50 us a wake-up costs here.
const SPIN: std::time::Duration = std::time::Duration::from_micros(20);

/// The section's state on the caller's stack: the items, the function, one result slot per
/// item, and how the section is failing if it is.
struct Section<'a, T, R, E, F> {
    items: &'a [T],
    f: &'a F,
    slots: Vec<Mutex<Option<Result<R, E>>>>,
    /// The first item that failed, or panicked (`usize::MAX`: none): later items are skipped.
    first_failed: AtomicUsize,
    /// The panic of the lowest item that panicked, resumed on the caller unless an earlier
    /// item failed.
    panic: Mutex<Option<(usize, Box<dyn Any + Send>)>>,
    /// Runs an item so that what it leaves allocated counts for the caller (`par.rs`).
    moved: &'a Moved,
}

impl<T: Sync, R: Send, E: Send, F: Fn(&T) -> Result<R, E> + Sync> Section<'_, T, R, E, F> {
    /// Run item `i` unless an earlier one failed; never unwinds.
    fn run(&self, i: usize) {
        if i > self.first_failed.load(Ordering::Relaxed) {
            return;
        }
        let Some(x) = self.items.get(i) else { return };
        match catch_unwind(AssertUnwindSafe(|| self.moved.run(|| (self.f)(x)))) {
            Ok(r) => {
                if r.is_err() {
                    self.first_failed.fetch_min(i, Ordering::Relaxed);
                }
                if let Some(slot) = self.slots.get(i) {
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
                }
            }
            Err(payload) => {
                self.first_failed.fetch_min(i, Ordering::Relaxed);
                let mut kept = self.panic.lock().unwrap_or_else(PoisonError::into_inner);
                // The payload set aside is forgotten, not dropped: its drop may panic, and
                // nothing may unwind out of an item.
                match kept.as_ref() {
                    Some((k, _)) if *k < i => std::mem::forget(payload),
                    _ => std::mem::forget(kept.replace((i, payload))),
                }
            }
        }
    }
}

/// [`Section::run`] through an erased pointer to the section.
///
/// # Safety
/// `section` points to a live `S` for the whole call.
unsafe fn run_erased<S: RunItem>(section: *const (), i: usize) {
    // SAFETY: the caller guarantees the section is alive (module docs).
    unsafe { (*section.cast::<S>()).run_item(i) }
}

/// A section's item runner, named so that [`run_erased`] can be instantiated for it.
trait RunItem {
    fn run_item(&self, i: usize);
}

impl<T: Sync, R: Send, E: Send, F: Fn(&T) -> Result<R, E> + Sync> RunItem for Section<'_, T, R, E, F> {
    fn run_item(&self, i: usize) {
        self.run(i)
    }
}

/// Aborts the process if dropped: held while helpers may reach the section, where an unwind
/// would free it under them (it cannot happen: items catch their panics).
struct AbortOnUnwind;

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        std::process::abort();
    }
}

/// The section's address, sent to a helper (see the module docs for why it stays valid).
struct SectionPtr(*const ());

// SAFETY: the pointee is a `Section` whose items, function and slots are `Sync`/`Send` as
// `RunItem`'s bounds require, and it is only read through `&` while alive.
#[allow(unsafe_code)]
unsafe impl Send for SectionPtr {}

/// `f` over `items` on the calling thread and up to `helpers` jobs of `pool`; results in item
/// order, up to the first failure (as `par::try_map`). `moved` runs each call (memory
/// credit). A panic in `f` is resumed here once every claimed item has finished.
#[allow(unsafe_code)]
pub(super) fn try_map<T: Sync, R: Send, E: Send, F: Fn(&T) -> Result<R, E> + Sync>(
    pool: &ThreadPool,
    helpers: usize,
    items: &[T],
    f: &F,
    moved: &Moved,
) -> Result<Vec<R>, E> {
    let n = items.len();
    let claims =
        Arc::new(Claims { next: AtomicUsize::new(0), done: AtomicUsize::new(0), n, caller: std::thread::current() });
    let section = Section {
        items,
        f,
        slots: (0..n).map(|_| Mutex::new(None)).collect(),
        first_failed: AtomicUsize::new(usize::MAX),
        panic: Mutex::new(None),
        moved,
    };
    let run: unsafe fn(*const (), usize) = run_erased::<Section<'_, T, R, E, F>>;
    for _ in 0..helpers.min(n.saturating_sub(1)) {
        let (claims, at) = (claims.clone(), SectionPtr(std::ptr::from_ref(&section).cast::<()>()));
        pool.spawn(move || {
            let at = at;
            // SAFETY: an item claimed below `n` is counted done only after this returns, and
            // the caller keeps the section alive until every item is done (module docs).
            claims.drain(|i| unsafe { run(at.0, i) }, true);
        });
    }
    // Helpers may be using the section until `wait_all` returns: nothing may unwind before.
    let guard = AbortOnUnwind;
    claims.drain(|i| section.run(i), false);
    claims.wait_all();
    std::mem::forget(guard);
    let first_failed = section.first_failed.load(Ordering::Relaxed);
    if let Some((i, p)) = section.panic.into_inner().unwrap_or_else(PoisonError::into_inner) {
        // A panic goes on unless an earlier item returned an error, as one thread would.
        if i == first_failed {
            std::panic::resume_unwind(p);
        }
    }
    // Every item before the first failure ran: the results up to it are whole.
    section.slots.into_iter().map_while(|s| s.into_inner().unwrap_or_else(PoisonError::into_inner)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::ThreadPoolBuilder;

    fn pool() -> ThreadPool {
        ThreadPoolBuilder::new().num_threads(2).build().expect("a pool of two threads")
    }

    #[test]
    fn sections_back_to_back_keep_every_item_in_order() {
        let pool = pool();
        for n in 0..400usize {
            let items: Vec<u64> = (0..n as u64 % 50).collect();
            // Uneven items, so that helpers and the caller interleave differently each time.
            let f = |&i: &u64| -> Result<u64, ()> { Ok((0..(i % 7) * 100).fold(i * i, |a, b| a ^ b)) };
            let want: Vec<u64> = items.iter().map(|i| f(i).expect("never fails")).collect();
            assert_eq!(try_map(&pool, 1, &items, &f, &Moved::new()), Ok(want));
        }
    }

    #[test]
    fn the_first_error_in_item_order_is_returned() {
        let pool = pool();
        let items: Vec<u64> = (0..1000).collect();
        let f = |&i: &u64| if i % 97 == 13 { Err(i) } else { Ok(i) };
        assert_eq!(try_map(&pool, 1, &items, &f, &Moved::new()), Err(13));
    }

    #[test]
    fn an_error_before_a_panicking_item_is_returned_as_one_thread_would() {
        let pool = pool();
        let items: Vec<u64> = (0..8).collect();
        // Item 2 fails late, while the other thread has gone on to item 7, which panics.
        let f = |&i: &u64| -> Result<u64, u64> {
            match i {
                2 => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    Err(2)
                }
                7 => panic!("item seven"),
                _ => Ok(i),
            }
        };
        let r = catch_unwind(AssertUnwindSafe(|| try_map(&pool, 1, &items, &f, &Moved::new())));
        assert_eq!(r.expect("item 2's error comes first"), Err(2));
    }

    #[test]
    fn a_panic_reaches_the_caller_after_every_claimed_item_finished() {
        let pool = pool();
        let finished = AtomicUsize::new(0);
        let items: Vec<u64> = (0..64).collect();
        let f = |&i: &u64| -> Result<u64, ()> {
            std::thread::sleep(std::time::Duration::from_micros(200));
            assert!(i != 20, "item twenty");
            finished.fetch_add(1, Ordering::Relaxed);
            Ok(i)
        };
        let caught = catch_unwind(AssertUnwindSafe(|| try_map(&pool, 1, &items, &f, &Moved::new())));
        let message = caught.expect_err("the panic propagates");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"item twenty"));
        // Items before the panicking one all ran; none started after the caller returned.
        let at_return = finished.load(Ordering::Relaxed);
        assert!(at_return >= 20, "{at_return} items finished");
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(finished.load(Ordering::Relaxed), at_return);
    }

    #[test]
    fn sections_nest_inside_items() {
        let pool = pool();
        let outer: Vec<u64> = (0..16).collect();
        let f = |&i: &u64| -> Result<u64, ()> {
            let inner: Vec<u64> = (0..i).collect();
            Ok(try_map(&pool, 1, &inner, &|&j: &u64| Ok::<u64, ()>(j + 1), &Moved::new())?.iter().sum())
        };
        let want: Vec<u64> = outer.iter().map(|&i| i * (i + 1) / 2).collect();
        assert_eq!(try_map(&pool, 1, &outer, &f, &Moved::new()), Ok(want));
    }
}
