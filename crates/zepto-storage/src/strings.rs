//! Variable-length UTF-8 strings in Arrow `LargeUtf8` layout: `offsets[i]..offsets[i+1]` of
//! one contiguous byte buffer. Only `&str` is ever pushed, so the buffer is valid UTF-8 at every
//! string boundary (the invariant `get` relies on).

/// A column of UTF-8 strings in Arrow `LargeUtf8` layout: `len + 1` offsets into one byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrVec {
    offsets: Vec<i64>,
    data: Vec<u8>,
}

impl Default for StrVec {
    fn default() -> Self {
        StrVec { offsets: vec![0], data: Vec::new() }
    }
}

impl StrVec {
    /// An empty vector with room for `rows` strings and `bytes` bytes of text.
    pub fn with_capacity(rows: usize, bytes: usize) -> StrVec {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        StrVec { offsets, data: Vec::with_capacity(bytes) }
    }

    /// Number of strings.
    #[inline]
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Forget every string, keeping the room they took.
    pub fn clear(&mut self) {
        self.offsets.truncate(1);
        self.data.clear();
    }

    /// True when there are no strings.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append one string.
    #[inline]
    pub fn push(&mut self, s: &str) {
        self.data.extend_from_slice(s.as_bytes());
        self.offsets.push(self.data.len() as i64);
    }

    /// String `i`. Panics if `i >= len`.
    #[inline]
    pub fn get(&self, i: usize) -> &str {
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        let bytes = &self.data[a..b];
        debug_assert!(std::str::from_utf8(bytes).is_ok());
        // SAFETY: only whole `&str` values are appended (push/extend), so every
        // offsets[i]..offsets[i+1] range is a complete UTF-8 string.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// The strings in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The `len + 1` Arrow offsets: string `i` is `bytes()[offsets[i]..offsets[i + 1]]`; the first
    /// is 0.
    pub fn offsets(&self) -> &[i64] {
        &self.offsets
    }

    /// The concatenated UTF-8 bytes of all strings.
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// A new vector of the strings at `idx`, in that order (repeats allowed). Panics on an index
    /// out of range.
    pub fn take(&self, idx: &[u32]) -> StrVec {
        let mut out = StrVec::with_capacity(idx.len(), 0);
        for &i in idx {
            out.push(self.get(i as usize));
        }
        out
    }

    /// Append strings `rows` of `other` (one copy of their bytes).
    pub fn extend_range(&mut self, other: &StrVec, rows: std::ops::Range<usize>) {
        let (a, b) = (other.offsets[rows.start], other.offsets[rows.end]);
        let base = self.data.len() as i64 - a;
        self.data.extend_from_slice(&other.data[a as usize..b as usize]);
        self.offsets.extend(other.offsets[rows.start + 1..=rows.end].iter().map(|&o| o + base));
    }

    /// Append every string of `other` (use [`StrVec::extend_range`] for a slice).
    pub fn extend(&mut self, other: &StrVec) {
        for s in other.iter() {
            self.push(s);
        }
    }
}

impl<'a> FromIterator<&'a str> for StrVec {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> Self {
        let mut v = StrVec::default();
        for s in iter {
            v.push(s);
        }
        v
    }
}
