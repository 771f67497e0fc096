//! Row hashing and equality for GROUP BY, DISTINCT, set operations and hash joins, plus the
//! open-addressing group table (no per-row allocation: rows are compared in place against the
//! first row of each group).

use super::Batch;
use crate::expr::in_set::float_key;
use zepto_storage::{Column, ColumnData};

const SEED: u64 = 0x9E37_79B9_7F4A_7C15;
const NULL_HASH: u64 = 0x5151_5151_5151_5151;

#[inline]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub fn hash_str(s: &str) -> u64 {
    let b = s.as_bytes();
    let mut h = SEED ^ b.len() as u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = mix(h ^ u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h ^ u64::from_le_bytes(w));
    }
    h
}

/// The key values of groups' first rows (`GroupIds::first`), as a group's key. Keys hash and
/// compare -0.0 and 0.0 alike (`float_key`), so a group of zeros is one group whichever zero
/// came first; its key is +0.0 either way, so the answer does not depend on row order.
pub fn key_take(c: &Column, first: &[u32]) -> Column {
    positive_zeros(c.take(first))
}

/// DISTINCT's and set operations' kept rows: every column is a key ([`key_take`]).
pub fn keys_take(b: &Batch, first: &[u32]) -> Batch {
    let cols = b.columns.iter().map(|c| std::sync::Arc::new(key_take(c, first))).collect();
    Batch::shared(cols, first.len())
}

/// `c` with every -0.0 made +0.0 (a float column; any other column is returned as it is).
pub fn positive_zeros(c: Column) -> Column {
    let negative = |x: f64| x == 0.0 && x.is_sign_negative();
    let any = match c.data() {
        ColumnData::Float64(v) => v.iter().any(|&x| negative(x)),
        ColumnData::Float32(v) => v.iter().any(|&x| negative(x as f64)),
        _ => false,
    };
    if !any {
        return c;
    }
    // x + 0.0 is +0.0 for either zero and x for every other value (NaN stays NaN).
    let (data, validity) = c.into_parts();
    let data = match data {
        ColumnData::Float64(v) => ColumnData::Float64(v.into_iter().map(|x| x + 0.0).collect()),
        ColumnData::Float32(v) => ColumnData::Float32(v.into_iter().map(|x| x + 0.0).collect()),
        other => other,
    };
    Column::new(data, validity)
}

/// Fold one column into per-row hashes. A NULL hashes the same whatever its value slot holds
/// (computed columns and outer-join padding leave arbitrary values under NULLs).
pub fn hash_column_into(c: &Column, hashes: &mut [u64]) {
    if let Some(v) = c.validity() {
        let saved: Vec<u64> = hashes.to_vec();
        hash_values_into(c, hashes);
        for (i, h) in hashes.iter_mut().enumerate() {
            if !v.get(i) {
                *h = mix(saved[i].wrapping_add(NULL_HASH));
            }
        }
        return;
    }
    hash_values_into(c, hashes);
}

