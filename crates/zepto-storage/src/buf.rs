//! A column's values: a vector whose allocation versions of a column may share.
//!
//! A table's partitions hand their columns to queries without copying them. A writer that
//! appends to a column a query still holds used to copy it whole first: with a query in a loop
//! on another thread, 10k-row appends to a 10M-row table took 30 to 50 times as long, nearly
//! each one copying the partitions the latest query held. A [`Buf`] in shared mode lets the writer append in place instead:
//! every version of the column reads the prefix of one allocation its own length covers, and a
//! writer claims the room past the longest version (an atomic compare-exchange) before writing
//! there. Nothing below a claimed length is ever written again while another version holds the
//! allocation, so a reader's values never change under it.
//!
//! # Invariants
//!
//! * An owned `Buf` is a `Vec` and behaves as one; cloning it copies the values.
//! * A shared `Buf` reads `len` values of its `Claim`'s allocation from value `off` (0 but for
//!   a view of a range, [`Buf::view`]), all below the claim's `claimed` count, which only
//!   grows while the allocation is shared. Cloning it shares.
//! * A claim's block summaries ([`crate::summary`]) and narrow blocks ([`crate::narrow`])
//!   describe blocks below some `Buf`'s length: they hold while the values do, and a `Buf`
//!   alone that writes where a dropped one had claimed clears them.
//! * Values are only written below a shared `Buf`'s length by a `Buf` that holds the claim
//!   alone (it takes the allocation back as an owned vector first), or past `claimed` by the
//!   `Buf` that moved `claimed` from its own length.

use crate::narrow::{Narrow, Narrowable};
use crate::summary::{whole_blocks, Summarize, BLOCK};
use std::any::Any;
use std::fmt;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::{Deref, DerefMut, Range};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// Parts of at most this many values are copied value by value ([`Buf::extend_shared_each`]).
const SHORT_PART: usize = 32;

/// A column's values (module docs): an owned vector, or a view of a shared allocation.
pub struct Buf<T: Copy>(Repr<T>);

enum Repr<T: Copy> {
    Owned(Vec<T>),
    /// `len` values from value `off` of the claim's allocation (a view of a range of a
    /// column, [`Buf::view`], starts past 0).
    Shared {
        off: usize,
        len: usize,
        claim: Arc<Claim<T>>,
    },
}

/// A shared allocation: `cap` values at `ptr`, the first `claimed` of them claimed (each `Buf`
/// sharing it has written the first `len` of them; a writer that panicked may leave claimed
/// values unwritten, which no `Buf` reads).
struct Claim<T> {
    ptr: NonNull<T>,
    cap: usize,
    claimed: AtomicUsize,
    /// The summaries of the allocation's blocks, each made when first asked for: a
    /// `Box<[OnceLock<T::Summary>]>` of `cap / BLOCK` (one summary type per value type).
    summaries: OnceLock<Box<Summaries>>,
    /// The narrow forms of the allocation's blocks ([`crate::narrow`]), each made when first
    /// asked for, on the summaries' terms: a `Box<[OnceLock<Option<Narrow>>]>` of `cap / BLOCK`.
    narrow: OnceLock<Box<[OnceLock<Option<Narrow>>]>>,
}

/// A claim's block summaries, of whichever type (a value read in a panic is never half made:
/// each is set once, whole).
type Summaries = dyn Any + Send + Sync + std::panic::RefUnwindSafe + std::panic::UnwindSafe;

// SAFETY: a claim owns its allocation as a `Vec<T>` would; the values below `claimed` are only
// read while shared, and the values past it are written by one `Buf` (the one that claimed
// them) before any other `Buf` can reach them (module docs). Its summaries and narrow blocks
// are `Send` and `Sync` themselves.
unsafe impl<T: Send + Sync> Send for Claim<T> {}
unsafe impl<T: Send + Sync> Sync for Claim<T> {}

impl<T> Claim<T> {
    /// The allocation of `v`, its values claimed.
    fn of(v: Vec<T>) -> Claim<T> {
        let mut v = ManuallyDrop::new(v);
        let (len, cap) = (v.len(), v.capacity());
        // A vector's pointer is never null (dangling when it allocated nothing).
        let ptr = NonNull::new(v.as_mut_ptr()).unwrap_or(NonNull::dangling());
        Claim { ptr, cap, claimed: AtomicUsize::new(len), summaries: OnceLock::new(), narrow: OnceLock::new() }
    }

