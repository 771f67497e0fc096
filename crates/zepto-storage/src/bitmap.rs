//! Validity bitmap in Arrow's layout: bit `i` of byte `i / 8`, least significant bit first;
//! a set bit means "valid" (not NULL).

/// A validity bitmap in Arrow's layout (LSB first, set = valid); bits past `len` are kept zero.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bitmap {
    bits: Vec<u8>,
    len: usize,
}

impl Bitmap {
    /// `len` bits, all set (every row valid).
    pub fn new_set(len: usize) -> Bitmap {
        let mut bits = vec![0xFFu8; len.div_ceil(8)];
        if !len.is_multiple_of(8) {
            if let Some(last) = bits.last_mut() {
                *last = (1u8 << (len % 8)) - 1;
            }
        }
        Bitmap { bits, len }
    }

    /// `len` bits, all clear (every row NULL).
    pub fn new_unset(len: usize) -> Bitmap {
        Bitmap { bits: vec![0u8; len.div_ceil(8)], len }
    }

    /// One bit per item, in order (`true` = valid).
    pub fn from_bools(valid: impl IntoIterator<Item = bool>) -> Bitmap {
        // Whole bytes at a time (no per-bit length bookkeeping).
        let it = valid.into_iter();
        let mut bits = Vec::with_capacity(it.size_hint().0.div_ceil(8));
        let (mut byte, mut k, mut len) = (0u8, 0u32, 0usize);
        for v in it {
            byte |= (v as u8) << k;
            k += 1;
            len += 1;
            if k == 8 {
                bits.push(byte);
                (byte, k) = (0, 0);
            }
        }
        if k > 0 {
            bits.push(byte);
        }
        Bitmap { bits, len }
    }

