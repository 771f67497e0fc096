//! Large blocks on reserved huge pages (`--huge-pages reserved`): `mmap(MAP_HUGETLB)` from the
//! pool an operator sets aside (`vm.nr_hugepages`), for hosts that turn transparent huge pages
//! off, as many database vendors advise, where [`crate::mem`]'s `MADV_HUGEPAGE` advice is
//! ignored.
//!
//! [`crate::mem::CountingAlloc`] asks `map` for every block of
//! [`crate::mem::HUGE_PAGE_MIN_BYTES`] and up while this is on. A mapping is the block's size
//! rounded up to 2 MiB, on 2 MiB pages whatever the host's default huge page size
//! (`MAP_HUGE_2MB`: the pool is `/sys/kernel/mm/hugepages/hugepages-2048kB`, [`pool`]). The
//! kernel reserves its pages when it is made, so a pool too small refuses at once and the
//! block falls back to the system allocator with the transparent huge page advice, counted
//! ([`stats`]). (A cgroup's `hugetlb` limit is charged at the first touch instead: a container
//! that caps huge pages below its pool can be killed by SIGBUS there, so give it no pool it may
//! not use.)
//!
//! The blocks mapped here are kept in a fixed table of addresses ([`SLOTS`] entries, no
//! allocation: this runs inside the global allocator), so a free or a growth can tell them
//! from the system allocator's. With the table full a block falls back too. Only blocks of
//! the minimum size and up are looked up, and only while any are mapped.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// A huge page: mappings are whole pages.
pub const PAGE: usize = 2 << 20;

/// How many blocks can be mapped at once (at least 32 MiB each: 32 GiB and up).
pub const SLOTS: usize = 1024;

static ON: AtomicBool = AtomicBool::new(false);
static BLOCKS: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static MAPPED_BYTES: AtomicU64 = AtomicU64::new(0);
static MAPPED_BLOCKS: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// Map large blocks on reserved huge pages from now on (`on`), or stop (blocks already mapped
/// stay until freed). A no-op off Linux.
pub fn set(on: bool) {
    ON.store(on && cfg!(target_os = "linux"), Ordering::Relaxed);
}

/// Whether large blocks are mapped on reserved huge pages.
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

/// What was done: bytes on reserved huge pages now, blocks mapped on them so far, and blocks
/// that fell back to the system allocator (the pool or the table was full).
pub fn stats() -> (u64, u64, u64) {
    (MAPPED_BYTES.load(Ordering::Relaxed), MAPPED_BLOCKS.load(Ordering::Relaxed), FALLBACKS.load(Ordering::Relaxed))
}

/// The length of the mapping that holds `size` bytes (whole pages).
pub fn mapping_len(size: usize) -> Option<usize> {
    size.checked_next_multiple_of(PAGE)
}