    /// The allocation back as a vector of its first `len` values.
    ///
    /// # Safety
    /// The caller holds the only reference to the claim, and the first `len` values are
    /// written (a `Buf`'s own length: `len <= claimed`).
    unsafe fn into_vec(mut self, len: usize) -> Vec<T> {
        // The values may change once they are a vector: what was made of them goes.
        self.forget_blocks();
        let this = ManuallyDrop::new(self);
        // SAFETY: the pointer and capacity are the allocation's (`Claim::of`), and the first
        // `len` values are written (the caller's promise).
        unsafe { Vec::from_raw_parts(this.ptr.as_ptr(), len, this.cap) }
    }
}

impl<T> Claim<T> {
    /// Drop the blocks' summaries and narrow forms: their rows may change.
    fn forget_blocks(&mut self) {
        drop(self.summaries.take());
        drop(self.narrow.take());
    }
}

impl<T> Drop for Claim<T> {
    fn drop(&mut self) {
        // SAFETY: the allocation came from a `Vec<T>` of this capacity (`Claim::of`); length 0
        // drops no value (the values are `Copy`).
        drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), 0, self.cap) });
    }
}

impl<T: Copy> Buf<T> {
    /// No values.
    pub const fn new() -> Buf<T> {
        Buf(Repr::Owned(Vec::new()))
    }

    /// No values, room for `cap`.
    pub fn with_capacity(cap: usize) -> Buf<T> {
        Buf(Repr::Owned(Vec::with_capacity(cap)))
    }

