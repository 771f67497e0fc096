//! WINDOW JOIN as a sorted sweep: right rows are bucketed by key (group ids shared with the
//! left side) and ordered by time within each bucket (verified; sorted only if needed); left
//! rows are visited in time order within each key, so each one's window `[t + lo, t + hi]` is
//! a range of bucket positions whose ends only move forward: two cursors per key find them in
//! one linear pass. Two scans of time-sorted tables joined on their partition keys sweep each
//! pair of partitions alone, with the ASOF merge's cursors ([`super::merge_cursor`]). The
//! aggregates then run over those ranges with the window-frame kernels (prefix sums, sliding
//! compensated sums, monotonic deques), never materializing the joined pairs. Memory: the
//! right side's positions and times plus one value per left row and aggregate.

use super::asof::{paired, Paired};
use super::bundle::bundles;
use super::concat_batches;
use super::eval::eval;
use super::hash::{bucket_rows, shared_ids};
use super::merge_cursor::{advance, first_valid, quarters};
use super::scan::Piece;
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::plan::{AggCall, BExpr, Plan};
use std::borrow::Cow;
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, DataType};

/// Equal keys and `right_ts` in `[left_ts + lo, left_ts + hi]`.
pub struct Band<'a> {
    pub left_keys: &'a [BExpr],
    pub right_keys: &'a [BExpr],
    pub left_ts: &'a BExpr,
    pub right_ts: &'a BExpr,
    pub lo: i64,
    pub hi: i64,
}

/// Each left row's window as a range of `order` (right rows by key, then time).
struct Sweep {
    order: Vec<u32>,
    /// Left rows in (key, time) order, rows without a window last; identity if `in_order`.
    lperm: Vec<u32>,
    in_order: bool,
    /// Window of `lperm[k]`: `order[fs[k]..fe[k]]`.
    fs: Vec<u32>,
    fe: Vec<u32>,
}

fn times(c: &Column) -> Result<Cow<'_, [i64]>> {
    Ok(match &c.data() {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => Cow::Borrowed(v),
        ColumnData::Int32(v) | ColumnData::Date(v) => Cow::Owned(v.iter().map(|&x| x as i64).collect()),
        ColumnData::Null(n) => Cow::Owned(vec![0; *n]),
        d => return Err(SqlError::exec(format!("WINDOW JOIN cannot use {} as time", d.data_type()))),
    })
}

fn sweep(ctx: &ExecContext, l: &Batch, r: &Batch, spec: &Band) -> Result<Sweep> {
    let (n, m) = (l.rows, r.rows);
    let lk = spec.left_keys.iter().map(|e| eval(ctx, e, l)).collect::<Result<Vec<_>>>()?;
    let rk = spec.right_keys.iter().map(|e| eval(ctx, e, r)).collect::<Result<Vec<_>>>()?;
    let lt_col = eval(ctx, spec.left_ts, l)?;
    let rt_col = eval(ctx, spec.right_ts, r)?;
    let (lt, rt) = (times(&lt_col)?, times(&rt_col)?);
    let (lid, rid, ng) = {
        let (lr, rr): (Vec<&Column>, Vec<&Column>) =
            (lk.iter().map(|c| &**c).collect(), rk.iter().map(|c| &**c).collect());
        shared_ids(&lr, &rr, n, m)
    };
    let keys_ok = |cols: &[Cow<Column>], i: usize| cols.iter().all(|c| c.is_valid(i));
    // Right positions bucketed by key (counting sort keeps input order), then by time.
    let (start, mut order) = bucket_rows(&rid, |j| rt_col.is_valid(j) && keys_ok(&rk, j), ng);
    for g in 0..ng {
        let b = &mut order[start[g]..start[g + 1]];
        if !b.windows(2).all(|w| rt[w[0] as usize] <= rt[w[1] as usize]) {
            b.sort_by_key(|&j| (rt[j as usize], j));
        }
    }
    let bucket_times: Vec<i64> = order.iter().map(|&j| rt[j as usize]).collect();
    // Left rows are visited in time order within each key (the window ends then only move
    // forward); keys may interleave, the kernels restart on a jump. A scan of a time-sorted
    // table already is in that order; otherwise rows are sorted by (key, time).
    let l_ok: Vec<bool> = (0..n).map(|i| lt_col.is_valid(i) && keys_ok(&lk, i)).collect();
    let mut lperm: Vec<u32> = (0..n as u32).collect();
    let mut last = vec![i64::MIN; ng];
    let in_order = (0..n).all(|i| {
        if !l_ok[i] {
            return true;
        }
        let g = lid[i] as usize;
        let ok = lt[i] >= last[g];
        last[g] = lt[i];
        ok
    });
    if !in_order {
        lperm.sort_by_key(|&i| {
            let i = i as usize;
            if l_ok[i] {
                (0u8, lid[i], lt[i], i)
            } else {
                (1u8, 0, 0, i)
            }
        });
    }
    let total = order.len() as u32;
    let mut fs = vec![total; n];
    let mut fe = vec![total; n];
    // Per-key cursors: window edges only move forward within a key, so the sweep is linear
    // (no binary searches).
    let mut cur: Vec<(usize, usize)> = start[..ng].iter().map(|&s| (s, s)).collect();
    for (k, &i) in lperm.iter().enumerate() {
        let i = i as usize;
        if !l_ok[i] {
            continue;
        }
        let g = lid[i] as usize;
        let (s, e) = window_step(&bucket_times[..start[g + 1]], &mut cur[g], lt[i], (spec.lo, spec.hi));
        fs[k] = s as u32;
        fe[k] = e as u32;
    }
    Ok(Sweep { order, lperm, in_order, fs, fe })
}

