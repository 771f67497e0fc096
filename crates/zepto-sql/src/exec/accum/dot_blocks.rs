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
use zepto_storage::summary::BLOCK;

/// Σ p·s, Σ s and the largest |s| of rows `r` of `p` and `s`, with [`super::dot::lane_dot`]'s
/// bits, reading the narrow forms of the blocks the run covers whole (and the values of a
/// block either column has none for). `None` where the run covers no whole block, where its
/// rows before them are not whole eights (the lanes would cut the blocks), where the two
/// columns' blocks do not start at the same rows, or where the columns keep no blocks (owned
/// values): the caller reads the values.
pub fn run_dot(p: &Buf<f64>, s: &Buf<i64>, r: Range<usize>) -> Option<(f64, f64, f64)> {
    let (rows, pk) = p.whole_blocks_of(r.clone());
    let (srows, sk) = s.whole_blocks_of(r.clone());
    let aligned = rows == srows && (rows.start - r.start).is_multiple_of(8);
    if !aligned || pk.is_empty() || !p.is_shared() || !s.is_shared() {
        return None;
    }
    // The blocks start a whole number of eights into the run and are whole eights, so they
    // end before the run's rows past its last eight.
    let body_end = r.start + r.len() / 8 * 8;
    debug_assert!(rows.end <= body_end, "blocks {rows:?} past the run's eights ({body_end})");
    let narrow = |k: usize| Some((p.narrow_block(pk.start + k)?, s.narrow_block(sk.start + k)?));
    let (pv, sv) = (p.as_slice(), s.as_slice());
    let mut lanes = Lanes::default();
    let mut top = eights_i64(&mut lanes, &pv[r.start..rows.start], &sv[r.start..rows.start]);
    for k in 0..pk.len() {
        let at = rows.start + k * BLOCK..rows.start + (k + 1) * BLOCK;
        let Some((pb, sb)) = narrow(k) else {
            top = top.max(eights_i64(&mut lanes, &pv[at.clone()], &sv[at]));
            continue;
        };
        // Each block's codes are an allocation of their own, a page or less: the next one's
        // lines are asked for while this one is read.
        let next = (k + 1 < pk.len()).then(|| narrow(k + 1)).flatten().map(|(p, s)| [p.codes(), s.codes()]);
        add_block(Build::best(), &mut lanes, pb, sb, next);
        top = top.max(f64::from(sb.base()).abs()).max(f64::from(sb.top()).abs());
    }
    top = top.max(eights_i64(&mut lanes, &pv[rows.end..body_end], &sv[rows.end..body_end]));
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

/// Which build of the block kernel runs: the same additions in the same order in each, so the
/// same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Build {
    /// Baseline x86-64 (two doubles a register), or another architecture.
    Portable,
    /// Four doubles a register.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Eight doubles a register: a chunk of eight rows in one.
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Build {
    /// The widest build this CPU runs.
    fn best() -> Build {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Build::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Build::Avx2;
            }
        }
        Build::Portable
    }
}

/// One block of prices `p` and sizes `s` (whole eights) added to `lanes` by `build`, asking
/// for the lines of `next` (the next blocks' codes) meanwhile.
fn add_block(build: Build, lanes: &mut Lanes, p: &Narrow, s: &Narrow, next: Option<[&Codes; 2]>) {
    assert_eq!(p.len(), s.len(), "blocks of one run");
    assert_eq!(p.len() % 8, 0, "whole eights");
    macro_rules! widths {
        ($($pw:ident, $sw:ident);*) => {
            match (p.codes(), s.codes()) {
                $((Codes::$pw(pc), Codes::$sw(sc)) => {
                    let pair = Pair { pc, pb: p.base(), f: p.factors(), sc, sb: s.base() };
                    in_build(build, lanes, &pair, next)
                })*
            }
        };
    }
    widths!(U8, U8; U8, U16; U8, U32; U16, U8; U16, U16; U16, U32; U32, U8; U32, U16; U32, U32);
}