    /// Number of bits (rows), not bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the bitmap holds no bits.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i` (`true` = valid). `i` must be below `len` (checked in debug builds only).
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        debug_assert!(i < self.len, "bitmap index {i} out of {}", self.len);
        (self.bits[i >> 3] >> (i & 7)) & 1 == 1
    }

    /// Set bit `i` to `v`. Panics if `i >= len`.
    #[inline]
    pub fn set(&mut self, i: usize, v: bool) {
        assert!(i < self.len, "bitmap index {i} out of {}", self.len);
        if v {
            self.bits[i >> 3] |= 1 << (i & 7);
        } else {
            self.bits[i >> 3] &= !(1 << (i & 7));
        }
    }

    /// Append one bit.
    #[inline]
    pub fn push(&mut self, v: bool) {
        if self.len.is_multiple_of(8) {
            self.bits.push(0);
        }
        let i = self.len;
        self.len += 1;
        if v {
            self.bits[i >> 3] |= 1 << (i & 7);
        }
    }

    /// Append `n` set bits (rows known valid), whole bytes at a time.
    pub fn extend_set(&mut self, n: usize) {
        // Finish the partial byte, then whole 0xFF bytes.
        let mut n = n;
        while n > 0 && !self.len.is_multiple_of(8) {
            self.push(true);
            n -= 1;
        }
        let bytes = n / 8;
        self.bits.resize(self.bits.len() + bytes, 0xFF);
        self.len += bytes * 8;
        for _ in 0..n % 8 {
            self.push(true);
        }
    }

    /// Append `len` bits of `src` (same layout: LSB first, set = valid) starting at bit
    /// `offset` of `src`, e.g. an Arrow validity buffer and its array offset. Byte-aligned
    /// appends are a `memcpy`; unaligned ones move a byte at a time.
    pub fn append_bits(&mut self, src: &[u8], offset: usize, len: usize) {
        assert!(offset + len <= src.len() * 8, "append_bits: {offset}+{len} bits out of {} bytes", src.len());
        if len == 0 {
            return;
        }
        let new_len = self.len + len;
        self.bits.reserve(new_len.div_ceil(8) - self.bits.len());
        if self.len.is_multiple_of(8) && offset.is_multiple_of(8) {
            let start = offset / 8;
            self.bits.extend_from_slice(&src[start..start + len.div_ceil(8)]);
        } else {
            let mut done = 0;
            while done < len {
                let n = (len - done).min(8);
                // `n` source bits starting at bit `offset + done`, in the low bits of `byte`.
                let (b, s) = ((offset + done) / 8, (offset + done) % 8);
                let mut byte = src[b] >> s;
                if s + n > 8 {
                    byte |= src[b + 1] << (8 - s);
                }
                let shift = (self.len + done) % 8;
                if shift == 0 {
                    self.bits.push(byte);
                } else {
                    if let Some(last) = self.bits.last_mut() {
                        *last |= byte << shift;
                    }
                    if shift + n > 8 {
                        self.bits.push(byte >> (8 - shift));
                    }
                }
                done += n;
            }
        }
        self.len = new_len;
        // Keep the bits beyond `len` zero (source bits past its own `len` may be anything).
        self.bits.truncate(new_len.div_ceil(8));
        if !new_len.is_multiple_of(8) {
            if let Some(last) = self.bits.last_mut() {
                *last &= (1u8 << (new_len % 8)) - 1;
            }
        }
    }

    /// Number of set bits (valid rows).
    pub fn count_set(&self) -> usize {
        let full = self.len / 8;
        let mut n: usize = self.bits[..full].iter().map(|b| b.count_ones() as usize).sum();
        for i in full * 8..self.len {
            n += self.get(i) as usize;
        }
        n
    }

    /// True when every bit is set (no NULLs); also true when empty.
    pub fn all_set(&self) -> bool {
        self.count_set() == self.len
    }

    /// Arrow-compatible bytes (trailing bits beyond `len` are zero).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bits
    }

    /// Bitwise AND (valid only where both are valid). Panics if the lengths differ.
    pub fn and(&self, other: &Bitmap) -> Bitmap {
        assert_eq!(self.len, other.len, "bitmap lengths differ");
        Bitmap { bits: self.bits.iter().zip(&other.bits).map(|(a, b)| a & b).collect(), len: self.len }
    }

    /// The bits in order, one `bool` per row.
    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_bools_matches_push() {
        for n in [0usize, 1, 7, 8, 9, 64, 131] {
            let bools: Vec<bool> = (0..n).map(|i| i % 5 == 1 || i % 7 == 3).collect();
            let mut pushed = Bitmap::default();
            bools.iter().for_each(|&b| pushed.push(b));
            let built = Bitmap::from_bools(bools.iter().copied());
            assert_eq!(built.len(), n);
            assert_eq!(built.as_bytes(), pushed.as_bytes(), "n = {n}");
            assert!((0..n).all(|i| built.get(i) == bools[i]));
        }
    }

    #[test]
    fn push_get_count() {
        let mut b = Bitmap::default();
        for i in 0..21 {
            b.push(i % 3 != 0);
        }
        assert_eq!(b.len(), 21);
        assert_eq!(b.count_set(), 14);
        assert!(!b.get(0) && b.get(1) && b.get(2) && !b.get(3));
        let s = Bitmap::new_set(13);
        assert!(s.all_set());
        assert_eq!(s.as_bytes(), &[0xFF, 0x1F]);
    }

    #[test]
    fn append_bits_matches_bitwise_push() {
        let src: Vec<u8> = (0..9u32).map(|i| (i.wrapping_mul(0x9E) ^ 0x5A) as u8).collect();
        let bit = |i: usize| (src[i / 8] >> (i % 8)) & 1 == 1;
        for prefix in 0..17 {
            for offset in 0..17 {
                for len in [0, 1, 3, 7, 8, 9, 15, 16, 23, 40] {
                    let mut fast = Bitmap::from_bools((0..prefix).map(|i| i % 3 == 0));
                    let mut slow = fast.clone();
                    fast.append_bits(&src, offset, len);
                    (offset..offset + len).for_each(|i| slow.push(bit(i)));
                    assert_eq!(fast, slow, "prefix {prefix} offset {offset} len {len}");
                }
            }
        }
    }
}