/// WINDOW JOIN: the left columns and one aggregate column per call.
pub fn window_join(ctx: &ExecContext, l: Batch, r: &Batch, band: &Band, aggs: &[AggCall]) -> Result<Batch> {
    let n = l.rows;
    let Sweep { order, lperm, in_order, fs, fe } = sweep(ctx, &l, r, band)?;
    let mut inv = None;
    let mut cols: Vec<Arc<Column>> = l.columns.clone();
    for a in aggs {
        let args: Vec<Cow<Column>> =
            a.args.iter().map(|e| eval(ctx, e, r).map(|c| Cow::Owned(c.take(&order)))).collect::<Result<_>>()?;
        let res = super::accum::frames(a.func, a.distinct, a.ty, &args, &fs, &fe)?;
        let res = if in_order {
            res
        } else {
            let inv = inv.get_or_insert_with(|| {
                let mut v = vec![0u32; n];
                for (k, &i) in lperm.iter().enumerate() {
                    v[i as usize] = k as u32;
                }
                v
            });
            res.take(inv)
        };
        cols.push(Arc::new(res));
    }
    Ok(Batch::shared(cols, n))
}

/// Both inputs are scans of partitioned, time-sorted tables joined on their partition keys and
/// designated timestamps (`trades WINDOW JOIN quotes ON sym = sym AND q.ts BETWEEN ...`), as
/// the physical planner checked: each left partition sweeps its right partition alone, over
/// the partitions' own columns (no key hashing, no reordering, no concatenated inputs),
/// partitions on every core; the results concatenated.
pub fn partitioned(ctx: &ExecContext, left: &Plan, right: &Plan, band: &Band, aggs: &[AggCall]) -> Result<Batch> {
    let (outs, types) = partitioned_parts(ctx, left, right, band, aggs)?;
    concat_batches(ctx, &outs, &types)
}

/// [`partitioned`]'s results one batch per left partition, in scan order (one empty batch
/// when there are none).
pub fn partitioned_chunks(
    ctx: &ExecContext,
    left: &Plan,
    right: &Plan,
    band: &Band,
    aggs: &[AggCall],
) -> Result<Vec<Batch>> {
    let (outs, types) = partitioned_parts(ctx, left, right, band, aggs)?;
    super::or_empty(outs, &types)
}