fn hash_values_into(c: &Column, hashes: &mut [u64]) {
    let combine = |h: &mut u64, v: u64| *h = mix(h.wrapping_add(v).wrapping_add(SEED));
    match &c.data() {
        ColumnData::Bool(v) => v.iter().zip(hashes.iter_mut()).for_each(|(&x, h)| combine(h, x as u64)),
        ColumnData::Int32(v) | ColumnData::Date(v) => {
            v.iter().zip(hashes.iter_mut()).for_each(|(&x, h)| combine(h, x as i64 as u64))
        }
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            v.iter().zip(hashes.iter_mut()).for_each(|(&x, h)| combine(h, x as u64))
        }
        ColumnData::Int128(v) => v
            .iter()
            .zip(hashes.iter_mut())
            .for_each(|(&x, h)| combine(h, (x as u64) ^ ((x >> 64) as u64).rotate_left(29))),
        ColumnData::Float32(v) => v.iter().zip(hashes.iter_mut()).for_each(|(&x, h)| combine(h, float_key(x as f64))),
        ColumnData::Float64(v) => v.iter().zip(hashes.iter_mut()).for_each(|(&x, h)| combine(h, float_key(x))),
        ColumnData::Varchar(s) => (0..s.len()).zip(hashes.iter_mut()).for_each(|(i, h)| combine(h, hash_str(s.get(i)))),
        // A dictionary larger than the rows (a few groups of a table of many symbols): each
        // row's string is hashed, not every string of the dictionary.
        ColumnData::Symbol { codes, dict } if dict.len() > codes.len() => codes
            .iter()
            .zip(hashes.iter_mut())
            .for_each(|(&k, h)| combine(h, if (k as usize) < dict.len() { hash_str(dict.get(k)) } else { 0 })),
        ColumnData::Symbol { codes, dict } => {
            let per_code: Vec<u64> = dict.iter().map(hash_str).collect();
            codes
                .iter()
                .zip(hashes.iter_mut())
                .for_each(|(&k, h)| combine(h, per_code.get(k as usize).copied().unwrap_or(0)))
        }
        ColumnData::Vector { dim, values } => {
            for (row, h) in values.chunks_exact((*dim).max(1) as usize).zip(hashes.iter_mut()) {
                row.iter().for_each(|&x| combine(h, float_key(x as f64)));
            }
        }
        ColumnData::Null(_) => hashes.iter_mut().for_each(|h| *h = mix(h.wrapping_add(NULL_HASH))),
    }
}

pub fn hash_rows(cols: &[&Column], n: usize) -> Vec<u64> {
    let mut h = vec![SEED; n];
    for c in cols {
        hash_column_into(c, &mut h);
    }
    h
}

/// Value equality of `a[i]` and `b[j]`, both known to be valid.
#[inline]
pub fn eq_at(a: &Column, i: usize, b: &Column, j: usize) -> bool {
    use ColumnData as D;
    match (&a.data(), &b.data()) {
        (D::Bool(x), D::Bool(y)) => x[i] == y[j],
        (D::Int32(x), D::Int32(y)) | (D::Date(x), D::Date(y)) => x[i] == y[j],
        (D::Int64(x), D::Int64(y)) | (D::Timestamp(x), D::Timestamp(y)) | (D::Interval(x), D::Interval(y)) => {
            x[i] == y[j]
        }
        (D::Int128(x), D::Int128(y)) => x[i] == y[j],
        (D::Float32(x), D::Float32(y)) => float_key(x[i] as f64) == float_key(y[j] as f64),
        (D::Float64(x), D::Float64(y)) => float_key(x[i]) == float_key(y[j]),
        (D::Symbol { codes: x, dict: dx }, D::Symbol { codes: y, dict: dy }) if dx.lineage() == dy.lineage() => {
            x[i] == y[j]
        }
        (D::Vector { .. }, D::Vector { .. }) => a.vector_at(i) == b.vector_at(j),
        _ => match (a.str_at(i), b.str_at(j)) {
            (Some(s), Some(t)) => s == t,
            _ => false,
        },
    }
}

/// Grouping equality: NULL equals NULL.
#[inline]
pub fn rows_equal(a: &[&Column], i: usize, b: &[&Column], j: usize) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x.is_valid(i), y.is_valid(j)) {
        (true, true) => eq_at(x, i, y, j),
        (false, false) => true,
        _ => false,
    })
}

/// Assigns dense group ids to rows.
pub struct GroupIds {
    /// Group of each input row.
    pub ids: Vec<u32>,
    /// First row of each group (its representative).
    pub first: Vec<u32>,
}

pub fn group_ids(cols: &[&Column], n: usize) -> GroupIds {
    if cols.is_empty() {
        return GroupIds { ids: vec![0; n], first: if n > 0 { vec![0] } else { vec![] } };
    }
    if let [c] = cols {
        match (c.data(), c.validity()) {
            (ColumnData::Symbol { codes, dict }, _) => return symbol_groups(c, codes, dict.len()),
            (ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v), None) => return int_groups(v),
            (ColumnData::Int32(v) | ColumnData::Date(v), None) => return int_groups(v),
            (ColumnData::Float64(v), None) => return float_groups(v),
            _ => {}
        }
    }
    if let Some(g) = symbol_int_groups(cols, n) {
        return g;
    }
    hashed_groups(cols, n)
}

