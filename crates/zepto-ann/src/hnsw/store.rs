//! The graph's memory: one block per node holding its vector beside its bottom-level edges.
//!
//! Why this layout: at a million vectors neither the vectors nor the edges fit in the caches,
//! and a walk's time is its cache misses. A step of the walk reads a node's edges, then the
//! vectors of the neighbours it has not seen. With each node's vector, key and level-0 edges in
//! one block of consecutive cache lines, a neighbour costs one miss (and the hardware streams
//! the rest of its lines), and its address is `slot * block`: it can be prefetched before it is
//! needed. (usearch keeps vectors apart from edges, behind a table of pointers: three misses.)
//!
//! A block: `[vector][key u64][level u32][count u32][edges u32 * m0]`, padded to 64 bytes.
//! Nodes above level 0 (one in `m`) keep their upper edges in a separate array each.
//!
//! Concurrency: a node's vector, key, level and upper-edge array are written once, by the
//! thread inserting it, before any edge points at it; edges and counts are atomics, stored
//! with `Release` and loaded with `Acquire`, so a thread that reaches a node through an edge
//! sees it whole. Rewriting a node's edges takes its lock; reading them takes none (a reader
//! may see a list half rewritten: every entry is still a whole node, which is all a walk needs).
//! The arena only moves when it grows, which the owner does with no walk running.

use crate::AnnError;
use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::AtomicU32;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Blocks start on cache lines.
const ALIGN: usize = 64;

/// Where each part of a node's block sits, in bytes from its start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    dim: usize,
    key_at: usize,
    level_at: usize,
    count_at: usize,
    m0: usize,
    block: usize,
}

impl Shape {
    /// Blocks for vectors of `dim` values of `elem` bytes with up to `m0` level-0 edges.
    pub(super) fn new(dim: usize, elem: usize, m0: usize) -> Shape {
        let key_at = (dim * elem).next_multiple_of(8);
        let level_at = key_at + 8;
        let count_at = level_at + 4;
        let block = (count_at + 4 + 4 * m0).next_multiple_of(ALIGN);
        Shape { dim, key_at, level_at, count_at, m0, block }
    }

    #[cfg(test)]
    pub(super) fn block(&self) -> usize {
        self.block
    }

    #[cfg(test)]
    pub(super) fn key_at(&self) -> usize {
        self.key_at
    }

    /// Where the last edge ends.
    #[cfg(test)]
    pub(super) fn edges_end(&self) -> usize {
        self.count_at + 4 + 4 * self.m0
    }
}

/// Memory for `capacity` blocks, zeroed, aligned to cache lines.
struct Arena {
    ptr: NonNull<u8>,
    bytes: usize,
}

// SAFETY: the arena is plain memory; who may write which block when is the store's contract
// (module doc), enforced by its callers.
unsafe impl Send for Arena {}
// SAFETY: as for `Send`.
unsafe impl Sync for Arena {}

impl Arena {
    fn empty() -> Arena {
        Arena { ptr: NonNull::dangling(), bytes: 0 }
    }

    /// Grow to `bytes` (at least the current size), keeping the contents; the new part is zero.
    fn grow(&mut self, bytes: usize) -> Result<(), AnnError> {
        debug_assert!(bytes >= self.bytes);
        if bytes <= self.bytes {
            return Ok(());
        }
        let oom = || AnnError::OutOfMemory { bytes };
        let layout = Layout::from_size_align(bytes, ALIGN).map_err(|_| oom())?;
        // SAFETY: `layout` has a non-zero size; an existing allocation was made with the same
        // alignment and `self.bytes` as its size; the tail past the old size is zeroed before use.
        let ptr = unsafe {
            if self.bytes == 0 {
                alloc::alloc_zeroed(layout)
            } else {
                let old = Layout::from_size_align_unchecked(self.bytes, ALIGN);
                let p = alloc::realloc(self.ptr.as_ptr(), old, bytes);
                if !p.is_null() {
                    p.add(self.bytes).write_bytes(0, bytes - self.bytes);
                }
                p
            }
        };
        self.ptr = NonNull::new(ptr).ok_or_else(oom)?;
        self.bytes = bytes;
        Ok(())
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if self.bytes > 0 {
            // SAFETY: allocated in `grow` with this size and alignment.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), Layout::from_size_align_unchecked(self.bytes, ALIGN)) }
        }
    }
}

/// The nodes of one graph: blocks, upper edges and per-node locks, `capacity` of each.
pub(super) struct Store<E> {
    shape: Shape,
    arena: Arena,
    upper: Vec<OnceLock<Box<[AtomicU32]>>>,
    locks: Vec<Mutex<()>>,
    m: usize,
    _elem: std::marker::PhantomData<E>,
}

impl<E: Copy> Store<E> {
    /// An empty store for nodes of `shape` with up to `m` edges on each upper level.
    pub(super) fn new(shape: Shape, m: usize) -> Store<E> {
        debug_assert!(shape.key_at >= std::mem::size_of::<E>() * shape.dim, "the key after the vector");
        debug_assert!(std::mem::align_of::<E>() <= 8);
        Store { shape, arena: Arena::empty(), upper: Vec::new(), locks: Vec::new(), m, _elem: std::marker::PhantomData }
    }

