//! `FLOAT[n]` vectors: reading their text (`[0.1, 0.2]`), checking their elements, and the
//! distance kernels (cosine, L2, inner product) over `f32` slices.
//!
//! The kernels live here, in the storage crate, rather than in `zepto-sql`'s evaluator: an ANN
//! index (next) is built and probed below SQL, next to the columns it indexes, and must compute
//! the same distances as `array_cosine_distance` and friends without depending on the SQL
//! layer. One definition of each distance keeps the exact scan and the index in agreement.
//!
//! Each kernel accumulates in `f32` lanes (eight wide with AVX2 + FMA, chosen once per process
//! by runtime detection, since the build targets baseline x86-64; a scalar loop in eight
//! independent lanes elsewhere and on other architectures) and returns `f64`.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

/// Why a vector was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorError {
    /// A vector of the wrong number of elements.
    Dimension {
        /// The dimension expected.
        want: usize,
        /// The number of elements given.
        got: usize,
    },
    /// An element that is NaN or infinite (also a REAL overflow), at this 0-based position.
    NotFinite(usize),
    /// Text that is not `[x, y, ...]`.
    Syntax(String),
}

impl std::fmt::Display for VectorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorError::Dimension { want, got } => {
                write!(f, "a vector of {got} elements where FLOAT[{want}] has {want}")
            }
            VectorError::NotFinite(i) => write!(f, "element {} of a vector is NaN or infinite", i + 1),
            VectorError::Syntax(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for VectorError {}

/// `values` as a vector of `want` finite REALs (`want` = `None`: any length 1..=65535).
/// Each element is rounded to `f32`; one that is NaN, infinite or beyond REAL's range is refused.
pub fn check_vector(values: &[f64], want: Option<usize>) -> Result<Vec<f32>, VectorError> {
    if let Some(w) = want {
        if values.len() != w {
            return Err(VectorError::Dimension { want: w, got: values.len() });
        }
    }
    if values.is_empty() || values.len() > crate::types::MAX_VECTOR_DIM {
        return Err(VectorError::Syntax(format!(
            "a vector has 1 to {} elements, not {}",
            crate::types::MAX_VECTOR_DIM,
            values.len()
        )));
    }
    values
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = x as f32;
            if f.is_finite() {
                Ok(f)
            } else {
                Err(VectorError::NotFinite(i))
            }
        })
        .collect()
}

/// Elements that are all finite, or the position of the first that is not.
pub fn check_finite(values: &[f32]) -> Result<(), VectorError> {
    match values.iter().position(|x| !x.is_finite()) {
        Some(i) => Err(VectorError::NotFinite(i)),
        None => Ok(()),
    }
}

/// Parse `[0.1, 0.2, 0.3]` (whitespace anywhere, numbers in any float spelling) into a vector
/// of `want` elements (`None`: any length).
pub fn parse_vector(text: &str, want: Option<usize>) -> Result<Vec<f32>, VectorError> {
    // `[1, 2]`, or PostgreSQL's array text `{1,2}` (what its clients and COPY write).
    let t = text.trim();
    let inner = t
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .or_else(|| t.strip_prefix('{').and_then(|t| t.strip_suffix('}')))
        .ok_or_else(|| VectorError::Syntax(format!("'{}' is not a vector like [1.0, 2.0]", short(text))))?;
    let mut out = Vec::new();
    if !inner.trim().is_empty() {
        for part in inner.split(',') {
            let p = part.trim();
            let x: f64 =
                p.parse().map_err(|_| VectorError::Syntax(format!("'{}' in a vector is not a number", short(p))))?;
            out.push(x);
        }
    }
    check_vector(&out, want)
}

/// At most 40 characters of `s`, for error messages.
fn short(s: &str) -> String {
    s.chars().take(40).collect()
}

/// A distance or similarity between two vectors, as DuckDB names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Metric {
    /// `array_cosine_similarity`: `a·b / (|a| |b|)`.
    CosineSimilarity,
    /// `array_cosine_distance`: `1 - cosine similarity`.
    CosineDistance,
    /// `array_distance`: Euclidean (L2) distance.
    L2,
    /// `array_inner_product`: `a·b`.
    InnerProduct,
    /// `array_negative_inner_product`: `-(a·b)`.
    NegativeInnerProduct,
}

impl Metric {
    /// The metric between `a` and `b` (slices of one length; the shorter length is used
    /// otherwise: callers check dimensions).
    #[inline]
    pub fn eval(self, a: &[f32], b: &[f32]) -> f64 {
        match self {
            Metric::CosineSimilarity => cosine_similarity(a, b),
            Metric::CosineDistance => 1.0 - cosine_similarity(a, b),
            Metric::L2 => l2_squared(a, b).sqrt(),
            Metric::InnerProduct => dot(a, b),
            Metric::NegativeInnerProduct => -dot(a, b),
        }
    }
}

/// `a·b`.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2 and FMA (checked at runtime just above).
        return unsafe { avx2::dot(a, b) } as f64;
    }
    scalar::dot(a, b) as f64
}

