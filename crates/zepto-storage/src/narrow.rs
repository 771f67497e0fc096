//! Narrow blocks: a block of [`BLOCK`] integers or decimal doubles written again as one, two or
//! four bytes a row, for kernels bound by the memory they read.
//!
//! `SELECT sym, sum(price * size) / sum(size) ... GROUP BY sym` over 10M rows reads 160 MB: on
//! two cores that is 4 to 6 ms at the machine's memory speed, whatever the kernel. Prices of
//! two decimals and sizes of a few thousand say the same in a quarter of the bytes. A shared
//! allocation ([`crate::buf`]) keeps each block's narrow form once a reader has asked for it,
//! beside its summary ([`crate::summary`]) and on the same terms: the rows of a shared block
//! never change, so its narrow form holds for every version that holds the block whole, and
//! goes with the allocation when rows change. The full values stay the column: the narrow
//! blocks are a second, smaller copy of the blocks a streaming kernel reads whole (an eighth
//! to a half of their bytes: two-decimal prices of one symbol usually take one byte a row,
//! sizes two), made only when one asks, and kept while the allocation lives.
//!
//! A block's values become integers `d`, all within `i32`, stored as `d - base` in the
//! narrowest of `u8`, `u16` and `u32` that holds the block's range. A value reads back as
//! [`Narrow::value`]: `d` for an integer block, and for a double block `(d * 10^f) * 10^-e`
//! with the powers as doubles, the decoding of ALP (Afroozeh, Kuffó, Boncz: "ALP: Adaptive
//! Lossless floating-Point Compression", SIGMOD 2024). A block is narrow only when every
//! value reads back with its own bits (so never for NaN, infinities or `-0.0`); any other
//! block has no narrow form, and kernels read its values.

use crate::summary::BLOCK;

/// 10^0 ..= 10^18, each exact as a double.
const POW10: [f64; 19] =
    [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18];

/// The doubles nearest 10^-0 ..= 10^-18.
const INV10: [f64; 19] = [
    1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17,
    1e-18,
];

/// The `e` tried with each count of decimals `p = e - f` after the plain decimal (`(p, 0)`):
/// `(14, 14 - p)` multiplies by an exact power first and reads back more values (two-decimal
/// prices: 86% with `(2, 0)`, all with `(14, 12)`; of blocks of 2,048 random one- and
/// two-decimal values under 10^6, searched over every `(e, f)`, only `e = 14` read back every
/// value).
const EXPONENT: u8 = 14;

/// The most decimals a double block may have.
const MAX_DECIMALS: u8 = 10;

/// A block's codes, one width for all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Codes {
    /// Ranges under 2^8.
    U8(Box<[u8]>),
    /// Ranges under 2^16.
    U16(Box<[u16]>),
    /// Ranges under 2^32.
    U32(Box<[u32]>),
}

/// One block's values as integer codes (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrow {
    base: i32,
    top: i32,
    /// `(e, f)` of a double block; `(0, 0)` for integers.
    scale: (u8, u8),
    codes: Codes,
}

impl Narrow {
    /// Each value's code: its `d` less `base` (so `d` is `base` plus the code, within
    /// `base ..= top`).
    pub fn codes(&self) -> &Codes {
        &self.codes
    }

    /// The least `d`.
    pub fn base(&self) -> i32 {
        self.base
    }

    /// The greatest `d`.
    pub fn top(&self) -> i32 {
        self.top
    }

    /// The two factors a double block's `d` is multiplied by, in order (`10^f`, then
    /// `10^-e`), as [`Narrow::value`] does; `(1, 1)` for an integer block, whose values are
    /// `d` itself.
    pub fn factors(&self) -> (f64, f64) {
        let (e, f) = self.scale;
        (POW10[usize::from(f)], INV10[usize::from(e)])
    }

    /// Rows in the block.
    pub fn len(&self) -> usize {
        match &self.codes {
            Codes::U8(c) => c.len(),
            Codes::U16(c) => c.len(),
            Codes::U32(c) => c.len(),
        }
    }

    /// The bytes its codes take on the heap.
    pub fn heap_bytes(&self) -> usize {
        match &self.codes {
            Codes::U8(c) => c.len(),
            Codes::U16(c) => 2 * c.len(),
            Codes::U32(c) => 4 * c.len(),
        }
    }

