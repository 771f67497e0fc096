//! Small partitions together. Partition-wise operators (GROUP BY and window functions that
//! include the partition key) work a piece at a time, and a piece's batch, its operator state
//! and its output batch cost the same whatever its rows. With 100k symbols a partition holds
//! a few rows, so neighbouring small pieces are gathered into bundles and each bundle runs as
//! one batch: the operator's output is the same, since no group or window partition spans
//! two table partitions and the rows keep scan order. A scan of every row reads a whole pack
//! (a run of small partitions whose rows share columns) as one unit, its columns shared: a
//! bundle made without a copy, or a visit of each partition.

use super::scan::{filtered_piece, pieces_batch, ScanPart, Unit};
use super::{Batch, ExecContext};
use crate::error::Result;
use crate::plan::physical::ScanShape;
use zepto_storage::table::PACK_ROWS;

/// A piece with fewer rows than this runs together with its small neighbours.
const SMALL_PIECE: usize = 4096;

/// Rows a bundle of small pieces gathers before the next starts: enough to share the cost of
/// a batch, few enough to keep every core busy.
const BUNDLE_ROWS: usize = 16 * 1024;

/// Rows a scan's output batch of small pieces gathers ([`output_runs`]): fewer, larger batches
/// for the doors to send (an Arrow message each), and a copy of at most this many rows.
const OUTPUT_ROWS: usize = 64 * 1024;

/// The pieces (or units) cut into runs of neighbours: each that runs alone ([`alone`]) by
/// itself, and consecutive others together up to [`BUNDLE_ROWS`] rows. Scan order is kept.
pub fn bundles<S: ScanPart>(ps: &[S]) -> Vec<&[S]> {
    cut(ps, S::rows, alone, BUNDLE_ROWS)
}

/// [`bundles`] for a scan's output batches: runs of small units up to [`OUTPUT_ROWS`] rows.
/// A scan over 100k symbols handed out a batch per partition, a hundred thousand batches of ten
/// rows (and an allocation per column of each) for the doors to join again. A whole loose
/// partition too large to be packed stays alone: its columns are shared, not copied (the
/// Python package hands them out without a copy). So does a whole pack (a scan of every row
/// of a bulk-loaded table of many symbols reads its packs so).
pub fn output_runs<'p, 'a>(us: &'p [Unit<'a>]) -> Vec<&'p [Unit<'a>]> {
    cut(us, Unit::rows, alone, OUTPUT_ROWS)
}

/// Neighbouring items (`len(item)` rows each) in about `k` runs of equal rows, in order: a
/// few runs per core, so that a core works through neighbours and the pool still balances.
pub fn runs_of_rows<T>(items: &[T], len: impl Fn(&T) -> usize, k: usize) -> Vec<&[T]> {
    let total: usize = items.iter().map(&len).sum();
    cut(items, len, |_| false, total.div_ceil(k.max(1)).max(1))
}

/// A piece or unit that runs (or leaves a scan) as a batch of its own: a large one, or one
/// whose columns are shared as they are (a whole pack, or a whole loose partition, too large
/// to be packed), so that it is never copied into a bundle.
fn alone<S: ScanPart>(u: &S) -> bool {
    u.rows() >= SMALL_PIECE || (u.is_shared_whole() && u.rows() >= PACK_ROWS)
}

/// The items cut into runs (`len(item)` rows each): an item for which `alone` holds by itself,
/// and consecutive others together until they reach `limit` rows.
fn cut<T>(ps: &[T], len: impl Fn(&T) -> usize, alone: impl Fn(&T) -> bool, limit: usize) -> Vec<&[T]> {
    let mut out = Vec::new();
    let (mut from, mut rows) = (0, 0);
    for (i, p) in ps.iter().enumerate() {
        let n = len(p);
        if alone(p) {
            if from < i {
                out.push(&ps[from..i]);
            }
            out.push(&ps[i..=i]);
            (from, rows) = (i + 1, 0);
            continue;
        }
        rows += n;
        if rows >= limit {
            out.push(&ps[from..=i]);
            (from, rows) = (i + 1, 0);
        }
    }
    if from < ps.len() {
        out.push(&ps[from..]);
    }
    debug_assert_eq!(out.iter().map(|b| b.len()).sum::<usize>(), ps.len());
    out
}

/// A bundle's rows of the scan's columns, one unit after another, that pass its filters. A
/// single unit is shared as it is read ([`filtered_piece`] for a piece); several are copied
/// once per column, then filtered: a filter looks at one row at a time, so it keeps the rows it
/// would keep unit by unit.
pub fn filtered_bundle(ctx: &ExecContext, shape: &ScanShape, bundle: &[Unit]) -> Result<Batch> {
    match bundle {
        [Unit::Piece(p)] => filtered_piece(ctx, shape, p),
        _ => {
            let us: Vec<&Unit> = bundle.iter().collect();
            shape.apply_filter(ctx, pieces_batch(shape.table, shape.columns, &us)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_keep_order_and_cover_every_piece_once() {
        let lens = [10, 20, SMALL_PIECE, 5, 3000, 3000, 3000, 3000, 3000, 3000, 3000, 1, 9000, 2];
        let got: Vec<Vec<usize>> =
            cut(&lens, |&n| n, |&n| n >= SMALL_PIECE, BUNDLE_ROWS).into_iter().map(<[usize]>::to_vec).collect();
        assert_eq!(got.concat(), lens.to_vec());
        assert!(got.iter().all(|b| b.len() == 1 || b.iter().all(|&n| n < SMALL_PIECE)));
        assert!(got.iter().all(|b| b.iter().sum::<usize>() < BUNDLE_ROWS + SMALL_PIECE));
        assert_eq!(got[0], vec![10, 20]);
        assert_eq!(got[1], vec![SMALL_PIECE]);
        // 5 + 6 * 3000 reaches BUNDLE_ROWS at the sixth 3000.
        assert_eq!(got[2], vec![5, 3000, 3000, 3000, 3000, 3000, 3000]);
        assert_eq!(got[3..], [vec![3000, 1], vec![9000], vec![2]]);
        assert!(cut(&[] as &[usize], |&n| n, |_| false, BUNDLE_ROWS).is_empty());
        let out: Vec<usize> = cut(&[10; 20_000], |&n| n, |_| false, OUTPUT_ROWS).iter().map(|r| r.len()).collect();
        assert_eq!(
            out,
            [
                OUTPUT_ROWS.div_ceil(10),
                OUTPUT_ROWS.div_ceil(10),
                OUTPUT_ROWS.div_ceil(10),
                20_000 - 3 * OUTPUT_ROWS.div_ceil(10)
            ]
        );
    }
}
