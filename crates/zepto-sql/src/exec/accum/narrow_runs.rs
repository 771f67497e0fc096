//! Long bars read from the narrow forms of their blocks (`zepto_storage::narrow`): the high,
//! low and volume of runs of a few hundred rows (1-minute bars of 10M trades) from one- and
//! two-byte codes instead of eight-byte values.
//!
//! Bars that long are bound by the bytes they read: at 10M rows Q3b ran at the time NumPy takes
//! to stream its three columns (`bench/memory_floor.py`), so reading a quarter of the bytes is
//! what is left. Short runs keep the value kernels (`run_extremes.rs`, `run_sums.rs`): per run
//! they cost less, and at 1M rows the columns stay in the cache (stop 115 read every run's
//! codes and was slower there).
//!
//! A run is cut where the blocks are: each piece inside a block with a narrow form reads its
//! codes, any other piece (a block with no narrow form, the partition's last rows past its last
//! whole block) its values, through the value kernels' chunks. A column whose probed block has
//! no narrow form (doubles that are not short decimals, integers past i32) keeps the value
//! kernels for all its runs. A narrow block holds no NaN, infinity or `-0.0` and its values
//! grow with their codes, so a piece's least and greatest codes give its extremes; the pieces'
//! extremes then combine as the value kernels rank them (NaN the largest double; of two NaNs
//! with different bits, the one kept follows row order, not the value kernels' lanes). Both
//! sides are made even where one is asked for: the codes give both in one pass. Integer sums
//! are exact: codes add in u64, plus the base times the rows.

use super::run_extremes::{pick_nan_largest, slice_extremes};
use super::run_sums::slice_sum_i64;
use super::runs;
use zepto_storage::buf::Buf;
use zepto_storage::narrow::{Codes, Narrow, Narrowable};
use zepto_storage::summary::BLOCK;
use zepto_storage::{Column, ColumnData};

/// Runs averaging at least this many rows read the narrow blocks.
const NARROW_RUN: usize = 128;

/// Whether `x`'s runs go through the narrow blocks: no NULL, a shared column (whose blocks
/// keep their narrow forms), long runs on average, and a narrow form for the block holding row
/// [`BLOCK`] (the first whole one, unless the values are a view starting inside a block),
/// which stands for the column's kind of values.
fn long<T: Narrowable>(x: &Column, b: &Buf<T>, starts: &[u32], n: usize) -> bool {
    let long = x.validity().is_none() && b.is_shared() && !starts.is_empty() && n / starts.len() >= NARROW_RUN;
    long && n > 0 && b.block_at(BLOCK.min(n - 1)).1.is_some()
}

/// Each run's least and greatest value of a DOUBLE column (`runs` over `starts`, the first `n`
/// rows), NaN the largest double, where [`long`] says the narrow blocks apply; `None` otherwise.
pub fn float_extremes(x: &Column, starts: &[u32], n: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let ColumnData::Float64(b) = x.data() else { return None };
    if !long(x, b, starts, n) {
        return None;
    }
    let (v, mut lo, mut hi) = (b.as_slice(), Vec::with_capacity(starts.len()), Vec::with_capacity(starts.len()));
    for (s, e) in runs(starts, n) {
        let (mut a, mut z) = (v[s], v[s]);
        let mut add = |l: f64, h: f64| {
            a = pick_nan_largest::<true>(a, l);
            z = pick_nan_largest::<false>(z, h);
        };
        pieces(b, s, e, |r, narrow| match narrow {
            Some((nb, at)) => {
                let (l, h) = code_extremes(nb.codes(), at..at + r.len());
                add(nb.value_of(l), nb.value_of(h));
            }
            None => {
                let (l, h) = slice_extremes(&v[r]);
                add(l, h);
            }
        });
        lo.push(a);
        hi.push(z);
    }
    Some((lo, hi))
}

/// Each run's exact sum of a BIGINT (or TIMESTAMP, INTERVAL) column where [`long`] says the
/// narrow blocks apply; `None` otherwise.
pub fn int_sums(x: &Column, starts: &[u32], n: usize) -> Option<Vec<i128>> {
    let (ColumnData::Int64(b) | ColumnData::Timestamp(b) | ColumnData::Interval(b)) = x.data() else { return None };
    if !long(x, b, starts, n) {
        return None;
    }
    let v = b.as_slice();
    let sum = |(s, e): (usize, usize)| {
        let mut t = 0i128;
        pieces(b, s, e, |r, narrow| match narrow {
            Some((nb, at)) => {
                let rows = r.len() as i128;
                t += i128::from(code_sum(nb.codes(), at..at + r.len())) + rows * i128::from(nb.base());
            }
            None => t += slice_sum_i64(&v[r]),
        });
        t
    };
    Some(runs(starts, n).map(sum).collect())
}