/// Two keys, a SYMBOL and an integer (a time bucket), neither with NULLs, over a dictionary
/// not much larger than the input: each code remembers the last value it met and its group,
/// so rows in time order (a symbol's rows stay in one bucket for a while) find their group
/// without hashing; the others go through a table of (code, value) pairs. Groups in order
/// of first appearance, as the general table numbers them.
fn symbol_int_groups(cols: &[&Column], n: usize) -> Option<GroupIds> {
    let ([a, b], None, None) = (cols, cols.first()?.validity(), cols.get(1)?.validity()) else { return None };
    fn ints(c: &Column) -> Option<&[i64]> {
        match c.data() {
            ColumnData::Int64(v) | ColumnData::Timestamp(v) => Some(v.as_slice()),
            _ => None,
        }
    }
    let ((codes, dict_len), vals) = match (a.data(), b.data()) {
        (ColumnData::Symbol { codes, dict }, _) => ((codes.as_slice(), dict.len()), ints(b)?),
        (_, ColumnData::Symbol { codes, dict }) => ((codes.as_slice(), dict.len()), ints(a)?),
        _ => return None,
    };
    if dict_len > 4 * n + 1024 {
        return None;
    }
    let mut recent: Vec<(i64, u32)> = vec![(0, u32::MAX); dict_len];
    let slot_of = |k: u32, v: i64, mask: usize| (mix((v as u64) ^ (u64::from(k) << 40) ^ SEED) as usize) & mask;
    let mut mask = 15usize;
    let mut slots = vec![u32::MAX; mask + 1];
    let (mut keys, mut first): (Vec<(u32, i64)>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut ids = Vec::with_capacity(n);
    for (i, (&k, &v)) in codes.iter().zip(vals).enumerate() {
        let r = recent.get_mut(k as usize)?;
        if r.1 != u32::MAX && r.0 == v {
            ids.push(r.1);
            continue;
        }
        let mut s = slot_of(k, v, mask);
        let g = loop {
            match slots[s] {
                u32::MAX => {
                    slots[s] = keys.len() as u32;
                    keys.push((k, v));
                    first.push(i as u32);
                    break slots[s];
                }
                g if keys[g as usize] == (k, v) => break g,
                _ => s = (s + 1) & mask,
            }
        };
        *r = (v, g);
        ids.push(g);
        if keys.len() * 2 > mask {
            mask = mask * 2 + 1;
            slots = vec![u32::MAX; mask + 1];
            for (g, &(k, v)) in keys.iter().enumerate() {
                let mut s = slot_of(k, v, mask);
                while slots[s] != u32::MAX {
                    s = (s + 1) & mask;
                }
                slots[s] = g as u32;
            }
        }
    }
    Some(GroupIds { ids, first })
}

/// [`group_ids`] by row hashes, compared through the columns: any keys.
fn hashed_groups(cols: &[&Column], n: usize) -> GroupIds {
    let hashes = hash_rows(cols, n);
    // The table starts small and doubles as groups come: a few groups over many rows stay in
    // cache, and no table the size of the input is zeroed.
    let mut cap = 16usize;
    let mut slots = vec![u32::MAX; cap];
    let mut group_hash: Vec<u64> = Vec::new();
    let mut first: Vec<u32> = Vec::new();
    let mut ids = Vec::with_capacity(n);
    let mut mask = cap - 1;
    for i in 0..n {
        let h = hashes[i];
        let mut s = (h as usize) & mask;
        let g = loop {
            let g = slots[s];
            if g == u32::MAX {
                let g = first.len() as u32;
                slots[s] = g;
                first.push(i as u32);
                group_hash.push(h);
                break g;
            }
            if group_hash[g as usize] == h && rows_equal(cols, first[g as usize] as usize, cols, i) {
                break g;
            }
            s = (s + 1) & mask;
        };
        ids.push(g);
        if first.len() * 2 > cap {
            cap <<= 1;
            mask = cap - 1;
            slots = vec![u32::MAX; cap];
            for (gi, &gh) in group_hash.iter().enumerate() {
                let mut s = (gh as usize) & mask;
                while slots[s] != u32::MAX {
                    s = (s + 1) & mask;
                }
                slots[s] = gi as u32;
            }
        }
    }
    GroupIds { ids, first }
}

/// One DOUBLE key without NULLs (`GROUP BY price`): grouped as [`int_groups`] groups the
/// bits the general table compares ([`float_key`]: both zeros one key, every NaN one key),
/// which compares them in the table itself instead of through the column, with no row hashes
/// kept.
fn float_groups(v: &[f64]) -> GroupIds {
    let bits: Vec<i64> = v.iter().map(|&x| float_key(x) as i64).collect();
    int_groups(&bits)
}

/// One integer key without NULLs: the group table compares the values themselves (no row
/// hashes kept, no row comparison through the columns). Groups in order of first appearance,
/// as the general table numbers them.
fn int_groups<T: Copy + Eq + Into<i64>>(v: &[T]) -> GroupIds {
    if let Some(g) = dense_int_groups(v) {
        return g;
    }
    let slot_of = |x: T, mask: usize| (mix(x.into() as u64 ^ SEED) as usize) & mask;
    let mut mask = 15usize;
    let mut slots = vec![u32::MAX; mask + 1];
    let (mut keys, mut first): (Vec<T>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut ids = Vec::with_capacity(v.len());
    for (i, &x) in v.iter().enumerate() {
        let mut s = slot_of(x, mask);
        let g = loop {
            match slots[s] {
                u32::MAX => {
                    slots[s] = keys.len() as u32;
                    keys.push(x);
                    first.push(i as u32);
                    break slots[s];
                }
                g if keys[g as usize] == x => break g,
                _ => s = (s + 1) & mask,
            }
        };
        ids.push(g);
        if keys.len() * 2 > mask {
            // Half full: double, and place every group again.
            mask = mask * 2 + 1;
            slots = vec![u32::MAX; mask + 1];
            for (g, &k) in keys.iter().enumerate() {
                let mut s = slot_of(k, mask);
                while slots[s] != u32::MAX {
                    s = (s + 1) & mask;
                }
                slots[s] = g as u32;
            }
        }
    }
    GroupIds { ids, first }
}

/// [`int_groups`] when the values span a small range (under [`DENSE_SPAN`], or the row
/// count): the value's offset from the least is its slot, as a dictionary code is; or when
/// they are a common step apart and span that many steps ([`Stride`]): the offset's quotient.
fn dense_int_groups<T: Copy + Into<i64>>(v: &[T]) -> Option<GroupIds> {
    if v.is_empty() {
        return None;
    }
    // One pass for both ends (the pair of lanes vectorizes like either alone).
    let (lo, hi) = v.iter().fold((i64::MAX, i64::MIN), |(lo, hi), &x| (lo.min(x.into()), hi.max(x.into())));
    let limit = DENSE_SPAN.max(v.len());
    let span = hi.abs_diff(lo);
    if span >= limit as u64 {
        // Values a common step apart (time buckets: multiples of a minute in ns) are dense
        // in steps.
        return Stride::of(v, lo, span, limit).and_then(|st| st.groups(v, lo));
    }
    // In range: `lo <= x <= hi`, and `hi - lo` fits the map.
    by_slot(v, span as usize + 1, |x| Some(x.into().abs_diff(lo) as usize))
}

/// Rows grouped by a slot each (`slot` of the row's value, below `slots`; `None`: the rows do
/// not fit, give up), the groups numbered in order of first appearance, as the general table
/// numbers them.
#[inline(always)]
fn by_slot<T: Copy>(v: &[T], slots: usize, slot: impl Fn(T) -> Option<usize>) -> Option<GroupIds> {
    let mut map = vec![u32::MAX; slots];
    let (mut first, mut ids) = (Vec::new(), Vec::with_capacity(v.len()));
    for (i, &x) in v.iter().enumerate() {
        let g = &mut map[slot(x)?];
        if *g == u32::MAX {
            *g = first.len() as u32;
            first.push(i as u32);
        }
        ids.push(*g);
    }
    Some(GroupIds { ids, first })
}

/// A step every value's offset from the least may be a multiple of, taken as
/// `2^shift * odd`: an offset's quotient is `(offset >> shift) * inverse` (the odd factor's
/// inverse modulo 2^64), exact for a multiple, and above `slots` for anything else, so one
/// shift, one multiplication and one comparison place a value or find it does not fit
/// (Granlund and Montgomery's divisibility test), with no division.
struct Stride {
    shift: u32,
    inverse: u64,
    /// The largest quotient (the span over the step).
    slots: u64,
}

impl Stride {
    /// Rows, spread over the column, whose offsets give the step (with the span: 64
    /// multiples of a step share no larger factor but by a rare chance, which the placing
    /// pass then finds, and rows in time order are not all of one bucket).
    const SAMPLE: usize = 64;

    /// The step of [`Stride::SAMPLE`] rows' offsets from `lo` and of `span`, when the values
    /// would fit `limit` slots at that step (`None` otherwise, or for a step of 1).
    fn of<T: Copy + Into<i64>>(v: &[T], lo: i64, span: u64, limit: usize) -> Option<Stride> {
        fn gcd(mut a: u64, mut b: u64) -> u64 {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        }
        // Stop at 1: no step (wide integers without one cost two divisions a row, then none).
        let spread = v.iter().step_by(v.len().div_ceil(Self::SAMPLE).max(1));
        let mut offsets = spread.map(|&x| x.into().abs_diff(lo)).chain(std::iter::once(span));
        let step = offsets.try_fold(0, |g, off| match gcd(g, off) {
            1 => None,
            g => Some(g),
        })?;
        // (A step of 0 or 1 cannot come out of the fold, which counts the span; the test keeps
        // the division below from a zero all the same.)
        if step < 2 || span / step >= limit as u64 {
            return None;
        }
        let shift = step.trailing_zeros();
        let odd = step >> shift;
        // Newton's iteration doubles the correct low bits of an inverse each step: an odd
        // number is its own inverse modulo 8 (3 bits), five steps give 96.
        let inverse = (0..5).fold(odd, |x, _| x.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(x))));
        debug_assert_eq!(odd.wrapping_mul(inverse), 1);
        Some(Stride { shift, inverse, slots: span / step })
    }

    /// Each row's group by its quotient, in order of first appearance; `None` as soon as a
    /// value is not `lo` plus a multiple of the step.
    fn groups<T: Copy + Into<i64>>(&self, v: &[T], lo: i64) -> Option<GroupIds> {
        let low_bits = (1u64 << self.shift) - 1;
        // `slots` is below the limit `of` was given, a usize.
        by_slot(v, self.slots as usize + 1, |x| {
            let off = x.into().abs_diff(lo);
            let q = (off >> self.shift).wrapping_mul(self.inverse);
            (off & low_bits == 0 && q <= self.slots).then_some(q as usize)
        })
    }
}

