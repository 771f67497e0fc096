//! Values added into their groups by id (hash GROUP BY's [`super::Rows::Ids`]), with few
//! groups in lanes.
//!
//! With few groups (`GROUP BY side`, `size % 10`), neighbouring rows keep adding into the same
//! slot: each addition waits for the previous one's store to that slot, and the CPU, which
//! runs the loads of later rows ahead of earlier stores, must often undo them. Rows then go
//! into [`LANES`] copies of the slots in turn (row `i` into copy `i % LANES`), and the copies
//! are added at the end: a slot's neighbouring additions are four rows further apart. On 10M
//! rows in ten groups this took `sum(price), count(*) GROUP BY size % 10` from 41-46 to 24 ms
//! (bench/README). With many groups the rows rarely meet, and they are added in place.
//!
//! Integer sums are exact in any order. A float sum adds each copy's rows in order, then the
//! copies: other bits than one pass in row order, as any split of the rows among threads
//! gives.

/// Copies of the slots rows are spread over.
const LANES: usize = 4;

/// Groups up to which the copies are used (four copies of 2,048 16-byte slots stay in L2).
const FEW: usize = 2048;

/// A sum an accumulator keeps per group: added in any order (floats aside, see the module).
pub trait Add: Copy + Default {
    fn add(self, o: Self) -> Self;
}

impl Add for i64 {
    #[inline(always)]
    fn add(self, o: i64) -> i64 {
        self + o
    }
}

impl Add for f64 {
    #[inline(always)]
    fn add(self, o: f64) -> f64 {
        self + o
    }
}

impl<A: Add, B: Add> Add for (A, B) {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        (self.0.add(o.0), self.1.add(o.1))
    }
}

impl Add for i128 {
    #[inline(always)]
    fn add(self, o: i128) -> i128 {
        self + o
    }
}

/// Adds `value(i)` into `out[ids[i]]` for every row `i` (every id below `out.len()`).
pub fn add_by_ids<T: Add>(out: &mut [T], ids: &[u32], value: impl Fn(usize) -> T) {
    let g = out.len();
    debug_assert!(ids.iter().all(|&x| (x as usize) < g), "an id past the groups");
    if !few(g, ids.len()) {
        for (i, &x) in ids.iter().enumerate() {
            out[x as usize] = out[x as usize].add(value(i));
        }
        return;
    }
    let lanes = in_lanes(g, ids, value);
    for (s, o) in out.iter_mut().enumerate() {
        *o = (0..LANES).fold(*o, |a, k| a.add(lanes[k * g + s]));
    }
}

/// [`add_by_ids`] of pairs kept in two slices of one length (a sum and a count): `value(i)`'s
/// first into `a[ids[i]]`, its second into `b[ids[i]]`.
pub fn add_pairs_by_ids<A: Add, B: Add>(a: &mut [A], b: &mut [B], ids: &[u32], value: impl Fn(usize) -> (A, B)) {
    let g = a.len();
    debug_assert!(b.len() == g && ids.iter().all(|&x| (x as usize) < g), "an id past the groups");
    if !few(g, ids.len()) {
        for (i, &x) in ids.iter().enumerate() {
            let (p, q) = value(i);
            a[x as usize] = a[x as usize].add(p);
            b[x as usize] = b[x as usize].add(q);
        }
        return;
    }
    let lanes = in_lanes(g, ids, value);
    for (s, (x, y)) in a.iter_mut().zip(b.iter_mut()).enumerate() {
        (*x, *y) = (0..LANES).fold((*x, *y), |acc, k| acc.add(lanes[k * g + s]));
    }
}

/// Whether `rows` rows in `g` groups go through the lanes: few groups, each with many rows
/// on average (the copies are made and added for every group).
fn few(g: usize, rows: usize) -> bool {
    g <= FEW && rows >= 16 * g
}

/// Each copy's sums: copy `k`'s slot of group `x` at `k * g + x`.
fn in_lanes<T: Add>(g: usize, ids: &[u32], value: impl Fn(usize) -> T) -> Vec<T> {
    let mut lanes = vec![T::default(); LANES * g];
    let (copies, rest) = lanes.split_at_mut(g);
    let mut quads = ids.chunks_exact(LANES);
    for (q, four) in quads.by_ref().enumerate() {
        let i = q * LANES;
        // Slots of copy k are lanes[k * g..]: copy 0 in `copies`, the others in `rest`.
        copies[four[0] as usize] = copies[four[0] as usize].add(value(i));
        for k in 1..LANES {
            let s = (k - 1) * g + four[k] as usize;
            rest[s] = rest[s].add(value(i + k));
        }
    }
    let done = ids.len() - quads.remainder().len();
    for (j, &x) in quads.remainder().iter().enumerate() {
        copies[x as usize] = copies[x as usize].add(value(done + j));
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;

    /// Exact sums (integers, and counts) are those of one pass in row order, for every
    /// number of groups and rows, lanes or not.
    #[test]
    fn integer_sums_by_id_are_exact_with_or_without_lanes() {
        let mut rng = XorShift::new(0x5ca7_7e2d);
        for round in 0..300 {
            let g = [1, 2, 3, 10, 100, 2048, 2049, 5000][round % 8];
            let n = rng.below(40_000) as usize;
            let ids: Vec<u32> = (0..n).map(|_| rng.below(g as u64) as u32).collect();
            let v: Vec<i64> = (0..n).map(|_| rng.next_u64() as i64 >> 8).collect();
            let mut want = vec![(3i128, 1i64); g];
            for (i, &x) in ids.iter().enumerate() {
                want[x as usize].0 += i128::from(v[i]);
                want[x as usize].1 += 1;
            }
            let mut got = vec![(3i128, 1i64); g];
            add_by_ids(&mut got, &ids, |i| (i128::from(v[i]), 1));
            assert_eq!(got, want, "round {round}: {g} groups, {n} rows");
            let (mut sums, mut counts) = (vec![3i128; g], vec![1i64; g]);
            add_pairs_by_ids(&mut sums, &mut counts, &ids, |i| (i128::from(v[i]), 1));
            assert_eq!(sums.into_iter().zip(counts).collect::<Vec<_>>(), want, "round {round}: pairs");
        }
    }

    /// Float sums agree with one pass in row order to rounding.
    #[test]
    fn float_sums_by_id_agree_to_rounding() {
        let mut rng = XorShift::new(0xf10a7);
        let (g, n) = (10, 100_000);
        let ids: Vec<u32> = (0..n).map(|_| rng.below(g as u64) as u32).collect();
        let v: Vec<f64> = (0..n).map(|_| (rng.below(1 << 30) as f64) / 1024.0).collect();
        let mut want = vec![0.0f64; g];
        ids.iter().enumerate().for_each(|(i, &x)| want[x as usize] += v[i]);
        let mut got = vec![0.0f64; g];
        add_by_ids(&mut got, &ids, |i| v[i]);
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} against {b}");
        }
    }
}
