//! A batch's memo of short strings' codes, for interning plain strings.
//!
//! A batch of plain strings (an Arrow `utf8` symbol column, a CSV) repeats a few symbols over
//! thousands of rows. Each row used to hash its string and compare it with the dictionary's
//! copy (a `memcmp` call): a quarter of a 10k-row Python append of 100 symbols. Strings of up
//! to 16 bytes are instead named exactly by their length and two overlapping loads (the first
//! and last 8, or 4, bytes; all bytes below 4), and a direct-mapped table of such names gives
//! the code of a string seen earlier in the same batch with two integer compares. A miss goes
//! to the dictionary's index as before. The memo lives for one batch, so it never outlives a
//! code.

/// Slots in the table (a power of two): a batch's distinct short strings rarely collide.
const SLOTS: usize = 256;

/// A short string's exact name: its length and two words covering all of its bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Name {
    len: u8,
    lo: u64,
    hi: u64,
}

/// Codes of the short strings of one batch already looked up (see the module docs).
pub(crate) struct ShortMemo {
    slots: Box<[Option<(Name, u32)>; SLOTS]>,
}

impl ShortMemo {
    pub(crate) fn new() -> ShortMemo {
        ShortMemo { slots: Box::new([None; SLOTS]) }
    }

    /// The code remembered for `s`, if any.
    #[inline]
    pub(crate) fn get(&self, s: &str) -> Option<u32> {
        let n = name(s.as_bytes())?;
        match self.slots[slot(n)] {
            Some((m, code)) if m == n => Some(code),
            _ => None,
        }
    }

    /// Remember `code` for `s` (replacing whatever shared its slot); long strings are not kept.
    #[inline]
    pub(crate) fn put(&mut self, s: &str, code: u32) {
        if let Some(n) = name(s.as_bytes()) {
            self.slots[slot(n)] = Some((n, code));
        }
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

    /// What was put is got back; another string of the same slot replaces it; long strings
    /// are never remembered.
    #[test]
    fn remembers_the_last_put_per_slot() {
        let mut m = ShortMemo::new();
        let words: Vec<String> = (0..2000).map(|i| format!("S{i:04}")).collect();
        for (i, w) in words.iter().enumerate() {
            m.put(w, i as u32);
            assert_eq!(m.get(w), Some(i as u32));
        }
        let kept = words.iter().enumerate().filter(|(i, w)| m.get(w) == Some(*i as u32)).count();
        assert!(kept > 100 && kept <= SLOTS, "{kept} of 2,000 kept in {SLOTS} slots");
        for w in &words {
            if let Some(c) = m.get(w) {
                assert_eq!(words[c as usize], *w, "a slot answers only for its own string");
            }
        }
        let long = "a string longer than sixteen bytes";
        m.put(long, 7);
        assert_eq!(m.get(long), None);
    }
}
