//! vwap's dot kernel ([`super::dot`]) over a run of a DOUBLE and a BIGINT column that reads the
//! narrow forms of the blocks the run covers whole ([`zepto_storage::narrow`]): two-decimal
//! prices and sizes under 65,536 are four bytes a row instead of sixteen, and the kernel is
//! bound by the bytes it reads (`sum(price * size) ... GROUP BY sym` over 10M rows).
//!
//! A narrow block reads back each value's own bits, and its rows go into the lanes [`lane_dot`]
//! puts them in, each lane adding its rows in row order, unfused: the sums are [`lane_dot`]'s
//! bits. So the run is cut where the lanes allow it: the rows before the first whole block
//! (a whole number of eights, or the run takes no narrow block), the blocks, then the rows
//! after, whose last `len % 8` are the run's rows past its last eight.
//!
//! [`lane_dot`]: super::dot::lane_dot

use super::dot::{eights_i64, Lanes};
use crate::exec::prefetch;
use std::ops::Range;
use zepto_storage::buf::Buf;
use zepto_storage::narrow::{Codes, Narrow};

/// Σ p·s, Σ s and the largest |s| of rows `r` of `p` and `s`, with [`super::dot::lane_dot`]'s
/// bits, reading the narrow forms of the blocks the run covers whole. `None` where it covers
/// none, where its rows before them are not whole eights, or where a block of either column
/// has no narrow form: the caller reads the values.
pub fn run_dot(p: &Buf<f64>, s: &Buf<i64>, r: Range<usize>) -> Option<(f64, f64, f64)> {
    let body_end = r.start + r.len() / 8 * 8;
    let (rows, pk) = p.whole_blocks_of(r.clone());
    let (srows, sk) = s.whole_blocks_of(r.clone());
    if rows != srows || !(rows.start - r.start).is_multiple_of(8) {
        return None;
    }
    // Blocks wholly before the run's rows past its last eight (a block there would be cut).
    let blocks = (rows.end.min(body_end).saturating_sub(rows.start)) / zepto_storage::summary::BLOCK;
    if blocks == 0 {
        return None;
    }
    let narrow = |k: usize| Some((p.narrow_block(pk.start + k)?, s.narrow_block(sk.start + k)?));
    if !(0..blocks).all(|k| narrow(k).is_some()) {
        return None;
    }
    let mid = rows.start + blocks * zepto_storage::summary::BLOCK;
    let (pv, sv) = (p.as_slice(), s.as_slice());
    let mut lanes = Lanes::default();
    let mut top = eights_i64(&mut lanes, &pv[r.start..rows.start], &sv[r.start..rows.start]);
    for k in 0..blocks {
        let Some((pb, sb)) = narrow(k) else { unreachable!("every block checked narrow above") };
        // Each block's codes are an allocation of their own, a page or less: the next one's
        // lines are asked for while this one is read.
        let next = (k + 1 < blocks).then(|| narrow(k + 1)).flatten().map(|(p, s)| [bytes(p), bytes(s)]);
        add_block(&mut lanes, pb, sb, next.unwrap_or([&[], &[]]));
        top = top.max(f64::from(sb.base()).abs()).max(f64::from(sb.top()).abs());
    }
    top = top.max(eights_i64(&mut lanes, &pv[mid..body_end], &sv[mid..body_end]));
    let rest = sv[body_end..r.end].iter().fold(top, |m, &x| m.max((x as f64).abs()));
    let (num, den) = lanes.finish(&pv[body_end..r.end], &sv[body_end..r.end]);
    Some((num, den, rest))
}

/// A code, widened to add to its block's base.
trait Code: Copy {
    fn get(self) -> i32;
}

impl Code for u8 {
    #[inline(always)]
    fn get(self) -> i32 {
        i32::from(self)
    }
}

impl Code for u16 {
    #[inline(always)]
    fn get(self) -> i32 {
        i32::from(self)
    }
}

impl Code for u32 {
    #[inline(always)]
    fn get(self) -> i32 {
        // Base plus code wraps to the value, which lies within i32 (`Narrow`).
        self as i32
    }
}

/// A block's codes as bytes.
fn bytes(n: &Narrow) -> &[u8] {
    let (ptr, len) = match n.codes() {
        Codes::U8(c) => return c,
        Codes::U16(c) => (c.as_ptr().cast::<u8>(), c.len() * 2),
        Codes::U32(c) => (c.as_ptr().cast::<u8>(), c.len() * 4),
    };
    // SAFETY: the codes' own memory, read as bytes (any bit pattern is a byte; alignment 1).
    #[allow(unsafe_code)]
    unsafe {
        std::slice::from_raw_parts(ptr, len)
    }
}