    /// The values as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match &self.0 {
            Repr::Owned(v) => v,
            // SAFETY: the claim's first `off + len` values are written and never change while
            // this `Buf` shares it (module docs).
            Repr::Shared { off, len, claim } => unsafe {
                std::slice::from_raw_parts(claim.ptr.as_ptr().add(*off), *len)
            },
        }
    }

    /// The values as an owned vector to change in place: a shared allocation this `Buf` holds
    /// alone is taken back; one another `Buf` holds is copied, with room for `extra` more.
    #[inline]
    pub fn vec_mut(&mut self, extra: usize) -> &mut Vec<T> {
        if let Repr::Shared { .. } = self.0 {
            self.unshare(extra);
        }
        match &mut self.0 {
            Repr::Owned(v) => v,
            Repr::Shared { .. } => unreachable!("made owned by unshare"),
        }
    }

    /// A shared `Buf` made owned ([`Buf::vec_mut`]); out of line, as the owned case is the
    /// hot one (a push per value while a batch is built).
    #[cold]
    #[inline(never)]
    fn unshare(&mut self, extra: usize) {
        let Repr::Shared { off, len, claim } = &mut self.0 else { return };
        let (off, len) = (*off, *len);
        let owned = match Arc::get_mut(claim) {
            Some(_) => {
                let Repr::Shared { claim, .. } = std::mem::replace(&mut self.0, Repr::Owned(Vec::new())) else {
                    unreachable!("matched as shared just above")
                };
                let claim = Arc::into_inner(claim).unwrap_or_else(|| unreachable!("held alone"));
                // SAFETY: held alone (just checked), and a shared `Buf`'s values end at or
                // below `claimed`.
                let mut v = unsafe { claim.into_vec(off + len) };
                v.drain(..off);
                v
            }
            None => {
                let mut v = Vec::with_capacity(len.saturating_add(extra));
                v.extend_from_slice(self.as_slice());
                v
            }
        };
        self.0 = Repr::Owned(owned);
    }

    /// The owned vector, when the values are not shared (appends to it are a vector's).
    #[inline]
    pub fn owned_mut(&mut self) -> Option<&mut Vec<T>> {
        match &mut self.0 {
            Repr::Owned(v) => Some(v),
            Repr::Shared { .. } => None,
        }
    }

    /// The values into a vector (copied if another `Buf` shares them).
    pub fn into_vec(mut self) -> Vec<T> {
        std::mem::take(self.vec_mut(0))
    }

    /// Ask for the cache lines where the next `n` appended values go, when the allocation has
    /// room for them all (else the append moves them: nothing to ask for). A hint: nothing is
    /// read or written.
    pub fn prefetch_room(&self, n: usize) {
        let (ptr, at, cap) = match &self.0 {
            Repr::Owned(v) => (v.as_ptr(), v.len(), v.capacity()),
            Repr::Shared { off, len, claim } => (claim.ptr.as_ptr().cast_const(), off + len, claim.cap),
        };
        let size = std::mem::size_of::<T>();
        if n == 0 || size == 0 || n > cap - at {
            return;
        }
        // A line's worth of values at a time, then the last value's line (the values need not
        // start a line).
        let rows = (at..at + n).step_by((64 / size).max(1)).chain(std::iter::once(at + n - 1));
        // Every row is below `at + n <= cap`: inside the allocation.
        rows.for_each(|i| crate::prefetch::line(ptr.wrapping_add(i)));
    }

    /// Where these values start in their allocation: 0 but for a view ([`Buf::view`]).
    fn offset(&self) -> usize {
        match &self.0 {
            Repr::Owned(_) => 0,
            Repr::Shared { off, .. } => *off,
        }
    }

    /// Values `start .. start + len` of these: a view of the same allocation when it is shared
    /// (no copy; it reads those values and, ending where the claim does, appends in place as
    /// any shared `Buf`), a copy when it is owned.
    pub fn view(&self, start: usize, len: usize) -> Buf<T> {
        assert!(start.checked_add(len).is_some_and(|end| end <= self.len()), "view {start}+{len} of {}", self.len());
        match &self.0 {
            Repr::Owned(v) => Buf(Repr::Owned(v[start..start + len].to_vec())),
            Repr::Shared { off, claim, .. } => Buf(Repr::Shared { off: off + start, len, claim: claim.clone() }),
        }
    }

    /// Whether the allocation is shared (a clone then shares it too).
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared { .. })
    }

    /// Share the allocation: clones of this `Buf` read it without copying, and
    /// [`Buf::extend_shared`] appends in place while they do.
    pub fn share(&mut self) {
        if let Repr::Owned(v) = &mut self.0 {
            let v = std::mem::take(v);
            let len = v.len();
            let claim = Claim::of(v);
            self.0 = Repr::Shared { off: 0, len, claim: Arc::new(claim) };
        }
    }

    /// Append the first `n` values of `values` (it must hold that many). A shared `Buf`
    /// writes them in place when its allocation has room and no other `Buf` has claimed past
    /// its values, even while other `Buf`s share the allocation; otherwise it copies its values
    /// with room to grow (or, alone with its allocation, grows it as a vector does) and shares
    /// the result. An owned `Buf` grows as a vector does.
    pub fn extend_shared(&mut self, n: usize, values: impl Iterator<Item = T>) {
        let at = self.len();
        match self.claim_room(n) {
            Room::At(dst) => {
                // SAFETY: `dst` has room for `n` values, claimed by this `Buf` alone: no other
                // `Buf` reads or writes them.
                let room = unsafe { std::slice::from_raw_parts_mut(dst.as_ptr().cast::<MaybeUninit<T>>(), n) };
                let mut wrote = 0;
                for (slot, v) in room.iter_mut().zip(values) {
                    slot.write(v);
                    wrote += 1;
                }
                assert_eq!(wrote, n, "extend_shared: {wrote} values where {n} were promised");
                self.set_shared_len(at + n);
            }
            room => {
                // A copy gets room for as many values again as it holds: the next appends of a
                // column readers hold go in place.
                let v = self.vec_mut(n.max(at));
                v.extend(values.take(n));
                assert_eq!(v.len(), at + n, "extend_shared: fewer values than promised");
                if matches!(room, Room::Taken) {
                    self.share();
                }
            }
        }
    }

    /// [`Buf::extend_shared`] of a slice's values.
    pub fn extend_shared_from_slice(&mut self, values: &[T]) {
        self.extend_shared_each(values.len(), std::iter::once(values));
    }

    /// [`Buf::extend_shared`] of the values of `parts` one after another, `n` in all (the
    /// bytes of a batch's strings, or one slice).
    pub fn extend_shared_each<'a>(&mut self, n: usize, parts: impl Iterator<Item = &'a [T]>)
    where
        T: 'a,
    {
        let at = self.len();
        match self.claim_room(n) {
            Room::At(dst) => {
                let mut wrote = 0;
                // SAFETY: `dst` has room for `n` values, claimed by this `Buf` alone: no other
                // `Buf` reads or writes them.
                let room = unsafe { std::slice::from_raw_parts_mut(dst.as_ptr().cast::<MaybeUninit<T>>(), n) };
                for p in parts {
                    assert!(wrote + p.len() <= n, "extend_shared_each: more than the {n} values promised");
                    let dst = &mut room[wrote..wrote + p.len()];
                    if p.len() <= SHORT_PART {
                        // Value by value: a `memcpy` call cost more than a short part's copy.
                        dst.iter_mut().zip(p).for_each(|(slot, &v)| {
                            slot.write(v);
                        });
                    } else {
                        // SAFETY: `dst` has room for `p.len()` values (just sliced to it), and
                        // `p` lies below some `Buf`'s claimed length, so cannot overlap it.
                        unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), dst.as_mut_ptr().cast::<T>(), p.len()) };
                    }
                    wrote += p.len();
                }
                assert_eq!(wrote, n, "extend_shared_each: {wrote} values where {n} were promised");
                self.set_shared_len(at + n);
            }
            room => {
                let v = self.vec_mut(n.max(at));
                parts.for_each(|p| v.extend_from_slice(p));
                assert_eq!(v.len(), at + n, "extend_shared_each: not the {n} values promised");
                if matches!(room, Room::Taken) {
                    self.share();
                }
            }
        }
    }

    /// Where this `Buf`'s next `n` values go (see [`Room`]).
    fn claim_room(&mut self, n: usize) -> Room<T> {
        let Repr::Shared { off, len, claim } = &mut self.0 else { return Room::Owned };
        let ptr = claim.ptr;
        // Where this `Buf`'s values end in the allocation.
        let at = *off + *len;
        let fits = claim.cap - at >= n;
        // SAFETY (every `At`): `at + n <= cap`, within the allocation.
        let dst = || unsafe { NonNull::new_unchecked(ptr.as_ptr().add(at)) };
        if n == 0 {
            // Nothing to write (`at <= cap`): never a copy, even where another version has
            // claimed past this one.
            return Room::At(dst());
        }
        // Usually this `Buf` holds the longest values: one compare-exchange claims the room.
        if fits && claim.claimed.compare_exchange(at, at + n, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return Room::At(dst());
        }
        match Arc::get_mut(claim) {
            // Alone: whatever dropped versions claimed past this one is free again.
            Some(alone) if fits => {
                *alone.claimed.get_mut() = at + n;
                // The claim was past `at`: blocks summarized there get other values now.
                alone.forget_blocks();
                Room::At(dst())
            }
            _ => Room::Taken,
        }
    }

    /// A shared `Buf`'s length after writing the room it claimed.
    fn set_shared_len(&mut self, new_len: usize) {
        if let Repr::Shared { len, .. } = &mut self.0 {
            *len = new_len;
        }
    }
}

