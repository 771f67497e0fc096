//! Half-precision (IEEE 754 binary16) vectors for cosine graphs: encoding and the dot product.
//!
//! Why: a graph walk is bound by memory, not arithmetic. Every distance reads a neighbour's
//! vector from RAM (1.5 KB at 384 floats), and the walk meets about a thousand of them per
//! search. A cosine graph stores its unit vectors in 16 bits instead (as usearch, faiss and
//! DuckDB's `vss` can): half the bytes to fetch, half the memory, and a distance that moves
//! by about 1e-3 at most, which only decides which rows the walk finds. The engine ranks what
//! the graph returns with the exact f32 distance from the column.
//!
//! Values are carried as `i16` bit patterns. The AVX2 + F16C
//! kernels are chosen at run time; the portable ones give the same results (conversion is
//! exact both ways, and rounding is to nearest even, as F16C does).

/// Appends the half-precision bits of `v` to `out` (cleared first).
pub fn encode(v: &[f32], out: &mut Vec<i16>) {
    out.clear();
    out.reserve(v.len());
    #[cfg(target_arch = "x86_64")]
    if f16c::available() {
        // SAFETY: the CPU has AVX2, FMA and F16C (checked at run time just above).
        unsafe { f16c::encode(v, out) };
        return;
    }
    out.extend(v.iter().map(|&x| to_half(x)));
}

/// `a·b` of two half-precision vectors (the shorter length is used).
pub fn dot(a: &[i16], b: &[i16]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if f16c::available() {
        // SAFETY: the CPU has AVX2, FMA and F16C (checked at run time just above).
        return unsafe { f16c::dot(a, b) };
    }
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(&x, &y)| to_single(x) * to_single(y)).sum();
    for (x, y) in ca.zip(cb) {
        for ((s, &p), &q) in acc.iter_mut().zip(x).zip(y) {
            *s += to_single(p) * to_single(q);
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The half-precision bits nearest to `x` (ties to even; too large becomes infinity).
pub fn to_half(x: f32) -> i16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    let round = |value: u32, dropped: u32, shift: u32| {
        let half = 1u32 << (shift - 1);
        value + u32::from(dropped > half || (dropped == half && value & 1 == 1))
    };
    let bits = if exp == 0xff {
        0x7c00 | if man != 0 { 0x200 } else { 0 }
    } else if exp - 112 >= 0x1f {
        0x7c00
    } else if exp - 112 <= 0 {
        let shift = (126 - exp) as u32;
        if shift > 24 {
            0
        } else {
            let m = man | 0x80_0000;
            round(m >> shift, m & ((1 << shift) - 1), shift) as u16
        }
    } else {
        // A carry out of the mantissa rounds up into the exponent, as it should.
        round((((exp - 112) as u32) << 10) | (man >> 13), man & 0x1fff, 13) as u16
    };
    (sign | bits) as i16
}

/// The value of half-precision bits `h` (exact).
pub fn to_single(h: i16) -> f32 {
    let h = h as u16;
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let magnitude = match exp {
        0 => {
            let v = man as f32 / (1u32 << 24) as f32;
            return if sign == 0 { v } else { -v };
        }
        0x1f => 0x7f80_0000 | (man << 13),
        _ => ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(sign | magnitude)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod f16c {
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// AVX2, FMA and F16C all present (detected once).
    #[inline]
    pub fn available() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c")
        })
    }

    /// Appends `v` as half-precision bits to `out`, which has room for them.
    ///
    /// # Safety
    /// The CPU must support AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn encode(v: &[f32], out: &mut Vec<i16>) {
        let chunks = v.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(c.as_ptr()));
            let mut lanes = [0i16; 8];
            _mm_storeu_si128(lanes.as_mut_ptr().cast(), h);
            out.extend_from_slice(&lanes);
        }
        out.extend(rest.iter().map(|&x| super::to_half(x)));
    }

    /// Eight halves from `p` as f32 lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load(p: *const i16) -> __m256 {
        _mm256_cvtph_ps(_mm_loadu_si128(p.cast()))
    }

    /// `a·b` over `min(a.len(), b.len())` halves, four accumulators deep.
    ///
    /// # Safety
    /// The CPU must support AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn dot(a: &[i16], b: &[i16]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut s = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (j, acc) in s.iter_mut().enumerate() {
                *acc = _mm256_fmadd_ps(load(pa.add(i + 8 * j)), load(pb.add(i + 8 * j)), *acc);
            }
            i += 32;
        }
        while i + 8 <= n {
            s[0] = _mm256_fmadd_ps(load(pa.add(i)), load(pb.add(i)), s[0]);
            i += 8;
        }
        let v = _mm256_add_ps(_mm256_add_ps(s[0], s[1]), _mm256_add_ps(s[2], s[3]));
        let lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
        let mut sum = _mm_cvtss_f32(_mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 0b01)));
        while i < n {
            sum += super::to_single(*pa.add(i)) * super::to_single(*pb.add(i));
            i += 1;
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_is_exact_for_every_half_and_rounds_to_nearest_even() {
        for bits in 0..=u16::MAX {
            let h = bits as i16;
            let x = to_single(h);
            if x.is_nan() {
                assert!(to_single(to_half(x)).is_nan());
                continue;
            }
            assert_eq!(to_half(x), h, "round trip of {bits:#06x} ({x})");
        }
        assert_eq!(to_single(to_half(1.0 + 1.0 / 2048.0)), 1.0, "a tie goes to the even neighbour");
        assert_eq!(to_single(to_half(1.0 + 3.0 / 2048.0)), 1.0 + 2.0 / 1024.0, "a tie goes to even, upwards");
        assert_eq!(to_single(to_half(70_000.0)), f32::INFINITY);
        assert_eq!(to_single(to_half(1e-9)), 0.0);
        let tiny = to_single(to_half(-3e-6));
        assert!(tiny < 0.0 && (tiny + 3e-6).abs() <= 1.0 / (1u32 << 25) as f32, "a subnormal half: {tiny}");
    }

    #[test]
    fn the_run_time_kernels_agree_with_the_portable_ones() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        };
        for n in [1, 7, 8, 31, 32, 33, 384, 385] {
            let a: Vec<f32> = (0..n).map(|_| next()).collect();
            let b: Vec<f32> = (0..n).map(|_| next() * 1e-4).collect();
            let (mut ha, mut hb) = (Vec::new(), Vec::new());
            encode(&a, &mut ha);
            encode(&b, &mut hb);
            assert_eq!(ha, a.iter().map(|&x| to_half(x)).collect::<Vec<_>>(), "encode n={n}");
            assert_eq!(hb, b.iter().map(|&x| to_half(x)).collect::<Vec<_>>(), "encode subnormals n={n}");
            let exact: f64 = ha.iter().zip(&ha).map(|(&x, &y)| f64::from(to_single(x)) * f64::from(to_single(y))).sum();
            let got = f64::from(dot(&ha, &ha));
            assert!((got - exact).abs() <= 1e-5 * exact.max(1.0), "dot n={n}: {got} vs {exact}");
        }
    }
}
