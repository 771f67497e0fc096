//! The exact sum of every run of a NULL-free BIGINT column (a bar's volume): runs of a few
//! dozen rows, tens of thousands of them, so what costs is the work per run, not per row.
//!
//! As in `run_extremes.rs`, most runs are read in the same number of chunks of four rows
//! ([`chunks_per_run`]), so the loop over a run's chunks ends where the CPU predicts it will;
//! the rows a run's last chunks read past its end (the next runs' rows) are masked to zero.
//! A run of [`LONG_RUN`] rows or more (a whole partition's `sum(size)`), and a run at the
//! column's end, is read instead in whole chunks without masks and its last rows one by one
//! (`whole`).
//! The lanes add in wrapping i64: a wrapped sum is the true one whenever the true one fits,
//! and the magnitudes seen on the way prove that it does (every |x| at most 2^b over l rows:
//! the sum is under 2^(b + l)), so no row is checked for overflow. A run longer than [`BLOCK`]
//! rows is summed a block at a time (the bound then holds for values up to 2^50), the blocks
//! added in i128; a run or block whose values the bound does not cover is added in i128 row
//! by row.

use super::run_extremes::chunks_per_run;
use super::runs;

/// Rows of a long run summed in lanes at a time.
const BLOCK: usize = 4096;

/// A run of at least this many rows is summed over its whole chunks without a mask, its last
/// rows one by one: a partition summed whole (`sum(size)` over a table) took twice as long
/// through the masked chunks that suit bars.
const LONG_RUN: usize = 64;

/// Each run's exact sum of `v` (`runs` over `starts`, all of `v`'s rows).
pub fn run_sums_i64(v: &[i64], starts: &[u32]) -> Vec<i128> {
    #[cfg(target_arch = "x86_64")]
    if let Some(out) = avx2::run_sums(v, starts) {
        return out;
    }
    portable(v, starts)
}

/// [`run_sums_i64`] on any CPU.
fn portable(v: &[i64], starts: &[u32]) -> Vec<i128> {
    let chunks = |w: &[i64], len: usize| {
        let mut seen = [0u64; 4];
        let sum = masked_sum(w, len, &mut seen);
        (sum, seen.iter().fold(0, |a, &m| a | m))
    };
    by_runs(v, starts, chunks, |w| chunks(w, w.len()))
}

/// Every run's sum, through `chunks(w, len)`: the wrapping sum and the OR of the magnitudes
/// of `w`'s first `len` rows (`w` whole chunks of four), and `whole(w)`: the same of all of
/// `w` (whole chunks of four), for long runs.
#[inline(always)]
fn by_runs(
    v: &[i64],
    starts: &[u32],
    chunks: impl Fn(&[i64], usize) -> (i64, u64),
    whole: impl Fn(&[i64]) -> (i64, u64),
) -> Vec<i128> {
    let n = v.len();
    let t = chunks_per_run(starts, n);
    let lanes = |s: usize, e: usize| {
        let len = e - s;
        let window = (len < LONG_RUN).then(|| v.get(s..s + 4 * t.max(len.div_ceil(4)))).flatten();
        match window {
            Some(w) => chunks(w, len),
            // A long run, or the last run, whose chunks would read past the column's end: its
            // whole chunks in lanes, the last rows one by one.
            None => {
                let body = len / 4 * 4;
                let (a, m) = whole(&v[s..s + body]);
                let (b, n) = tail_sum(&v[s + body..e]);
                (a.wrapping_add(b), m | n)
            }
        }
    };
    // Every run at once, the bound over all of them: the common case, one check.
    // The wrapping sums go in as i128 at once: no second pass to widen them when proven.
    let (mut seen, mut longest) = (0u64, 0usize);
    let mut sums: Vec<i128> = Vec::with_capacity(starts.len());
    for (s, e) in runs(starts, n) {
        let (sum, m) = lanes(s, e);
        (seen, longest) = (seen | m, longest.max(e - s));
        sums.push(i128::from(sum));
    }
    if proven(seen, longest) {
        return sums;
    }
    // Values too large for the bound over the longest run: each run (a long one a block at a
    // time) checked on its own, added in i128 where its own bound fails.
    let exact = |s: usize, e: usize| match lanes(s, e) {
        (sum, m) if proven(m, e - s) => i128::from(sum),
        _ => wide_sum(&v[s..e]),
    };
    let blocks = |(s, e): (usize, usize)| (s..e).step_by(BLOCK).map(|a| exact(a, (a + BLOCK).min(e))).sum();
    runs(starts, n).map(blocks).collect()
}

/// Whether wrapping sums of `rows` values whose magnitude bits OR to `seen` are exact: every
/// |x| is at most 2^b (b: the bits of the largest `x ^ (x >> 63)`, which is |x| for x >= 0 and
/// |x| - 1 below), over fewer than 2^l rows, so a sum is under 2^(b + l).
fn proven(seen: u64, rows: usize) -> bool {
    (u64::BITS - seen.leading_zeros()) + (usize::BITS - rows.leading_zeros()) <= 63
}

