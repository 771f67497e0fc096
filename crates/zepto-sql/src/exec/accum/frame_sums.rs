//! Float `sum`/`avg` over frames (window functions' frames, WINDOW JOIN's windows): each
//! frame's sum is the difference of two prefix sums held in double-double, a running sum and
//! the running total of each addition's exact rounding error (TwoSum), subtracted with its
//! own error kept. A frame costs the same whatever its size or its neighbours', with no
//! branch per row: the sliding sum this replaced walked each frame's entering and leaving
//! rows, a loop of unpredictable length per frame (half of a 1M-row WINDOW JOIN's time).
//!
//! Values that are not finite stay out of the prefix sums and are counted instead (NaN,
//! +inf, -inf): a frame holding any answers as IEEE addition over it does (NaN for a NaN or
//! both infinities, else the infinity) and every other frame is untouched. The sliding sum
//! carried an infinity's NaN into every later frame of the partition. Finite values large
//! enough that a prefix could overflow are summed scaled by 2^-64 (exact: a power of two),
//! so frames whose sums fit do not overflow because a prefix would.

use zepto_storage::Column;

/// Finite values above this magnitude have their prefix sums scaled ([`SCALE`]): 2^32 rows
/// of them stay below f64's largest value once scaled.
const BIG: f64 = 1.0e290;
/// The scale of prefix sums over values above [`BIG`] (2^-64, exact).
const SCALE: f64 = 1.0 / 18_446_744_073_709_551_616.0;

/// The sum of `v[fs[k]..fe[k]]` for every `k`, NULL rows of `x` (whose values `v` are) left
/// out. Frames past `v` end at its end; a frame whose end is before its start is empty.
///
/// Frames given in order of their starts (a window function's, a WINDOW JOIN's of one key)
/// are summed a segment at a time, cut where a frame starts at or past every earlier
/// frame's end (between partitions of a bundle) once the segment holds [`MIN_SEGMENT`]
/// values. A double-double's low part carries a running total of rounding errors that every
/// later addition feeds: over a whole bundle, one partition's 1e40 wiped out another's
/// 0.01s; now it reaches at most the frames of its own segment. Frames out of order (keys
/// interleaved) are one segment.
pub(super) fn float_frames(x: &Column, v: &[f64], fs: &[u32], fe: &[u32]) -> Vec<f64> {
    assert_eq!(fs.len(), fe.len(), "a start and an end per frame");
    let n = v.len();
    let span = |k: usize| {
        let a = (fs[k] as usize).min(n);
        (a, (fe[k] as usize).min(n).max(a))
    };
    let mut prefix = Prefix::default();
    let mut out = Vec::with_capacity(fs.len());
    for (frames, start, end) in segments(fs.len(), span) {
        prefix.fill(x, v, start..end);
        // Every frame of a segment lies within its stretch (`segments`).
        out.extend(frames.map(&span).map(|(a, b)| prefix.sum(a - start, b - start)));
    }
    out
}

/// The segments `float_frames` sums `count` frames in (`span` gives frame `k`'s rows, start
/// at most end): the frames of each and the stretch of rows holding all of them. Frames in
/// order of their starts are cut where one starts at or past every earlier one's end, once
/// the segment holds [`MIN_SEGMENT`] values; frames out of order are one segment.
fn segments(count: usize, span: impl Fn(usize) -> (usize, usize)) -> Vec<(std::ops::Range<usize>, usize, usize)> {
    if !(1..count).all(|k| span(k - 1).0 <= span(k).0) {
        let end = (0..count).map(|k| span(k).1).max().unwrap_or(0);
        let start = (0..count).map(|k| span(k).0).min().unwrap_or(0).min(end);
        return vec![(0..count, start, end)];
    }
    let mut out = Vec::new();
    let mut k = 0;
    while k < count {
        let (start, mut end) = span(k);
        let mut next = k + 1;
        while next < count {
            let (a, b) = span(next);
            if a >= end && end - start >= MIN_SEGMENT {
                break;
            }
            end = end.max(b);
            next += 1;
        }
        out.push((k..next, start, end));
        k = next;
    }
    out
}

/// Double-double prefix sums of a stretch of values: `sums[i][0] + sums[i][1]` is the sum of
/// its first `i` finite valid values (times `scale`), to within the rounding of the second
/// part's own additions. The pair of a position shares a cache line. Filled again for each
/// segment of frames, its buffer kept.
#[derive(Default)]
struct Prefix {
    sums: Vec<[f64; 2]>,
    /// What undoes the scale the sums were taken at (a power of two: exact).
    unscale: f64,
    /// Counts of NaNs, +infs and -infs before each position, when the stretch has any.
    odd: Option<[Vec<u32>; 3]>,
}

