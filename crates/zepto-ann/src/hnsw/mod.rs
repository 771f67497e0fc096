//! An HNSW graph (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor search
//! using Hierarchical Navigable Small World graphs"), written for how the engine uses it: nodes
//! keyed by row, added on many threads while others search, searched with a filter inside the
//! walk, never saved (a graph is rebuilt from its rows after a restart).
//!
//! Why our own and not usearch's: at a million vectors usearch built 1.93x and searched 2.4x
//! slower than hnswlib (bench/README), its layout costing a walk three cache misses per
//! neighbour ([`store`]). This one keeps hnswlib's layout and its algorithm (the neighbour
//! heuristic, a level per node drawn from an exponential law, a beam of `ef` candidates).
//!
//! * [`store`] — the nodes' memory: blocks of vector + edges, upper edges, locks.
//! * [`walk`] — the greedy descent and the beam search.
//! * [`insert`] — adding a node: its level, its neighbours on each level, the edges back.

mod insert;
mod store;
#[cfg(test)]
pub(crate) mod tests;
mod walk;

use crate::kernel::Kernel;
use crate::AnnError;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use store::{Shape, Store};
use walk::{Keep, Scored, Walker};

/// No node yet: the entry point's value in an empty graph.
const EMPTY: u64 = u64::MAX;

/// The tunables a graph is built with (checked by [`crate::HnswParams`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tuning {
    /// Edges a node keeps on each upper level (twice as many on level 0).
    pub(crate) m: usize,
    /// The beam while inserting.
    pub(crate) ef_construction: usize,
}

/// An HNSW graph over vectors of `dim` values ranked by `K`.
pub(crate) struct Hnsw<K: Kernel> {
    tuning: Tuning,
    /// `1 / ln(m)`: the scale of the exponential law a node's level is drawn from.
    level_scale: f64,
    store: RwLock<Store<K::Elem>>,
    /// Slots handed out (nodes being inserted or inserted).
    taken: AtomicUsize,
    /// Nodes inserted whole.
    added: AtomicUsize,
    /// The entry point: `slot | level << 32`, or [`EMPTY`].
    entry: AtomicU64,
    /// Held by an insert that may raise the top level, for its whole length.
    raising: Mutex<()>,
    /// One `add` at a time reserves and fills slots.
    adding: Mutex<()>,
    walkers: Mutex<Vec<Walker>>,
}

impl<K: Kernel> Hnsw<K> {
    /// An empty graph.
    pub(crate) fn new(dim: usize, tuning: Tuning) -> Hnsw<K> {
        assert!(tuning.m >= 2 && tuning.ef_construction >= tuning.m, "checked parameters");
        let shape = Shape::new(dim, std::mem::size_of::<K::Elem>(), 2 * tuning.m);
        Hnsw {
            tuning,
            level_scale: 1.0 / (tuning.m as f64).ln(),
            store: RwLock::new(Store::new(shape, tuning.m)),
            taken: AtomicUsize::new(0),
            added: AtomicUsize::new(0),
            entry: AtomicU64::new(EMPTY),
            raising: Mutex::new(()),
            adding: Mutex::new(()),
            walkers: Mutex::new(Vec::new()),
        }
    }

    /// Nodes in the graph.
    pub(crate) fn len(&self) -> usize {
        self.added.load(Ordering::Acquire)
    }

    /// Bytes held: nodes, edges, locks and the walkers' buffers.
    pub(crate) fn memory_bytes(&self) -> usize {
        let walkers: usize =
            self.walkers.lock().unwrap_or_else(|e| e.into_inner()).iter().map(Walker::memory_bytes).sum();
        self.store.read().unwrap_or_else(|e| e.into_inner()).memory_bytes() + walkers
    }

    /// Add `rows` vectors on up to `threads` threads: `prepare(i, scratch, out)` puts row `i`'s
    /// vector into `out` (empty; `scratch` is the thread's own) and answers its key. Searches
    /// may run meanwhile; adds run one at a time.
    pub(crate) fn add<S, F>(&self, rows: usize, threads: usize, prepare: F) -> Result<(), AnnError>
    where
        S: Default,
        F: Fn(usize, &mut S, &mut Vec<K::Elem>) -> u64 + Sync,
    {
        let _one = self.adding.lock().unwrap_or_else(|e| e.into_inner());
        let want = self.taken.load(Ordering::Acquire) + rows;
        if u32::try_from(want).is_err() {
            return Err(AnnError::Invalid(format!("a graph of {want} vectors: at most {} fit", u32::MAX)));
        }
        {
            let mut store = self.store.write().unwrap_or_else(|e| e.into_inner());
            if want > store.capacity() {
                let grown = want.max(store.capacity().saturating_mul(2)).max(1024);
                store.grow(grown)?;
            }
        }
        let store = self.store.read().unwrap_or_else(|e| e.into_inner());
        let next = AtomicUsize::new(0);
        let work = || {
            let mut walker = self.walker();
            let mut v = Vec::new();
            let mut scratch = insert::Scratch::default();
            let mut own = S::default();
            loop {
                let row = next.fetch_add(1, Ordering::Relaxed);
                if row >= rows {
                    break;
                }
                v.clear();
                let key = prepare(row, &mut own, &mut v);
                self.insert(&store, &mut walker, &mut scratch, key, &v);
            }
            self.give_back(walker);
        };
        let threads = threads.clamp(1, rows.clamp(1, 256));
        std::thread::scope(|s| {
            for _ in 1..threads {
                s.spawn(work);
            }
            work();
        });
        Ok(())
    }

    /// The `k` nodes nearest to `q` that `keep` accepts, nearest first, each as `hit(key,
    /// distance)`, with a beam of `ef` (at least `k`).
    pub(crate) fn search<H>(
        &self,
        q: &[K::Elem],
        k: usize,
        ef: usize,
        keep: Keep<'_>,
        hit: impl Fn(u64, f32) -> H,
    ) -> Vec<H> {
        let Some((slot, top)) = unpack(self.entry.load(Ordering::Acquire)) else { return Vec::new() };
        let store = self.store.read().unwrap_or_else(|e| e.into_inner());
        let mut at = Scored { dist: K::distance(q, store.vector(slot)), slot };
        for level in (1..=top).rev() {
            at = walk::descend::<K>(&store, q, at, level);
        }
        let mut walker = self.walker();
        let mut found = std::mem::take(&mut walker.found);
        walker.search::<K>(&store, q, at, ef.max(k), 0, keep, &mut found);
        let hits = found.iter().take(k).map(|s| hit(store.key(s.slot), s.dist)).collect();
        walker.found = found;
        self.give_back(walker);
        hits
    }

    fn walker(&self) -> Walker {
        self.walkers.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_else(Walker::new)
    }

    fn give_back(&self, walker: Walker) {
        self.walkers.lock().unwrap_or_else(|e| e.into_inner()).push(walker);
    }
}

/// The entry point's slot and level, or `None` in an empty graph.
fn unpack(entry: u64) -> Option<(u32, usize)> {
    (entry != EMPTY).then_some((entry as u32, (entry >> 32) as usize))
}

fn pack(slot: u32, level: usize) -> u64 {
    u64::from(slot) | (level as u64) << 32
}
