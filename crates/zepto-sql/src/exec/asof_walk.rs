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
//!
//! Unless the condition moves one way with each right column it reads (`t.price - q.bid >
//! 0.05`): then, after the first round, walks ask summaries of blocks of right rows whether a
//! block can hold a match, and try the rows only of blocks that can (`asof_bounds.rs`). A row
//! whose key never satisfies the condition then costs a few questions per level of blocks, not
//! its key's history: X3 of the benchmark at 1M rows went from 151 s to 87 ms.

use super::asof_bounds::{summary_test, Blocks, Trends, BLOCK};
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
/// satisfies `residual` (over `[left..., right...]`), and `NULL_INDEX` when none does. The
/// first round tries each candidate alone; walks still on after it pass over blocks of right
/// rows their summaries rule out (`asof_bounds.rs`) where the residual allows, and otherwise
/// go on in doubling windows.
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
    let sides = Sides { ctx, residual, read: &read, l, r, seq, backward };
    let rest = sides.round(walks, 1, out)?;
    let positions = seq.map_or(r.rows, <[u32]>::len);
    let blocks = (!rest.is_empty() && positions > BLOCK)
        .then(|| Trends::of(residual, l.columns.len()))
        .flatten()
        .and_then(|t| Blocks::build(r, seq, positions, &t))
        .map(|b| (b, summary_test(residual)));
    let rest = match blocks {
        Some((b, test)) => skipping(&sides, (&b, &test), rest, out),
        None => rest,
    };
    let (mut active, mut width) = (rest, 2usize);
    while !active.is_empty() {
        active = sides.round(active, width, out)?;
        width = width.saturating_mul(2);
    }
    Ok(())
}

/// What every round of a walk reads.
struct Sides<'a> {
    ctx: &'a ExecContext,
    residual: &'a BExpr,
    read: &'a [bool],
    l: &'a Batch,
    r: &'a Batch,
    seq: Option<&'a [u32]>,
    backward: bool,
}

impl Sides<'_> {
    /// The right row at position `p`.
    fn row(&self, p: u32) -> u32 {
        self.seq.map_or(p, |s| s[p as usize])
    }

    /// Position `k` steps from `from` in the walk's direction.
    fn step(&self, from: u32, k: u32) -> u32 {
        if self.backward {
            from - k
        } else {
            from + k
        }
    }

    /// The first `n` positions of each `(walk, n)`, their pairs evaluated at once.
    fn try_rows(&self, walks: impl Iterator<Item = (Walk, usize)>) -> Result<Tried> {
        let (mut li, mut ri, mut spans) = (Vec::new(), Vec::new(), Vec::new());
        for (w, n) in walks {
            spans.push(li.len()..li.len() + n);
            for k in 0..n as u32 {
                li.push(w.left);
                ri.push(self.row(self.step(w.from, k)));
            }
        }
        let hits = holds(self.ctx, self.residual, self.read, (self.l, self.r), &li, &ri)?;
        Ok(Tried { ri, spans, hits })
    }

    /// One round of plain walking: up to `width` positions of each walk (fewer when the round
    /// would pass [`ROUND_PAIRS`] pairs), their matches set in `out`; the walks left to go on.
    fn round(&self, active: Vec<Walk>, width: usize, out: &mut [u32]) -> Result<Vec<Walk>> {
        let width = width.min((ROUND_PAIRS / active.len().max(1)).max(1));
        let Tried { ri, spans, hits } = self.try_rows(active.iter().map(|w| (*w, w.len().min(width))))?;
        let mut next = Vec::new();
        for (w, span) in active.into_iter().zip(spans) {
            let n = span.len();
            match hits[span.clone()].iter().position(|&h| h) {
                Some(k) => out[w.left as usize] = ri[span.start + k],
                None if n < w.len() => next.push(Walk { from: self.step(w.from, n as u32), ..w }),
                None => out[w.left as usize] = NULL_INDEX,
            }
        }
        Ok(next)
    }
}

/// Pairs tried at once: their right rows, each walk's span of them, and whether each holds.
struct Tried {
    ri: Vec<u32>,
    spans: Vec<std::ops::Range<usize>>,
    hits: Vec<bool>,
}

/// A walk over summaries: its next position (`walk.from`), the level of the block to ask
/// about next (`None`: try the rows of its level-0 block), and how many blocks in a row it
/// tried in vain.
#[derive(Debug, Clone, Copy)]
struct Skip {
    walk: Walk,
    level: Option<usize>,
    vain: u8,
}

