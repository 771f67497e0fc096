//! Variable-length UTF-8 strings in Arrow `LargeUtf8` layout: `offsets[i]..offsets[i+1]` of
//! one contiguous byte buffer. Only `&str` is ever pushed, so the buffer is valid UTF-8 at every
//! string boundary (the invariant `get` relies on).

use crate::buf::Buf;

/// A column of UTF-8 strings in Arrow `LargeUtf8` layout: `len + 1` offsets into one byte buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrVec {
    offsets: Buf<i64>,
    data: Buf<u8>,
}

impl Default for StrVec {
    fn default() -> Self {
        StrVec { offsets: vec![0].into(), data: Buf::new() }
    }
}

impl StrVec {
    /// An empty vector with room for `rows` strings and `bytes` bytes of text.
    pub fn with_capacity(rows: usize, bytes: usize) -> StrVec {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        StrVec { offsets: offsets.into(), data: Buf::with_capacity(bytes) }
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

    /// A copy with room for `extra` more strings as long as these are on average (and their
    /// offsets) without growing.
    pub(crate) fn copy_with_room(&self, extra: usize) -> StrVec {
        let per_string = self.data.len().div_ceil(self.len().max(1));
        let mut out = StrVec::with_capacity(self.len() + extra, self.data.len() + extra * per_string);
        out.append_all(self);
        out
    }

    /// Share both buffers (`buf.rs`): clones read them without copying, and
    /// [`StrVec::append_all`] and [`StrVec::append_picked`] write in place past the strings a
    /// clone reads.
    pub(crate) fn share(&mut self) {
        self.offsets.share();
        self.data.share();
    }

    /// Whether the buffers are shared ([`StrVec::share`]).
    pub(crate) fn is_shared(&self) -> bool {
        self.offsets.is_shared()
    }

    /// Append every string of `other`, in place past a clone's strings when shared.
    pub(crate) fn append_all(&mut self, other: &StrVec) {
        let base = self.data.len() as i64;
        self.data.extend_shared_from_slice(&other.data);
        self.offsets.extend_shared(other.len(), other.offsets[1..].iter().map(|&o| o + base));
    }

    /// Append strings `rows` of `other`, in that order, in place past a clone's strings when
    /// shared. Panics on a row out of range.
    pub(crate) fn append_picked(&mut self, other: &StrVec, rows: &[u32]) {
        if !self.is_shared() {
            // Owned: one pass, a string at a time.
            rows.iter().for_each(|&i| self.push(other.get(i as usize)));
            return;
        }
        let span = |i: u32| other.offsets[i as usize] as usize..other.offsets[i as usize + 1] as usize;
        let bytes = rows.iter().map(|&i| span(i).len()).sum();
        let mut end = self.data.len() as i64;
        self.data.extend_shared_each(bytes, rows.iter().map(|&i| &other.data[span(i)]));
        let ends = rows.iter().map(|&i| {
            end += span(i).len() as i64;
            end
        });
        self.offsets.extend_shared(rows.len(), ends);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Picked and whole appends give what pushing each string gives, owned or shared; shared,
    /// they go in place past a clone's strings, and the clone keeps its own.
    #[test]
    fn appends_match_pushes_and_go_in_place_when_shared() {
        let words = ["", "a", "bc", "déjà vu", "xyz", "long enough to matter"];
        let src: StrVec = (0..60).map(|i| words[i % words.len()]).collect();
        let rows: Vec<u32> = (0..60).rev().step_by(7).chain([0, 0, 59]).collect();
        for shared in [false, true] {
            let mut v = StrVec::with_capacity(400, 4000);
            v.push("first");
            let mut want: Vec<String> = vec!["first".into()];
            if shared {
                v.share();
            }
            let held = v.clone();
            let at = v.bytes().as_ptr();
            for round in 0..3 {
                v.append_picked(&src, &rows);
                want.extend(rows.iter().map(|&i| src.get(i as usize).to_string()));
                v.append_all(&src);
                want.extend(src.iter().map(str::to_string));
                assert_eq!(v.iter().collect::<Vec<_>>(), want, "round {round}, shared {shared}");
            }
            assert_eq!(held.iter().collect::<Vec<_>>(), ["first"]);
            if shared {
                assert_eq!(v.bytes().as_ptr(), at, "in place past the held strings");
                assert!(v.is_shared());
            }
        }
    }
}
