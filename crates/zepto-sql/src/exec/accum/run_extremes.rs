//! The minimum and maximum of every run of a DOUBLE column (a bar's low and high): runs of a
//! few dozen rows, tens of thousands of them, so what costs is the work per run, not per row.
//!
//! A run of 4 to 4·t rows is read in exactly t chunks of four rows ([`chunks_per_run`]), once
//! for both sides, the chunks past its end clamped to its last four rows (an extreme does not
//! mind rows read twice); a longer run in as many chunks as it needs, also once for both sides.
//! NaN ranks as the largest double (as in DuckDB): with AVX2 the chunks compare plainly and
//! note any NaN, and a run that holds one is read again by the portable chunks, which rank NaN
//! as they go (without AVX2 they read every run), so both give the same bits on every CPU.
//! Runs under four rows are read by [`slice_extreme`], once per side.

use super::runs;

/// The minimums (`LO`) and maximums (`HI`) of every run of `v` (`runs` over `starts`, the
/// first `n` rows), NaN the largest double; the side not asked for is empty.
pub fn run_extremes<const LO: bool, const HI: bool>(v: &[f64], starts: &[u32], n: usize) -> (Vec<f64>, Vec<f64>) {
    let v = &v[..n];
    let t = chunks_per_run(starts, n);
    #[cfg(target_arch = "x86_64")]
    if let Some(out) = avx2::run_extremes::<LO, HI>(v, starts, t) {
        return out;
    }
    by_runs::<LO, HI>(v, starts, t, |r, k| Some(ranked_chunks::<LO, HI>(r, k)))
}

/// How many chunks of four rows [`run_extremes`] gives every run: enough for nine runs in ten
/// (or runs of up to 64 rows). Most runs then take the same number of steps, so the loop over
/// a run's chunks ends where the CPU predicts it will: ending it at each run's own length
/// mispredicts about once a run, which costs more than a run of 26 rows' work.
pub(super) fn chunks_per_run(starts: &[u32], n: usize) -> usize {
    // About 64 runs looked at, spread over the rows (a guess for speed, never for the answer:
    // any t gives the same extremes).
    let mut hist = [0u32; 65];
    for i in (0..starts.len()).step_by((starts.len() / 64).max(1)) {
        let end = starts.get(i + 1).map_or(n, |&e| e as usize);
        hist[(end - starts[i] as usize).min(64)] += 1;
    }
    let looked = hist.iter().sum::<u32>() as usize;
    let want = looked - looked / 10;
    let mut seen = 0;
    let l90 = hist.iter().position(|&c| {
        seen += c as usize;
        seen >= want
    });
    l90.unwrap_or(64).div_ceil(4).max(1)
}

/// Every run's extremes: `chunks(run, k)` for a run of 4 rows or more, k = t or the chunks a
/// longer run needs (`None`: it met a NaN, and [`ranked_chunks`] reads it again),
/// [`slice_extreme`] for the others. Both sides come back; the one not asked for is not kept.
#[inline(always)]
fn by_runs<const LO: bool, const HI: bool>(
    v: &[f64],
    starts: &[u32],
    t: usize,
    chunks: impl Fn(&[f64], usize) -> Option<(f64, f64)>,
) -> (Vec<f64>, Vec<f64>) {
    let room = |asked: bool| Vec::with_capacity(if asked { starts.len() } else { 0 });
    let (mut lo, mut hi) = (room(LO), room(HI));
    for (s, e) in runs(starts, v.len()) {
        let r = &v[s..e];
        let k = t.max(r.len().div_ceil(4));
        let fixed = (r.len() >= 4).then(|| chunks(r, k).unwrap_or_else(|| ranked_chunks::<LO, HI>(r, k)));
        if LO {
            lo.push(fixed.map_or_else(|| slice_extreme::<true>(r), |(a, _)| a));
        }
        if HI {
            hi.push(fixed.map_or_else(|| slice_extreme::<false>(r), |(_, b)| b));
        }
    }
    (lo, hi)
}

/// The least and greatest value of `r` (not empty), NaN the largest double: in chunks of four
/// ([`ranked_chunks`]), or row by row under four rows. For a piece of a run the narrow reading
/// cannot take (`narrow_runs.rs`).
pub(super) fn slice_extremes(r: &[f64]) -> (f64, f64) {
    if r.len() < 4 {
        return (slice_extreme::<true>(r), slice_extreme::<false>(r));
    }
    ranked_chunks::<true, true>(r, r.len().div_ceil(4))
}