/// `|a - b|²`.
#[inline]
pub fn l2_squared(a: &[f32], b: &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2 and FMA (checked at runtime just above).
        return unsafe { avx2::l2_squared(a, b) } as f64;
    }
    scalar::l2_squared(a, b) as f64
}

/// `a·b / (|a| |b|)` in one pass, clamped to [-1, 1] as DuckDB does; a zero vector (whose
/// cosine is undefined) gives -1 there, so we give -1 too (its cosine distance is 2: farthest).
#[inline]
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    let (ab, aa, bb) = if avx2::available() {
        // SAFETY: the CPU has AVX2 and FMA (checked at runtime just above).
        unsafe { avx2::cosine_parts(a, b) }
    } else {
        scalar::cosine_parts(a, b)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (ab, aa, bb) = scalar::cosine_parts(a, b);
    let s = ab as f64 / ((aa as f64) * (bb as f64)).sqrt();
    // NaN (0/0) becomes -1, as DuckDB's max(-1, min(s, 1)) makes it.
    if s.is_nan() {
        -1.0
    } else {
        s.clamp(-1.0, 1.0)
    }
}

/// Which implementation the kernels use on this CPU: `"avx2+fma"` or `"scalar"`.
pub fn kernel_name() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        return "avx2+fma";
    }
    "scalar"
}

/// Portable kernels: eight independent accumulators, which the compiler keeps in SSE registers
/// on baseline x86-64 and which any target can vectorize.
pub mod scalar {
    const LANES: usize = 8;

    /// Sum over `i` of `f(a[i], b[i])` in eight lanes, then the lanes added in a fixed order.
    #[inline(always)]
    fn reduce(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
        let mut acc = [0f32; LANES];
        let ca = a.chunks_exact(LANES);
        let cb = b.chunks_exact(LANES);
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            for ((s, &p), &q) in acc.iter_mut().zip(x).zip(y) {
                *s += f(p, q);
            }
        }
        let mut tail = 0f32;
        for (&p, &q) in ra.iter().zip(rb) {
            tail += f(p, q);
        }
        acc.iter().sum::<f32>() + tail
    }

    /// `a·b`.
    pub fn dot(a: &[f32], b: &[f32]) -> f32 {
        reduce(a, b, |p, q| p * q)
    }

    /// `|a - b|²`.
    pub fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
        reduce(a, b, |p, q| (p - q) * (p - q))
    }

    /// `(a·b, a·a, b·b)`.
    pub fn cosine_parts(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
        (dot(a, b), dot(a, a), dot(b, b))
    }
}

