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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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

// SAFETY: every method forwards to `System` unchanged, but for large blocks while reserved
// huge pages are on ([`crate::hugetlb`]): those are whole mappings of their own, 2 MiB-aligned
// (any `Layout` this program makes asks for less), zeroed, told apart from `System`'s by the
// table `hugetlb` keeps. The counter is only bookkeeping, and the huge page advice only changes
// how the kernel backs memory the block already owns.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = reserved(layout) {
            add(layout.size() as isize);
            return p;
        }
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
            advise_huge(p, layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = reserved(layout) {
            // A fresh mapping is zeroed.
            add(layout.size() as isize);
            return p;
        }
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size() as isize);
            advise_huge(p, layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.size() < HUGE_PAGE_MIN_BYTES || !crate::hugetlb::unmap(ptr, layout.size()) {
            // SAFETY: same contract as the caller's; not a reserved huge page block.
            unsafe { System.dealloc(ptr, layout) };
        }
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        // SAFETY: same contract as the caller's: `new_size` with the old alignment is a valid
        // layout.
        let moved = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if old >= HUGE_PAGE_MIN_BYTES && crate::hugetlb::holds(ptr) {
            let len = crate::hugetlb::mapping_len;
            if new_size >= HUGE_PAGE_MIN_BYTES && len(new_size) == len(old) {
                // The mapping holds it already, and its free will unmap the same length.
                add(new_size as isize - old as isize);
                return ptr;
            }
            let p = self.alloc(moved);
            // SAFETY: both blocks are live and distinct; the old one is freed once.
            unsafe { move_block(self, ptr, layout, p, new_size) };
            return p;
        }
        if let Some(p) = reserved(moved) {
            add(new_size as isize);
            // SAFETY: as above.
            unsafe { move_block(self, ptr, layout, p, new_size) };
            return p;
        }
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(new_size as isize - old as isize);
            if new_size > old {
                advise_huge(p, new_size);
            }
        }
        p
    }
}

/// Copy block `from` (of `layout`) into `to` (its new place, `to_size` bytes; nothing when
/// null: the allocation failed and `from` stays), then free `from`.
///
/// # Safety
/// `from` is a live block of `layout` from `alloc`, `to` null or a distinct live block of
/// `to_size` bytes.
unsafe fn move_block(alloc: &CountingAlloc, from: *mut u8, layout: Layout, to: *mut u8, to_size: usize) {
    if to.is_null() {
        return;
    }
    // SAFETY: the caller's contract; the copy is as long as the shorter block.
    unsafe {
        std::ptr::copy_nonoverlapping(from, to, layout.size().min(to_size));
        alloc.dealloc(from, layout);
    }
}

/// A block on reserved huge pages for `layout`, when they are on and it is large enough
/// ([`crate::hugetlb`]); `None` to take it from the system allocator.
#[inline]
fn reserved(layout: Layout) -> Option<*mut u8> {
    let wanted = layout.size() >= HUGE_PAGE_MIN_BYTES && layout.align() <= crate::hugetlb::PAGE;
    if wanted && crate::hugetlb::enabled() {
        crate::hugetlb::map(layout.size())
    } else {
        None
    }
}

/// Blocks of at least this many bytes are advised to be backed by 2 MiB pages: glibc's mmap
/// threshold ([`retain_freed_memory`]), so only blocks mapped fresh (and page-faulted in
/// anew each time) are advised, never the heap, whose pages stay faulted in from one use to
/// the next and whose mappings advice would split.
pub const HUGE_PAGE_MIN_BYTES: usize = MMAP_THRESHOLD;

/// Blocks this large and up get a mapping of their own from glibc ([`retain_freed_memory`]).
const MMAP_THRESHOLD: usize = 32 << 20;

/// Free heap kept mapped for the next allocation ([`retain_freed_memory`]): glibc trims above
/// it on its own, and a DROP TABLE that frees at least this much hands it back at once
/// ([`release_freed_memory`]).
pub const RETAINED_FREE_BYTES: usize = 256 << 20;
const HUGE_PAGE: usize = 2 << 20;

static HUGE_PAGES: AtomicBool = AtomicBool::new(false);
static HUGE_ADVISED: AtomicU64 = AtomicU64::new(0);
static HUGE_REFUSED: AtomicU64 = AtomicU64::new(0);

/// Advise the kernel to back large blocks ([`HUGE_PAGE_MIN_BYTES`] and up) with transparent
/// huge pages (`madvise(MADV_HUGEPAGE)`), from now on: under the `madvise` THP mode that
/// `zeptodb doctor` recommends, nothing else gets them. The server turns it on
/// (`--huge-pages on`, the default). A no-op off Linux.
///
/// Why: a query over partitions of 10M rows allocates intermediate columns of tens of MB,
/// mapped fresh each time: with 4 KiB pages, a page fault per 4 KiB written (a filtered GROUP
/// BY over 20M rows ran 2.3x faster with the advice). A refusal (a kernel without THP)
/// is counted ([`huge_page_advice`]) and the block keeps its small pages.
pub fn set_huge_pages(on: bool) {
    HUGE_PAGES.store(on, Ordering::Relaxed);
}