/// A run of at least 4 rows in `k` chunks (clamped to its last four rows), NaN ranked in the
/// same pass.
#[inline(always)]
fn ranked_chunks<const LO: bool, const HI: bool>(r: &[f64], k: usize) -> (f64, f64) {
    let last = r.len() - 4;
    let head = [r[0], r[1], r[2], r[3]];
    let (mut a, mut b) = (head, head);
    for j in 1..k {
        let i = (4 * j).min(last);
        let w = &r[i..i + 4];
        for l in 0..4 {
            if LO {
                a[l] = pick_nan_largest::<true>(a[l], w[l]);
            }
            if HI {
                b[l] = pick_nan_largest::<false>(b[l], w[l]);
            }
        }
    }
    (fold4::<true>(a), fold4::<false>(b))
}

/// Of `acc` and `x`, the one the minimum (`MIN`) or maximum keeps, NaN being the largest
/// double (as in DuckDB): a maximum keeps a NaN it has met, a minimum drops one for any
/// number. Either way the pick does not depend on which was met first but for equal values,
/// so rows may be read in any order and more than once.
#[inline(always)]
pub(super) fn pick_nan_largest<const MIN: bool>(acc: f64, x: f64) -> f64 {
    // `|`, not `||`: both tests are lane masks, with no branch between them to vectorize.
    if MIN {
        if (x < acc) | acc.is_nan() {
            x
        } else {
            acc
        }
    } else if acc.is_nan() | (x <= acc) {
        acc
    } else {
        x
    }
}

/// The extreme of four lanes.
#[inline(always)]
fn fold4<const MIN: bool>(m: [f64; 4]) -> f64 {
    let pick = pick_nan_largest::<MIN>;
    pick(pick(m[0], m[1]), pick(m[2], m[3]))
}

/// The minimum (`MIN`) or maximum of a run under four rows (every longer one goes through
/// the chunks), NaN the largest double, read once per side. Out of line (inlined, it took the
/// registers of the chunk loop).
#[inline(never)]
fn slice_extreme<const MIN: bool>(r: &[f64]) -> f64 {
    r.iter().copied().fold(r[0], pick_nan_largest::<MIN>)
}

