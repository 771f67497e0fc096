//! A deterministic byte mutator for the stable runner: the kinds of damage libFuzzer applies
//! (bit flips, interesting values, deleted, duplicated and spliced ranges, truncation), driven
//! by a seeded xorshift so a failure reproduces from its seed.

use zepto_storage::rng::XorShift;

/// Integers that break length and count fields.
const INTERESTING: &[u32] = &[0, 1, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0xffff, 0x7fff_ffff, 0x8000_0000, u32::MAX];

/// Bytes that mean something to a text decoder.
const TEXT: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b",",
    b"=",
    b" ",
    b"\"",
    b"\\",
    b"\x01",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b"%",
    b"%zz",
    b"+",
    b"&",
    b"NaN",
    b"-",
    b"1e999",
    b"9223372036854775808",
    b"\xff\xfe",
    b"\xc3",
    b"\0",
    b"t",
    b"i",
    b"u",
];

/// Mutates inputs, seeded for reproducibility.
#[derive(Debug, Clone)]
pub struct Mutator {
    rng: XorShift,
}

impl Mutator {
    /// A mutator started at `seed` (any value; 0 is mapped to 1).
    pub fn new(seed: u64) -> Mutator {
        Mutator { rng: XorShift::new(seed.max(1)) }
    }

    /// `input` changed by one to four random edits; `other` is a second input to splice from.
    pub fn mutate(&mut self, input: &[u8], other: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        let edits = 1 + self.rng.index(4);
        for _ in 0..edits {
            self.edit(&mut out, other);
        }
        out
    }

    fn edit(&mut self, out: &mut Vec<u8>, other: &[u8]) {
        let at = self.rng.index(out.len() + 1);
        match self.rng.index(8) {
            0 if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] ^= 1 << self.rng.index(8);
            }
            1 if out.len() >= at + 4 => {
                let v = INTERESTING[self.rng.index(INTERESTING.len())];
                out[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
            2 => {
                let end = (at + 1 + self.rng.index(16)).min(out.len());
                out.drain(at.min(end)..end);
            }
            3 => {
                let end = (at + 1 + self.rng.index(32)).min(out.len());
                let piece = out[at.min(end)..end].to_vec();
                out.splice(at..at, piece);
            }
            4 if !other.is_empty() => {
                let from = self.rng.index(other.len());
                let end = (from + 1 + self.rng.index(64)).min(other.len());
                out.splice(at..at, other[from..end].iter().copied());
            }
            5 => out.truncate(at),
            6 => {
                let t = TEXT[self.rng.index(TEXT.len())];
                out.splice(at..at, t.iter().copied());
            }
            _ if !out.is_empty() => {
                let i = at.min(out.len() - 1);
                out[i] = self.rng.next_u64() as u8;
            }
            _ => out.push(self.rng.next_u64() as u8),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_mutations() {
        let (mut a, mut b) = (Mutator::new(7), Mutator::new(7));
        for _ in 0..100 {
            assert_eq!(a.mutate(b"hello, world", b"other"), b.mutate(b"hello, world", b"other"));
        }
    }

    #[test]
    fn mutations_change_inputs() {
        let mut m = Mutator::new(3);
        let changed = (0..100).filter(|_| m.mutate(b"hello, world", b"x") != b"hello, world").count();
        assert!(changed > 90, "only {changed} of 100 mutations changed the input");
    }
}