/// One block of prices `p` and sizes `s` (whole eights) added to `lanes`, asking for the lines
/// of `next` (the next blocks' codes, as bytes) meanwhile.
fn add_block(lanes: &mut Lanes, p: &Narrow, s: &Narrow, next: [&[u8]; 2]) {
    assert_eq!(p.len(), s.len(), "blocks of one run");
    assert_eq!(p.len() % 8, 0, "whole eights");
    let (pb, f, sb) = (p.base(), p.factors(), s.base());
    macro_rules! widths {
        ($($pw:ident, $sw:ident);*) => {
            match (p.codes(), s.codes()) {
                $((Codes::$pw(pc), Codes::$sw(sc)) => dispatch(lanes, pc, pb, f, sc, sb, next),)*
            }
        };
    }
    widths!(U8, U8; U8, U16; U8, U32; U16, U8; U16, U16; U16, U32; U32, U8; U32, U16; U32, U32);
}

/// [`eights`] through AVX2 where the CPU has it (the codes widened and converted as vectors).
fn dispatch<P: Code, S: Code>(l: &mut Lanes, pc: &[P], pb: i32, f: (f64, f64), sc: &[S], sb: i32, next: [&[u8]; 2]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        /// # Safety
        /// The CPU must support AVX-512F.
        #[target_feature(enable = "avx512f")]
        #[allow(unsafe_code)]
        unsafe fn avx512<P: Code, S: Code>(
            l: &mut Lanes,
            pc: &[P],
            pb: i32,
            f: (f64, f64),
            sc: &[S],
            sb: i32,
            next: [&[u8]; 2],
        ) {
            eights(l, pc, pb, f, sc, sb, next)
        }
        // SAFETY: the CPU has AVX-512F.
        #[allow(unsafe_code)]
        return unsafe { avx512(l, pc, pb, f, sc, sb, next) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        /// # Safety
        /// The CPU must support AVX2.
        #[target_feature(enable = "avx2")]
        #[allow(unsafe_code)]
        unsafe fn avx2<P: Code, S: Code>(
            l: &mut Lanes,
            pc: &[P],
            pb: i32,
            f: (f64, f64),
            sc: &[S],
            sb: i32,
            next: [&[u8]; 2],
        ) {
            eights(l, pc, pb, f, sc, sb, next)
        }
        // SAFETY: the CPU has AVX2.
        #[allow(unsafe_code)]
        return unsafe { avx2(l, pc, pb, f, sc, sb, next) };
    }
    eights(l, pc, pb, f, sc, sb, next)
}