/// Per left partition: its rows with their aggregates, and the output's column types.
fn partitioned_parts(
    ctx: &ExecContext,
    left: &Plan,
    right: &Plan,
    band: &Band,
    aggs: &[AggCall],
) -> Result<(Vec<Batch>, Vec<DataType>)> {
    let pp = paired(left, right)?;
    let Paired { lt, lc, lts, rts, left: lps, .. } = &pp;
    let (lts, rts) = (*lts, *rts);
    // Small partitions a bundle at a time: their left rows, right rows and windows (ranges
    // of the bundle's right rows) one after another.
    let one = |c: &ExecContext, bundle: &&[Piece]| -> Result<Batch> {
        let n = bundle.iter().map(|p| p.range.len()).sum();
        let (mut fs, mut fe) = (vec![0u32; n], vec![0u32; n]);
        let (lb, rb) = pp.walk_bundle(bundle, |lp, rp, span, right_at| {
            let (fs, fe) = (&mut fs[span.clone()], &mut fe[span]);
            match rp {
                Some(rp) => band_frames((lp, lts), (rp, rts), band, right_at, fs, fe),
                // No right rows: empty windows where the next partition's start.
                None => {
                    fs.fill(right_at as u32);
                    fe.fill(right_at as u32);
                    Ok(())
                }
            }
        })?;
        let mut cols: Vec<Arc<Column>> = lb.columns.clone();
        for a in aggs {
            let args: Vec<Cow<Column>> = a.args.iter().map(|e| eval(c, e, &rb)).collect::<Result<_>>()?;
            cols.push(Arc::new(super::accum::frames(a.func, a.distinct, a.ty, &args, &fs, &fe)?));
        }
        Ok(Batch::shared(cols, n))
    };
    let total = lps.iter().map(|p| p.range.len()).sum();
    let outs = ctx.par_map(&bundles(lps), total, one)?;
    let types: Vec<_> = lc.iter().map(|&c| lt.schema().columns[c].data_type).chain(aggs.iter().map(|a| a.ty)).collect();
    Ok((outs, types))
}

/// The windows of left piece `l`'s rows in right piece `r` (each with its designated
/// timestamp's schema position), found by cursors that only move forward: `fs[i]..fe[i]`
/// becomes left row `i`'s window as positions in `r`'s range, plus `base`. Rows without a
/// window (NULL times, which sort first) get the empty `base..base`, so the ranges never
/// decrease ([`windows`] finds them).
fn band_frames(
    l: (&Piece, usize),
    r: (&Piece, usize),
    band: &Band,
    base: usize,
    fs: &mut [u32],
    fe: &mut [u32],
) -> Result<()> {
    let ((lp, lts), (rp, rts)) = (l, r);
    // The rows where they live (a pack shared with other small partitions, or their own).
    let ((lcol, lr), (rcol, rr)) = (lp.col(lts), rp.col(rts));
    let (lv, rv) = (times(lcol)?, times(rcol)?);
    let (l0, r0) = (first_valid(lcol, &lr), first_valid(rcol, &rr));
    fs[..l0 - lr.start].fill(base as u32);
    fe[..l0 - lr.start].fill(base as u32);
    let at = |x: usize| (base + x - rr.start) as u32;
    let (fs, fe) = (&mut fs[l0 - lr.start..], &mut fe[l0 - lr.start..]);
    windows(&lv[l0..lr.end], &rv[r0..rr.end], (band.lo, band.hi), |i, (s, e)| {
        fs[i] = at(r0 + s);
        fe[i] = at(r0 + e);
    });
    Ok(())
}

/// Each of the sorted times `left`'s window `[t + lo, t + hi]` in the sorted times `rs`, as
/// `found(i, (s, e))`: positions `s..e` of `rs`, `e` at or past `s` (empty where the band
/// is, `lo > hi`). The cursors are an ASOF merge's ([`quarters`], [`advance`]), a pair a
/// quarter; a later quarter's pair is placed by bisection.
fn windows(left: &[i64], rs: &[i64], band: (i64, i64), found: impl FnMut(usize, (usize, usize))) {
    let place = |t: i64| {
        let (wlo, whi) = edges(t, band);
        let s = rs.partition_point(|&x| x < wlo);
        (s, s + rs[s..].partition_point(|&x| x <= whi))
    };
    quarters(left, (0, 0), place, |cur, t| window_step(rs, cur, t, band), found);
}