/// Blocks in a row a walk may try in vain before it goes on plainly: summaries that cannot
/// rule blocks out (a NaN in the left row's own values makes every block worth trying) would
/// otherwise cost two rounds per 32 rows, where doubling windows cost one per doubling.
const VAIN_BLOCKS: u8 = 4;

/// The walks `walks` on over `blocks` until each finds its match or its end (set in `out`),
/// at most [`ROUND_PAIRS`] pairs a round. A round asks each walk's block, or tries the rows of
/// a block its summary could not rule out; a block ruled out is passed over and the next
/// question is about the block a level up. `test` is what a summary row is asked
/// ([`summary_test`]). Walks whose round fails (an overflow of integer extremes, or an error in
/// a row past the match that a plain walk might not reach) come back to be walked plainly,
/// from where they stand.
fn skipping(s: &Sides, (blocks, test): (&Blocks, &BExpr), walks: Vec<Walk>, out: &mut [u32]) -> Vec<Walk> {
    let mut plain = Vec::new();
    for chunk in walks.chunks(ROUND_PAIRS / BLOCK) {
        let mut active: Vec<Skip> = chunk.iter().map(|&walk| Skip { walk, level: Some(0), vain: 0 }).collect();
        while !active.is_empty() {
            let (li, ri): (Vec<u32>, Vec<u32>) = active
                .iter()
                .filter_map(|k| k.level.map(|lv| (k.walk.left, blocks.row(lv, k.walk.from as usize).0 as u32)))
                .unzip();
            let may = holds(s.ctx, test, s.read, (s.l, &blocks.summary), &li, &ri);
            match may.and_then(|may| step_all(s, blocks, &active, &may, (out, &mut plain))) {
                Ok(next) => active = next,
                Err(_) => {
                    plain.extend(active.iter().map(|k| k.walk));
                    break;
                }
            }
        }
    }
    plain
}

/// One round of [`skipping`]: `may[i]` answers the `i`-th walk asked about a block; walks that
/// tried [`VAIN_BLOCKS`] blocks in vain go to `plain`. Changes nothing when it fails.
fn step_all(
    s: &Sides,
    blocks: &Blocks,
    active: &[Skip],
    may: &[bool],
    (out, plain): (&mut [u32], &mut Vec<Walk>),
) -> Result<Vec<Skip>> {
    // The rows of the level-0 block of each walk that tries rows this round, in walk order.
    let to_block_edge = |k: &Skip| {
        let (w, (_, first, last)) = (k.walk, blocks.row(0, k.walk.from as usize));
        let edge = if s.backward { first.max(w.last as usize) } else { last.min(w.last as usize) };
        (w, (w.from as usize).abs_diff(edge) + 1)
    };
    let Tried { ri, spans, hits } = s.try_rows(active.iter().filter(|k| k.level.is_none()).map(to_block_edge))?;
    let (mut asked, mut tried, mut next) = (0, 0, Vec::with_capacity(active.len()));
    for &k in active {
        let w = k.walk;
        let (row, first, last) = blocks.row(k.level.unwrap_or(0), w.from as usize);
        // Ruled out: ask a level up next. Tried in vain: one more such block in a row.
        let (level, vain) = match k.level {
            Some(lv) => {
                asked += 1;
                if may[asked - 1] || blocks.must_visit(row) {
                    next.push(Skip { level: lv.checked_sub(1), ..k });
                    continue;
                }
                (Some((lv + 1).min(blocks.levels() - 1)), 0)
            }
            None => {
                let span = spans[tried].clone();
                tried += 1;
                if let Some(j) = hits[span.clone()].iter().position(|&h| h) {
                    out[w.left as usize] = ri[span.start + j];
                    continue;
                }
                (Some(0), k.vain + 1)
            }
        };
        // Past the block: the walk ends if the block reached its last position.
        let beyond = if s.backward {
            (first > w.last as usize).then(|| first as u32 - 1)
        } else {
            (last < w.last as usize).then(|| last as u32 + 1)
        };
        match beyond {
            Some(from) if vain >= VAIN_BLOCKS => plain.push(Walk { from, ..w }),
            Some(from) => next.push(Skip { walk: Walk { from, ..w }, level, vain }),
            None => out[w.left as usize] = NULL_INDEX,
        }
    }
    Ok(next)
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
    if n == 0 {
        return Ok(Vec::new());
    }
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
