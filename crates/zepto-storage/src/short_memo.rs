//! A batch's memo of short strings' codes, for interning plain strings.
//!
//! A batch of plain strings (an Arrow `utf8` symbol column, a CSV) repeats a few symbols over
//! thousands of rows. Each row used to hash its string and compare it with the dictionary's
//! copy (a `memcmp` call): a quarter of a 10k-row Python append of 100 symbols. Strings of up
//! to 16 bytes are instead named exactly by their length and two overlapping loads (the first
//! and last 8, or 4, bytes; all bytes below 4), and a table of such names gives the code of a
//! string seen earlier (in the batch, or the one before: below) with two integer compares. A
//! miss goes to the dictionary's index as before.
//!
//! The dictionary keeps the last batch's memo for the next one (its codes never change: the
//! dictionary is append-only): a memo made afresh for each 10k-row batch cleared its 48 KiB and
//! looked every symbol up in the index again, 8% of the convert of a 10k-row append over 100
//! symbols. A version of the dictionary shorter than the highest code the memo holds (another
//! version added strings since) takes a fresh memo: a code the memo hands out must be one the
//! version holds, or was counted when this batch looked it up.
//!
//! Names collide in their home slot: 100 symbols in 256 slots put a third of them beside
//! another. Direct-mapped, two such symbols evicted each other all batch long, and a third of
//! the rows went to the index (its hash and `memcmp`: a fifth of the convert of a 10k-row
//! Python append). A name now takes the first free slot from its home on (linear probing),
//! until half the slots are taken; later names are left to the index. A lookup ends at a free
//! slot within a few steps. A memo pays only where names repeat within the batch: the caller
//! drops it when most of its lookups miss.

/// Slots in the table (a power of two; 48 KiB): 1,024 names. At 1,000 symbols a 10k-row
/// batch converted in 10.1 ms a million rows against 14.1 with half as many slots (and 12.0
/// direct-mapped with 256); at 100 symbols, as fast as with fewer (5.1 direct-mapped).
const SLOTS: usize = 2048;

/// A short string's exact name: its length and two words covering all of its bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Name {
    len: u8,
    lo: u64,
    hi: u64,
}

/// Codes of the short strings of one batch already looked up (see the module docs).
pub(crate) struct ShortMemo {
    /// Under half of them taken.
    slots: Box<[Slot; SLOTS]>,
    taken: usize,
}

/// One remembered name and its code; `len` is [`FREE`] in a free slot.
#[derive(Clone, Copy)]
struct Slot {
    lo: u64,
    hi: u64,
    code: u32,
    len: u8,
}

/// A slot's `len` when it holds no name (names are at most 16 bytes long).
const FREE: u8 = u8::MAX;

const FREE_SLOT: Slot = Slot { lo: 0, hi: 0, code: 0, len: FREE };

impl Slot {
    #[inline]
    fn holds(&self, n: Name) -> bool {
        self.len == n.len && self.lo == n.lo && self.hi == n.hi
    }
}

impl std::fmt::Debug for ShortMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShortMemo({} names)", self.taken)
    }
}