/// The fewest values a segment of frames is cut after: a segment's prefix sums cost a few
/// passes' setup, too much for each of a WINDOW JOIN's many disjoint windows of a few rows
/// (a third more time for Q6).
const MIN_SEGMENT: usize = 256;

/// TwoSum: `(t, err)` with `t + err == a + b` exactly.
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let t = a + b;
    let bp = t - a;
    (t, (a - (t - bp)) + (b - bp))
}

/// `sums` made the double-double running sums of `ys`, from zero (one more than `ys`).
fn running(sums: &mut Vec<[f64; 2]>, ys: impl Iterator<Item = f64>) {
    sums.clear();
    sums.push([0.0, 0.0]);
    let (mut s, mut c) = (0.0f64, 0.0f64);
    sums.extend(ys.map(|y| {
        let (t, e) = two_sum(s, y);
        (s, c) = (t, c + e);
        [s, c]
    }));
}

impl Prefix {
    /// The prefix sums of `v[range]` (rows `range` of `x`), in place of the last ones.
    fn fill(&mut self, x: &Column, v: &[f64], range: std::ops::Range<usize>) {
        let base = range.start;
        let vals = v.get(range).unwrap_or(&[]);
        let every = x.validity().is_none();
        (self.unscale, self.odd) = (1.0, None);
        if every {
            // Taken as they are first: a last sum that is finite means no value was anything
            // else and no sum overflowed (an infinity or NaN, once in, stays).
            running(&mut self.sums, vals.iter().copied());
            if self.sums.last().is_some_and(|[s, c]| s.is_finite() && c.is_finite()) {
                return;
            }
        }
        let (all_finite, big) = vals.iter().fold((true, 0.0f64), |(f, m), &y| {
            let a = y.abs();
            (f & a.is_finite(), if a.is_finite() { m.max(a) } else { m })
        });
        let scale = if big > BIG { SCALE } else { 1.0 };
        let keep = |i: usize, y: f64| (every || x.is_valid(base + i)) && y.is_finite();
        running(&mut self.sums, vals.iter().enumerate().map(|(i, &y)| if keep(i, y) { y * scale } else { 0.0 }));
        self.odd = (!all_finite).then(|| odd_counts(x, vals, base));
        self.unscale = 1.0 / scale;
    }

    /// The sum of values `a..b` of the stretch (`a <= b`, both within it).
    #[inline]
    fn sum(&self, a: usize, b: usize) -> f64 {
        let at = |i: usize| self.sums.get(i).copied().unwrap_or([0.0, 0.0]);
        let ([bh, bl], [ah, al]) = (at(b), at(a));
        // The difference of the high parts and its exact error, then the low parts'.
        let (d, e) = two_sum(bh, -ah);
        let r = (d + (e + (bl - al))) * self.unscale;
        match &self.odd {
            None => r,
            Some([nan, pos, neg]) => {
                let n = |p: &[u32]| p.get(b).copied().unwrap_or(0) - p.get(a).copied().unwrap_or(0);
                match (n(nan), n(pos), n(neg)) {
                    (0, 0, 0) => r,
                    (0, _, 0) => f64::INFINITY,
                    (0, 0, _) => f64::NEG_INFINITY,
                    _ => f64::NAN,
                }
            }
        }
    }
}

