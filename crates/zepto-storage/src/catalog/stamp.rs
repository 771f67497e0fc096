//! Stamps: what names a table's content as of its last change, so a checkpoint or a backup
//! can keep the file it wrote for a table that has not changed since.
//!
//! A stamp is a process's run (a random number drawn once) and a number taken from one counter
//! every time a table is locked for writing, and when a table is created or replaced. Two
//! snapshots with equal stamps therefore hold the same rows: a table cannot change without its
//! write lock, and no two lockings in any run share a stamp. The converse does not
//! hold (a write that fails after the lock, or changes nothing, still moves the stamp on): an
//! unchanged table may be written again, a changed one is never taken for unchanged.
//!
//! Across a restart: a table loaded from a checkpoint keeps the stamp that checkpoint recorded
//! for it until its first change (replayed from the log or new), since its content is the
//! file's. A table the log creates gets a stamp of the new run. The run ids differ (and within
//! one process the counter only grows), so no stamp a checkpoint holds is ever drawn again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A table's content as of one change (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stamp {
    run: u64,
    n: u64,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

fn run() -> u64 {
    static RUN: OnceLock<u64> = OnceLock::new();
    *RUN.get_or_init(crate::rng::fresh_u64)
}

impl Stamp {
    /// A stamp no other change in any run has.
    pub fn next() -> Stamp {
        Stamp { run: run(), n: NEXT.fetch_add(1, Ordering::Relaxed) }
    }

    /// Parse [`Stamp`]'s `Display` form (`<run, 16 hex digits>.<n>`).
    pub fn parse(s: &str) -> Option<Stamp> {
        let (run, n) = s.split_once('.')?;
        let digits = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
        if run.len() != 16 || !run.bytes().all(|b| b.is_ascii_hexdigit()) || !digits {
            return None;
        }
        Some(Stamp { run: u64::from_str_radix(run, 16).ok()?, n: n.parse().ok()? })
    }
}

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}.{}", self.run, self.n)
    }
}

/// A stamp held beside a table, set under its write lock.
#[derive(Debug)]
pub(super) struct StampCell {
    run: AtomicU64,
    n: AtomicU64,
}

impl StampCell {
    /// A cell holding `s` until the table's first change.
    pub(super) fn new(s: Stamp) -> StampCell {
        StampCell { run: AtomicU64::new(s.run), n: AtomicU64::new(s.n) }
    }

    /// Move on to a new stamp of this run (the caller holds the table's write lock).
    pub(super) fn bump(&self) {
        self.run.store(run(), Ordering::Relaxed);
        self.n.store(NEXT.fetch_add(1, Ordering::Relaxed), Ordering::Release);
    }

    /// The stamp (the caller holds the table's lock, read or write, so no bump is halfway).
    pub(super) fn get(&self) -> Stamp {
        let n = self.n.load(Ordering::Acquire);
        Stamp { run: self.run.load(Ordering::Relaxed), n }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_unique_and_read_back() {
        let (a, b) = (Stamp::next(), Stamp::next());
        assert_ne!(a, b);
        assert_eq!(Stamp::parse(&a.to_string()), Some(a));
        let old_run = Stamp { run: run() ^ 1, n: 7 };
        let cell = StampCell::new(old_run);
        assert_eq!(cell.get(), old_run, "a loaded table keeps its checkpoint's stamp");
        cell.bump();
        assert_ne!(cell.get(), old_run);
        assert_eq!(cell.get().run, run(), "a change draws a stamp of this run");
        assert_eq!(Stamp::parse(&cell.get().to_string()), Some(cell.get()));
        for bad in [
            "",
            "12.3",
            "0123456789abcdef",
            "0123456789abcdeg.1",
            "0123456789abcdef.x",
            "+123456789abcdef.1",
            "0123456789abcdef.+1",
            "0123456789abcdef.",
        ] {
            assert_eq!(Stamp::parse(bad), None, "{bad}");
        }
    }
}
