//! Walking a level of the graph towards a query: the greedy descent through the upper levels,
//! and the beam search (the `ef` nearest found so far) that building and searching share.
//!
//! The beam search is HNSW's: take the nearest unexpanded candidate, stop when it is farther
//! than the worst of a full beam, else look at its neighbours not seen yet. A filter decides
//! which nodes may enter the beam (the answer), never which may be walked through: a walk
//! crosses rows the filter refuses to reach the ones it keeps. Before measuring a node's
//! neighbours, the walk asks the cache for all of them at once (their misses overlap), and
//! for the whole vector of the next one while measuring the current.

use super::store::Store;
use crate::kernel::Kernel;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::Acquire;

/// A node and its distance to the query, ordered by distance (then slot).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Scored {
    pub(super) dist: f32,
    pub(super) slot: u32,
}

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Scored) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Scored) -> Ordering {
        self.dist.total_cmp(&other.dist).then(self.slot.cmp(&other.slot))
    }
}

/// Which nodes one walk has seen: a mark per node holding the number of the walk that saw it
/// last, so starting a walk clears nothing (the marks are zeroed when the numbers wrap).
struct Visited {
    marks: Vec<u16>,
    now: u16,
}

impl Visited {
    fn start(&mut self, nodes: usize) {
        if self.marks.len() < nodes {
            self.marks.resize(nodes, 0);
        }
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.marks.fill(0);
            self.now = 1;
        }
    }

    /// True the first time the walk meets `slot` (and marks it).
    #[inline]
    fn first_visit(&mut self, slot: u32) -> bool {
        let mark = &mut self.marks[slot as usize];
        let first = *mark != self.now;
        *mark = self.now;
        first
    }
}

/// The buffers of one walk at a time, kept between walks.
pub(super) struct Walker {
    visited: Visited,
    near: BinaryHeap<Reverse<Scored>>,
    beam: BinaryHeap<Scored>,
    fresh: Vec<u32>,
    /// A search's answer before it becomes keys (the caller takes it for the walk and puts it
    /// back).
    pub(super) found: Vec<Scored>,
}

/// A filter on keys, called inside the walk.
pub(super) type Keep<'a> = Option<&'a (dyn Fn(u64) -> bool + Sync)>;

/// From `at`, move to a nearer neighbour on `level` while there is one: the nearest node found.
/// (Every node reached has its edges on level 0: an insert links a node from level 0 up.)
pub(super) fn descend<K: Kernel>(store: &Store<K::Elem>, q: &[K::Elem], mut at: Scored, level: usize) -> Scored {
    loop {
        let from = at.slot;
        let (count, edges) = store.edges(from, level);
        let n = (count.load(Acquire) as usize).min(edges.len());
        for e in &edges[..n] {
            let slot = e.load(Acquire);
            let dist = K::distance(q, store.vector(slot));
            if dist < at.dist {
                at = Scored { dist, slot };
            }
        }
        if at.slot == from {
            return at;
        }
    }
}

impl Walker {
    pub(super) fn new() -> Walker {
        Walker {
            visited: Visited { marks: Vec::new(), now: 0 },
            near: BinaryHeap::new(),
            beam: BinaryHeap::new(),
            fresh: Vec::new(),
            found: Vec::new(),
        }
    }

    /// Bytes the walker holds.
    pub(super) fn memory_bytes(&self) -> usize {
        self.visited.marks.capacity() * 2
            + self.fresh.capacity() * 4
            + (self.near.capacity() + self.beam.capacity() + self.found.capacity()) * std::mem::size_of::<Scored>()
    }

    /// The (up to) `ef` nodes of `level` nearest to `q` that `keep` accepts, nearest first, into
    /// `out` (cleared first), walking from `entry`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn search<K: Kernel>(
        &mut self,
        store: &Store<K::Elem>,
        q: &[K::Elem],
        entry: Scored,
        ef: usize,
        level: usize,
        keep: Keep<'_>,
        out: &mut Vec<Scored>,
    ) {
        debug_assert!(ef > 0);
        let accepts = |slot: u32| keep.is_none_or(|f| f(store.key(slot)));
        self.visited.start(store.capacity());
        self.near.clear();
        self.beam.clear();
        self.visited.first_visit(entry.slot);
        self.near.push(Reverse(entry));
        if accepts(entry.slot) {
            self.beam.push(entry);
        }
        let mut bound = self.beam.peek().map_or(f32::INFINITY, |w| w.dist);
        while let Some(&Reverse(next)) = self.near.peek() {
            if next.dist > bound && (self.beam.len() >= ef || keep.is_none()) {
                break;
            }
            self.near.pop();
            self.gather(store, next.slot, level);
            for i in 0..self.fresh.len() {
                let slot = self.fresh[i];
                if let Some(&after) = self.fresh.get(i + 1) {
                    store.prefetch(after, true);
                }
                let dist = K::distance(q, store.vector(slot));
                if self.beam.len() < ef || dist < bound {
                    self.near.push(Reverse(Scored { dist, slot }));
                    if accepts(slot) {
                        self.beam.push(Scored { dist, slot });
                        if self.beam.len() > ef {
                            self.beam.pop();
                        }
                    }
                    bound = self.beam.peek().map_or(f32::INFINITY, |w| w.dist);
                }
            }
        }
        out.clear();
        out.extend(self.beam.drain());
        out.sort_unstable();
    }

    /// The neighbours of `slot` on `level` this walk has not met, into `fresh`, each asked of
    /// the cache.
    fn gather<E: Copy>(&mut self, store: &Store<E>, slot: u32, level: usize) {
        self.fresh.clear();
        let (count, edges) = store.edges(slot, level);
        let n = (count.load(Acquire) as usize).min(edges.len());
        for e in &edges[..n] {
            let s = e.load(Acquire);
            if self.visited.first_visit(s) {
                store.prefetch(s, false);
                self.fresh.push(s);
            }
        }
    }
}