/// Integer keys spanning fewer values than this group by direct slot, whatever the rows.
const DENSE_SPAN: usize = 1 << 16;

/// One SYMBOL key: the dictionary code is the group (no hashing at all).
fn symbol_groups(c: &Column, codes: &[u32], dict_len: usize) -> GroupIds {
    let mut map = vec![u32::MAX; dict_len + 1];
    let mut first = Vec::new();
    let mut ids = Vec::with_capacity(codes.len());
    if c.validity().is_none() {
        for (i, &k) in codes.iter().enumerate() {
            let g = &mut map[k as usize];
            if *g == u32::MAX {
                *g = first.len() as u32;
                first.push(i as u32);
            }
            ids.push(*g);
        }
        return GroupIds { ids, first };
    }
    for (i, &k) in codes.iter().enumerate() {
        let slot = if c.is_valid(i) { k as usize } else { dict_len };
        let g = &mut map[slot];
        if *g == u32::MAX {
            *g = first.len() as u32;
            first.push(i as u32);
        }
        ids.push(*g);
    }
    GroupIds { ids, first }
}

/// Indices of the first occurrence of each distinct row, in input order.
pub fn distinct_rows(b: &Batch) -> Vec<u32> {
    let cols: Vec<&Column> = b.col_refs();
    if cols.is_empty() {
        return if b.rows > 0 { vec![0] } else { vec![] };
    }
    group_ids(&cols, b.rows).first
}

