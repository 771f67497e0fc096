//! Adding a node: its level, its neighbours on each level it is on, and the edges back to it.
//!
//! As hnswlib: descend greedily to the node's top level, then on each level down to 0 search a
//! beam of `ef_construction`, keep `m` of it by the neighbour heuristic (a candidate is kept
//! only if it is nearer to the new node than to every neighbour kept before it: edges point
//! in different directions, so the graph stays navigable across clusters). Once every level's
//! neighbours are chosen, link the node to them and them back to it, level 0 first: hnswlib
//! links each level as it goes down, so a walk of a concurrent insert or search could reach a
//! node on an upper level before it had edges on level 0, and find it alone. A neighbour whose
//! list is full keeps the best of its edges and the new one by the same heuristic. A node locks
//! only its own list while rewriting it, one lock at a time; an insert that may raise the top
//! level holds the graph's `raising` lock.

use super::store::Store;
use super::walk::{self, Scored, Walker};
use super::{pack, unpack, Hnsw};
use crate::kernel::Kernel;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};

/// Levels above this are not drawn (one node in `m^16` would reach it).
const MAX_LEVEL: usize = 16;

/// An insert's buffers, kept from one insert to the next on a thread.
#[derive(Default)]
pub(super) struct Scratch {
    found: Vec<Scored>,
    /// The neighbours chosen on each level, linked once every level is chosen.
    chosen: Vec<Vec<Scored>>,
    shrink: Shrink,
}

/// The buffers of rewriting a full neighbour list (`pool`, `kept`), and the duplicates the
/// neighbour heuristic holds back (`deferred`, also used by the insert's own choice).
#[derive(Default)]
struct Shrink {
    pool: Vec<Scored>,
    kept: Vec<Scored>,
    deferred: Vec<Scored>,
}

impl<K: Kernel> Hnsw<K> {
    /// Insert vector `v` under `key` into a store with room for it.
    pub(super) fn insert(
        &self,
        store: &Store<K::Elem>,
        walker: &mut Walker,
        scratch: &mut Scratch,
        key: u64,
        v: &[K::Elem],
    ) {
        let slot = u32::try_from(self.taken.fetch_add(1, AcqRel)).expect("slots are checked against u32 by add");
        let level = self.level_of(key);
        // SAFETY: `slot` was just handed to this insert alone; no edge points at it yet.
        unsafe { store.init(slot, key, level, v) };
        let raises = unpack(self.entry.load(Acquire)).is_none_or(|(_, top)| level > top);
        let _raising = raises.then(|| self.raising.lock().unwrap_or_else(|e| e.into_inner()));
        let Some((entry, top)) = unpack(self.entry.load(Acquire)) else {
            self.entry.store(pack(slot, level), Release);
            self.added.fetch_add(1, Release);
            return;
        };
        let mut at = Scored { dist: K::distance(v, store.vector(entry)), slot: entry };
        for l in (level + 1..=top).rev() {
            at = walk::descend::<K>(store, v, at, l);
        }
        let upto = level.min(top);
        if scratch.chosen.len() <= upto {
            scratch.chosen.resize_with(upto + 1, Vec::new);
        }
        for l in (0..=upto).rev() {
            walker.search::<K>(store, v, at, self.tuning.ef_construction, l, None, &mut scratch.found);
            scratch.found.retain(|s| s.slot != slot);
            if let Some(&nearest) = scratch.found.first() {
                at = nearest;
            }
            let chosen = &mut scratch.chosen[l];
            select::<K>(store, &scratch.found, self.tuning.m, chosen, &mut scratch.shrink.deferred);
        }
        // Level 0 first: a node is reachable on a level only once it has edges on level 0
        // (reached on an upper level before, a walk descending from it would find it alone).
        for l in 0..=upto {
            self.connect(store, slot, l, &scratch.chosen[l], &mut scratch.shrink);
        }
        if level > top {
            self.entry.store(pack(slot, level), Release);
        }
        self.added.fetch_add(1, Release);
    }

    /// Link `slot` on `level` to `chosen`, and each of them back to it.
    fn connect(&self, store: &Store<K::Elem>, slot: u32, level: usize, chosen: &[Scored], shrink: &mut Shrink) {
        let cap = if level == 0 { 2 * self.tuning.m } else { self.tuning.m };
        {
            let _mine = store.lock(slot);
            let (count, edges) = store.edges(slot, level);
            debug_assert!(chosen.len() <= edges.len());
            for (e, c) in edges.iter().zip(chosen) {
                e.store(c.slot, Release);
            }
            count.store(chosen.len().min(edges.len()) as u32, Release);
        }
        for i in 0..chosen.len() {
            let Scored { dist, slot: n } = chosen[i];
            let _theirs = store.lock(n);
            let (count, edges) = store.edges(n, level);
            let c = (count.load(Acquire) as usize).min(edges.len());
            if c < cap {
                edges[c].store(slot, Release);
                count.store(c as u32 + 1, Release);
                continue;
            }
            let vn = store.vector(n);
            shrink.pool.clear();
            shrink.pool.push(Scored { dist, slot });
            for e in &edges[..c] {
                let s = e.load(Acquire);
                shrink.pool.push(Scored { dist: K::distance(vn, store.vector(s)), slot: s });
            }
            shrink.pool.sort_unstable();
            select::<K>(store, &shrink.pool, cap, &mut shrink.kept, &mut shrink.deferred);
            for (e, k) in edges.iter().zip(&shrink.kept) {
                e.store(k.slot, Release);
            }
            count.store(shrink.kept.len() as u32, Release);
        }
    }

    /// The node's top level: `floor(-ln(u) / ln(m))` for `u` uniform in (0, 1], drawn from the
    /// key (a node keeps its level however the rows are split among threads).
    pub(super) fn level_of(&self, key: u64) -> usize {
        let mut z = key.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        ((-u.ln() * self.level_scale) as usize).min(MAX_LEVEL)
    }
}

/// Up to `cap` of `candidates` (nearest first) by the neighbour heuristic, into `out`: all of
/// them when they are no more than `cap`.
///
/// Exact duplicates of the node (distance 0) after the first are held back (`deferred`) and
/// fill what room the heuristic leaves: by the heuristic alone (ties kept) a node with many
/// duplicates keeps only them, and the last edges between two groups of duplicates would go
/// as their lists fill, leaving one group unreachable from the other.
fn select<K: Kernel>(
    store: &Store<K::Elem>,
    candidates: &[Scored],
    cap: usize,
    out: &mut Vec<Scored>,
    deferred: &mut Vec<Scored>,
) {
    out.clear();
    deferred.clear();
    if candidates.len() <= cap {
        out.extend_from_slice(candidates);
        return;
    }
    let mut duplicate_kept = false;
    for &c in candidates {
        if out.len() >= cap {
            break;
        }
        if c.dist == 0.0 && duplicate_kept {
            deferred.push(c);
            continue;
        }
        let vc = store.vector(c.slot);
        if out.iter().all(|r| K::distance(vc, store.vector(r.slot)) >= c.dist) {
            duplicate_kept |= c.dist == 0.0;
            out.push(c);
        }
    }
    let room = cap - out.len();
    out.extend(deferred.iter().take(room));
}