impl<T: Summarize> Buf<T> {
    /// The summary of block `k` of the allocation (rows `k * BLOCK - off ..` of these values,
    /// all of them within the values): kept with a shared allocation once made, made from the
    /// values of an owned one (module docs of [`crate::summary`]).
    fn block(&self, k: usize) -> T::Summary {
        let (off, claim) = match &self.0 {
            Repr::Owned(_) => (0, None),
            Repr::Shared { off, claim, .. } => (*off, Some(claim)),
        };
        let rows = k * BLOCK - off..(k + 1) * BLOCK - off;
        assert!(k * BLOCK >= off && rows.end <= self.len(), "block {k} outside the values");
        let Some(claim) = claim else { return T::summarize(&self.as_slice()[rows]) };
        let slots = claim.summaries.get_or_init(|| {
            let slots: Box<[OnceLock<T::Summary>]> = (0..claim.cap / BLOCK).map(|_| OnceLock::new()).collect();
            Box::new(slots)
        });
        let slots: &(dyn Any + Send + Sync) = &**slots;
        let Some(slots) = slots.downcast_ref::<Box<[OnceLock<T::Summary>]>>() else {
            unreachable!("a claim's summaries are its value type's")
        };
        // The block is within this `Buf`'s values, so within the allocation's `cap`.
        *slots[k].get_or_init(|| T::summarize(&self.as_slice()[rows]))
    }