/// Blocks advised to use huge pages so far, and advice the kernel refused.
pub fn huge_page_advice() -> (u64, u64) {
    (HUGE_ADVISED.load(Ordering::Relaxed), HUGE_REFUSED.load(Ordering::Relaxed))
}

/// The 2 MiB-aligned pages inside block `p..p + size`, advised huge when enabled.
#[inline]
fn advise_huge(p: *mut u8, size: usize) {
    if let Some(took) = advise_pages(p, size, true) {
        let counter = if took { &HUGE_ADVISED } else { &HUGE_REFUSED };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// `madvise(MADV_HUGEPAGE)` (`huge`) or `MADV_NOHUGEPAGE` over the whole 2 MiB pages of block
/// `p..p + size`, for a block that gets the huge page advice (huge pages asked for, at least
/// [`HUGE_PAGE_MIN_BYTES`]): whether the kernel took it, `None` when nothing was asked (off
/// Linux too).
fn advise_pages(p: *const u8, size: usize, huge: bool) -> Option<bool> {
    if size < HUGE_PAGE_MIN_BYTES || !HUGE_PAGES.load(Ordering::Relaxed) {
        return None;
    }
    let (start, end) = huge_range(p as usize, size)?;
    #[cfg(target_os = "linux")]
    {
        let advice = if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE };
        // SAFETY: the range lies inside a block this process owns; the advice changes no
        // content, only how the kernel may back the pages.
        Some(unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) } == 0)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (start, end, huge);
        None
    }
}

/// Take back the huge page advice a block got when it was allocated ([`set_huge_pages`]):
/// `madvise(MADV_NOHUGEPAGE)` over its whole 2 MiB pages, called before anything is written
/// to them. For a large block that lives only while one load runs, written once on every
/// core (a load's row-to-group map, 40 MB at 10M rows): on this VM a fresh huge page of memory
/// the guest had not touched made a 10M-row table's map 52-88 ms to write where 4 KiB pages
/// took 29-47 ms; huge pages gained only where the memory had been used before (24-32 ms).
/// Only blocks that got the advice are touched (at least [`HUGE_PAGE_MIN_BYTES`], mapped
/// fresh, not from the reserved pool): advice on heap memory would split the heap's mappings
/// and outlive the block. A no-op off Linux and when huge pages were never asked for.
pub fn small_pages<T>(v: &[T]) {
    let p = v.as_ptr().cast::<u8>();
    if !crate::hugetlb::holds(p.cast_mut()) {
        // A refusal leaves the pages as they were.
        let _ = advise_pages(p, std::mem::size_of_val(v), false);
    }
}

/// The whole 2 MiB pages inside `addr..addr + size`, if any.
fn huge_range(addr: usize, size: usize) -> Option<(usize, usize)> {
    let start = addr.checked_next_multiple_of(HUGE_PAGE)?;
    let end = addr.checked_add(size)? / HUGE_PAGE * HUGE_PAGE;
    (start < end).then_some((start, end))
}

/// Bytes of the process's anonymous memory the kernel backs with transparent huge pages
/// (`AnonHugePages` of `/proc/self/smaps_rollup`), if known.
pub fn process_huge_page_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = s.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
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
/// kernel at once; binaries call this first thing (`zeptodb`, `zepto-bench`), the Python
/// module when it is imported. A scan over 10M
/// rows allocates hundreds of MB of columns and frees them at the end; with glibc's defaults
/// (trim above 128 KiB of free heap, large blocks mmap'ed) the next query page-faults all of
/// it in again, ~35% of its time on a 2-core VM (clear_page, memcg charging). Blocks up to
/// 32 MiB (glibc's ceiling for this setting) come from the heap, and up to 256 MiB of free
/// heap stays mapped: steady RSS can sit that much above live data, peak RSS is unchanged.
/// jemalloc and mimalloc retain memory the same way. A no-op on other platforms.
pub fn retain_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters, under glibc's own arena lock (a
    // Python process may already run other threads).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, RETAINED_FREE_BYTES as libc::c_int);
    }
}

