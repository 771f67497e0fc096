//! Per-thread allocation accounting, so one running query's memory can be limited.
//!
//! [`CountingAlloc`] wraps the system allocator and keeps, per thread, the net number of bytes
//! that thread has allocated minus freed. A binary opts in with
//! `#[global_allocator] static A: CountingAlloc = CountingAlloc;` (the `zeptodb` binary does);
//! without it [`thread_net_bytes`] stays 0 and memory limits never trip.
//!
//! Why per thread: a query runs on one thread, start to finish, so the growth of that
//! thread's counter over the query is the memory the query holds (memory freed by another
//! thread, e.g. a result sent after the query ended, only makes later readings lower). The
//! cost is one thread-local add per allocation, with no shared cache line between threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static NET: Cell<isize> = const { Cell::new(0) };
    /// The highest `NET` since [`reset_thread_peak`] (what EXPLAIN ANALYZE reports per operator).
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

/// The system allocator, counting net bytes per thread.
pub struct CountingAlloc;

#[inline]
fn add(delta: isize) {
    // `try_with` so that allocations during thread teardown are simply not counted.
    let _ = NET.try_with(|c| {
        let now = c.get().wrapping_add(delta);
        c.set(now);
        if delta > 0 {
            let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
        }
    });
}

// SAFETY: every method forwards to `System` unchanged; the counter is only bookkeeping.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Net bytes allocated by the calling thread since it started (0 without [`CountingAlloc`]).
pub fn thread_net_bytes() -> isize {
    NET.try_with(Cell::get).unwrap_or(0)
}

/// The highest [`thread_net_bytes`] of the calling thread since the last
/// [`reset_thread_peak`].
pub fn thread_peak_bytes() -> isize {
    PEAK.try_with(Cell::get).unwrap_or(0)
}

/// Start measuring the calling thread's peak again from `to` (a nested measurement saves the
/// outer peak, resets, and restores the maximum of both when it ends).
pub fn reset_thread_peak(to: isize) {
    let _ = PEAK.try_with(|p| p.set(to));
}

/// Count `bytes` as allocated by the calling thread: memory a helper thread allocated on its
/// behalf and handed over (see [`crate::par`]), so per-query accounting stays whole.
pub fn credit_thread(bytes: isize) {
    add(bytes);
}

/// Keep freed memory in the process for the next query instead of handing it back to the
/// kernel at once; binaries call this first thing (`zeptodb`, `zepto-bench`). A scan over 10M
/// rows allocates hundreds of MB of columns and frees them at the end; with glibc's defaults
/// (trim above 128 KiB of free heap, large blocks mmap'ed) the next query page-faults all of
/// it in again, ~35% of its time on a 2-core VM (clear_page, memcg charging). Blocks up to
/// 32 MiB (glibc's ceiling for this setting) come from the heap, and up to 256 MiB of free
/// heap stays mapped: steady RSS can sit that much above live data, peak RSS is unchanged.
/// jemalloc and mimalloc retain memory the same way. A no-op on other platforms.
pub fn retain_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; it is called before other threads
    // start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// Resident memory of the process in bytes (Linux `/proc/self/statm`), if known.
pub fn process_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