    /// The summary of `rows` (within the values): the rows before and after the allocation's
    /// blocks it covers whole summarized, the blocks' own summaries between them, merged in
    /// row order.
    pub fn summary_of(&self, rows: Range<usize>) -> T::Summary {
        assert!(rows.end <= self.len(), "rows {rows:?} past the {} values", self.len());
        let off = self.offset();
        let (head, blocks, tail) = whole_blocks(off + rows.start..off + rows.end);
        let v = self.as_slice();
        let s = blocks.fold(T::summarize(&v[head.start - off..head.end - off]), |s, k| T::merge(s, self.block(k)));
        T::merge(s, T::summarize(&v[tail.start - off..tail.end - off]))
    }

    /// The summaries of the blocks these values cover whole, each with its rows (of these
    /// values); the rows before the first (`head`) and after the last are the ones between.
    /// Only values that keep summaries (shared ones) and start at a block's start (a whole
    /// column, not a view) have any: `None` otherwise.
    pub fn kept_blocks(&self) -> Option<impl Iterator<Item = (Range<usize>, T::Summary)> + '_> {
        let Repr::Shared { off: 0, len, .. } = &self.0 else { return None };
        Some((0..len / BLOCK).map(move |k| (k * BLOCK..(k + 1) * BLOCK, self.block(k))))
    }

    /// The summary of rows `k * BLOCK .. (k + 1) * BLOCK` where [`Buf::kept_blocks`] would
    /// give it (a whole shared column, the block within its values); `None` otherwise.
    pub fn kept_block(&self, k: usize) -> Option<T::Summary> {
        let Repr::Shared { off: 0, len, .. } = &self.0 else { return None };
        ((k + 1) * BLOCK <= *len).then(|| self.block(k))
    }
}

impl<T: Narrowable> Buf<T> {
    /// The narrow form of block `k` of the allocation (rows `k * BLOCK - off ..` of these
    /// values, all within them), kept with a shared allocation once made; `None` for owned
    /// values (nothing to keep it with) and for a block with no narrow form.
    pub fn narrow_block(&self, k: usize) -> Option<&Narrow> {
        let Repr::Shared { off, claim, .. } = &self.0 else { return None };
        assert!(k * BLOCK >= *off && (k + 1) * BLOCK - off <= self.len(), "block {k} outside the values");
        let rows = k * BLOCK - off..(k + 1) * BLOCK - off;
        let slots = claim.narrow.get_or_init(|| (0..claim.cap / BLOCK).map(|_| OnceLock::new()).collect());
        // The block is within this `Buf`'s values, so within the allocation's `cap`.
        let made = || {
            let n = T::narrow(&self.as_slice()[rows]);
            // Kept with the allocation, not by the query that asked: off its thread's count
            // (a query's memory limit), as the column's own bytes are.
            crate::mem::credit_thread(-(n.as_ref().map_or(0, Narrow::heap_bytes) as isize));
            n
        };
        slots[k].get_or_init(made).as_ref()
    }

    /// The block of the allocation holding row `row` of these values: its rows (of these
    /// values, clipped to them) and its narrow form where it has one ([`Buf::narrow_block`]: a
    /// block lying whole within the values of a shared allocation).
    pub fn block_at(&self, row: usize) -> (Range<usize>, Option<&Narrow>) {
        assert!(row < self.len(), "row {row} past the {} values", self.len());
        let (off, len) = (self.offset(), self.len());
        let k = (off + row) / BLOCK;
        let rows = (k * BLOCK).saturating_sub(off)..((k + 1) * BLOCK - off).min(len);
        let whole = k * BLOCK >= off && (k + 1) * BLOCK - off <= len;
        (rows, if whole { self.narrow_block(k) } else { None })
    }

