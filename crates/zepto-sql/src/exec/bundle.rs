//! Small partitions together. Partition-wise operators (GROUP BY and window functions that
//! include the partition key) work a piece at a time, and a piece's batch, its operator state
//! and its output batch cost the same whatever its rows. With 100k symbols a partition holds
//! a few rows, so neighbouring small pieces are gathered into bundles and each bundle runs as
//! one batch: the operator's output is the same, since no group or window partition spans
//! two table partitions and the rows keep scan order.

use super::scan::{filtered_piece, pieces_batch, Piece};
use super::{Batch, ExecContext};
use crate::error::Result;
use crate::plan::physical::ScanShape;
use std::sync::Arc;
use zepto_storage::table::PACK_ROWS;
use zepto_storage::Column;

/// A piece with fewer rows than this runs together with its small neighbours.
const SMALL_PIECE: usize = 4096;

/// Rows a bundle of small pieces gathers before the next starts: enough to share the cost of
/// a batch, few enough to keep every core busy.
const BUNDLE_ROWS: usize = 16 * 1024;

/// Rows a scan's output batch of small pieces gathers ([`output_runs`]): fewer, larger batches
/// for the doors to send (an Arrow message each), and a copy of at most this many rows.
const OUTPUT_ROWS: usize = 64 * 1024;

/// The pieces cut into runs of neighbours: a piece of [`SMALL_PIECE`] rows or more alone, and
/// consecutive smaller ones together up to [`BUNDLE_ROWS`] rows. Scan order is kept.
pub fn bundles<'p, 'a>(ps: &'p [Piece<'a>]) -> Vec<&'p [Piece<'a>]> {
    cut(ps, |p| p.range.len(), |p| p.range.len() >= SMALL_PIECE, BUNDLE_ROWS)
}

/// One output batch of a scan ([`output_runs`]).
pub enum OutputRun<'p, 'a> {
    /// Pieces to gather into one batch (or one piece to share, see [`output_runs`]).
    Pieces(&'p [Piece<'a>]),
    /// Every row of a pack, in its columns as they are.
    Pack(&'a [Arc<Column>]),
}

/// [`bundles`] for a scan's output batches: runs of small pieces up to [`OUTPUT_ROWS`] rows.
/// A scan over 100k symbols handed out a batch per partition, a hundred thousand batches of ten
/// rows (and an allocation per column of each) for the doors to join again. A whole loose
/// partition too large to be packed stays alone: its columns are shared, not copied (the
/// Python package hands them out without a copy). So does a whole pack, when the scan reads
/// every partition of it whole (a bulk-loaded table of many symbols): it is handed out where
/// its first partition comes, and the large loose partitions between its partitions after it.
pub fn output_runs<'p, 'a>(ps: &'p [Piece<'a>]) -> Vec<OutputRun<'p, 'a>> {
    let mut out = Vec::new();
    let (mut from, mut i) = (0, 0);
    while i < ps.len() {
        let Some(pack) = whole_pack_at(&ps[i..]) else {
            i += 1;
            continue;
        };
        out.extend(cut(&ps[from..i], |p| p.range.len(), shared_alone, OUTPUT_ROWS).into_iter().map(OutputRun::Pieces));
        out.push(OutputRun::Pack(pack.cols));
        out.extend(pack.loose.iter().map(|&k| OutputRun::Pieces(&ps[i + k..=i + k])));
        i += pack.pieces;
        from = i;
    }
    out.extend(cut(&ps[from..], |p| p.range.len(), shared_alone, OUTPUT_ROWS).into_iter().map(OutputRun::Pieces));
    out
}

/// A piece shared as its own output batch: a large one, or a whole loose partition too large
/// to be packed.
fn shared_alone(p: &Piece) -> bool {
    p.range.len() >= SMALL_PIECE || (p.is_whole() && !p.part.is_packed() && p.range.len() >= PACK_ROWS)
}

/// A pack a scan reads whole ([`whole_pack_at`]).
struct WholePack<'a> {
    cols: &'a [Arc<Column>],
    /// Pieces from the pack's first partition to its last.
    pieces: usize,
    /// Of those, the loose partitions between the pack's (large, and whole).
    loose: Vec<usize>,
}

/// When `ps` starts with the first partition of a pack and goes on with every other partition
/// of it, each whole and in the pack's order, with only whole loose partitions too large to be
/// packed between them: that pack.
fn whole_pack_at<'a>(ps: &[Piece<'a>]) -> Option<WholePack<'a>> {
    let (cols, 0) = ps.first()?.part.pack()? else { return None };
    let rows = cols.first()?.len();
    let (mut next, mut loose) = (0, Vec::new());
    for (k, p) in ps.iter().enumerate() {
        match p.part.pack() {
            Some((c, start)) if std::ptr::eq(c, cols) && start == next && p.is_whole() => next += p.part.len(),
            None if p.is_whole() && p.range.len() >= PACK_ROWS => loose.push(k),
            _ => return None,
        }
        if next == rows {
            return Some(WholePack { cols, pieces: k + 1, loose });
        }
    }
    None
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

/// A bundle's rows of the scan's columns, one piece after another, that pass its filters. A
/// single piece is shared as [`filtered_piece`] reads it; several are copied once per column,
/// then filtered: a filter looks at one row at a time, so it keeps the rows it would keep piece
/// by piece.
pub fn filtered_bundle(ctx: &ExecContext, shape: &ScanShape, bundle: &[Piece]) -> Result<Batch> {
    if let [p] = bundle {
        return filtered_piece(ctx, shape, p);
    }
    let ps: Vec<&Piece> = bundle.iter().collect();
    shape.apply_filter(ctx, pieces_batch(shape.table, shape.columns, &ps)?)
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