    /// Whether the block has no rows (never, for a block made here).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value a code stands for (`base + code` at the block's scale, as [`Narrow::value`]
    /// reads it): the greater the code, the greater or equal the value, so a run's least and
    /// greatest codes give its least and greatest values.
    pub fn value_of(&self, code: u32) -> f64 {
        debug_assert!(
            i64::from(self.base) + i64::from(code) <= i64::from(self.top),
            "code {code} past the block's top"
        );
        // `base + code` is within `base ..= top`, so within i32: the wrapping sum is exact.
        read_back(self.base.wrapping_add(code as i32), self.scale)
    }

    /// Row `i`'s value as a double: the bits of the value it was made from.
    pub fn value(&self, i: usize) -> f64 {
        let code = match &self.codes {
            Codes::U8(c) => u32::from(c[i]),
            Codes::U16(c) => u32::from(c[i]),
            Codes::U32(c) => c[i],
        };
        self.value_of(code)
    }

    /// The block of integers `d`, all within `base ..= top`, at `scale`.
    #[inline(always)]
    fn of_range(d: impl ExactSizeIterator<Item = i32>, base: i32, top: i32, scale: (u8, u8)) -> Narrow {
        let range = (i64::from(top) - i64::from(base)) as u64;
        let code = |x: i32| x.wrapping_sub(base) as u32;
        let codes = if range < 1 << 8 {
            Codes::U8(each(d, |x| code(x) as u8))
        } else if range < 1 << 16 {
            Codes::U16(each(d, |x| code(x) as u16))
        } else {
            Codes::U32(each(d, code))
        };
        Narrow { base, top, scale, codes }
    }
}

/// The codes of `d`, one for each, written out (see [`extremes`]).
#[inline(always)]
fn each<C: Copy + Default>(d: impl ExactSizeIterator<Item = i32>, code: impl Fn(i32) -> C) -> Box<[C]> {
    let mut out = vec![C::default(); d.len()];
    for (o, x) in out.iter_mut().zip(d) {
        *o = code(x);
    }
    out.into_boxed_slice()
}

/// Values whose blocks may have a narrow form.
pub trait Narrowable: Copy + Send + Sync + 'static {
    /// `block`'s narrow form (up to [`BLOCK`] values), `None` when some value has none.
    fn narrow(block: &[Self]) -> Option<Narrow>;
}

/// `$body` compiled for AVX2 where the CPU has it (the decimals' conversions and checks, the
/// least and greatest of 32- and 64-bit integers as vectors, which baseline x86-64 does two at
/// a time or not at all), else as it is: the same answer either way.
macro_rules! with_avx2 {
    ($t:ty, $b:ident => $body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            /// The AVX2 build.
            ///
            /// # Safety
            /// The CPU must support AVX2.
            #[target_feature(enable = "avx2")]
            #[allow(unsafe_code)]
            unsafe fn avx2($b: &[$t]) -> Option<Narrow> {
                $body
            }
            // SAFETY: the CPU has AVX2.
            #[allow(unsafe_code)]
            return unsafe { avx2($b) };
        }
        $body
    }};
}

impl Narrowable for i64 {
    fn narrow(block: &[i64]) -> Option<Narrow> {
        debug_assert!(block.len() <= BLOCK, "a block of at most BLOCK values");
        with_avx2!(i64, block => {
            let (lo, hi) = extremes(block);
            let (base, top) = (i32::try_from(lo).ok()?, i32::try_from(hi).ok()?);
            Some(Narrow::of_range(block.iter().map(|&x| x as i32), base, top, (0, 0)))
        })
    }
}

impl Narrowable for f64 {
    fn narrow(block: &[f64]) -> Option<Narrow> {
        debug_assert!(block.len() <= BLOCK, "a block of at most BLOCK values");
        with_avx2!(f64, block => {
            let first = *block.first()?;
            let mut d = vec![0i32; block.len()];
            // Loops written out here and below, not iterator adapters: those are compiled
            // apart, without AVX2.
            for scale in candidates() {
                // The first value rules out most scales before a pass over the block.
                if decimal(first, scale).is_some() && decimals(block, scale, &mut d) {
                    let (base, top) = extremes(&d);
                    return Some(Narrow::of_range(d.iter().copied(), base, top, scale));
                }
            }
            None
        })
    }
}