impl ShortMemo {
    pub(crate) fn new() -> ShortMemo {
        // Made on the heap directly: 48 KiB is too much for the stack of every thread that
        // may intern (a musl thread has 128 KiB).
        let slots =
            vec![FREE_SLOT; SLOTS].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("SLOTS slots"));
        ShortMemo { slots, taken: 0 }
    }

    /// The code remembered for `s`, if any.
    #[inline]
    pub(crate) fn get(&self, s: &str) -> Option<u32> {
        let n = name(s.as_bytes())?;
        let at = &self.slots[self.probe(n)];
        (at.len != FREE).then_some(at.code)
    }

    /// Remember `code` for `s` while under half the slots are taken (module docs); long
    /// strings are not kept.
    #[inline]
    pub(crate) fn put(&mut self, s: &str, code: u32) {
        let Some(n) = name(s.as_bytes()) else { return };
        let i = self.probe(n);
        if self.slots[i].len == FREE {
            if 2 * (self.taken + 1) > SLOTS {
                return;
            }
            self.taken += 1;
        }
        self.slots[i] = Slot { lo: n.lo, hi: n.hi, code, len: n.len };
    }

    /// Every remembered code replaced by `f` of it.
    pub(crate) fn resolve(&mut self, f: impl Fn(u32) -> u32) {
        self.slots.iter_mut().filter(|s| s.len != FREE).for_each(|s| s.code = f(s.code));
    }

    /// The slot holding `n`, or the free slot where its probe ends (there is one: under half
    /// the slots are taken).
    #[inline]
    fn probe(&self, n: Name) -> usize {
        let mut i = slot(n);
        while self.slots[i].len != FREE && !self.slots[i].holds(n) {
            i = (i + 1) % SLOTS;
        }
        i
    }
}

/// The name of a string of at most 16 bytes: with its length, the words cover every byte
/// (8..=16: the first and last 8, overlapping; 4..8: the first and last 4; below 4: the first,
/// middle and last bytes), so equal names are equal strings.
#[inline]
fn name(b: &[u8]) -> Option<Name> {
    let len = b.len();
    let (lo, hi) = match len {
        17.. => return None,
        8.. => (word::<8>(b, 0), word::<8>(b, len - 8)),
        4.. => (word::<4>(b, 0), word::<4>(b, len - 4)),
        1.. => (u64::from(b[0]) | u64::from(b[len / 2]) << 8 | u64::from(b[len - 1]) << 16, 0),
        0 => (0, 0),
    };
    Some(Name { len: len as u8, lo, hi })
}

/// `N` (4 or 8) bytes of `b` from `at`, little-endian.
#[inline]
fn word<const N: usize>(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w[..N].copy_from_slice(&b[at..at + N]);
    u64::from_le_bytes(w)
}

/// `n`'s home slot: the top bits of a multiplicative hash.
#[inline]
fn slot(n: Name) -> usize {
    let mixed = (n.lo ^ n.hi.rotate_left(29) ^ u64::from(n.len)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> (64 - SLOTS.trailing_zeros())) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are equal exactly when strings are, for every length up to 16 (strings that
    /// differ in one byte anywhere, or only in length), and longer strings have none.
    #[test]
    fn names_are_exact() {
        let base: Vec<u8> = (b'a'..=b'q').collect();
        for len in 0..=16 {
            let s = &base[..len];
            assert!(name(s) == name(s));
            if len > 0 {
                assert!(name(s) != name(&base[..len - 1]), "length {len}");
            }
            for i in 0..len {
                let mut t = s.to_vec();
                t[i] = b'Z';
                assert!(name(s) != name(&t), "length {len}, byte {i}");
            }
        }
        assert!(name(&base).is_none());
    }

    /// What was put is got back, for as many names as half the slots, whatever their homes;
    /// names past that are not kept; long strings never are.
    #[test]
    fn remembers_up_to_half_the_slots() {
        let mut m = ShortMemo::new();
        let words: Vec<String> = (0..4000).map(|i| format!("S{i:04}")).collect();
        for (i, w) in words.iter().enumerate() {
            assert_eq!(m.get(w), None, "{w} before it is put");
            m.put(w, i as u32);
        }
        for (i, w) in words.iter().enumerate() {
            assert_eq!(m.get(w), (i < SLOTS / 2).then_some(i as u32), "{w}");
        }
        // Put again (another code): the name's slot is updated, not taken twice.
        let mut m = ShortMemo::new();
        m.put(&words[3], 1);
        m.put(&words[3], 2);
        assert_eq!((m.get(&words[3]), m.taken), (Some(2), 1));
        let long = "a string longer than sixteen bytes";
        m.put(long, 7);
        assert_eq!(m.get(long), None);
    }
}
