//! The exact `k` nearest among an index search's candidate rows of one partition.
//!
//! Why: a partition's candidates can be many (every row a filter keeps when the planner scans
//! them exactly, the rows a graph does not hold yet, or a whole partition whose graph is still
//! being built). Copying all of them, vectors included, only for the TopN to keep `k` costs
//! more than ranking them where they lie: one pass over the column computes each row's exact
//! distance (the SQL function's own arithmetic), and only the `k` best rows, plus every row
//! tied with the k-th, go on. The TopN then sees the same nearest rows it would have seen
//! among all the candidates, in the same order.

use super::Batch;
use crate::plan::AnnSearch;
use zepto_storage::ColumnData;

/// Rows per piece when distances are computed on every core.
const PAR_ROWS: usize = 4096;

/// From this many floats (rows × dimension) the distances are computed on every core.
const PAR_FLOATS: usize = 1 << 21;

/// Of `rows` (positions in `b`, ascending), those whose exact distance to the query is among
/// the `k` best, with every row tied with the k-th; ascending. NULL vectors sort last (the
/// planner only chooses an index for NULLS LAST), so they go on only when fewer than `k` rows
/// have a vector. The rows unchanged when there are at most `k`, or when a distance is NaN
/// (the TopN then orders them all itself).
pub fn nearest(b: &Batch, a: &AnnSearch, rows: Vec<u32>) -> Vec<u32> {
    let Some(col) = b.columns.get(a.column) else { return rows };
    let ColumnData::Vector { dim, values } = col.data() else { return rows };
    if rows.len() <= a.k || a.k == 0 {
        return rows;
    }
    let d = *dim as usize;
    let validity = col.validity();
    let score = |r: u32| -> f64 {
        let r = r as usize;
        if validity.is_some_and(|v| !v.get(r)) {
            return f64::INFINITY;
        }
        let x = values.get(r * d..(r + 1) * d).map_or(f64::NAN, |v| a.distance.eval(v, &a.query));
        if a.desc {
            -x
        } else {
            x
        }
    };
    let scores: Vec<f64> = if rows.len().saturating_mul(d) < PAR_FLOATS {
        rows.iter().map(|&r| score(r)).collect()
    } else {
        let pieces: Vec<&[u32]> = rows.chunks(PAR_ROWS).collect();
        zepto_storage::par::map(&pieces, |p| p.iter().map(|&r| score(r)).collect::<Vec<_>>()).concat()
    };
    if scores.iter().any(|s| s.is_nan()) {
        return rows;
    }
    let mut sorted = scores.clone();
    let (_, &mut kth, _) = sorted.select_nth_unstable_by(a.k - 1, f64::total_cmp);
    rows.into_iter().zip(scores).filter(|&(_, s)| s <= kth).map(|(r, _)| r).collect()
}
