//! Helpers shared by this crate's integration tests.

/// A xorshift generator: reproducible random test data without a dependency.
pub struct Rng(pub u64);

impl Rng {
    /// A value in `0..n`.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}