/// Group ids shared by the two sides of a join on `lk = rk` (equal keys ↔ equal ids), and the
/// number of ids. One SYMBOL key on both sides maps dictionaries once (codes are the ids);
/// anything else stacks both sides' keys and groups them together. Callers skip NULL keys.
pub fn shared_ids(lk: &[&Column], rk: &[&Column], n: usize, m: usize) -> (Vec<u32>, Vec<u32>, usize) {
    if lk.is_empty() {
        return (vec![0; n], vec![0; m], 1);
    }
    if let ([l], [r]) = (lk, rk) {
        if let (ColumnData::Symbol { codes: lc, dict: ld }, ColumnData::Symbol { codes: rc, dict: rd }) =
            (&l.data(), &r.data())
        {
            // Right codes are the ids; left codes map through the strings (one lookup per
            // left dictionary entry). `rd.len()` stands for "no right row has this key".
            let ng = rd.len() + 1;
            let map: Vec<u32> = if ld.lineage() == rd.lineage() {
                (0..ld.len() as u32).map(|c| if (c as usize) < rd.len() { c } else { rd.len() as u32 }).collect()
            } else {
                ld.iter().map(|s| rd.code(s).unwrap_or(rd.len() as u32)).collect()
            };
            let lid = lc.iter().map(|&c| map.get(c as usize).copied().unwrap_or(rd.len() as u32)).collect();
            return (lid, rc.clone().into(), ng);
        }
    }
    let stacked: Vec<Column> = lk.iter().zip(rk).map(|(a, b)| Column::concat(&[a, b])).collect();
    let refs: Vec<&Column> = stacked.iter().collect();
    let g = group_ids(&refs, n + m);
    let ng = g.first.len();
    let mut ids = g.ids;
    let rid = ids.split_off(n);
    (ids, rid, ng)
}