    /// The rows of `rows` (within these values) in the allocation's blocks it covers whole,
    /// and those blocks' numbers, for [`Buf::narrow_block`]; `rows.end..rows.end` and no
    /// block where it covers none.
    pub fn whole_blocks_of(&self, rows: Range<usize>) -> (Range<usize>, Range<usize>) {
        assert!(rows.start <= rows.end && rows.end <= self.len(), "rows {rows:?} past the {} values", self.len());
        let off = self.offset();
        let (_, blocks, _) = whole_blocks(off + rows.start..off + rows.end);
        if blocks.is_empty() {
            return (rows.end..rows.end, blocks);
        }
        (blocks.start * BLOCK - off..blocks.end * BLOCK - off, blocks)
    }
}

/// Where a `Buf`'s next values go.
enum Room<T> {
    /// Here, in a shared allocation, claimed for this `Buf` alone.
    At(NonNull<T>),
    /// Onto its owned vector.
    Owned,
    /// Another `Buf` has claimed past its values, or the allocation is full: onto
    /// [`Buf::vec_mut`] (the allocation taken back if this `Buf` holds it alone, else a copy
    /// with room), shared again after.
    Taken,
}

/// Vector methods, on the owned values ([`Buf::vec_mut`]: a shared allocation is copied first
/// unless this `Buf` holds it alone).
impl<T: Copy> Buf<T> {
    /// `Vec::push`.
    #[inline]
    pub fn push(&mut self, v: T) {
        self.vec_mut(1).push(v);
    }

    /// `Vec::extend_from_slice`.
    #[inline]
    pub fn extend_from_slice(&mut self, s: &[T]) {
        self.vec_mut(s.len()).extend_from_slice(s);
    }

    /// `Vec::clear`.
    pub fn clear(&mut self) {
        self.vec_mut(0).clear();
    }

    /// `Vec::truncate`.
    pub fn truncate(&mut self, len: usize) {
        self.vec_mut(0).truncate(len);
    }

    /// `Vec::resize`.
    pub fn resize(&mut self, len: usize, v: T) {
        let extra = len.saturating_sub(self.len());
        self.vec_mut(extra).resize(len, v);
    }

    /// `Vec::reserve`.
    pub fn reserve(&mut self, extra: usize) {
        self.vec_mut(extra).reserve(extra);
    }

    /// Values the allocation holds room for (for a shared one, its whole capacity).
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Owned(v) => v.capacity(),
            Repr::Shared { off, claim, .. } => claim.cap - off,
        }
    }
}

impl<T: Copy> Deref for Buf<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy> DerefMut for Buf<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.vec_mut(0)
    }
}

impl<T: Copy> Clone for Buf<T> {
    /// An owned `Buf`'s values copied; a shared one's allocation shared.
    fn clone(&self) -> Buf<T> {
        match &self.0 {
            Repr::Owned(v) => Buf(Repr::Owned(v.clone())),
            Repr::Shared { off, len, claim } => Buf(Repr::Shared { off: *off, len: *len, claim: claim.clone() }),
        }
    }
}

impl<T: Copy> Default for Buf<T> {
    fn default() -> Buf<T> {
        Buf::new()
    }
}

impl<T: Copy + fmt::Debug> fmt::Debug for Buf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl<T: Copy + PartialEq> PartialEq for Buf<T> {
    fn eq(&self, other: &Buf<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Eq> Eq for Buf<T> {}

impl<T: Copy> From<Vec<T>> for Buf<T> {
    fn from(v: Vec<T>) -> Buf<T> {
        Buf(Repr::Owned(v))
    }
}

impl<T: Copy> From<&[T]> for Buf<T> {
    fn from(v: &[T]) -> Buf<T> {
        Buf(Repr::Owned(v.to_vec()))
    }
}

impl<T: Copy> From<Buf<T>> for Vec<T> {
    fn from(b: Buf<T>) -> Vec<T> {
        b.into_vec()
    }
}

impl<T: Copy> FromIterator<T> for Buf<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Buf<T> {
        Buf(Repr::Owned(it.into_iter().collect()))
    }
}

impl<T: Copy> Extend<T> for Buf<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, it: I) {
        let it = it.into_iter();
        let extra = it.size_hint().0;
        self.vec_mut(extra).extend(it);
    }
}