/// The chunk loop in AVX2 registers: one load, a `min`, a `max` and a NaN test per chunk
/// (written out: the compiler's own vectorization of the portable loop split its lanes in
/// pairs and shuffled them on every chunk).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    /// [`super::run_extremes`] over `v` (the rows of the runs), t chunks a run; `None` on a
    /// CPU without AVX2.
    pub fn run_extremes<const LO: bool, const HI: bool>(
        v: &[f64],
        starts: &[u32],
        t: usize,
    ) -> Option<(Vec<f64>, Vec<f64>)> {
        // SAFETY: the CPU has AVX2.
        is_x86_feature_detected!("avx2").then(|| unsafe { with_avx2::<LO, HI>(v, starts, t) })
    }

    /// [`run_extremes`] compiled for AVX2.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn with_avx2<const LO: bool, const HI: bool>(v: &[f64], starts: &[u32], t: usize) -> (Vec<f64>, Vec<f64>) {
        super::by_runs::<LO, HI>(v, starts, t, |r, k| chunks::<LO, HI>(r, k))
    }

    /// A run of at least 4 rows in `k` chunks (clamped to its last four rows); `None` if it
    /// holds a NaN. A `min`/`max` lane never takes a NaN from the row nor drops one it started
    /// from, and of two equal values keeps the one it has (`x < a ? x : a`), as
    /// [`super::pick_nan_largest`] does: a run without NaN gets [`super::ranked_chunks`]' bits.
    #[target_feature(enable = "avx2")]
    fn chunks<const LO: bool, const HI: bool>(r: &[f64], k: usize) -> Option<(f64, f64)> {
        assert!(r.len() >= 4, "a run of at least one chunk");
        let (p, last) = (r.as_ptr(), r.len() - 4);
        // SAFETY: every load reads four doubles from an offset of at most `len - 4`.
        let load = |i: usize| unsafe { _mm256_loadu_pd(p.add(i.min(last))) };
        let head = load(0);
        let (mut a, mut b, mut nan) = (head, head, _mm256_cmp_pd::<_CMP_UNORD_Q>(head, head));
        for j in 1..k {
            let x = load(4 * j);
            nan = _mm256_or_pd(nan, _mm256_cmp_pd::<_CMP_UNORD_Q>(x, x));
            if LO {
                a = _mm256_min_pd(x, a); // x < a ? x : a
            }
            if HI {
                b = _mm256_max_pd(x, b); // x > b ? x : b
            }
        }
        if _mm256_movemask_pd(nan) != 0 {
            return None;
        }
        let lanes = |m: __m256d| {
            let mut out = [0.0; 4];
            // SAFETY: `out` holds four doubles.
            unsafe { _mm256_storeu_pd(out.as_mut_ptr(), m) };
            out
        };
        Some((super::fold4::<true>(lanes(a)), super::fold4::<false>(lanes(b))))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;

    /// Up to 80 runs shaped as a symbol's bars (most near one length of 1 to 60 rows, some of
    /// 1 to 4 rows, some up to 300), each row's value from `value`: the rows and the runs'
    /// first rows.
    pub(in crate::exec::accum) fn bar_runs<T>(
        rng: &mut XorShift,
        mut value: impl FnMut(&mut XorShift) -> T,
    ) -> (Vec<T>, Vec<u32>) {
        let typical = 1 + rng.below(60) as usize;
        let (mut v, mut starts) = (Vec::new(), Vec::new());
        for _ in 0..1 + rng.below(80) {
            starts.push(v.len() as u32);
            let len = match rng.below(10) {
                0 => 1 + rng.below(300) as usize,
                1 => 1 + rng.below(4) as usize,
                _ => (typical + rng.below(9) as usize).saturating_sub(4).max(1),
            };
            for _ in 0..len {
                v.push(value(rng));
            }
        }
        (v, starts)
    }

    /// Each run's extremes one row at a time, NaN the largest double.
    fn reference(v: &[f64], starts: &[u32]) -> (Vec<f64>, Vec<f64>) {
        let side = |min: bool| {
            let pick =
                |a: f64, x: f64| if min { pick_nan_largest::<true>(a, x) } else { pick_nan_largest::<false>(a, x) };
            runs(starts, v.len()).map(|(s, e)| v[s..e].iter().copied().fold(v[s], pick)).collect()
        };
        (side(true), side(false))
    }

    /// Runs of 1 to 300 rows (most of them near one length, as a symbol's bars are), NaN, ±0
    /// and infinities among the values: every path (AVX2 when the CPU has it, the portable
    /// chunks, the slices) gives each run's extremes (which of two equal zeros the chunks keep
    /// may differ from a row-by-row fold's), and AVX2's bits are the portable chunks' exactly.
    #[test]
    fn every_path_gives_each_runs_extremes() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let (v, starts) = bar_runs(&mut rng, |rng| match rng.below(200) {
                0 if round % 3 == 0 => f64::NAN,
                1 => f64::INFINITY,
                2 => f64::NEG_INFINITY,
                3 => -0.0,
                4 => 0.0,
                k => (k as f64 - 100.0) * 0.25,
            });
            let bits = |x: &[f64]| x.iter().map(|&f| if f == 0.0 { 0 } else { f.to_bits() }).collect::<Vec<_>>();
            let (lo, hi) = reference(&v, &starts);
            let t = chunks_per_run(&starts, v.len());
            let portable = by_runs::<true, true>(&v, &starts, t, |r, k| Some(ranked_chunks::<true, true>(r, k)));
            assert_eq!((bits(&portable.0), bits(&portable.1)), (bits(&lo), bits(&hi)), "round {round}: portable");
            // This CPU's path and the portable one agree bit for bit, zeros' signs too.
            let exact = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            let here = run_extremes::<true, true>(&v, &starts, v.len());
            assert_eq!((exact(&here.0), exact(&here.1)), (exact(&portable.0), exact(&portable.1)), "round {round}");
            let (a, b) =
                (run_extremes::<true, false>(&v, &starts, v.len()), run_extremes::<false, true>(&v, &starts, v.len()));
            assert_eq!((bits(&a.0), bits(&b.1)), (bits(&lo), bits(&hi)), "round {round}: one side");
            assert!(a.1.is_empty() && b.0.is_empty(), "round {round}: the side not asked for");
            let both = run_extremes::<true, true>(&v, &starts, v.len());
            assert_eq!((bits(&both.0), bits(&both.1)), (bits(&lo), bits(&hi)), "round {round}: both");
        }
    }
}
