//! Validity bitmap in Arrow's layout: bit `i` of byte `i / 8`, least significant bit first;
//! a set bit means "valid" (not NULL).

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Bitmap {
    bits: Vec<u8>,
    len: usize,
}

impl Bitmap {
    pub fn new_set(len: usize) -> Bitmap {
        let mut bits = vec![0xFFu8; len.div_ceil(8)];
        if len % 8 != 0 {
            if let Some(last) = bits.last_mut() {
                *last = (1u8 << (len % 8)) - 1;
            }
        }
        Bitmap { bits, len }
    }

    pub fn new_unset(len: usize) -> Bitmap {
        Bitmap {
            bits: vec![0u8; len.div_ceil(8)],
            len,
        }
    }

    pub fn from_bools(valid: impl IntoIterator<Item = bool>) -> Bitmap {
        let mut b = Bitmap::default();
        for v in valid {
            b.push(v);
        }
        b
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> bool {
        debug_assert!(i < self.len, "bitmap index {i} out of {}", self.len);
        (self.bits[i >> 3] >> (i & 7)) & 1 == 1
    }

    #[inline]
    pub fn set(&mut self, i: usize, v: bool) {
        assert!(i < self.len, "bitmap index {i} out of {}", self.len);
        if v {
            self.bits[i >> 3] |= 1 << (i & 7);
        } else {
            self.bits[i >> 3] &= !(1 << (i & 7));
        }
    }

    #[inline]
    pub fn push(&mut self, v: bool) {
        if self.len % 8 == 0 {
            self.bits.push(0);
        }
        let i = self.len;
        self.len += 1;
        if v {
            self.bits[i >> 3] |= 1 << (i & 7);
        }
    }

    pub fn extend_set(&mut self, n: usize) {
        for _ in 0..n {
            self.push(true);
        }
    }

    pub fn count_set(&self) -> usize {
        let full = self.len / 8;
        let mut n: usize = self.bits[..full]
            .iter()
            .map(|b| b.count_ones() as usize)
            .sum();
        for i in full * 8..self.len {
            n += self.get(i) as usize;
        }
        n
    }

    pub fn all_set(&self) -> bool {
        self.count_set() == self.len
    }

    /// Arrow-compatible bytes (trailing bits beyond `len` are zero).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bits
    }

    pub fn and(&self, other: &Bitmap) -> Bitmap {
        assert_eq!(self.len, other.len, "bitmap lengths differ");
        Bitmap {
            bits: self
                .bits
                .iter()
                .zip(&other.bits)
                .map(|(a, b)| a & b)
                .collect(),
            len: self.len,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = bool> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