/// Prefix counts of the valid NaNs, +infs and -infs of `vals` (row `i` is `x`'s `base + i`).
fn odd_counts(x: &Column, vals: &[f64], base: usize) -> [Vec<u32>; 3] {
    let mut out: [Vec<u32>; 3] = std::array::from_fn(|_| Vec::with_capacity(vals.len() + 1));
    let mut n = [0u32; 3];
    out.iter_mut().for_each(|o| o.push(0));
    for (i, &y) in vals.iter().enumerate() {
        if x.is_valid(base + i) && !y.is_finite() {
            let k = if y.is_nan() {
                0
            } else if y > 0.0 {
                1
            } else {
                2
            };
            n[k] += 1;
        }
        for (o, &c) in out.iter_mut().zip(&n) {
            o.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::float_frames;
    use zepto_storage::rng::XorShift;
    use zepto_storage::{Bitmap, Column, ColumnData};

    /// Each frame summed on its own, exactly (in i128 units of 2^-40: the values are
    /// multiples of it) where finite, as IEEE addition for the rest.
    fn want(v: &[f64], valid: &[bool], a: usize, b: usize) -> f64 {
        let rows = (a..b).filter(|&i| valid[i]);
        if rows.clone().any(|i| !v[i].is_finite()) {
            return rows.map(|i| v[i]).filter(|y| !y.is_finite()).sum();
        }
        let units: i128 = rows.map(|i| (v[i] * 2f64.powi(40)) as i128).sum();
        units as f64 / 2f64.powi(40)
    }

    fn frames(rng: &mut XorShift, n: usize) -> (Vec<u32>, Vec<u32>) {
        // Sliding frames of varying width that only move forward, restarting now and then
        // (a new partition), and some empty ones.
        let (mut fs, mut fe) = (Vec::new(), Vec::new());
        let (mut a, mut b) = (0usize, 0usize);
        for _ in 0..n {
            match rng.below(10) {
                0 => a = b,
                1 => b = (b + rng.below(40) as usize).min(n),
                _ => {
                    b = (b + rng.below(3) as usize).min(n);
                    a = (a + rng.below(3) as usize).min(b);
                }
            }
            fs.push(a as u32);
            fe.push(b as u32);
        }
        (fs, fe)
    }

    #[test]
    fn every_frame_sums_as_it_would_alone() {
        let mut rng = XorShift::new(0x5851_f42d_4c95_7f2d);
        for round in 0..300 {
            let n = 1 + rng.below(400) as usize;
            let odd = [f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    let r = rng.below(1000);
                    match (round % 3, r) {
                        (1, 0..=9) => odd[r as usize % 3],
                        // Huge values, whose prefix sums overflow (scaled) while most
                        // frames' sums fit, beside ordinary ones.
                        (2, 0..=199) => (1 + rng.below(8)) as f64 * 2f64.powi(1016),
                        _ => (rng.below(1 << 30) as f64 - (1 << 29) as f64) / 2f64.powi(20),
                    }
                })
                .collect();
            let valid: Vec<bool> = (0..n).map(|i| round % 4 != 0 || rng.below(5) != 0 || i == 0).collect();
            let validity = (!valid.iter().all(|&b| b)).then(|| Bitmap::from_bools(valid.iter().copied()));
            let col = Column::new(ColumnData::Float64(v.clone().into()), validity);
            let (mut fs, mut fe) = frames(&mut rng, n);
            if round % 5 == 4 {
                // Frames out of order (a WINDOW JOIN's of interleaved keys): one segment.
                for k in (1..n).rev() {
                    let j = rng.below(k as u64 + 1) as usize;
                    fs.swap(k, j);
                    fe.swap(k, j);
                }
            }
            let got = float_frames(&col, &v, &fs, &fe);
            for k in 0..n {
                let (a, b) = (fs[k] as usize, fe[k] as usize);
                let w = if round % 3 == 2 {
                    // Huge values: against a compensated sum of the frame, to rounding.
                    let s: f64 = (a..b).filter(|&i| valid[i]).map(|i| v[i]).sum();
                    let near = got[k] == s || (got[k] - s).abs() <= 1e-12 * s.abs().max(1.0);
                    assert!(near, "frame {a}..{b}: {} vs {s}", got[k]);
                    continue;
                } else {
                    want(&v, &valid, a, b)
                };
                assert!(
                    got[k] == w || (got[k].is_nan() && w.is_nan()),
                    "round {round}, frame {a}..{b}: {} vs {w}",
                    got[k]
                );
            }
        }
    }

    /// Partitions side by side (one huge value, many large ones, then small ones), each
    /// with `ROWS 1 PRECEDING` frames: the small ones' sums are as they would be alone,
    /// untouched by the other partitions' magnitudes.
    #[test]
    fn one_partitions_huge_values_leave_the_others_exact() {
        let mut v = vec![1e40];
        v.extend(std::iter::repeat_n(1e12, 1000));
        v.extend([0.01, 0.01, 0.01]);
        let col = Column::new(ColumnData::Float64(v.clone().into()), None);
        let parts = [0..1usize, 1..1001, 1001..1004];
        let (mut fs, mut fe) = (Vec::new(), Vec::new());
        for p in &parts {
            for i in p.clone() {
                fs.push(i.saturating_sub(1).max(p.start) as u32);
                fe.push(i as u32 + 1);
            }
        }
        let got = float_frames(&col, &v, &fs, &fe);
        assert_eq!(got[1001..], [0.01, 0.02, 0.02]);
        assert_eq!((got[0], got[1], got[2]), (1e40, 1e12, 2e12));
    }

    #[test]
    fn frames_past_the_values_or_reversed_are_cut() {
        let v = [1.0, 2.0, 4.0];
        let col = Column::new(ColumnData::Float64(v.to_vec().into()), None);
        assert_eq!(float_frames(&col, &v, &[0, 2, 2, 1], &[9, 1, 3, 3]), vec![7.0, 0.0, 4.0, 6.0]);
        assert!(float_frames(&col, &v, &[], &[]).is_empty());
    }
}
