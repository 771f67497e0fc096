//! The per-table symbol dictionary: string ↔ `u32` code. Append-only, so a code handed out once
//! keeps its meaning forever and a reader's snapshot of codes stays valid against any later,
//! larger version of the dictionary.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_LINEAGE: AtomicU64 = AtomicU64::new(1);

/// A dictionary and every later version of it (clones that only appended) share a `lineage`,
/// so codes from any two of them mean the same strings and can be mixed without remapping.
#[derive(Debug, Clone)]
pub struct Dict {
    lineage: u64,
    strings: Vec<Box<str>>,
    index: HashMap<Box<str>, u32>,
}

impl Default for Dict {
    fn default() -> Self {
        Dict { lineage: NEXT_LINEAGE.fetch_add(1, Ordering::Relaxed), strings: Vec::new(), index: HashMap::new() }
    }
}

impl Dict {
    /// Identity shared by this dictionary and every later version of it (see [`Dict`]); equal
    /// lineages mean codes can be mixed without remapping.
    pub fn lineage(&self) -> u64 {
        self.lineage
    }

    /// Number of distinct strings (the next code to be handed out).
    pub fn len(&self) -> usize {
        self.strings.len()
    }

    /// True when no string has been interned.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }

    /// A copy under a new lineage: the same code for every string so far, free to grow apart
    /// (codes it adds later mean nothing to this dictionary's lineage).
    pub fn fork(&self) -> Dict {
        Dict { lineage: NEXT_LINEAGE.fetch_add(1, Ordering::Relaxed), ..self.clone() }
    }

    /// The code of `s`, adding it if new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&c) = self.index.get(s) {
            return c;
        }
        let code = u32::try_from(self.strings.len()).expect("symbol dictionary exceeds u32 codes");
        self.strings.push(s.into());
        self.index.insert(s.into(), code);
        code
    }

    /// The code of `s`, or `None` if it was never interned (never adds).
    pub fn code(&self, s: &str) -> Option<u32> {
        self.index.get(s).copied()
    }

    /// The string of `code`. Panics if `code` was not handed out by this dictionary's lineage up to
    /// its length.
    #[inline]
    pub fn get(&self, code: u32) -> &str {
        &self.strings[code as usize]
    }

    /// Every string, in code order (the `i`-th is code `i`).
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.strings.iter().map(|s| &**s)
    }
}