/// The exact sum of `r`, one run, in the lanes of [`run_sums_i64`]'s chunks but without a
/// vector of sums: for a piece of a run the narrow reading cannot take (`narrow_runs.rs`).
pub(super) fn slice_sum_i64(r: &[i64]) -> i128 {
    let body = r.len() / 4 * 4;
    let mut seen = [0u64; 4];
    let a = masked_sum(&r[..body], body, &mut seen);
    let (b, m) = tail_sum(&r[body..]);
    match proven(seen.iter().fold(m, |x, &y| x | y), r.len()) {
        true => i128::from(a.wrapping_add(b)),
        false => wide_sum(r),
    }
}

/// The sum of rows whose magnitudes the lanes' bound does not cover, in i128 (rare: values
/// near i64's edges).
#[cold]
#[inline(never)]
fn wide_sum(r: &[i64]) -> i128 {
    r.iter().map(|&x| i128::from(x)).sum()
}

/// The wrapping sum of the first `len` rows of `w` (whole chunks of four; the rows past `len`
/// masked to zero), each row's magnitude bits OR-ed into `seen`.
#[inline(always)]
fn masked_sum(w: &[i64], len: usize, seen: &mut [u64; 4]) -> i64 {
    debug_assert!(w.len().is_multiple_of(4) && len <= w.len());
    let mut acc = [0i64; 4];
    for (j, c) in w.chunks_exact(4).enumerate() {
        for l in 0..4 {
            let keep = -(((4 * j + l) < len) as i64);
            let x = c[l] & keep;
            acc[l] = acc[l].wrapping_add(x);
            seen[l] |= (x ^ (x >> 63)) as u64;
        }
    }
    acc.iter().fold(0, |a, &x| a.wrapping_add(x))
}

/// A run's wrapping sum and magnitude bits, row by row (the last runs, whose chunks would read
/// past the column's end).
fn tail_sum(r: &[i64]) -> (i64, u64) {
    r.iter().fold((0i64, 0u64), |(a, m), &x| (a.wrapping_add(x), m | (x ^ (x >> 63)) as u64))
}

