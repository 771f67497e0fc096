//! Σ p·s and Σ s over a run of rows (vwap's kernel), in eight independent lanes. Sizes are
//! read in place, whatever their type; BIGINT sizes, the common case, without a conversion
//! instruction per row where AVX2 allows (below).

use crate::exec::prefetch::ahead;

/// A number a weight column holds, as f64 (exact for integers below 2^53, far beyond any
/// traded size): lets [`lane_dot`] read BIGINT and INTEGER sizes in place, no converted copy.
pub trait AsF64: Copy {
    fn as_f64(self) -> f64;
}

impl AsF64 for f64 {
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self
    }
}

impl AsF64 for i64 {
    #[inline(always)]
    fn as_f64(self) -> f64 {
        self as f64
    }
}

impl AsF64 for i32 {
    #[inline(always)]
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

/// Σ p·s and Σ s over the rows both have, lane `k` taking rows `k`, `k + 8`, ... and the rows
/// past the last eight added after, in order: the bits every path gives.
pub fn lane_dot<S: AsF64>(p: &[f64], s: &[S]) -> (f64, f64) {
    let n = p.len().min(s.len());
    let full = n / 8 * 8;
    let mut lanes = Lanes::default();
    eights(&mut lanes, &p[..full], &s[..full]);
    lanes.finish(&p[full..n], &s[full..n])
}

/// The whole eights of `p` and `s` (of equal length) added to `lanes`, lane `k` taking rows
/// `k`, `k + 8`, ...
fn eights<S: AsF64>(lanes: &mut Lanes, p: &[f64], s: &[S]) {
    assert_eq!(p.len(), s.len(), "two columns of one run");
    let (mut num, mut den) = (lanes.num, lanes.den);
    for (i, (pc, sc)) in p.chunks_exact(8).zip(s.chunks_exact(8)).enumerate() {
        ahead(p, 8 * i);
        ahead(s, 8 * i);
        for k in 0..8 {
            let w = sc[k].as_f64();
            num[k] += pc[k] * w;
            den[k] += w;
        }
    }
    *lanes = Lanes { num, den };
}

/// Eight lanes of Σ p·s and Σ s over a run's rows so far: lane `k` has added rows `k`,
/// `k + 8`, ... in order ([`lane_dot`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lanes {
    pub num: [f64; 8],
    pub den: [f64; 8],
}

impl Lanes {
    /// The run's Σ p·s and Σ s: its rows past the last whole eight (`pr` and `sr`) added in
    /// order, then the lanes.
    #[inline(always)]
    pub fn finish<S: AsF64>(self, pr: &[f64], sr: &[S]) -> (f64, f64) {
        let (mut tn, mut td) = (0.0, 0.0);
        for (&p, &s) in pr.iter().zip(sr) {
            let w = s.as_f64();
            tn += p * w;
            td += w;
        }
        (tn + self.num.iter().sum::<f64>(), td + self.den.iter().sum::<f64>())
    }
}

/// The whole eights of `p` and `s` (of equal length) added to `lanes` as [`lane_dot`] adds
/// them, BIGINT sizes through AVX2 where every size is under 2^51 in magnitude; the largest
/// |size| is returned.
pub fn eights_i64(lanes: &mut Lanes, p: &[f64], s: &[i64]) -> f64 {
    assert_eq!(p.len(), s.len(), "two columns of one run");
    #[cfg(target_arch = "x86_64")]
    if let Some((l, top)) = avx2::eights_i64(p, s, *lanes) {
        *lanes = l;
        return top;
    }
    let full = s.len() / 8 * 8;
    eights(lanes, &p[..full], &s[..full]);
    s[..full].iter().fold(0.0f64, |m, &x| m.max((x as f64).abs()))
}