/// The window of time `t` (later than or equal to the last time `cur` was moved for) in the
/// sorted times `rs`: both cursors of `cur` moved forward, the end kept at or past the start.
#[inline(always)]
fn window_step(rs: &[i64], cur: &mut (usize, usize), t: i64, band: (i64, i64)) -> (usize, usize) {
    let (wlo, whi) = edges(t, band);
    cur.0 = advance(rs, cur.0, wlo, false);
    cur.1 = advance(rs, cur.1.max(cur.0), whi, true);
    *cur
}

/// The edges `[t + lo, t + hi]` of time `t`'s window, saturating at i64's ends.
#[inline(always)]
fn edges(t: i64, (lo, hi): (i64, i64)) -> (i64, i64) {
    (t.saturating_add(lo), t.saturating_add(hi))
}

/// The band join `l JOIN r ON keys AND r.ts BETWEEN l.ts + lo AND l.ts + hi` (LEFT: unmatched
/// left rows once, with NULLs): the same sweep, emitting the pairs.
pub fn range_join(ctx: &ExecContext, l: &Batch, r: &Batch, band: &Band, outer: bool) -> Result<Batch> {
    let Sweep { order, lperm, fs, fe, .. } = sweep(ctx, l, r, band)?;
    let total: usize = fs.iter().zip(&fe).map(|(a, b)| (b - a) as usize).sum();
    let mut li = Vec::with_capacity(total);
    let mut ri = Vec::with_capacity(total);
    for (k, &i) in lperm.iter().enumerate() {
        if fs[k] == fe[k] {
            if outer {
                li.push(i);
                ri.push(zepto_storage::column::NULL_INDEX);
            }
            continue;
        }
        for &j in &order[fs[k] as usize..fe[k] as usize] {
            li.push(i);
            ri.push(j);
        }
    }
    let mut cols: Vec<Arc<Column>> = l.columns.iter().map(|c| Arc::new(c.take(&li))).collect();
    cols.extend(r.columns.iter().map(|c| Arc::new(c.take_opt(&ri))));
    Ok(Batch::shared(cols, li.len()))
}

#[cfg(test)]
mod tests {
    use super::windows;
    use zepto_storage::rng::XorShift;

    /// Every row's window is the bisection of its own edges, for lengths around the quarters'
    /// cuts, bands of either sign and empty ones (`lo > hi`), and times at i64's ends.
    #[test]
    fn windows_are_each_rows_bisection() {
        let mut rng = XorShift::new(0x6a09_e667_f3bc_c908);
        let ends = [i64::MIN, i64::MIN + 1, i64::MAX - 1, i64::MAX];
        let bands =
            [(-2, 3), (0, 0), (1, 4), (-4, -1), (3, -3), (0, -1), (i64::MIN, 0), (0, i64::MAX), (i64::MIN, i64::MAX)];
        for round in 0..3000 {
            let times = |rng: &mut XorShift| {
                let n = rng.below(24);
                let mut v: Vec<i64> = (0..n)
                    .map(|_| if rng.below(8) == 0 { ends[rng.below(4) as usize] } else { rng.below(30) as i64 - 15 })
                    .collect();
                v.sort_unstable();
                v
            };
            let (left, rs) = (times(&mut rng), times(&mut rng));
            let (lo, hi) = bands[round % bands.len()];
            let mut got = vec![(usize::MAX, usize::MAX); left.len()];
            windows(&left, &rs, (lo, hi), |i, w| got[i] = w);
            for (i, &t) in left.iter().enumerate() {
                let (wlo, whi) = (t.saturating_add(lo), t.saturating_add(hi));
                let s = rs.partition_point(|&x| x < wlo);
                let want = (s, rs.partition_point(|&x| x <= whi).max(s));
                assert_eq!(got[i], want, "round {round}: row {i} of {left:?} in {rs:?}, band {lo}..{hi}");
            }
        }
    }
}
