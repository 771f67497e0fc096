//! Asking the CPU for a cache line before a loop reaches it: the one place the prefetch
//! instruction is written (appends' landing lines here, the SQL kernels' streams, the vector
//! index's nodes). A hint only: it changes no value and cannot fault.

/// Ask for the cache line holding `p`, any address: a prefetch reads nothing the program sees
/// and never faults (an address outside memory is dropped by the CPU).
#[inline(always)]
pub fn line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64, and a prefetch has no effect a program can observe
    // whatever the address (it neither reads a value nor faults).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