/// A block of prices and sizes as codes: price codes `pc` from base `pb`, read with the
/// factors `f`, and size codes `sc` from base `sb`.
struct Pair<'a, P, S> {
    pc: &'a [P],
    pb: i32,
    f: (f64, f64),
    sc: &'a [S],
    sb: i32,
}

/// [`eights`] compiled for `build` (which the caller has checked the CPU runs).
fn in_build<P: Code, S: Code>(build: Build, l: &mut Lanes, pair: &Pair<P, S>, next: Option<[&Codes; 2]>) {
    /// `$name`: [`eights`] compiled with the target features `$features`.
    macro_rules! build {
        ($name:ident, $features:literal) => {
            /// # Safety
            /// The CPU must support the features.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = $features)]
            #[allow(unsafe_code)]
            unsafe fn $name<P: Code, S: Code>(l: &mut Lanes, pair: &Pair<P, S>, next: Option<[&Codes; 2]>) {
                eights(l, pair, next)
            }
        };
    }
    build!(avx2, "avx2");
    build!(avx512, "avx512f");
    match build {
        Build::Portable => eights(l, pair, next),
        // SAFETY (both): `build` is one the CPU runs (`Build::best`, or the tests' check).
        #[cfg(target_arch = "x86_64")]
        #[allow(unsafe_code)]
        Build::Avx2 => unsafe { avx2(l, pair, next) },
        #[cfg(target_arch = "x86_64")]
        #[allow(unsafe_code)]
        Build::Avx512 => unsafe { avx512(l, pair, next) },
    }
}

/// Ask for line `i` of a block's codes (nothing past their end).
#[inline(always)]
fn ask(c: &Codes, i: usize) {
    match c {
        Codes::U8(v) => prefetch::at(v, i * 64),
        Codes::U16(v) => prefetch::at(v, i * 32),
        Codes::U32(v) => prefetch::at(v, i * 16),
    }
}