impl<'a, T: Copy + 'a> Extend<&'a T> for Buf<T> {
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, it: I) {
        self.extend(it.into_iter().copied());
    }
}

impl<T: Copy> IntoIterator for Buf<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<'a, T: Copy> IntoIterator for &'a Buf<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Buf` is a vector and one word (a view's offset, and which of the two it is): a
    /// column's values cost hardly more to hold and move.
    #[test]
    fn a_buf_is_a_vector_and_a_word() {
        assert_eq!(std::mem::size_of::<Buf<i64>>(), std::mem::size_of::<Vec<i64>>() + std::mem::size_of::<usize>());
    }

    /// A view of a shared `Buf` reads its range of the allocation without a copy; it appends
    /// in place when it ends where the claim does, copies otherwise, and a change of its values
    /// takes them (alone: the allocation back, its rows before the view dropped).
    #[test]
    fn views_share_a_range_of_the_allocation() {
        let mut w: Buf<i64> = Vec::with_capacity(64).into();
        w.extend_from_slice(&(0..20).collect::<Vec<_>>());
        w.share();
        let mid = w.view(5, 10);
        assert_eq!((&mid[..], mid.as_ptr()), (&(5..15).collect::<Vec<_>>()[..], w[5..].as_ptr()));
        let mut tail = w.view(12, 8);
        drop(w);
        // The tail ends where the claim does: in place.
        let at = tail.as_ptr();
        tail.extend_shared_from_slice(&[20, 21]);
        assert_eq!((&tail[..], tail.as_ptr()), (&(12..22).collect::<Vec<_>>()[..], at));
        // The middle one does not: a copy, and the tail's values stay.
        let mut m2 = mid.clone();
        m2.extend_shared_from_slice(&[-1]);
        assert_eq!((&m2[..], &tail[..2]), (&[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, -1][..], &[12, 13][..]));
        assert_ne!(m2.as_ptr(), mid.as_ptr());
        // Alone, a view changed takes the allocation back without the rows before it.
        drop((mid, m2));
        tail[0] = 100;
        assert_eq!(&tail[..], &[100, 13, 14, 15, 16, 17, 18, 19, 20, 21]);
        assert!(!tail.is_shared());
        // An owned Buf's view is a copy.
        let o: Buf<u8> = vec![1, 2, 3].into();
        assert_eq!((&o.view(1, 2)[..], o.view(1, 2).is_shared()), (&[2, 3][..], false));
    }

    /// Owned, a `Buf` is a vector: its methods change it alone, a clone is a copy.
    #[test]
    fn an_owned_buf_is_a_vector() {
        let mut a: Buf<i64> = (0..5).collect();
        a.push(5);
        a.extend_from_slice(&[6, 7]);
        a.extend([8, 9].iter());
        let b = a.clone();
        a.truncate(3);
        a.resize(4, -1);
        a[0] = 100;
        assert_eq!((&a[..], &b[..]), (&[100, 1, 2, -1][..], &(0..10).collect::<Vec<_>>()[..]));
        assert!(!a.is_shared() && !b.is_shared());
        assert_eq!(Vec::from(b), (0..10).collect::<Vec<_>>());
    }

    /// Shared, clones read one allocation; the `Buf` whose values end where the claim does
    /// appends in place, and the others keep reading what they read.
    #[test]
    fn a_shared_buf_appends_in_place_past_its_clones() {
        let mut v = Vec::with_capacity(16);
        v.extend(0..4i64);
        let mut w = Buf::from(v);
        w.share();
        let reader = w.clone();
        let at = w.as_ptr();
        w.extend_shared(3, 4..7);
        w.extend_shared_from_slice(&[7, 8]);
        assert_eq!((w.as_ptr(), &w[..]), (at, &(0..9).collect::<Vec<_>>()[..]), "in place");
        assert_eq!(&reader[..], &[0, 1, 2, 3], "the reader's values");
        // Nothing appended at the reader's length: no copy, though the claim is past it.
        let mut idle = reader.clone();
        idle.extend_shared(0, std::iter::empty());
        idle.extend_shared_each(0, std::iter::empty());
        assert_eq!((idle.as_ptr(), &idle[..]), (at, &[0, 1, 2, 3][..]), "an empty append copies nothing");
        // A second writer at the reader's length: the claim is past it, so it copies.
        let mut other = reader.clone();
        other.extend_shared_from_slice(&[-4, -5]);
        assert_ne!(other.as_ptr(), at);
        assert_eq!(
            (&other[..], &w[..9], &reader[..]),
            (&[0, 1, 2, 3, -4, -5][..], &(0..9).collect::<Vec<_>>()[..], &[0, 1, 2, 3][..])
        );
        assert!(other.is_shared(), "the copy is shared again");
        // Past the allocation's room: a copy with room, shared again.
        w.extend_shared(10, 9..19);
        assert_ne!(w.as_ptr(), at);
        assert!(w.is_shared() && w.capacity() >= 19);
        assert_eq!(&w[..], &(0..19).collect::<Vec<_>>()[..]);
        assert_eq!(&reader[..], &[0, 1, 2, 3]);
    }

    /// Changing a shared `Buf`'s values copies them unless it holds the allocation alone, in
    /// which case it takes the allocation back (no copy) and what a dropped clone claimed is
    /// free again.
    #[test]
    fn changes_copy_a_shared_buf_unless_it_is_alone() {
        let mut a: Buf<u32> = Vec::with_capacity(8).into();
        a.extend_from_slice(&[1, 2, 3]);
        a.share();
        let at = a.as_ptr();
        let b = a.clone();
        a[0] = 9;
        assert_eq!((&a[..], &b[..]), (&[9, 2, 3][..], &[1, 2, 3][..]));
        assert_ne!(a.as_ptr(), at, "copied: another Buf holds it");
        let mut b2 = b.clone();
        b2.extend_shared_from_slice(&[4, 5]);
        assert_eq!((b2.as_ptr(), &b2[..]), (at, &[1, 2, 3, 4, 5][..]), "in place past `b`");
        let mut c = b.clone();
        drop((b, b2));
        // `c` alone now: the room `b2` claimed past `c` is free for it.
        c.extend_shared_from_slice(&[7]);
        assert_eq!((c.as_ptr(), &c[..]), (at, &[1, 2, 3, 7][..]));
        let v = c.into_vec();
        assert_eq!((v.as_ptr(), &v[..]), (at, &[1, 2, 3, 7][..]), "taken back without a copy");
    }

    /// An empty vector shared (no allocation) grows into a copy.
    #[test]
    fn an_empty_shared_buf_grows() {
        let mut e: Buf<f64> = Buf::new();
        e.share();
        let r = e.clone();
        e.extend_shared(2, [1.5, 2.5].into_iter());
        assert_eq!((&e[..], r.len()), (&[1.5, 2.5][..], 0));
    }

    /// Readers on other threads hold clones and check their values while a writer appends in
    /// place and, past the room, into copies: no reader ever sees a value change.
    #[test]
    fn readers_never_see_their_values_change() {
        let mut w: Buf<u64> = Vec::with_capacity(1 << 10).into();
        w.share();
        let (tx, rx) = std::sync::mpsc::channel::<Buf<u64>>();
        std::thread::scope(|s| {
            let check = s.spawn(move || {
                let mut held = Vec::new();
                let mut checked = 0usize;
                for r in rx {
                    held.push(r);
                    for h in &held {
                        assert!(h.iter().enumerate().all(|(i, &v)| v == i as u64 * 3), "a value changed");
                        checked += h.len();
                    }
                    if held.len() > 8 {
                        held.remove(0);
                    }
                }
                checked
            });
            // Fewer under Miri (`cargo +nightly miri test -p zepto-storage --lib buf::`),
            // which checks every access of both threads for races and runs far slower.
            let appends = if cfg!(miri) { 150 } else { 2000u64 };
            for k in 0..appends {
                let n = (k % 7) as usize + 1;
                let from = w.len() as u64;
                w.extend_shared(n, (from..from + n as u64).map(|i| i * 3));
                tx.send(w.clone()).expect("reader alive");
            }
            drop(tx);
            assert!(check.join().expect("reader") > 0);
        });
    }
}
