//! Helpers shared by this crate's integration tests.

/// The shared deterministic generator of test data.
pub use zepto_storage::rng::XorShift as Rng;