/// A block of `size` bytes (zeroed, 2 MiB-aligned) on reserved huge pages, or `None` (counted
/// as a fallback) when the pool or the table cannot take it.
pub(crate) fn map(size: usize) -> Option<*mut u8> {
    let len = mapping_len(size)?;
    let Some(p) = mmap_huge(len) else {
        FALLBACKS.fetch_add(1, Ordering::Relaxed);
        return None;
    };
    if !remember(p as usize) {
        munmap(p, len);
        FALLBACKS.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    MAPPED_BYTES.fetch_add(len as u64, Ordering::Relaxed);
    MAPPED_BLOCKS.fetch_add(1, Ordering::Relaxed);
    Some(p)
}

/// Whether `p` is a block [`map`] made (and not yet unmapped).
pub(crate) fn holds(p: *mut u8) -> bool {
    MAPPED_BYTES.load(Ordering::Relaxed) > 0 && BLOCKS.iter().any(|b| b.load(Ordering::Acquire) == p as usize)
}

/// Unmap `p`, a block of `size` bytes, if [`map`] made it: false (nothing done) otherwise.
pub(crate) fn unmap(p: *mut u8, size: usize) -> bool {
    if MAPPED_BYTES.load(Ordering::Relaxed) == 0 {
        return false;
    }
    // Every block `map` made has a mapping length: one without cannot be ours.
    let Some(len) = mapping_len(size) else { return false };
    let ours = |b: &AtomicUsize| b.load(Ordering::Acquire) == p as usize;
    let Some(slot) = BLOCKS.iter().find(|b| ours(b)) else { return false };
    // Only this block's owner frees it, so the slot still holds it.
    slot.store(0, Ordering::Release);
    munmap(p, len);
    MAPPED_BYTES.fetch_sub(len as u64, Ordering::Relaxed);
    true
}

/// Put `addr` in a free slot of the table; false when it is full.
fn remember(addr: usize) -> bool {
    debug_assert_ne!(addr, 0);
    let free = |b: &&AtomicUsize| b.load(Ordering::Relaxed) == 0;
    BLOCKS.iter().filter(free).any(|b| b.compare_exchange(0, addr, Ordering::AcqRel, Ordering::Relaxed).is_ok())
}

/// Where the kernel shows the 2 MiB page pool (`nr_hugepages`, `free_hugepages`).
pub const POOL_DIR: &str = "/sys/kernel/mm/hugepages/hugepages-2048kB";

/// The 2 MiB page pool: pages reserved, and free now (`None` where the kernel does not say).
pub fn pool() -> Option<(u64, u64)> {
    let read =
        |f: &str| -> Option<u64> { std::fs::read_to_string(format!("{POOL_DIR}/{f}")).ok()?.trim().parse().ok() };
    Some((read("nr_hugepages")?, read("free_hugepages")?))
}

#[cfg(target_os = "linux")]
fn mmap_huge(len: usize) -> Option<*mut u8> {
    // SAFETY: an anonymous private mapping of a fresh range: it aliases nothing. The kernel
    // reserves its huge pages now (no MAP_NORESERVE), so it fails here rather than at a fault.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB | libc::MAP_HUGE_2MB,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p.cast::<u8>())
}

#[cfg(not(target_os = "linux"))]
fn mmap_huge(_len: usize) -> Option<*mut u8> {
    None
}

fn munmap(p: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: `p..p + len` is a whole mapping `mmap_huge` made, no longer used by anyone (its
    // block was freed, or never handed out).
    unsafe {
        let r = libc::munmap(p.cast(), len);
        debug_assert_eq!(r, 0, "unmapping a huge page block");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (p, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_are_whole_pages() {
        assert_eq!(mapping_len(1), Some(PAGE));
        assert_eq!(mapping_len(PAGE), Some(PAGE));
        assert_eq!(mapping_len(PAGE + 1), Some(2 * PAGE));
        assert_eq!(mapping_len(usize::MAX), None);
    }

    /// With pages reserved (root: `vm.nr_hugepages`), a block maps, is found, reads and
    /// writes, and unmaps; without, it falls back and says so. Either way the counters agree.
    #[test]
    fn a_block_maps_on_reserved_pages_or_falls_back() {
        let (_, blocks, fallbacks) = stats();
        let free = pool().map_or(0, |(_, free)| free);
        let mapped = map(3 * PAGE + 5);
        // Another test could take pages meanwhile; none here maps them.
        assert_eq!(mapped.is_some(), free >= 4, "{free} free huge pages");
        match mapped {
            Some(p) => {
                assert_eq!(p as usize % PAGE, 0, "2 MiB-aligned");
                assert!(holds(p));
                // SAFETY: the block is 4 pages long and ours.
                unsafe {
                    assert_eq!(*p.add(3 * PAGE), 0, "zeroed");
                    p.add(3 * PAGE + 4).write(7);
                    assert_eq!(*p.add(3 * PAGE + 4), 7);
                }
                assert!(stats().1 > blocks);
                assert!(unmap(p, 3 * PAGE + 5));
                assert!(!holds(p) && !unmap(p, 3 * PAGE + 5), "unmapped once");
            }
            None => assert!(stats().2 > fallbacks, "a refusal is counted"),
        }
        let mut x = 0u8;
        assert!(!unmap(&mut x, 1), "not ours");
    }
}
