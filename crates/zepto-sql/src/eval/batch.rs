//! Batches: columns of equal length, what expressions are evaluated over and operators pass
//! along, and the two helpers every kernel uses on them (masks to row indices, validity AND).

use std::sync::Arc;
use zepto_storage::{Bitmap, Column, ColumnData};

/// Columns of equal length. `rows` is kept separately so a batch with no columns (the input of
/// a FROM-less SELECT) still has a row count.
/// Columns are shared (`Arc`): a scan of a whole partition, a projection of a plain column
/// and a batch clone copy no data.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// The columns, all `rows` long.
    pub columns: Vec<Arc<Column>>,
    /// Number of rows (meaningful even with no columns).
    pub rows: usize,
}

impl Batch {
    /// A batch of owned columns, all `rows` long (checked in debug builds).
    pub fn new(columns: Vec<Column>, rows: usize) -> Batch {
        Batch::shared(columns.into_iter().map(Arc::new).collect(), rows)
    }

    /// A batch of shared columns, all `rows` long (checked in debug builds).
    pub fn shared(columns: Vec<Arc<Column>>, rows: usize) -> Batch {
        debug_assert!(columns.iter().all(|c| c.len() == rows), "batch columns must have {rows} rows");
        Batch { columns, rows }
    }

    /// The columns as plain references.
    pub fn col_refs(&self) -> Vec<&Column> {
        self.columns.iter().map(|c| &**c).collect()
    }

    /// The rows at `idx`, in that order (repeats allowed).
    pub fn take(&self, idx: &[u32]) -> Batch {
        Batch { columns: self.columns.iter().map(|c| Arc::new(c.take(idx))).collect(), rows: idx.len() }
    }

    /// The rows a filter kept (`idx` ascending, each row at most once): the batch itself,
    /// sharing its columns, when it kept every row.
    pub fn keep(&self, idx: &[u32]) -> Batch {
        if idx.len() == self.rows {
            return self.clone();
        }
        self.take(idx)
    }
}

/// Row indices where a BOOLEAN column is true (NULL counts as false).
///
/// Sixty-four rows at a time: the flags fold into a word without a branch (the loop
/// vectorizes), a full or empty word is one step, and a mixed one yields its set bits. A
/// branch per row mispredicts on every other row at 50% selectivity, which made this the
/// larger half of a filtered aggregate.
pub fn mask_indices(mask: &Column) -> Vec<u32> {
    let ColumnData::Bool(v) = &mask.data() else {
        return Vec::new();
    };
    let valid = mask.validity();
    let mut out = Vec::with_capacity(v.len() / 4);
    for (w, chunk) in v.chunks(64).enumerate() {
        let base = w * 64;
        let mut word = flags_word(chunk);
        if let Some(bm) = valid {
            word &= (0..chunk.len()).fold(0u64, |m, k| m | (u64::from(bm.get(base + k)) << k));
        }
        push_set_bits(&mut out, word, base, chunk.len());
    }
    out
}

/// Bit `k` set where `flags[k]` (at most 64 flags). Eight flags are eight bytes of 0 or 1:
/// read as one little-endian word and multiplied by a constant whose set bits are 7 apart
/// (56, 49, .., 0), byte `k`'s low bit lands on bit `56 + k` and no two partial products meet
/// (so nothing carries into the top byte), which then holds the eight flags in order.
fn flags_word(flags: &[bool]) -> u64 {
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let mut word = 0u64;
    let mut eights = flags.chunks_exact(8);
    for (j, e) in (&mut eights).enumerate() {
        let bytes = u64::from_le_bytes(std::array::from_fn(|k| u8::from(e[k])));
        word |= (bytes.wrapping_mul(GATHER) >> 56) << (8 * j);
    }
    let done = flags.len() / 8 * 8;
    for (k, &b) in eights.remainder().iter().enumerate() {
        word |= u64::from(b) << (done + k);
    }
    word
}

/// The positions `base + k` of the bits set in `word` (of `len` ≤ 64 bits), in order.
pub(super) fn push_set_bits(out: &mut Vec<u32>, mut word: u64, base: usize, len: usize) {
    let full = if len == 64 { u64::MAX } else { (1u64 << len) - 1 };
    if word == full {
        out.extend((base..base + len).map(|i| i as u32));
        return;
    }
    while word != 0 {
        out.push((base + word.trailing_zeros() as usize) as u32);
        word &= word - 1;
    }
}

/// AND of two optional validity bitmaps.
pub fn and_validity(a: Option<&Bitmap>, b: Option<&Bitmap>) -> Option<Bitmap> {
    match (a, b) {
        (None, None) => None,
        (Some(x), None) | (None, Some(x)) => Some(x.clone()),
        (Some(x), Some(y)) => Some(x.and(y)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;

    /// The word-at-a-time walk against a row-at-a-time filter: lengths around word edges,
    /// densities from empty to full, with and without NULLs.
    #[test]
    fn mask_indices_match_a_plain_filter() {
        let mut rng = XorShift::new(7);
        for len in [0, 1, 63, 64, 65, 127, 128, 200, 1000] {
            for per_mille in [0, 10, 500, 990, 1000] {
                let flags: Vec<bool> = (0..len).map(|_| rng.below(1000) < per_mille).collect();
                let valid: Vec<bool> = (0..len).map(|_| rng.below(10) != 0).collect();
                for nulls in [false, true] {
                    let bm = nulls.then(|| Bitmap::from_bools(valid.iter().copied()));
                    let want: Vec<u32> =
                        (0..len).filter(|&i| flags[i] && (!nulls || valid[i])).map(|i| i as u32).collect();
                    let mask = Column::new(ColumnData::Bool(flags.clone().into()), bm);
                    assert_eq!(mask_indices(&mask), want, "len {len}, {per_mille}/1000 set, nulls {nulls}");
                }
            }
        }
    }
}
