//! Loops the accumulators share: multi-lane reductions over a slice (no per-row dependency
//! chain, so the compiler vectorizes them), value conversions, and the "best row per group"
//! search behind min/max and first/last.

use crate::error::{Result, SqlError};
use crate::exec::cmp::value_cmp;
pub use crate::exec::numeric::{from_opt_f64, to_f64, validity};
use crate::exec::prefetch::ahead;
use std::borrow::Cow;
use std::cmp::Ordering;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, ColumnData};

/// Sum of a slice with 8 independent accumulators: lane `k` adds rows `k`, `k + 8`, ..., the
/// rows past the last eight are added in order, then the lanes (the bits every float sum
/// path gives, `product.rs`). Compiled for AVX2 as well, chosen at run time: the same
/// additions in the same order, so the same bits, in two 4-wide registers instead of four
/// 2-wide ones (a sum over 100 partitions of 10k rows: 97 -> 84 us of kernel on one core).
pub fn lane_sum(v: &[f64]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        #[allow(unsafe_code)]
        return unsafe { lane_sum_avx2(v) };
    }
    lane_sum_portable(v)
}

/// [`lane_sum`] compiled for AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
unsafe fn lane_sum_avx2(v: &[f64]) -> f64 {
    lane_sum_portable(v)
}

/// [`lane_sum`]'s loop, for whichever target it is compiled into.
#[inline(always)]
fn lane_sum_portable(v: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut chunks = v.chunks_exact(8);
    for (i, c) in (&mut chunks).enumerate() {
        ahead(v, 8 * i);
        for k in 0..8 {
            acc[k] += c[k];
        }
    }
    chunks.remainder().iter().sum::<f64>() + acc.iter().sum::<f64>()
}

/// The largest (`max`) or smallest value of each run of `v` (`runs` over `starts`, all of
/// `v`'s rows; no run is empty). With AVX2 (chosen at run time) in eight lanes of copied
/// values, which LLVM turns into 64-bit vector compares; baseline x86-64 has none (it would
/// emulate them at half the speed), so there the rows are compared one by one.
pub fn run_int_extremes<T: Copy + Ord>(v: &[T], starts: &[u32], max: bool) -> Vec<T> {
    #[cfg(target_arch = "x86_64")]
    let lanes = std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let lanes = true;
    match (lanes, max) {
        (true, true) => lane_extremes(v, starts, |a: T, b: T| a.max(b)),
        (true, false) => lane_extremes(v, starts, |a: T, b: T| a.min(b)),
        (false, _) => row_extremes(v, starts, max),
    }
}

/// [`run_int_extremes`] a row at a time (over references: LLVM keeps it a scalar loop).
fn row_extremes<T: Copy + Ord>(v: &[T], starts: &[u32], max: bool) -> Vec<T> {
    let runs = super::runs(starts, v.len());
    match max {
        true => runs.map(|(s, e)| *v[s..e].iter().max().expect("a run has rows")).collect(),
        false => runs.map(|(s, e)| *v[s..e].iter().min().expect("a run has rows")).collect(),
    }
}

/// [`run_int_extremes`] in eight lanes, `pick` keeping the extreme of two values.
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn lane_extremes<T: Copy, F: Fn(T, T) -> T>(v: &[T], starts: &[u32], pick: F) -> Vec<T> {
    let runs = super::runs(starts, v.len());
    runs.map(|(s, e)| {
        let r = &v[s..e];
        let mut acc = [r[0]; 8];
        let mut chunks = r.chunks_exact(8);
        for (i, c) in (&mut chunks).enumerate() {
            ahead(v, s + 8 * i);
            for k in 0..8 {
                acc[k] = pick(acc[k], c[k]);
            }
        }
        chunks.remainder().iter().fold(acc.into_iter().reduce(&pick).expect("eight lanes"), |a, &x| pick(a, x))
    })
    .collect()
}

/// Integer-like values as i64 (booleans 0/1, NULL slots as stored), or `None` for floats and
/// non-numbers.
pub fn int_values(c: &Column) -> Option<Cow<'_, [i64]>> {
    Some(match &c.data() {
        ColumnData::Int64(v) | ColumnData::Interval(v) => Cow::Borrowed(v.as_slice()),
        ColumnData::Int32(v) => Cow::Owned(v.iter().map(|&x| x as i64).collect()),
        ColumnData::Bool(v) => Cow::Owned(v.iter().map(|&x| x as i64).collect()),
        ColumnData::Null(n) => Cow::Owned(vec![0; *n]),
        _ => return None,
    })
}

/// Number of valid values before each position (length n + 1).
pub fn prefix_valid(c: &Column) -> Vec<u32> {
    let mut pc = Vec::with_capacity(c.len() + 1);
    let mut acc = 0u32;
    pc.push(0);
    for i in 0..c.len() {
        acc += c.is_valid(i) as u32;
        pc.push(acc);
    }
    pc
}