/// [`lane_dot`] of BIGINT sizes, the same bits, with AVX2 where every size is under 2^51 in
/// magnitude; `None` otherwise (no AVX2, or a size out of that range: the caller's
/// [`lane_dot`] then). Neither AVX2 nor baseline x86-64 converts i64 to f64 in vector lanes
/// (the compiler converts one row at a time, 1.7 ns a row); here a size is added to the bits
/// of 1.5·2^52, whose double is then 1.5·2^52 + size exactly, and 1.5·2^52 subtracted.
pub fn lane_dot_i64(p: &[f64], s: &[i64]) -> Option<(f64, f64)> {
    #[cfg(target_arch = "x86_64")]
    return avx2::dot_i64(p, s).map(|(num, den, _)| (num, den));
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// [`lane_dot_i64`]'s Σ p·s with Σ s exactly, from the same pass: `None` where
/// [`lane_dot_i64`] is, or where the sizes' magnitudes do not prove Σ s exact. Sizes are
/// integers, and a sum of integer doubles is exact while every partial sum stays within
/// 2^53: no partial sum exceeds Σ |s| ≤ rows · max |s|, the bound checked (`sum(s)` beside
/// `sum(p * s)` reads the sizes once).
pub fn lane_dot_total_i64(p: &[f64], s: &[i64]) -> Option<(f64, i128)> {
    #[cfg(target_arch = "x86_64")]
    {
        let (num, den, top) = avx2::dot_i64(p, s)?;
        let n = p.len().min(s.len());
        let rest = s[n / 8 * 8..n].iter().fold(0.0f64, |m, &x| m.max((x as f64).abs()));
        Some((num, exact_total(den, top.max(rest), n)?))
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// Σ s exactly from its lanes' sum `den`, where the sizes' magnitudes prove it: `rows` integer
/// sizes of magnitude at most `top` (see [`lane_dot_total_i64`]).
pub fn exact_total(den: f64, top: f64, rows: usize) -> Option<i128> {
    // 2^52: a margin below 2^53 for the rounding of `top · rows` itself.
    (top * rows as f64 <= 4_503_599_627_370_496.0).then_some(den as i128)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    /// [`super::lane_dot_i64`], and the largest |size| of the whole eights: `None` without
    /// AVX2 or for a size out of range.
    pub fn dot_i64(p: &[f64], s: &[i64]) -> Option<(f64, f64, f64)> {
        let n = p.len().min(s.len());
        let full = n / 8 * 8;
        let (lanes, top) = eights_i64(&p[..full], &s[..full], super::Lanes::default())?;
        let (num, den) = lanes.finish(&p[full..n], &s[full..n]);
        Some((num, den, top))
    }

    /// `lanes` with the whole eights of `p` and `s` added ([`super::eights_i64`]), and the
    /// largest |size| of those rows: `None` without AVX2 or for a size out of range.
    pub fn eights_i64(p: &[f64], s: &[i64], lanes: super::Lanes) -> Option<(super::Lanes, f64)> {
        if !is_x86_feature_detected!("avx2") {
            return None;
        }
        // SAFETY: the CPU has AVX2.
        unsafe { with_avx2(p, s, lanes) }
    }

    /// Lanes 0-3 and 4-7 of [`super::lane_dot`] in two registers each, from `lanes`, the
    /// products and sums unfused (as the portable lanes compute them); the largest |size| in
    /// a third.
    #[target_feature(enable = "avx2")]
    fn with_avx2(p: &[f64], s: &[i64], lanes: super::Lanes) -> Option<(super::Lanes, f64)> {
        const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5·2^52: its mantissa's top bit alone set
        let n = p.len().min(s.len());
        let full = n / 8 * 8;
        let (magic_f, magic_i, half) =
            (_mm256_set1_pd(MAGIC), _mm256_set1_epi64x(MAGIC.to_bits() as i64), _mm256_set1_epi64x(1 << 51));
        let zero = _mm256_setzero_pd();
        // SAFETY: each array holds eight doubles.
        let (mut n0, mut n1, mut d0, mut d1, mut top) = unsafe {
            let (num, den) = (lanes.num.as_ptr(), lanes.den.as_ptr());
            (_mm256_loadu_pd(num), _mm256_loadu_pd(num.add(4)), _mm256_loadu_pd(den), _mm256_loadu_pd(den.add(4)), zero)
        };
        let sign = _mm256_set1_pd(-0.0);
        let mut out = _mm256_setzero_si256();
        let (pp, sp) = (p.as_ptr(), s.as_ptr());
        for i in (0..full).step_by(8) {
            crate::exec::prefetch::ahead(p, i);
            crate::exec::prefetch::ahead(s, i);
            // SAFETY: i + 8 <= full <= n, within both slices.
            let (x0, x1, q0, q1) = unsafe {
                (
                    _mm256_loadu_si256(sp.add(i).cast()),
                    _mm256_loadu_si256(sp.add(i + 4).cast()),
                    _mm256_loadu_pd(pp.add(i)),
                    _mm256_loadu_pd(pp.add(i + 4)),
                )
            };
            // A size x is in [-2^51, 2^51) exactly when x + 2^51 is in [0, 2^52).
            out = _mm256_or_si256(out, _mm256_srli_epi64::<52>(_mm256_add_epi64(x0, half)));
            out = _mm256_or_si256(out, _mm256_srli_epi64::<52>(_mm256_add_epi64(x1, half)));
            let w0 = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(x0, magic_i)), magic_f);
            let w1 = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(x1, magic_i)), magic_f);
            n0 = _mm256_add_pd(n0, _mm256_mul_pd(q0, w0));
            n1 = _mm256_add_pd(n1, _mm256_mul_pd(q1, w1));
            d0 = _mm256_add_pd(d0, w0);
            d1 = _mm256_add_pd(d1, w1);
            top = _mm256_max_pd(top, _mm256_max_pd(_mm256_andnot_pd(sign, w0), _mm256_andnot_pd(sign, w1)));
        }
        if _mm256_testz_si256(out, out) == 0 {
            return None;
        }
        let spill = |a: __m256d, b: __m256d| {
            let mut v = [0.0; 8];
            // SAFETY: `v` holds eight doubles.
            unsafe {
                _mm256_storeu_pd(v.as_mut_ptr(), a);
                _mm256_storeu_pd(v.as_mut_ptr().add(4), b);
            }
            v
        };
        let out = super::Lanes { num: spill(n0, n1), den: spill(d0, d1) };
        Some((out, spill(top, top).into_iter().fold(0.0, f64::max)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::rng::XorShift;

    /// Lengths 0 to 40, sizes of every magnitude: where the AVX2 lanes answer, their bits are
    /// the portable lanes'; on a CPU with AVX2 they answer exactly when every size they convert
    /// (those of the whole eights; the rest are converted as the portable lanes do) is under
    /// 2^51.
    #[test]
    fn avx2_lanes_give_the_portable_bits() {
        let mut rng = XorShift::new(0x1234_5678_9abc_def1);
        let avx2 = is_x86_feature_detected_here();
        for round in 0..2000 {
            let n = rng.below(41) as usize;
            let bits = [10, 30, 51, 52, 63][round % 5];
            let p: Vec<f64> = (0..n).map(|_| (rng.below(1 << 20) as f64) / 64.0 - 8000.0).collect();
            let s: Vec<i64> = (0..n)
                .map(|_| {
                    let x = (rng.next_u64() >> (64 - bits)) as i64;
                    if rng.below(2) == 0 {
                        x
                    } else {
                        x.wrapping_neg()
                    }
                })
                .collect();
            let fits = s[..n / 8 * 8].iter().all(|&x| (-(1i64 << 51)..1i64 << 51).contains(&x));
            let want = lane_dot(&p, &s);
            match lane_dot_i64(&p, &s) {
                Some(got) => {
                    assert!(fits && avx2, "round {round}: a size out of range accepted");
                    assert_eq!(
                        (got.0.to_bits(), got.1.to_bits()),
                        (want.0.to_bits(), want.1.to_bits()),
                        "round {round}"
                    );
                }
                None => assert!(!avx2 || !fits, "round {round}: refused"),
            }
        }
    }

    /// Where the one pass answers Σ s, it is the exact sum and Σ p·s the portable lanes'
    /// bits; it answers whenever rows · max |s| is within 2^52 (on a CPU with AVX2).
    #[test]
    fn the_sizes_total_from_the_dot_pass_is_exact_when_it_answers() {
        let mut rng = XorShift::new(0x0dd_ba11_5eed);
        let avx2 = is_x86_feature_detected_here();
        let mut answered = 0;
        for round in 0..3000 {
            let n = [0, 3, 8, 17, 64, 200, 5000][rng.below(7) as usize];
            let bits = [8, 20, 40, 45, 50, 52][round % 6];
            let p: Vec<f64> = (0..n).map(|_| (rng.below(1 << 20) as f64) / 64.0 - 8000.0).collect();
            let s: Vec<i64> = (0..n).map(|_| (rng.next_u64() >> (64 - bits)) as i64 - (1i64 << (bits - 1))).collect();
            let top = s.iter().map(|x| x.unsigned_abs()).max().unwrap_or(0) as u128;
            let provable = top * n as u128 <= 1 << 52;
            match lane_dot_total_i64(&p, &s) {
                Some((num, total)) => {
                    answered += 1;
                    assert!(provable, "round {round}: answered past the bound");
                    assert_eq!(total, s.iter().map(|&x| i128::from(x)).sum::<i128>(), "round {round}");
                    assert_eq!(num.to_bits(), lane_dot(&p, &s).0.to_bits(), "round {round}");
                }
                None => assert!(!avx2 || !provable, "round {round}: refused within the bound"),
            }
        }
        assert!(!avx2 || answered > 1000, "{answered} answered");
    }

    fn is_x86_feature_detected_here() -> bool {
        #[cfg(target_arch = "x86_64")]
        return is_x86_feature_detected!("avx2");
        #[cfg(not(target_arch = "x86_64"))]
        false
    }
}