/// AVX2 + FMA kernels: 8-wide lanes, several accumulators per sum to hide the FMA latency.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    /// AVX2 and FMA both present (detected once).
    #[inline]
    pub fn available() -> bool {
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
    }

    /// The eight lanes of `v` added.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps(v, 1);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 0b01));
        _mm_cvtss_f32(s)
    }

    /// `a·b` over `min(a.len(), b.len())` elements.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut s0, mut s1, mut s2, mut s3) =
            (_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i + 32 <= n {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 8)), _mm256_loadu_ps(pb.add(i + 8)), s1);
            s2 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 16)), _mm256_loadu_ps(pb.add(i + 16)), s2);
            s3 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i + 24)), _mm256_loadu_ps(pb.add(i + 24)), s3);
            i += 32;
        }
        while i + 8 <= n {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)), s0);
            i += 8;
        }
        let mut sum = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
        while i < n {
            sum += *pa.add(i) * *pb.add(i);
            i += 1;
        }
        sum
    }

    /// `|a - b|²` over `min(a.len(), b.len())` elements.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let (mut s0, mut s1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i + 16 <= n {
            let d0 = _mm256_sub_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
            let d1 = _mm256_sub_ps(_mm256_loadu_ps(pa.add(i + 8)), _mm256_loadu_ps(pb.add(i + 8)));
            s0 = _mm256_fmadd_ps(d0, d0, s0);
            s1 = _mm256_fmadd_ps(d1, d1, s1);
            i += 16;
        }
        if i + 8 <= n {
            let d0 = _mm256_sub_ps(_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
            s0 = _mm256_fmadd_ps(d0, d0, s0);
            i += 8;
        }
        let mut sum = hsum(_mm256_add_ps(s0, s1));
        while i < n {
            let d = *pa.add(i) - *pb.add(i);
            sum += d * d;
            i += 1;
        }
        sum
    }

    /// `(a·b, a·a, b·b)` in one pass over `min(a.len(), b.len())` elements.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn cosine_parts(a: &[f32], b: &[f32]) -> (f32, f32, f32) {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        // Two sets of three sums: one set alone waits on the FMA latency every step.
        let z = _mm256_setzero_ps();
        let (mut ab0, mut aa0, mut bb0, mut ab1, mut aa1, mut bb1) = (z, z, z, z, z, z);
        let mut i = 0;
        while i + 16 <= n {
            let (x0, y0) = (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
            let (x1, y1) = (_mm256_loadu_ps(pa.add(i + 8)), _mm256_loadu_ps(pb.add(i + 8)));
            ab0 = _mm256_fmadd_ps(x0, y0, ab0);
            aa0 = _mm256_fmadd_ps(x0, x0, aa0);
            bb0 = _mm256_fmadd_ps(y0, y0, bb0);
            ab1 = _mm256_fmadd_ps(x1, y1, ab1);
            aa1 = _mm256_fmadd_ps(x1, x1, aa1);
            bb1 = _mm256_fmadd_ps(y1, y1, bb1);
            i += 16;
        }
        if i + 8 <= n {
            let (x, y) = (_mm256_loadu_ps(pa.add(i)), _mm256_loadu_ps(pb.add(i)));
            ab0 = _mm256_fmadd_ps(x, y, ab0);
            aa0 = _mm256_fmadd_ps(x, x, aa0);
            bb0 = _mm256_fmadd_ps(y, y, bb0);
            i += 8;
        }
        let (mut sab, mut saa, mut sbb) =
            (hsum(_mm256_add_ps(ab0, ab1)), hsum(_mm256_add_ps(aa0, aa1)), hsum(_mm256_add_ps(bb0, bb1)));
        while i < n {
            let (x, y) = (*pa.add(i), *pb.add(i));
            sab += x * y;
            saa += x * x;
            sbb += y * y;
            i += 1;
        }
        (sab, saa, sbb)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::rng::XorShift;

    fn random(rng: &mut XorShift, n: usize) -> Vec<f32> {
        (0..n).map(|_| (rng.below(2_000_001) as f32 - 1_000_000.0) / 1_000_000.0).collect()
    }

    fn ref_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
    }

    fn close(got: f64, want: f64, scale: f64) -> bool {
        (got - want).abs() <= 1e-5 * scale.max(1.0)
    }

    /// Every kernel (dispatched and scalar) against an f64 reference on random data of odd
    /// lengths, with a tolerance relative to the sums' magnitude (f32 accumulation).
    #[test]
    fn kernels_match_an_f64_reference() {
        let mut rng = XorShift::new(0x5eed_1234);
        for n in [1usize, 2, 7, 8, 9, 15, 16, 17, 31, 384, 1000, 1536] {
            for _ in 0..20 {
                let a = random(&mut rng, n);
                let b = random(&mut rng, n);
                let (aa, bb) = (ref_dot(&a, &a), ref_dot(&b, &b));
                let ab = ref_dot(&a, &b);
                let scale = aa.max(bb);
                let l2: f64 = a.iter().zip(&b).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
                assert!(close(dot(&a, &b), ab, scale), "dot n={n}: {} vs {ab}", dot(&a, &b));
                assert!(close(scalar::dot(&a, &b) as f64, ab, scale), "scalar dot n={n}");
                assert!(close(l2_squared(&a, &b), l2, scale), "l2 n={n}");
                assert!(close(scalar::l2_squared(&a, &b) as f64, l2, scale), "scalar l2 n={n}");
                let cos = ab / (aa * bb).sqrt();
                assert!((cosine_similarity(&a, &b) - cos).abs() < 1e-4, "cos n={n}");
                assert!((Metric::CosineDistance.eval(&a, &b) - (1.0 - cos)).abs() < 1e-4);
                assert!((Metric::L2.eval(&a, &b) - l2.sqrt()).abs() < 1e-4 * l2.sqrt().max(1.0));
                assert_eq!(Metric::NegativeInnerProduct.eval(&a, &b), -Metric::InnerProduct.eval(&a, &b));
            }
        }
        assert_eq!(cosine_similarity(&[0.0, 0.0], &[1.0, 2.0]), -1.0);
        assert_eq!(Metric::CosineDistance.eval(&[0.0, 0.0], &[0.0, 0.0]), 2.0);
        assert!(["avx2+fma", "scalar"].contains(&kernel_name()));
    }

    #[test]
    fn text_and_checks() {
        assert_eq!(parse_vector(" [1, -2.5e0 ,3] ", Some(3)), Ok(vec![1.0, -2.5, 3.0]));
        assert_eq!(parse_vector("[1,2]", Some(3)), Err(VectorError::Dimension { want: 3, got: 2 }));
        assert_eq!(parse_vector("[1,nan]", None), Err(VectorError::NotFinite(1)));
        assert_eq!(parse_vector("[1e39]", None), Err(VectorError::NotFinite(0)));
        assert!(matches!(parse_vector("1,2", None), Err(VectorError::Syntax(_))));
        assert!(matches!(parse_vector("[]", None), Err(VectorError::Syntax(_))));
        assert!(matches!(parse_vector("[1,,2]", None), Err(VectorError::Syntax(_))));
        assert_eq!(check_finite(&[1.0, f32::INFINITY]), Err(VectorError::NotFinite(1)));
    }
}