    /// Nodes there is room for.
    pub(super) fn capacity(&self) -> usize {
        self.locks.len()
    }

    /// Make room for `nodes` nodes (no fewer than now).
    pub(super) fn grow(&mut self, nodes: usize) -> Result<(), AnnError> {
        if nodes <= self.capacity() {
            return Ok(());
        }
        let bytes = nodes.checked_mul(self.shape.block).ok_or_else(|| AnnError::Invalid(format!("{nodes} nodes")))?;
        self.arena.grow(bytes)?;
        self.upper.resize_with(nodes, OnceLock::new);
        self.locks.resize_with(nodes, || Mutex::new(()));
        Ok(())
    }

    /// Bytes held: blocks, upper edges, locks.
    pub(super) fn memory_bytes(&self) -> usize {
        let upper: usize = self.upper.iter().filter_map(|u| u.get()).map(|e| e.len() * 4).sum();
        self.arena.bytes
            + upper
            + self.upper.capacity() * std::mem::size_of::<OnceLock<Box<[AtomicU32]>>>()
            + self.locks.capacity() * std::mem::size_of::<Mutex<()>>()
    }

    fn block(&self, slot: u32) -> *mut u8 {
        let slot = slot as usize;
        assert!(slot < self.capacity(), "node {slot} past the store's {}", self.capacity());
        // SAFETY: `slot` is within the arena (asserted just above).
        unsafe { self.arena.ptr.as_ptr().add(slot * self.shape.block) }
    }

    /// Fill a fresh node: its vector, key, level and (above level 0) its upper edge lists.
    ///
    /// # Safety
    /// `slot` was handed to this caller alone and no edge points at it yet.
    pub(super) unsafe fn init(&self, slot: u32, key: u64, level: usize, vector: &[E]) {
        assert_eq!(vector.len(), self.shape.dim, "a vector of the graph's dimension");
        let b = self.block(slot);
        // SAFETY: the block is this caller's alone (the contract); the offsets are within it
        // and aligned for their types (`Shape::new`, 64-byte blocks, `E` aligned to at most 8).
        unsafe {
            std::ptr::copy_nonoverlapping(vector.as_ptr(), b.cast::<E>(), vector.len());
            b.add(self.shape.key_at).cast::<u64>().write(key);
            b.add(self.shape.level_at).cast::<u32>().write(level as u32);
        }
        if level > 0 {
            let lists: Box<[AtomicU32]> = (0..level * (1 + self.m)).map(|_| AtomicU32::new(0)).collect();
            let set = self.upper[slot as usize].set(lists);
            debug_assert!(set.is_ok(), "node {slot} initialised twice");
        }
    }

    /// The node's vector.
    #[inline]
    pub(super) fn vector(&self, slot: u32) -> &[E] {
        // SAFETY: a node reached through an edge or the entry point was written whole before
        // (module doc); the vector sits at the block's start, aligned for `E`.
        unsafe { std::slice::from_raw_parts(self.block(slot).cast::<E>(), self.shape.dim) }
    }

    /// The node's key (the row it stands for).
    #[inline]
    pub(super) fn key(&self, slot: u32) -> u64 {
        // SAFETY: as for `vector`; the key is at an 8-aligned offset.
        unsafe { self.block(slot).add(self.shape.key_at).cast::<u64>().read() }
    }

    /// The node's top level.
    pub(super) fn level(&self, slot: u32) -> usize {
        // SAFETY: as for `vector`.
        unsafe { self.block(slot).add(self.shape.level_at).cast::<u32>().read() as usize }
    }

    /// The node's edge count and edge slots on `level` (0 up to its own level).
    #[inline]
    pub(super) fn edges(&self, slot: u32, level: usize) -> (&AtomicU32, &[AtomicU32]) {
        if level == 0 {
            let p = self.block(slot);
            // SAFETY: the count and `m0` edges are within the block, 4-aligned; `AtomicU32`
            // has `u32`'s layout, and the block's memory is only accessed atomically there.
            return unsafe {
                let count = AtomicU32::from_ptr(p.add(self.shape.count_at).cast::<u32>());
                let edges =
                    std::slice::from_raw_parts(p.add(self.shape.count_at + 4).cast::<AtomicU32>(), self.shape.m0);
                (count, edges)
            };
        }
        debug_assert!(level <= self.level(slot), "level {level} of a node of level {}", self.level(slot));
        let lists = self.upper[slot as usize].get().expect("an upper level of a node that has it");
        let list = &lists[(level - 1) * (1 + self.m)..level * (1 + self.m)];
        (&list[0], &list[1..])
    }

    /// Hold the node's lock while rewriting its edges.
    pub(super) fn lock(&self, slot: u32) -> MutexGuard<'_, ()> {
        self.locks[slot as usize].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Ask the cache for the node's vector (all its lines when `whole`, else the first).
    #[inline]
    pub(super) fn prefetch(&self, slot: u32, whole: bool) {
        #[cfg(target_arch = "x86_64")]
        {
            let p = self.block(slot);
            let end = if whole { self.shape.dim * std::mem::size_of::<E>() } else { 1 };
            let mut at = 0;
            while at < end {
                // Within the node's block.
                zepto_storage::prefetch::line(p.wrapping_add(at));
                at += ALIGN;
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (slot, whole);
    }
}