/// Whether every value of `block` is an integer `d` of scale `(e, f)` ([`decimal`]), written
/// to `d`: checked 64 values at a time, each chunk with no branch per value.
#[inline(always)]
fn decimals(block: &[f64], scale: (u8, u8), d: &mut [i32]) -> bool {
    for (v, d) in block.chunks(64).zip(d.chunks_mut(64)) {
        let mut ok = true;
        for (&x, y) in v.iter().zip(d) {
            *y = to_decimal(x, scale);
            ok &= read_back(*y, scale).to_bits() == x.to_bits();
        }
        if !ok {
            return false;
        }
    }
    true
}

/// The least and greatest of `v` (`(MAX, MIN)` when empty).
#[inline(always)]
fn extremes<T: Copy + Ord + Bounded>(v: &[T]) -> (T, T) {
    let (mut lo, mut hi) = (T::MAX, T::MIN);
    for &x in v {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    (lo, hi)
}

/// An integer type's ends.
trait Bounded {
    const MIN: Self;
    const MAX: Self;
}

impl Bounded for i32 {
    const MIN: i32 = i32::MIN;
    const MAX: i32 = i32::MAX;
}

impl Bounded for i64 {
    const MIN: i64 = i64::MIN;
    const MAX: i64 = i64::MAX;
}

/// The scales `(e, f)` tried, fewest decimals first.
#[inline(always)]
fn candidates() -> impl Iterator<Item = (u8, u8)> {
    (0..=MAX_DECIMALS).flat_map(|p| [(p, 0), (EXPONENT, EXPONENT - p)])
}

/// `v` as the integer `d` of scale `(e, f)`, when it reads back as `v`'s bits
/// ([`Narrow::value`]).
#[inline(always)]
fn decimal(v: f64, scale: (u8, u8)) -> Option<i32> {
    let d = to_decimal(v, scale);
    (read_back(d, scale).to_bits() == v.to_bits()).then_some(d)
}

/// `v · 10^e · 10^-f` as an integer: the nearest one while that is within i32, some other one
/// past i32's range or for NaN and infinities. Any integer that reads back as `v` will do
/// (the callers check each), so the rounding and the conversion take no call and no branch:
/// 1.5 · 2^52 is added, which leaves the nearest integer in the low bits of the sum's
/// mantissa for magnitudes under 2^51, and those bits are the integer.
#[inline(always)]
fn to_decimal(v: f64, (e, f): (u8, u8)) -> i32 {
    const MAGIC: f64 = 6_755_399_441_055_744.0;
    (v * POW10[usize::from(e)] * INV10[usize::from(f)] + MAGIC).to_bits() as i32
}

/// The value the integer `d` of scale `(e, f)` stands for.
#[inline(always)]
fn read_back(d: i32, (e, f): (u8, u8)) -> f64 {
    f64::from(d) * POW10[usize::from(f)] * INV10[usize::from(e)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift;

    fn values(n: &Narrow) -> Vec<u64> {
        (0..n.len()).map(|i| n.value(i).to_bits()).collect()
    }

    /// Every value of a narrow block reads back with its bits, whatever the decimals, signs
    /// and ranges; the codes are as narrow as the range allows.
    #[test]
    fn narrow_blocks_read_back_their_bits() {
        let mut rng = XorShift::new(0x5eed_0fa1);
        for round in 0..400 {
            let decimals = rng.below(5) as i32;
            let spread = [100, 60_000, 3_000_000, 2_000_000_000][round % 4];
            let centre = rng.below(1_000_000) as i64 - 500_000;
            let n = 1 + rng.below(BLOCK as u64) as usize;
            let ints: Vec<i64> = (0..n).map(|_| centre + rng.below(spread) as i64 - spread as i64 / 2).collect();
            let doubles: Vec<f64> = ints.iter().map(|&x| x as f64 / 10f64.powi(decimals)).collect();
            // Decimal text parsed, as a loader reads it: the double nearest each decimal.
            let parsed: Vec<f64> =
                doubles.iter().map(|x| format!("{x:.*}", decimals as usize).parse().expect("a decimal")).collect();
            for v in [&doubles, &parsed] {
                if let Some(nb) = f64::narrow(v) {
                    assert_eq!(values(&nb), v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), "round {round}");
                }
            }
            // Up to two decimals under 2^24 (cents of prices up to $167,772) always narrow.
            if decimals <= 2 && ints.iter().all(|x| x.unsigned_abs() < 1 << 24) {
                assert!(f64::narrow(&parsed).is_some(), "round {round}: {decimals} decimals refused");
            }
            let ni = i64::narrow(&ints).expect("integers within i32");
            assert_eq!(values(&ni), ints.iter().map(|&x| (x as f64).to_bits()).collect::<Vec<_>>());
            let (lo, hi) = (ints.iter().min().expect("rows"), ints.iter().max().expect("rows"));
            assert_eq!((i64::from(ni.base()), i64::from(ni.top())), (*lo, *hi));
            let range = hi - lo;
            let width = match ni.codes() {
                Codes::U8(_) => 8,
                Codes::U16(_) => 16,
                Codes::U32(_) => 32,
            };
            assert!(range < 1 << width && (width == 8 || range >= 1 << (width / 2)), "range {range} in {width} bits");
        }
    }

    /// A shared allocation keeps its narrow blocks across appends past them; a version alone
    /// that writes where a dropped one had claimed, and a change of a row, make them afresh.
    #[test]
    fn kept_narrow_blocks_follow_the_values() {
        use crate::buf::Buf;
        let codes =
            |b: &Buf<i64>, k: usize| b.narrow_block(k).map(|n| (0..n.len()).map(|i| n.value(i)).collect::<Vec<_>>());
        let rows =
            |b: &Buf<i64>, k: usize| Some(b[k * BLOCK..(k + 1) * BLOCK].iter().map(|&x| x as f64).collect::<Vec<_>>());
        let v: Vec<i64> = (0..3 * BLOCK as i64 + 5).map(|i| (i * 7919) % 1000 - 500).collect();
        let mut shared: Buf<i64> = Vec::with_capacity(8 * BLOCK).into();
        shared.extend_from_slice(&v);
        assert_eq!(shared.narrow_block(0), None, "owned values keep none");
        shared.share();
        let reader = shared.clone();
        for k in 0..3 {
            assert_eq!(codes(&reader, k), rows(&reader, k));
        }
        shared.extend_shared(BLOCK, std::iter::repeat_n(9, BLOCK));
        assert_eq!(codes(&shared, 2), rows(&shared, 2), "kept across an append");
        let stale = codes(&shared, 3);
        assert_eq!(stale, rows(&shared, 3));
        // The reader's version alone, writing where the dropped writer had claimed.
        drop(shared);
        let mut alone = reader;
        alone.extend_shared(BLOCK, std::iter::repeat_n(-3, BLOCK));
        assert_eq!(codes(&alone, 3), rows(&alone, 3));
        assert_ne!(codes(&alone, 3), stale);
        // A change of a row below the blocks: taken back, made afresh once shared again.
        let held = alone.clone();
        alone[0] = 1_000_000;
        alone.share();
        assert_eq!(codes(&alone, 0), rows(&alone, 0));
        assert_eq!(codes(&held, 0), rows(&held, 0));
        assert_ne!(codes(&alone, 0), codes(&held, 0));
    }

    /// Values a narrow block cannot read back leave the block without one.
    #[test]
    fn blocks_that_cannot_read_back_have_none() {
        let mut v: Vec<f64> = (0..64).map(|i| 100.0 + f64::from(i) * 0.25).collect();
        assert!(f64::narrow(&v).is_some());
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e300, 0.1 + 0.2, std::f64::consts::PI] {
            v[17] = bad;
            assert_eq!(f64::narrow(&v), None, "{bad}");
        }
        assert_eq!(i64::narrow(&[1, 2, i64::from(i32::MAX) + 1]), None);
        // i32's ends are values; past them a decimal saturates and does not read back.
        let ends = f64::narrow(&[2_147_483_647.0, -2_147_483_648.0]).expect("i32's ends");
        assert_eq!((ends.value(0), ends.value(1)), (2_147_483_647.0, -2_147_483_648.0));
        assert_eq!(f64::narrow(&[2_147_483_648.0]), None);
        assert_eq!(f64::narrow(&[-2_147_483_649.0]), None);
        assert_eq!(i64::narrow(&[]), None);
        assert_eq!(f64::narrow(&[]), None);
        let edges = i64::narrow(&[i64::from(i32::MIN), i64::from(i32::MAX)]).expect("within i32");
        assert_eq!((edges.value(0), edges.value(1)), (f64::from(i32::MIN), f64::from(i32::MAX)));
    }
}
