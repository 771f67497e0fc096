//! A tiny deterministic random source (xorshift64) for generated test data: the same seed gives
//! the same data on every machine, without a dependency. Not for anything that needs real
//! randomness; [`fresh_u64`] is for ids no other run or database may draw.

/// 64 bits no other call (in this process or any other) is likely to give: a randomly keyed
/// hasher (the standard library seeds its keys from the OS, and moves them on for every hasher
/// a thread makes) over the process id and the time for good measure.
pub fn fresh_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.finish()
}

/// A xorshift64 generator. The seed must be non-zero (zero is its one fixed point).
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator started at `seed` (non-zero).
    pub fn new(seed: u64) -> XorShift {
        assert_ne!(seed, 0, "xorshift needs a non-zero seed");
        XorShift(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An index in `0..n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}