/// The server's malloc arenas: one per core (glibc makes up to eight per core), each keeping a
/// whole heap's worth (64 MiB) of free memory at its top. Called first thing by the server
/// and the benchmarks that stand for it, not by the Python module (its host process's
/// threads and memory are not ours to size). A setting the environment already gives
/// (`GLIBC_TUNABLES=glibc.malloc.arena_max=N:glibc.malloc.top_pad=N`, `MALLOC_ARENA_MAX`,
/// `MALLOC_TOP_PAD_`) is left as given. A no-op on other platforms.
///
/// * Top pad: a heap of another thread's arena (the query pool's, the doors') is unmapped
///   once it is free beyond the top pad (128 KiB by default) and faulted in again by the next
///   batch or query. Measured 2026-11-30 (`bench/questdb.py --hosts 4000 --hours 2 --sync
///   always --no-questdb`, the same binary with and without the setting, alternated): ILP over
///   TCP 0.56-0.78M rows/s without, 0.92-0.94M with; an 8,000-group GROUP BY 14-23 ms and
///   14-16 ms.
/// * Arenas: the server's threads (HTTP workers, the blocking pool's ingest threads, which
///   come and go, the query pool) each settle in an arena, and every arena keeps its own free
///   memory and fragments of the partitions that grew there. Same script and method: peak RSS
///   over the HTTP and TCP loads 2.1-2.6 GiB with glibc's default, 1.3-1.4 GiB with two
///   arenas per core, 0.8-1.1 GiB with one; load rates and query medians within the noise.
pub fn tune_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
        let cores = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only changes allocator parameters, under glibc's own lock.
        unsafe {
            if !env_sets("glibc.malloc.arena_max", "MALLOC_ARENA_MAX") {
                libc::mallopt(libc::M_ARENA_MAX, cores);
            }
            if !env_sets("glibc.malloc.top_pad", "MALLOC_TOP_PAD_") {
                libc::mallopt(libc::M_TOP_PAD, 64 << 20);
            }
        }
    }
}

/// Whether the environment sets glibc tunable `tunable` (in `GLIBC_TUNABLES`) or its older
/// variable `var`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn env_sets(tunable: &str, var: &str) -> bool {
    let in_tunables = std::env::var("GLIBC_TUNABLES")
        .is_ok_and(|t| t.split(':').any(|kv| kv.split_once('=').is_some_and(|(k, _)| k == tunable)));
    in_tunables || std::env::var_os(var).is_some()
}

/// Hand the allocator's free memory back to the kernel now (glibc's `malloc_trim`, every
/// arena): after a large, lasting free such as DROP TABLE, which [`retain_freed_memory`] would
/// otherwise keep mapped (up to its threshold per arena; a dropped 2.9M-row table left 1.3 GiB
/// resident). A no-op on other platforms.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel, under each arena's lock.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Resident memory of the process in bytes (Linux `/proc/self/statm`), if known.
pub fn process_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::{huge_range, set_huge_pages, small_pages, HUGE_PAGE, HUGE_PAGE_MIN_BYTES};

    /// The `VmFlags` of the mapping holding `addr` in `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let (mut holds, mut flags) = (false, None);
        for line in smaps.lines() {
            let range = line.split_once(' ').map(|(r, _)| r).filter(|r| r.contains('-') && !r.ends_with(':'));
            if let Some((a, b)) = range.and_then(|r| r.split_once('-')) {
                let (a, b) = (usize::from_str_radix(a, 16).unwrap_or(0), usize::from_str_radix(b, 16).unwrap_or(0));
                holds = a <= addr && addr < b;
            } else if holds && line.starts_with("VmFlags:") {
                flags = Some(line.to_string());
            }
        }
        flags.expect("a mapping holds the address")
    }

    /// A block of 32 MiB and up gets its whole 2 MiB pages a mapping of their own flagged `nh`
    /// (no huge pages), where the kernel has transparent huge pages at all; a smaller block,
    /// which never got the huge page advice, is left as it is.
    #[cfg(target_os = "linux")]
    #[test]
    fn small_pages_take_back_the_advice_of_large_blocks_only() {
        set_huge_pages(true);
        let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
        let mut large = vec![0u64; 8 << 20];
        small_pages(&large);
        large.iter_mut().for_each(|x| *x = 7);
        let flags = vm_flags(large.as_ptr() as usize + (32 << 20));
        assert_eq!(flags.split_whitespace().any(|f| f == "nh"), thp, "{flags}");
        assert!(large.iter().all(|&x| x == 7), "advice changes no value");
        let small = vec![0u64; 1 << 20];
        small_pages(&small);
        let flags = vm_flags(small.as_ptr() as usize + (4 << 20));
        assert!(!flags.split_whitespace().any(|f| f == "nh"), "an 8 MiB block was advised: {flags}");
    }

    /// The advised range is whole aligned huge pages inside the block, and a block of the
    /// minimum size holds at least one wherever it starts.
    #[test]
    fn huge_range_is_whole_pages_inside_the_block() {
        for addr in [0x1000_0000usize, 0x1000_0010, 0x101f_fff0, 0x1020_0000 - 1, 0x7f12_3456_7890] {
            for size in [HUGE_PAGE_MIN_BYTES, HUGE_PAGE_MIN_BYTES + 1, 5 << 20, 64 << 20] {
                let (a, b) = huge_range(addr, size).expect("a minimum-size block holds a huge page");
                assert!(a >= addr && b <= addr + size, "{addr:#x}+{size}: {a:#x}..{b:#x} leaves the block");
                assert_eq!((a % HUGE_PAGE, b % HUGE_PAGE), (0, 0), "{a:#x}..{b:#x} is not page-aligned");
                assert!(a - addr < HUGE_PAGE && addr + size - b < HUGE_PAGE, "a whole page left out");
            }
        }
        assert_eq!(huge_range(0x1000_0010, HUGE_PAGE), None, "a block under two pages, unaligned, holds none");
        assert_eq!(huge_range(usize::MAX - 10, HUGE_PAGE_MIN_BYTES), None);
    }
}