/// Rows grouped by id with a counting sort (input order kept inside each group), skipping the
/// rows where `keep` is false: group `g` is `order[start[g]..start[g + 1]]`.
pub fn bucket_rows(ids: &[u32], keep: impl Fn(usize) -> bool, ngroups: usize) -> (Vec<usize>, Vec<u32>) {
    let mut start = vec![0usize; ngroups + 1];
    for (j, &g) in ids.iter().enumerate() {
        if keep(j) {
            start[g as usize + 1] += 1;
        }
    }
    for g in 0..ngroups {
        start[g + 1] += start[g];
    }
    let mut order = vec![0u32; start[ngroups]];
    let mut next = start.clone();
    for (j, &g) in ids.iter().enumerate() {
        if keep(j) {
            order[next[g as usize]] = j as u32;
            next[g as usize] += 1;
        }
    }
    (start, order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;

    /// DOUBLE keys group as the general table groups them: both zeros together, every NaN
    /// together, the groups numbered alike.
    #[test]
    fn double_keys_group_as_the_general_table_does() {
        let mut rng = XorShift::new(0x00d0_ab1e);
        let special = [0.0, -0.0, f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-310];
        for case in 0..40u64 {
            let n = [0, 1, 7, 500, 5000][(case % 5) as usize];
            let spread = [2, 40, 10_000, 1 << 30][(case / 5 % 4) as usize];
            let v: Vec<f64> = (0..n)
                .map(|_| match rng.below(8) {
                    0 => special[rng.index(special.len())],
                    _ => (rng.below(spread) as f64 - (spread / 2) as f64) / 100.0,
                })
                .collect();
            let col = Column::from_data(ColumnData::Float64(v.clone().into()));
            let (fast, general) = (float_groups(&v), hashed_groups(&[&col], n));
            assert_eq!((fast.ids, fast.first), (general.ids, general.first), "case {case}");
        }
    }

    #[test]
    fn integer_keys_group_as_the_general_table_does() {
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut dense = 0;
        for case in 0..60u64 {
            let n = [0, 1, 5, 100, 3000][(case % 5) as usize];
            // From a few distinct values to nearly all distinct (the table doubles many times).
            let spread = [1, 3, 50, 1_000, 1 << 40][(case / 5 % 5) as usize];
            let v: Vec<i64> = (0..n).map(|_| rng.below(spread) as i64 - (spread / 2) as i64).collect();
            let col = Column::from_data(ColumnData::Int64(v.clone().into()));
            let (fast, general) = (int_groups(&v), hashed_groups(&[&col], n));
            if let Some(by_slot) = dense_int_groups(&v) {
                dense += 1;
                // A small span, or values a common step apart.
                let (lo, hi) = (v.iter().min().copied().unwrap_or(0), v.iter().max().copied().unwrap_or(0));
                let (span, limit) = (hi.abs_diff(lo), DENSE_SPAN.max(n));
                assert!(span < limit as u64 || Stride::of(&v, lo, span, limit).is_some(), "case {case}: span {span}");
                assert_eq!((by_slot.ids, by_slot.first), (general.ids.clone(), general.first.clone()), "case {case}");
            }
            assert_eq!(fast.ids, general.ids, "case {case}");
            assert_eq!(fast.first, general.first, "case {case}");
            let narrow: Vec<i32> = v.iter().map(|&x| x as i32).collect();
            let col = Column::from_data(ColumnData::Int32(narrow.clone().into()));
            assert_eq!(int_groups(&narrow).ids, hashed_groups(&[&col], n).ids, "case {case} as INTEGER");
        }
        // Both ways were taken: by direct slot (small spans) and by the table (wide ones).
        assert!((1..60).contains(&dense), "{dense} of 60 cases by direct slot");
    }

    /// Values a step apart over a wide span (time buckets, multiples of odd, even and
    /// power-of-two steps, from any origin, across i64's ends) group by their quotient as the
    /// general table groups them; one value off the step (after the sampled rows too) sends
    /// them back to the table, with the same answer.
    #[test]
    fn values_a_step_apart_group_by_their_quotient() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut strided = 0;
        for case in 0..400u64 {
            let step: i64 = match case % 5 {
                0 => 60_000_000_000,
                1 => 1 << (1 + rng.below(40)),
                2 => 3 + 2 * rng.below(1 << 30) as i64,
                3 => (1 + rng.below(1000) as i64) << (1 + rng.below(20)),
                _ => i64::MAX / (2 + rng.below(1000) as i64),
            };
            let origin = match case % 3 {
                0 => i64::MIN + rng.below(1000) as i64,
                1 => rng.below(u64::MAX) as i64,
                _ => 1_704_187_800_000_000_000,
            };
            let (n, buckets) = (1 + rng.below(3000) as usize, 1 + rng.below(2000) as i64);
            let mut v: Vec<i64> = (0..n)
                .map(|_| origin.saturating_add((rng.below(buckets as u64) as i64).saturating_mul(step)))
                .collect();
            if case % 4 == 3 {
                // One value off the step, most often in none of the rows the step is taken from.
                let at = rng.below(n as u64) as usize;
                v[at] = v[at].saturating_add(if v[at] > 0 { -1 } else { 1 });
            }
            let col = Column::from_data(ColumnData::Int64(v.clone().into()));
            let general = hashed_groups(&[&col], n);
            let (lo, hi) = (v.iter().min().copied().unwrap_or(0), v.iter().max().copied().unwrap_or(0));
            let span = hi.abs_diff(lo);
            if let Some(st) = Stride::of(&v, lo, span, DENSE_SPAN.max(n)) {
                if let Some(g) = st.groups(&v, lo) {
                    strided += 1;
                    assert_eq!((&g.ids, &g.first), (&general.ids, &general.first), "case {case}, step {step}");
                }
            }
            let fast = int_groups(&v);
            assert_eq!((fast.ids, fast.first), (general.ids, general.first), "case {case}, step {step}");
        }
        assert!((100..400).contains(&strided), "{strided} of 400 cases by quotient");
    }
}
