//! Text rules of the memory layer: prompt normalization for the exact cache, the token
//! estimate used when a client gives none, the content key that deduplicates context, and
//! record ids.
//!
//! Ids are `m` (memories) or `c` (cache entries), the record's `created_at` as 16 hex digits,
//! then 16 hex digits unique in the process. The time inside the id lets a lookup by id be a
//! binary search on the designated timestamp instead of a scan.

use std::sync::atomic::{AtomicU64, Ordering};

/// A prompt as the exact cache compares it: lower-cased, runs of white space collapsed to one
/// space, no leading or trailing space.
pub fn normalize_prompt(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for word in p.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Tokens of `text` when the client gives no count: one per 4 bytes of UTF-8, rounded up (the
/// usual rule of thumb for English with BPE tokenizers), at least 1 for non-empty text.
pub fn estimate_tokens(text: &str) -> i64 {
    i64::try_from(text.len().div_ceil(4)).unwrap_or(i64::MAX)
}

/// What context assembly deduplicates on: the normalized content.
pub fn content_key(content: &str) -> String {
    normalize_prompt(content)
}

/// Makes record ids (see the module docs).
#[derive(Debug)]
pub struct IdGen {
    seed: u64,
    counter: AtomicU64,
}

impl IdGen {
    /// A generator seeded from the clock and the process id.
    pub fn new() -> IdGen {
        let seed = (zepto_storage::time::now_ns() as u64).rotate_left(17) ^ u64::from(std::process::id());
        IdGen { seed, counter: AtomicU64::new(0) }
    }

    /// A new id for a record created at `created_at` (`prefix` `m` or `c`).
    pub fn next(&self, prefix: char, created_at: i64) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        // splitmix64 is a bijection of the counter: unique within the process.
        let mut z = n.wrapping_add(self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        format!("{prefix}{:016x}{z:016x}", created_at as u64)
    }
}

impl Default for IdGen {
    fn default() -> Self {
        IdGen::new()
    }
}

/// The `created_at` inside an id made by [`IdGen`] with `prefix`; `None` for anything else.
pub fn id_time(prefix: char, id: &str) -> Option<i64> {
    let rest = id.strip_prefix(prefix)?;
    if rest.len() != 32 || !rest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(rest.get(..16)?, 16).ok().map(|t| t as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_normalize() {
        assert_eq!(normalize_prompt("  What IS\tthe\n\n VWAP?  "), "what is the vwap?");
        assert_eq!(normalize_prompt("ÄPFEL  Über"), "äpfel über");
        assert_eq!(normalize_prompt(" \t "), "");
    }

    #[test]
    fn token_estimate() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcdefghi"), 3);
    }

    #[test]
    fn ids_carry_their_time_and_are_unique() {
        let g = IdGen::new();
        let a = g.next('m', 1_700_000_000_123_456_789);
        let b = g.next('m', 1_700_000_000_123_456_789);
        assert_ne!(a, b);
        assert_eq!(id_time('m', &a), Some(1_700_000_000_123_456_789));
        assert_eq!(id_time('c', &a), None);
        assert_eq!(id_time('m', "m123"), None);
        let bad = format!("{}g", &a[..a.len() - 1]);
        assert_eq!(id_time('m', &bad), None);
    }
}
