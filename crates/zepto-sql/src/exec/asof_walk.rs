//! An ASOF JOIN's conditions between the two sides beyond its keys and its one inequality
//! (`l.price + r.bid > 300`, an `OR`, `l.ts - r.ts < INTERVAL '1 hour'`). DuckDB takes them as
//! part of the match, not as a filter after it: a left row meets the nearest right row of its
//! key that satisfies the inequality, the tolerance *and* them.
//!
//! The search (or the partition merge) first finds each left row's nearest candidate. From
//! there each row walks away from its own time through its key's right rows, in rounds: every
//! round evaluates the condition once, vectorized, over the pairs of all rows still walking,
//! a window of them per row, and a row stops at its first pair that holds. Windows double each
//! round (a row that finds no match costs O(log n) rounds, not n), and a round holds at most
//! [`ROUND_PAIRS`] pairs. The work is the pairs tried: near the candidate when the condition
//! is often true, up to a key's whole history when it never is (as DuckDB's nested loop).

use super::eval::eval;
use super::{Batch, ExecContext};
use crate::error::Result;
use crate::expr::BExpr;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, ColumnData, DataType};

/// The most pairs one round evaluates (bounds the round's gathered columns).
const ROUND_PAIRS: usize = 1 << 20;

/// One left row's walk through positions `from ..= last` of its key's right rows (towards
/// earlier times when `from >= last` and the walk is backward, later ones otherwise). The
/// positions are right rows, or indices into a sequence of them (a search's buckets).
#[derive(Debug, Clone, Copy)]
pub(super) struct Walk {
    left: u32,
    from: u32,
    last: u32,
}

impl Walk {
    /// Left row `left`'s walk from its candidate at `from` to `last`, both inclusive and in
    /// the walk's direction (checked: `from >= last` backward, `from <= last` forward).
    pub fn new(left: u32, from: u32, last: u32, backward: bool) -> Walk {
        assert!(if backward { from >= last } else { from <= last }, "a walk runs from its candidate away from it");
        Walk { left, from, last }
    }

    fn len(&self) -> usize {
        self.from.abs_diff(self.last) as usize + 1
    }
}

/// Each walk's left row's match: `out[left]` becomes the first right row on its walk (where
/// `seq` maps positions to right rows; `None`: positions are rows) whose pair with it
/// satisfies `residual` (over `[left..., right...]`), and `NULL_INDEX` when none does.
pub(super) fn walk(
    ctx: &ExecContext,
    residual: &BExpr,
    (l, r): (&Batch, &Batch),
    seq: Option<&[u32]>,
    backward: bool,
    walks: Vec<Walk>,
    out: &mut [u32],
) -> Result<()> {
    let read = columns_read(residual, l.columns.len() + r.columns.len());
    let mut active = walks;
    let mut width = 1usize;
    while !active.is_empty() {
        let width_now = width.min((ROUND_PAIRS / active.len()).max(1));
        let (mut li, mut ri, mut spans) = (Vec::new(), Vec::new(), Vec::with_capacity(active.len()));
        for w in &active {
            let n = w.len().min(width_now);
            spans.push(li.len()..li.len() + n);
            for k in 0..n as u32 {
                let p = if backward { w.from - k } else { w.from + k };
                li.push(w.left);
                ri.push(seq.map_or(p, |s| s[p as usize]));
            }
        }
        let hits = holds(ctx, residual, &read, (l, r), &li, &ri)?;
        let mut next = Vec::new();
        for (w, span) in active.into_iter().zip(spans) {
            let n = span.len();
            match hits[span.clone()].iter().position(|&h| h) {
                Some(k) => out[w.left as usize] = ri[span.start + k],
                None if n < w.len() => {
                    let from = if backward { w.from - n as u32 } else { w.from + n as u32 };
                    next.push(Walk { from, ..w });
                }
                None => out[w.left as usize] = NULL_INDEX,
            }
        }
        active = next;
        width = width.saturating_mul(2);
    }
    Ok(())
}

/// Which of the `width` columns of `[left..., right...]` `residual` reads.
fn columns_read(residual: &BExpr, width: usize) -> Vec<bool> {
    let mut read = vec![false; width];
    residual.for_each_col(&mut |i| {
        if let Some(x) = read.get_mut(i) {
            *x = true;
        }
    });
    read
}

/// Whether `residual` holds (TRUE, not NULL) for each pair of left row `li[k]` and right row
/// `ri[k]`. Only the columns it reads (`read`) are gathered.
fn holds(
    ctx: &ExecContext,
    residual: &BExpr,
    read: &[bool],
    (l, r): (&Batch, &Batch),
    li: &[u32],
    ri: &[u32],
) -> Result<Vec<bool>> {
    let (nl, n) = (l.columns.len(), li.len());
    let cols = read
        .iter()
        .enumerate()
        .map(|(j, &used)| match (used, l.columns.get(j)) {
            (false, _) => Column::nulls(DataType::Null, n),
            (true, Some(c)) => c.take(li),
            (true, None) => r.columns[j - nl].take(ri),
        })
        .collect();
    let pairs = Batch::new(cols, n);
    let mask = eval(ctx, residual, &pairs)?;
    let ColumnData::Bool(v) = mask.data() else {
        return Err(crate::error::SqlError::Internal("an ASOF condition that is not BOOLEAN".into()));
    };
    Ok((0..n).map(|k| v[k] && mask.is_valid(k)).collect())
}