/// The number of non-NULL values of `c` in each frame `fs[k]..fe[k]` (frames within `c`, each
/// start at or before its end): the frame's length where `c` has no NULLs, prefix counts
/// otherwise.
pub fn frame_counts(c: &Column, fs: &[u32], fe: &[u32]) -> Vec<u32> {
    debug_assert!(fs.iter().zip(fe).all(|(&s, &e)| s <= e && e as usize <= c.len()), "frames within the rows");
    if all_valid(c) {
        return fs.iter().zip(fe).map(|(&s, &e)| e - s).collect();
    }
    let pc = prefix_valid(c);
    fs.iter().zip(fe).map(|(&s, &e)| pc[e as usize] - pc[s as usize]).collect()
}

/// Whether `c` holds a value at every row (no validity, not an untyped NULL column).
pub fn all_valid(c: &Column) -> bool {
    c.validity().is_none() && !matches!(c.data(), ColumnData::Null(_))
}

/// Row of each group whose value compares `want` against all others (NULLs skipped); ties keep
/// the first row when `first_on_tie`, else the last. `NULL_INDEX` for a group with no value.
pub fn best_rows(c: &Column, ids: &[u32], ng: usize, want: Ordering, first_on_tie: bool) -> Vec<u32> {
    let mut best = vec![NULL_INDEX; ng];
    let all_valid = c.validity().is_none();
    macro_rules! typed {
        ($v:expr) => {{
            for (i, &g) in ids.iter().enumerate() {
                if !all_valid && !c.is_valid(i) {
                    continue;
                }
                let slot = &mut best[g as usize];
                if *slot == NULL_INDEX {
                    *slot = i as u32;
                    continue;
                }
                let o = $v[i].partial_cmp(&$v[*slot as usize]).unwrap_or(Ordering::Equal);
                if o == want || (o == Ordering::Equal && !first_on_tie) {
                    *slot = i as u32;
                }
            }
            return best;
        }};
    }
    match &c.data() {
        ColumnData::Float64(v) if !v.iter().any(|x| x.is_nan()) => typed!(v),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => typed!(v),
        ColumnData::Int32(v) => typed!(v),
        _ => {}
    }
    let cmp = value_cmp(c);
    for (i, &g) in ids.iter().enumerate() {
        if !c.is_valid(i) {
            continue;
        }
        let slot = &mut best[g as usize];
        if *slot == NULL_INDEX {
            *slot = i as u32;
            continue;
        }
        let o = cmp(i, *slot as usize);
        if o == want || (o == Ordering::Equal && !first_on_tie) {
            *slot = i as u32;
        }
    }
    best
}

/// `ids` with any id at or past `len` read as [`zepto_storage::column::NULL_INDEX`] (a NULL
/// row through `Column::take_opt`).
pub fn in_range(ids: &[u32], len: usize) -> Vec<u32> {
    ids.iter().map(|&g| if (g as usize) < len { g } else { zepto_storage::column::NULL_INDEX }).collect()
}

/// `col` grown with NULL rows to `n` rows, in place where its type allows.
pub fn grow(col: &mut Column, n: usize) {
    if col.len() < n {
        col.patch(&[], &Column::nulls(col.data_type(), n - col.len()));
    }
}

/// `col` padded with NULLs to `n` rows.
pub fn pad(col: Column, n: usize) -> Column {
    if col.len() >= n {
        return col;
    }
    let extra = Column::nulls(col.data_type(), n - col.len());
    Column::concat(&[&col, &extra])
}

/// For each window frame `fs[k]..fe[k]` (frames moving forward, as a window's do), its best
/// row: a monotonic deque of candidates, where a row leaves once a later one dominates it
/// (`dominated(earlier, later)`) or the frame's start passes it. Rows `usable` refuses are
/// never candidates; `NULL_INDEX` for a frame without one. Linear in the rows, whatever the
/// frames' lengths.
pub fn sliding_best(
    fs: &[u32],
    fe: &[u32],
    usable: impl Fn(usize) -> bool,
    dominated: impl Fn(usize, usize) -> bool,
) -> Vec<u32> {
    let mut dq: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut idx = Vec::with_capacity(fs.len());
    for (&a, &b) in fs.iter().zip(fe) {
        let (a, b) = (a as usize, b as usize);
        if a >= hi || a < lo {
            dq.clear();
            (lo, hi) = (a, a);
        }
        while hi < b {
            if usable(hi) {
                while dq.back().is_some_and(|&t| dominated(t, hi)) {
                    dq.pop_back();
                }
                dq.push_back(hi);
            }
            hi += 1;
        }
        lo = lo.max(a);
        while dq.front().is_some_and(|&t| t < a) {
            dq.pop_front();
        }
        idx.push(dq.front().map_or(NULL_INDEX, |&t| t as u32));
    }
    idx
}

/// Per group, from `a` (group `g` at row `g`) or `b` (at row `g`), whichever `take_b` says.
pub fn choose(a: &Column, b: &Column, take_b: impl Fn(usize) -> bool) -> Column {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    let both = Column::concat(&[a, b]);
    let idx: Vec<u32> = (0..n).map(|g| if take_b(g) { (n + g) as u32 } else { g as u32 }).collect();
    both.take(&idx)
}