/// Rows `s..e` of `b` cut at its blocks: `each(rows, Some((narrow form, first code)))` for a
/// piece inside a block with a narrow form, `each(rows, None)` for any other.
#[inline(always)]
fn pieces<'a, T: Narrowable>(
    b: &'a Buf<T>,
    s: usize,
    e: usize,
    mut each: impl FnMut(std::ops::Range<usize>, Option<(&'a Narrow, usize)>),
) {
    let mut p = s;
    while p < e {
        let (block, narrow) = b.block_at(p);
        let q = block.end.min(e);
        debug_assert!(block.start <= p && p < q, "row {p} in its block {block:?}");
        each(p..q, narrow.map(|nb| (nb, p - block.start)));
        p = q;
    }
}

/// The least and greatest code of `r`'s rows (not empty).
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn code_extremes(c: &Codes, r: std::ops::Range<usize>) -> (u32, u32) {
    #[inline(always)]
    fn both<T: Copy + Ord + Into<u32>>(c: &[T]) -> (u32, u32) {
        let (lo, hi) = c.iter().fold((c[0], c[0]), |(a, z), &x| (a.min(x), z.max(x)));
        (lo.into(), hi.into())
    }
    match c {
        Codes::U8(c) => both(&c[r]),
        Codes::U16(c) => both(&c[r]),
        Codes::U32(c) => both(&c[r]),
    }
}

/// The sum of `r`'s codes (at most a block's: under 2^43).
#[multiversion::multiversion(targets("x86_64+avx2"))]
fn code_sum(c: &Codes, r: std::ops::Range<usize>) -> u64 {
    match c {
        Codes::U8(c) => c[r].iter().map(|&x| u64::from(x)).sum(),
        Codes::U16(c) => c[r].iter().map(|&x| u64::from(x)).sum(),
        Codes::U32(c) => c[r].iter().map(|&x| u64::from(x)).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::run_extremes::run_extremes;
    use super::super::run_sums::run_sums_i64;
    use super::*;
    use zepto_storage::rng::XorShift;

    /// A shared column of `v` (its blocks keep narrow forms).
    fn shared(d: ColumnData) -> Column {
        let mut c = Column::from_data(d);
        c.share();
        c
    }

    /// Runs of 100 to 700 rows over 3 to 6 blocks of two-decimal prices and small sizes, with
    /// blocks that have no narrow form (a NaN, a -0.0, a value of many decimals, a size past
    /// i32) and a partial last block, read whole and as views that start inside a block: the
    /// narrow reading gives the value kernels' extremes (zeros' signs aside) and sums.
    #[test]
    fn long_runs_read_from_narrow_blocks_as_from_values() {
        let mut rng = XorShift::new(0x5eed_0117);
        for round in 0..60 {
            let n = 2048 * (3 + rng.below(3) as usize) + rng.below(2048) as usize;
            // Codes of one, two and four bytes.
            let (cents, most) = [(200, 200), (5000, 3000), (100_000, 1_000_000)][round % 3];
            let mut p: Vec<f64> = (0..n).map(|_| (10_000 + rng.below(cents)) as f64 / 100.0).collect();
            let mut q: Vec<i64> = (0..n).map(|_| 1 + rng.below(most) as i64).collect();
            match round % 5 {
                0 => p[rng.below(n as u64) as usize] = f64::NAN,
                1 => p[rng.below(n as u64) as usize] = -0.0,
                2 => p[rng.below(n as u64) as usize] = 1.0 / 3.0,
                3 => q[rng.below(n as u64) as usize] = i64::MAX / 4,
                _ => {}
            }
            let (pc, qc) = (shared(ColumnData::Float64(p.clone().into())), shared(ColumnData::Int64(q.clone().into())));
            if round % 5 == 4 {
                let (ColumnData::Float64(pb), ColumnData::Int64(qb)) = (pc.data(), qc.data()) else {
                    panic!("a DOUBLE and a BIGINT column")
                };
                let width = |b: Option<&Narrow>| b.map(|b| b.heap_bytes() / b.len());
                let want = Some([1, 2, 4][round % 3]);
                assert_eq!((width(pb.narrow_block(1)), width(qb.narrow_block(1))), (want, want), "round {round}");
            }
            for from in [0, 1 + rng.below(2047) as usize] {
                let (pv, qv) = (pc.slice(from, n - from), qc.slice(from, n - from));
                let m = n - from;
                let mut starts = vec![0u32];
                while let Some(&l) = starts.last() {
                    let next = l as usize + 100 + rng.below(600) as usize;
                    if next >= m {
                        break;
                    }
                    starts.push(next as u32);
                }
                let zero = |x: &[f64]| x.iter().map(|&f| if f == 0.0 { 0 } else { f.to_bits() }).collect::<Vec<_>>();
                // Where the probed block has no narrow form, the value kernels answer.
                let (ColumnData::Float64(pb), ColumnData::Int64(qb)) = (pv.data(), qv.data()) else {
                    panic!("a DOUBLE and a BIGINT column")
                };
                let probe = BLOCK.min(m - 1);
                match float_extremes(&pv, &starts, m) {
                    Some((lo, hi)) => {
                        let (wlo, whi) = run_extremes::<true, true>(&p[from..], &starts, m);
                        assert_eq!((zero(&lo), zero(&hi)), (zero(&wlo), zero(&whi)), "round {round}, from {from}");
                    }
                    None => assert!(pb.block_at(probe).1.is_none(), "round {round}, from {from}: prices read narrow"),
                }
                match int_sums(&qv, &starts, m) {
                    Some(sums) => assert_eq!(sums, run_sums_i64(&q[from..], &starts), "round {round}, from {from}"),
                    None => assert!(qb.block_at(probe).1.is_none(), "round {round}, from {from}: sizes read narrow"),
                }
            }
        }
        // Short runs keep the value kernels.
        let c = shared(ColumnData::Int64((0..4096).collect::<Vec<i64>>().into()));
        assert!(int_sums(&c, &(0..4096).step_by(64).collect::<Vec<u32>>(), 4096).is_none());
    }
}
