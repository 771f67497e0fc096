//! A tiny deterministic random source for tests (xorshift64): reproducible data without a
//! dependency.

/// A generator of numbers in `0..n`, seeded with `seed` (non-zero).
pub(crate) fn below(mut seed: u64) -> impl FnMut(u64) -> u64 {
    assert_ne!(seed, 0, "xorshift needs a non-zero seed");
    move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}