/// The chunk loop in AVX2 registers: a load, a mask, an add and the magnitude bits per chunk
/// (written out: the compiler's own vectorization of the portable loop shuffled lanes between
/// neighbouring chunks, slower than the serial running sum it replaced).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    /// [`super::run_sums_i64`]; `None` on a CPU without AVX2.
    pub fn run_sums(v: &[i64], starts: &[u32]) -> Option<Vec<i128>> {
        // SAFETY: the CPU has AVX2.
        is_x86_feature_detected!("avx2").then(|| unsafe { with_avx2(v, starts) })
    }

    /// [`run_sums`] compiled for AVX2.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn with_avx2(v: &[i64], starts: &[u32]) -> Vec<i128> {
        super::by_runs(v, starts, |w, len| chunks(w, len), |w| whole(w))
    }

    /// The wrapping sum and magnitude bits of all of `w` (whole chunks of four): no mask, two
    /// chunks a step in registers of their own.
    #[target_feature(enable = "avx2")]
    fn whole(w: &[i64]) -> (i64, u64) {
        assert!(w.len().is_multiple_of(4), "whole chunks");
        let p = w.as_ptr();
        let zero = _mm256_setzero_si256();
        let (mut acc, mut seen) = ([zero; 2], [zero; 2]);
        let step = |acc: &mut __m256i, seen: &mut __m256i, j: usize| {
            // SAFETY: chunk j is rows 4j..4j + 4 of `w`.
            let x = unsafe { _mm256_loadu_si256(p.add(4 * j).cast()) };
            *acc = _mm256_add_epi64(*acc, x);
            *seen = _mm256_or_si256(*seen, _mm256_xor_si256(x, _mm256_cmpgt_epi64(zero, x)));
        };
        let n = w.len() / 4;
        for j in (0..n / 2 * 2).step_by(2) {
            step(&mut acc[0], &mut seen[0], j);
            step(&mut acc[1], &mut seen[1], j + 1);
        }
        if n % 2 == 1 {
            step(&mut acc[0], &mut seen[0], n - 1);
        }
        let lanes = |m: __m256i| {
            let mut out = [0i64; 4];
            // SAFETY: `out` holds four i64.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), m) };
            out
        };
        let sum = lanes(_mm256_add_epi64(acc[0], acc[1])).iter().fold(0i64, |a, &x| a.wrapping_add(x));
        (sum, lanes(_mm256_or_si256(seen[0], seen[1])).iter().fold(0u64, |a, &m| a | m as u64))
    }

    /// The wrapping sum and magnitude bits of the first `len` rows of `w` (whole chunks of four).
    #[target_feature(enable = "avx2")]
    fn chunks(w: &[i64], len: usize) -> (i64, u64) {
        assert!(w.len().is_multiple_of(4) && len <= w.len(), "whole chunks over the run");
        let p = w.as_ptr();
        let (four, end) = (_mm256_set1_epi64x(4), _mm256_set1_epi64x(len as i64));
        let (mut idx, mut acc, mut seen) =
            (_mm256_set_epi64x(3, 2, 1, 0), _mm256_setzero_si256(), _mm256_setzero_si256());
        let zero = _mm256_setzero_si256();
        for j in 0..w.len() / 4 {
            // SAFETY: chunk j is rows 4j..4j + 4 of `w`.
            let x = unsafe { _mm256_loadu_si256(p.add(4 * j).cast()) };
            let x = _mm256_and_si256(x, _mm256_cmpgt_epi64(end, idx)); // rows past `len` read 0
            acc = _mm256_add_epi64(acc, x);
            seen = _mm256_or_si256(seen, _mm256_xor_si256(x, _mm256_cmpgt_epi64(zero, x)));
            idx = _mm256_add_epi64(idx, four);
        }
        let lanes = |m: __m256i| {
            let mut out = [0i64; 4];
            // SAFETY: `out` holds four i64.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), m) };
            out
        };
        let sum = lanes(acc).iter().fold(0i64, |a, &x| a.wrapping_add(x));
        (sum, lanes(seen).iter().fold(0u64, |a, &m| a | m as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::super::run_extremes::tests::bar_runs;
    use super::*;
    use zepto_storage::rng::XorShift;

    /// Each run's sum in i128, one row at a time.
    fn reference(v: &[i64], starts: &[u32]) -> Vec<i128> {
        runs(starts, v.len()).map(|(s, e)| v[s..e].iter().map(|&x| i128::from(x)).sum()).collect()
    }

    /// Runs shaped as bars, values of every magnitude up to i64's edges (and i64::MIN): every
    /// run's sum is the exact one, on this CPU's path and the portable one.
    #[test]
    fn every_run_sums_exactly() {
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        for round in 0..400 {
            let bits = [8, 20, 40, 50, 56, 62, 63][round % 7];
            let (mut v, starts) = bar_runs(&mut rng, |rng| {
                let x = (rng.next_u64() >> (64 - bits)) as i64;
                if rng.below(2) == 0 {
                    x
                } else {
                    x.wrapping_neg()
                }
            });
            if round % 11 == 0 {
                *v.last_mut().expect("a run has rows") = i64::MIN;
            }
            let want = reference(&v, &starts);
            assert_eq!(run_sums_i64(&v, &starts), want, "round {round}");
            assert_eq!(portable(&v, &starts), want, "round {round}: portable");
        }
    }

    /// Runs longer than a block, values that fit the bound a block at a time but not over the
    /// whole run, and one value past it in a later block.
    #[test]
    fn long_runs_sum_a_block_at_a_time() {
        let mut rng = XorShift::new(7);
        let mut v: Vec<i64> = (0..3 * BLOCK + 17).map(|_| (rng.next_u64() >> 14) as i64).collect();
        let starts = [0, 5, (BLOCK + 3) as u32];
        assert_eq!(run_sums_i64(&v, &starts), reference(&v, &starts));
        v[2 * BLOCK + 9] = i64::MAX;
        assert_eq!(run_sums_i64(&v, &starts), reference(&v, &starts));
        assert_eq!(portable(&v, &starts), reference(&v, &starts));
    }

    /// One run over the whole column (a partition summed whole), of lengths that leave one to
    /// three rows past the last chunk of four, with values inside the bound and one past it.
    #[test]
    fn whole_columns_sum_in_lanes_with_their_last_rows() {
        let mut rng = XorShift::new(11);
        for n in [1, 2, 3, 4, 5, 6, 7, 63, 65, 1001, 1002, 1003, 1004, 2 * BLOCK + 3] {
            let mut v: Vec<i64> = (0..n).map(|_| (rng.next_u64() >> 20) as i64 - (1 << 43)).collect();
            assert_eq!(run_sums_i64(&v, &[0]), reference(&v, &[0]), "{n} rows");
            assert_eq!(portable(&v, &[0]), reference(&v, &[0]), "{n} rows: portable");
            assert_eq!(vec![slice_sum_i64(&v)], reference(&v, &[0]), "{n} rows: one slice");
            v[n - 1] = i64::MIN;
            v[0] = i64::MIN;
            assert_eq!(run_sums_i64(&v, &[0]), reference(&v, &[0]), "{n} rows, i64::MIN");
            assert_eq!(portable(&v, &[0]), reference(&v, &[0]), "{n} rows, i64::MIN: portable");
            assert_eq!(vec![slice_sum_i64(&v)], reference(&v, &[0]), "{n} rows, i64::MIN: one slice");
        }
    }

    /// No runs (no rows), and one run of one row.
    #[test]
    fn edges() {
        assert_eq!(run_sums_i64(&[], &[]), Vec::<i128>::new());
        assert_eq!(run_sums_i64(&[-7], &[0]), vec![-7]);
        assert_eq!(run_sums_i64(&[i64::MIN, i64::MIN], &[0]), vec![2 * i128::from(i64::MIN)]);
        assert_eq!(run_sums_i64(&[1 << 61, 1 << 61], &[0, 1]), vec![1 << 61, 1 << 61]);
    }
}