/// `v` at `ids` (a missing position reads as the zero value).
pub fn at<T: Copy + Default>(v: &[T], ids: &[u32]) -> Vec<T> {
    ids.iter().map(|&g| v.get(g as usize).copied().unwrap_or_default()).collect()
}

/// The `i128` sums of an exact integer sum as BIGINT, or the overflow error.
pub fn checked_i64(v: i128) -> Result<i64> {
    i64::try_from(v).map_err(|_| SqlError::exec("out of range: sum() overflows BIGINT"))
}

/// The answers of every window frame `fs[k]..fe[k]` (edges only moving forward): a frame that
/// shares its start with the next or the previous one and does not end before the previous one
/// (a running frame) takes only the rows entering it into one running state (`fresh`, `add`
/// each row, `value` of the state); any other frame is answered whole (`whole` of its rows).
/// The one way the sliding aggregates without prefix sums (variance, moments, products,
/// bitwise folds) walk frames: each row enters a running frame once.
pub fn running_frames<S, T>(
    fs: &[u32],
    fe: &[u32],
    fresh: impl Fn() -> S,
    mut add: impl FnMut(&mut S, usize) -> Result<()>,
    value: impl Fn(&S) -> T,
    mut whole: impl FnMut(std::ops::Range<usize>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(fs.len());
    let (mut ws, mut we, mut run) = (usize::MAX, 0usize, fresh());
    for (k, (&a, &b)) in fs.iter().zip(fe).enumerate() {
        let (a, b) = (a as usize, b as usize);
        let growing = a == ws && b >= we;
        if !growing && fs.get(k + 1).is_none_or(|&next| next as usize != a) {
            out.push(whole(a..b.max(a))?);
            continue;
        }
        if !growing {
            (ws, we, run) = (a, a, fresh());
        }
        for r in we..b.max(we) {
            add(&mut run, r)?;
        }
        we = we.max(b);
        out.push(value(&run));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::run_extremes::tests::bar_runs;
    use super::*;
    use zepto_storage::rng::XorShift;

    /// `lane_sum` gives the bits of its written order (lane `k` over rows `k`, `k + 8`, ...,
    /// the tail in order, plus the lanes in order), whichever build of the loop runs: lengths around
    /// the lane width and past the prefetch distance, values of mixed magnitude and sign, so
    /// that another order of additions would round differently.
    #[test]
    fn lane_sum_adds_in_its_written_order() {
        let mut rng = XorShift::new(0x51f1_5eed);
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 63, 1000, 1031, 5000] {
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    let m = (rng.below(1_000_000)) as f64 / 7.0;
                    let e = (rng.below(40)) as i32 - 20;
                    if rng.below(2) == 0 {
                        m * 2f64.powi(e)
                    } else {
                        -m * 2f64.powi(e)
                    }
                })
                .collect();
            let whole = v.len() / 8 * 8;
            let mut lanes = [0.0f64; 8];
            for (i, &x) in v[..whole].iter().enumerate() {
                lanes[i % 8] += x;
            }
            let tail = v[whole..].iter().fold(-0.0, |a, &x| a + x);
            let want = tail + lanes.iter().fold(-0.0, |a, &l| a + l);
            assert_eq!(lane_sum(&v).to_bits(), want.to_bits(), "{n} rows");
            assert_eq!(lane_sum_portable(&v).to_bits(), want.to_bits(), "{n} rows, portable");
        }
    }

    /// Each run's largest (`max`) or smallest value, folded a row at a time.
    fn reference<T: Copy + Ord>(v: &[T], starts: &[u32], max: bool) -> Vec<T> {
        let pick = |a: T, b: T| if max { a.max(b) } else { a.min(b) };
        super::super::runs(starts, v.len()).map(|(s, e)| v[s + 1..e].iter().fold(v[s], |a, &b| pick(a, b))).collect()
    }

    /// Runs shaped as bars (1 to 300 rows, many under eight), BIGINT and INTEGER values of
    /// every sign and magnitude: the lanes and the row loop give each run's min and max.
    #[test]
    fn integer_extremes_of_every_run() {
        let mut rng = XorShift::new(0x51ed_2701_a3c9_4b17);
        for round in 0..300 {
            let (v, starts) = bar_runs(&mut rng, |rng| (rng.next_u64() >> (round % 60)) as i64);
            let w: Vec<i32> = v.iter().map(|&x| x as i32).collect();
            for max in [false, true] {
                let pick = |a: i64, b: i64| if max { a.max(b) } else { a.min(b) };
                let want = reference(&v, &starts, max);
                assert_eq!(run_int_extremes(&v, &starts, max), want, "round {round}");
                assert_eq!(lane_extremes(&v, &starts, pick), want, "round {round}: lanes");
                assert_eq!(row_extremes(&v, &starts, max), want, "round {round}: rows");
                let want32 = reference(&w, &starts, max);
                assert_eq!(run_int_extremes(&w, &starts, max), want32, "round {round}: INTEGER");
                assert_eq!(row_extremes(&w, &starts, max), want32, "round {round}: INTEGER rows");
            }
        }
    }
}