/// The whole eights of the codes added to `lanes`: price `(d * f.0) * f.1` for `d` its base
/// plus its code, size its base plus its code, as [`Narrow::value`] reads them.
#[inline(always)]
fn eights<P: Code, S: Code>(
    lanes: &mut Lanes,
    pc: &[P],
    pb: i32,
    (m, d): (f64, f64),
    sc: &[S],
    sb: i32,
    next: [&[u8]; 2],
) {
    let (mut num, mut den) = (lanes.num, lanes.den);
    for (i, (x, y)) in pc.chunks_exact(8).zip(sc.chunks_exact(8)).enumerate() {
        // A line of each of the next blocks a chunk, from their starts (a block of 256 chunks
        // is at most 128 lines).
        prefetch::at(next[0], i * 64);
        prefetch::at(next[1], i * 64);
        for k in 0..8 {
            let price = (f64::from(pb.wrapping_add(x[k].get())) * m) * d;
            let w = f64::from(sb.wrapping_add(y[k].get()));
            num[k] += price * w;
            den[k] += w;
        }
    }
    *lanes = Lanes { num, den };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::accum::dot::{lane_dot, lane_dot_total_i64};
    use zepto_storage::narrow::Narrowable;
    use zepto_storage::rng::XorShift;
    use zepto_storage::summary::BLOCK;

    /// Shared columns (as a table's are when read) of `n` rows: two-decimal prices around
    /// `centre` and sizes up to `size`, with `bad` rows that have no narrow form.
    fn columns(rng: &mut XorShift, n: usize, size: u64, bad: &[usize]) -> (Buf<f64>, Buf<i64>) {
        let mut p: Vec<f64> = (0..n).map(|_| (30_000 + rng.below(size.min(60_000)) as i64) as f64 / 100.0).collect();
        let s: Vec<i64> = (0..n).map(|_| 1 + rng.below(size) as i64).collect();
        for &i in bad.iter().filter(|&&i| i < n) {
            p[i] = std::f64::consts::PI;
        }
        let (mut p, mut s): (Buf<f64>, Buf<i64>) = (p.into(), s.into());
        p.share();
        s.share();
        (p, s)
    }

    /// Every run: where the narrow blocks answer, the bits of the lanes over the values, and
    /// they answer exactly when the run covers a whole block its lanes do not cut, every
    /// covered block narrow in both columns.
    #[test]
    fn narrow_runs_give_the_bits_of_the_values() {
        let mut rng = XorShift::new(0xb10c_5eed);
        let mut answered = 0;
        for round in 0..600 {
            let n = [BLOCK - 1, BLOCK, 3 * BLOCK + 5, 5 * BLOCK + 8][round % 4];
            let size = [200, 4_500, 70_000, 5_000_000_000][(round / 4) % 4];
            let bad: Vec<usize> = if round % 7 == 0 { vec![rng.below(n as u64) as usize] } else { vec![] };
            let (p, s) = columns(&mut rng, n, size, &bad);
            let a = rng.below(n as u64 / 2) as usize;
            let a = if round % 3 != 0 { a / 8 * 8 } else { a };
            let b = a + rng.below((n - a) as u64 + 1) as usize;
            let (pv, sv) = (&p[a..b], &s[a..b]);
            let got = run_dot(&p, &s, a..b);
            let (rows, _) = p.whole_blocks_of(a..b);
            // The blocks the run reads narrow: whole, before its rows past its last eight.
            let end = a + (b - a) / 8 * 8;
            let used = rows.start + rows.end.min(end).saturating_sub(rows.start) / BLOCK * BLOCK;
            let covered = used > rows.start && (rows.start - a) % 8 == 0;
            let clean = bad.iter().all(|&i| i < rows.start || i >= used) && size < 1 << 31;
            assert_eq!(got.is_some(), covered && clean, "round {round}: {a}..{b}");
            if let Some((num, den, top)) = got {
                answered += 1;
                let want = lane_dot(pv, sv);
                assert_eq!((num.to_bits(), den.to_bits()), (want.0.to_bits(), want.1.to_bits()), "round {round}");
                let max = sv.iter().map(|x| x.unsigned_abs()).max().unwrap_or(0) as f64;
                assert!(top >= max, "round {round}: {top} under the largest size {max}");
                if let Some((n2, total)) = lane_dot_total_i64(pv, sv) {
                    assert_eq!((n2.to_bits(), total), (num.to_bits(), den as i128), "round {round}");
                }
            }
        }
        assert!(answered > 40, "{answered} runs answered");
    }

    /// The vector builds of the block kernel (AVX-512 or AVX2, whichever this CPU takes) give
    /// the portable build's bits, for every pair of code widths.
    #[test]
    fn every_build_gives_the_portable_bits() {
        let mut rng = XorShift::new(0x7715_b175);
        for (pr, sr) in [(200, 200), (200, 4_000), (200, 100_000), (50_000, 9), (50_000, 60_000), (9_000_000, 300_000)]
        {
            let p: Vec<f64> = (0..BLOCK).map(|_| (100_000 + rng.below(pr) as i64) as f64 / 100.0).collect();
            let s: Vec<i64> = (0..BLOCK).map(|_| rng.below(sr) as i64 - 5).collect();
            let (pn, sn) = (f64::narrow(&p).expect("cents"), i64::narrow(&s).expect("small sizes"));
            let start = Lanes { num: [0.5; 8], den: [-3.0; 8] };
            let (mut fast, mut portable) = (start, start);
            add_block(&mut fast, &pn, &sn, [&[], &[]]);
            macro_rules! plain {
                ($($pw:ident, $sw:ident);*) => {
                    match (pn.codes(), sn.codes()) {
                        $((Codes::$pw(pc), Codes::$sw(sc)) => {
                            eights(&mut portable, pc, pn.base(), pn.factors(), sc, sn.base(), [&[], &[]])
                        })*
                    }
                };
            }
            plain!(U8, U8; U8, U16; U8, U32; U16, U8; U16, U16; U16, U32; U32, U8; U32, U16; U32, U32);
            let bits = |l: Lanes| (l.num.map(f64::to_bits), l.den.map(f64::to_bits));
            assert_eq!(bits(fast), bits(portable), "ranges {pr}, {sr}");
        }
    }

    /// Owned columns keep no narrow blocks: the values are read.
    #[test]
    fn owned_columns_have_no_narrow_run() {
        let mut rng = XorShift::new(7);
        let (p, s) = columns(&mut rng, 3 * BLOCK, 100, &[]);
        let (p, s): (Buf<f64>, Buf<i64>) = (p.to_vec().into(), s.to_vec().into());
        assert_eq!(run_dot(&p, &s, 0..3 * BLOCK), None);
    }
}