/// The whole eights of the codes added to `lanes`: price `(d * f.0) * f.1` for `d` its base
/// plus its code, size its base plus its code, as [`Narrow::value`] reads them.
#[inline(always)]
fn eights<P: Code, S: Code>(lanes: &mut Lanes, pair: &Pair<P, S>, next: Option<[&Codes; 2]>) {
    let Pair { pc, pb, f: (m, d), sc, sb } = *pair;
    let (mut num, mut den) = (lanes.num, lanes.den);
    for (i, (x, y)) in pc.chunks_exact(8).zip(sc.chunks_exact(8)).enumerate() {
        // A line of each of the next blocks a chunk, from their starts (a block of 256 chunks
        // is at most 128 lines).
        if let Some([np, ns]) = next {
            ask(np, i);
            ask(ns, i);
        }
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

    /// Shared columns (as a table's are when read) of `n` rows: two-decimal prices and sizes
    /// up to `size`, with `bad` rows that have no narrow form (a long decimal price at even
    /// ones, a size past i32 at odd ones).
    fn columns(rng: &mut XorShift, n: usize, size: u64, bad: &[usize]) -> (Buf<f64>, Buf<i64>) {
        let mut p: Vec<f64> = (0..n).map(|_| (30_000 + rng.below(size.min(60_000)) as i64) as f64 / 100.0).collect();
        let mut s: Vec<i64> = (0..n).map(|_| 1 + rng.below(size) as i64).collect();
        for &i in bad.iter().filter(|&&i| i < n) {
            match i % 2 {
                0 => p[i] = std::f64::consts::PI,
                _ => s[i] = 1 << 40,
            }
        }
        let (mut p, mut s): (Buf<f64>, Buf<i64>) = (p.into(), s.into());
        p.share();
        s.share();
        (p, s)
    }

    /// Every run of whole columns and of views of them (offsets of either residue modulo 8):
    /// where the narrow blocks answer, the bits of the lanes over the values, whatever blocks
    /// have no narrow form; and they answer exactly when the run covers a whole block its
    /// lanes do not cut.
    #[test]
    fn narrow_runs_give_the_bits_of_the_values() {
        let mut rng = XorShift::new(0xb10c_5eed);
        let mut answered = 0;
        for round in 0..800 {
            let n = [BLOCK - 1, BLOCK, 3 * BLOCK + 5, 5 * BLOCK + 8][round % 4];
            let size = [200, 4_500, 70_000, 5_000_000_000][(round / 4) % 4];
            let bad: Vec<usize> = (0..round % 3).map(|_| rng.below(n as u64) as usize).collect();
            let (p, s) = columns(&mut rng, n, size, &bad);
            // A view from `o` (as a time range cuts a partition), or the whole column.
            let o = [0, 8 * rng.below(300) as usize, rng.below(3000) as usize][(round / 16) % 3].min(n);
            let (p, s) = (p.view(o, n - o), s.view(o, n - o));
            let len = n - o;
            let a = rng.below(len as u64 / 2 + 1) as usize;
            let a = if round % 3 != 0 { a / 8 * 8 } else { a };
            let b = a + rng.below((len - a) as u64 + 1) as usize;
            let (pv, sv) = (&p[a..b], &s[a..b]);
            let got = run_dot(&p, &s, a..b);
            let (rows, blocks) = p.whole_blocks_of(a..b);
            let covered = !blocks.is_empty() && (rows.start - a).is_multiple_of(8);
            assert_eq!(got.is_some(), covered, "round {round}: {a}..{b} from {o}");
            if let Some((num, den, top)) = got {
                answered += 1;
                let want = lane_dot(pv, sv);
                assert_eq!((num.to_bits(), den.to_bits()), (want.0.to_bits(), want.1.to_bits()), "round {round}");
                let max = sv.iter().map(|x| x.unsigned_abs()).max().unwrap_or(0) as f64;
                assert_eq!(top, max, "round {round}: the largest size");
                if let Some((n2, total)) = lane_dot_total_i64(pv, sv) {
                    assert_eq!((n2.to_bits(), total), (num.to_bits(), den as i128), "round {round}");
                }
            }
        }
        assert!(answered > 40, "{answered} runs answered");
    }

    /// Every build of the block kernel this CPU runs gives the portable build's bits, for
    /// every pair of code widths.
    #[test]
    fn every_build_gives_the_portable_bits() {
        let mut rng = XorShift::new(0x7715_b175);
        let builds = [Build::Portable, Build::best()];
        #[cfg(target_arch = "x86_64")]
        let builds = [
            builds[0],
            builds[1],
            if std::arch::is_x86_feature_detected!("avx2") { Build::Avx2 } else { Build::Portable },
        ];
        let mut widths = std::collections::HashSet::new();
        for (pr, sr) in [200, 50_000, 9_000_000].into_iter().flat_map(|p| [9, 4_000, 300_000].map(|s| (p, s))) {
            let p: Vec<f64> = (0..BLOCK).map(|_| (100_000 + rng.below(pr) as i64) as f64 / 100.0).collect();
            let s: Vec<i64> = (0..BLOCK).map(|_| rng.below(sr) as i64 - 5).collect();
            let (pn, sn) = (f64::narrow(&p).expect("cents"), i64::narrow(&s).expect("small sizes"));
            let width = |c: &Codes| match c {
                Codes::U8(_) => 1,
                Codes::U16(_) => 2,
                Codes::U32(_) => 4,
            };
            widths.insert((width(pn.codes()), width(sn.codes())));
            let start = Lanes { num: [0.5; 8], den: [-3.0; 8] };
            let bits = |l: Lanes| (l.num.map(f64::to_bits), l.den.map(f64::to_bits));
            let mut portable = start;
            add_block(Build::Portable, &mut portable, &pn, &sn, None);
            for build in builds {
                let mut l = start;
                add_block(build, &mut l, &pn, &sn, Some([sn.codes(), pn.codes()]));
                assert_eq!(bits(l), bits(portable), "{build:?}, ranges {pr}, {sr}");
            }
        }
        assert_eq!(widths.len(), 9, "every pair of widths");
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
