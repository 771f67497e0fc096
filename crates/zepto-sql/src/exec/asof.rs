//! ASOF JOIN: every left row meets the nearest right row with equal keys on the right side of
//! the inequality (`l >= r`: the latest right row at or before; `>`: strictly before; `<=`: the
//! earliest at or after; `<`: strictly after). NULL keys and NULL times never match.
//!
//! Right rows are bucketed by key (dense group ids, shared with the left side), each bucket
//! ordered by time — verified, and sorted only when the input was not already in order (a scan
//! of a time-sorted table usually is) — and each left row binary-searches its bucket. Two
//! scans of time-sorted tables joined on their partition keys instead merge each pair of
//! partitions with cursors that only move forward (`exec::merge_cursor`). Memory is the
//! right side's row indices and times plus the output.

use super::asof_walk::{walk, Walk};
use super::bundle::bundles;
use super::eval::eval;
use super::hash::{bucket_rows, shared_ids};
use super::merge_cursor::{advance, first_valid, quarters};
use super::scan::{pieces, pieces_batch, Piece};
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::eval::sql_order::{sql_cmp, SqlOrd};
use crate::parser::ast::BinaryOp;
use crate::plan::{AsofOuter, BExpr, Plan};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, ColumnData, DataType, Table};

/// The parameters of an as-of join, borrowed from its plan node ([`Plan::AsofJoin`]).
pub struct AsofSpec<'a> {
    /// Equality keys over the left batch.
    pub left_keys: &'a [BExpr],
    /// Equality keys over the right batch.
    pub right_keys: &'a [BExpr],
    /// The left time (nanoseconds).
    pub left_ts: &'a BExpr,
    /// The right time (nanoseconds).
    pub right_ts: &'a BExpr,
    /// `>=`, `>`, `<=`, `<`, or `=` for nearest.
    pub op: BinaryOp,
    /// The unmatched rows kept with NULLs (LEFT: left rows; RIGHT: right rows; FULL: both).
    pub outer: AsofOuter,
    /// Maximum distance (inclusive) between matched times.
    pub tolerance: Option<i64>,
    /// Conditions between the two sides a match must also satisfy (over `[left..., right...]`).
    pub residual: Option<&'a BExpr>,
    /// The output columns of `[left..., right...]` (None: all).
    pub emit: Option<&'a [usize]>,
}

impl<'a> AsofSpec<'a> {
    /// An `AsofJoin` node's inputs and spec (`None` for any other node).
    pub fn of(plan: &'a Plan) -> Option<(&'a Plan, &'a Plan, AsofSpec<'a>)> {
        let Plan::AsofJoin {
            left,
            right,
            left_keys,
            right_keys,
            left_ts,
            right_ts,
            op,
            outer,
            tolerance,
            residual,
            emit,
            ..
        } = plan
        else {
            return None;
        };
        let spec = AsofSpec {
            left_keys,
            right_keys,
            left_ts,
            right_ts,
            op: *op,
            outer: *outer,
            tolerance: *tolerance,
            residual: residual.as_ref(),
            emit: emit.as_deref(),
        };
        Some((left, right, spec))
    }

    /// Whether matches lie at or before the left time (`>=`, `>`), so a walk for a residual
    /// goes to earlier rows.
    fn backward(&self) -> bool {
        matches!(self.op, BinaryOp::GtEq | BinaryOp::Gt)
    }

    /// Left row `left`'s walk for the residual from its candidate, at `k` in `bucket` (the
    /// sorted times of its key's right rows, at position `base` of their sequence), away from
    /// its time `x` as far as the tolerance allows.
    fn walk_from<T: Time>(&self, left: usize, bucket: &[T], k: usize, x: T, base: usize) -> Walk {
        debug_assert!(self.op != BinaryOp::Eq, "the binder refuses a residual with nearest()");
        let tol = self.tolerance;
        let last = if self.backward() {
            bucket[..=k].partition_point(|&r| !within(x, r, tol))
        } else {
            k + bucket[k..].partition_point(|&r| within(x, r, tol)) - 1
        };
        Walk::new(left as u32, (base + k) as u32, (base + last) as u32, self.backward())
    }

    /// The output columns, given the inputs' widths.
    fn emitted(&self, wl: usize, wr: usize) -> Vec<usize> {
        self.emit.map_or_else(|| (0..wl + wr).collect(), <[usize]>::to_vec)
    }
}

/// Time values as one ordered numeric domain.
enum Times<'a> {
    I(std::borrow::Cow<'a, [i64]>),
    F(std::borrow::Cow<'a, [f64]>),
}

fn times(c: &Column) -> Result<Times<'_>> {
    use std::borrow::Cow;
    Ok(match &c.data() {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => Times::I(Cow::Borrowed(v)),
        ColumnData::Int32(v) | ColumnData::Date(v) => Times::I(Cow::Owned(v.iter().map(|&x| x as i64).collect())),
        ColumnData::Float64(v) => Times::F(Cow::Borrowed(v)),
        ColumnData::Float32(v) => Times::F(Cow::Owned(v.iter().map(|&x| x as f64).collect())),
        ColumnData::Null(n) => Times::I(Cow::Owned(vec![0; *n])),
        d => return Err(SqlError::exec(format!("ASOF JOIN cannot order values of type {}", d.data_type()))),
    })
}

/// Both sides' ordering values in one numeric domain: strings (VARCHAR or SYMBOL, which DuckDB
/// also orders ASOF joins by) become their ranks among the values of both sides, which keeps
/// their order exactly (no TOLERANCE or nearest applies to them: the binder refuses those).
fn time_pair<'a>(l: &'a Column, r: &'a Column) -> Result<(Times<'a>, Times<'a>)> {
    if !(l.data_type().is_string() && r.data_type().is_string()) {
        return Ok((times(l)?, times(r)?));
    }
    let text = |c: &'a Column| (0..c.len()).map(move |i| c.str_at(i).unwrap_or(""));
    let mut all: Vec<&str> = text(l).chain(text(r)).collect();
    all.sort_unstable();
    all.dedup();
    let rank = |c: &'a Column| -> Vec<i64> { text(c).map(|s| all.binary_search(&s).map_or(0, |k| k as i64)).collect() };
    Ok((Times::I(std::borrow::Cow::Owned(rank(l))), Times::I(std::borrow::Cow::Owned(rank(r)))))
}

/// A time value: ordered as SQL orders it ([`SqlOrd`]: a NaN float after every number), with
/// exact distances.
trait Time: Copy + SqlOrd {
    type Gap: PartialOrd;
    /// `later - earlier`.
    fn gap(later: Self, earlier: Self) -> Self::Gap;
    fn tolerance(t: i64) -> Self::Gap;
}

impl Time for i64 {
    type Gap = i128;
    fn gap(later: i64, earlier: i64) -> i128 {
        later as i128 - earlier as i128
    }
    fn tolerance(t: i64) -> i128 {
        t as i128
    }
}

impl Time for f64 {
    type Gap = f64;
    fn gap(later: f64, earlier: f64) -> f64 {
        later - earlier
    }
    fn tolerance(t: i64) -> f64 {
        t as f64
    }
}

/// Whether a match at `r` for `x` is within the tolerance.
fn within<T: Time>(x: T, r: T, tol: Option<i64>) -> bool {
    tol.is_none_or(|t| {
        let d = if r.sql_le(x) { T::gap(x, r) } else { T::gap(r, x) };
        d <= T::tolerance(t)
    })
}

/// Index into a bucket (sorted ascending) of the match for `x`, if any. Nearest (`=`): the
/// closer of the last row at or before `x` and the first time after it (ties: the later),
/// taking the last row of equal times (as Polars `join_asof(strategy="nearest")`).
fn search<T: Time>(bucket: &[T], x: T, op: BinaryOp) -> Option<usize> {
    match op {
        BinaryOp::Eq => {
            let p = bucket.partition_point(|&r| r.sql_le(x));
            let back = p.checked_sub(1);
            let fwd = (p < bucket.len()).then(|| {
                let t = bucket[p];
                bucket.partition_point(|&r| r.sql_le(t)) - 1
            });
            match (back, fwd) {
                (Some(b), Some(f)) => Some(if T::gap(bucket[f], x) <= T::gap(x, bucket[b]) { f } else { b }),
                (b, f) => b.or(f),
            }
        }
        BinaryOp::GtEq => bucket.partition_point(|&r| r.sql_le(x)).checked_sub(1),
        BinaryOp::Gt => bucket.partition_point(|&r| r.sql_lt(x)).checked_sub(1),
        BinaryOp::LtEq => Some(bucket.partition_point(|&r| r.sql_lt(x))).filter(|&i| i < bucket.len()),
        _ => Some(bucket.partition_point(|&r| r.sql_le(x))).filter(|&i| i < bucket.len()),
    }
}

/// Join whole batches `l` and `r` as `spec` says: each left row with its as-of match in `r`.
pub fn asof_join(ctx: &ExecContext, l: &Batch, r: &Batch, spec: AsofSpec) -> Result<Batch> {
    let (n, m) = (l.rows, r.rows);
    let lk = spec.left_keys.iter().map(|e| eval(ctx, e, l)).collect::<Result<Vec<_>>>()?;
    let rk = spec.right_keys.iter().map(|e| eval(ctx, e, r)).collect::<Result<Vec<_>>>()?;
    let lt = eval(ctx, spec.left_ts, l)?;
    let rt = eval(ctx, spec.right_ts, r)?;
    let (lid, rid, ngroups) = {
        let (lr, rr): (Vec<&Column>, Vec<&Column>) =
            (lk.iter().map(|c| &**c).collect(), rk.iter().map(|c| &**c).collect());
        shared_ids(&lr, &rr, n, m)
    };
    let key_ok = |cols: &[std::borrow::Cow<Column>], i: usize| cols.iter().all(|c| c.is_valid(i));
    // Bucket right rows by key (input order kept), skipping NULL keys/times.
    let (start, mut order) = bucket_rows(&rid, |j| rt.is_valid(j) && key_ok(&rk, j), ngroups);
    let (lt_vals, rt_vals) = time_pair(&lt, &rt)?;
    let mut matched = vec![NULL_INDEX; n];
    let mut walks = Vec::new();
    macro_rules! run {
        ($lv:expr, $rv:expr, $t:ty) => {{
            // Per bucket: times in order (sorting the bucket only if the input was not).
            let mut bucket_times: Vec<$t> = order.iter().map(|&j| $rv[j as usize]).collect();
            for g in 0..ngroups {
                let (a, b) = (start[g], start[g + 1]);
                if !bucket_times[a..b].windows(2).all(|w| w[0].sql_le(w[1])) {
                    let mut pairs: Vec<($t, u32)> = (a..b).map(|k| (bucket_times[k], order[k])).collect();
                    pairs.sort_by(|x, y| sql_cmp(x.0, y.0).then(x.1.cmp(&y.1)));
                    for (k, (t, j)) in pairs.into_iter().enumerate() {
                        bucket_times[a + k] = t;
                        order[a + k] = j;
                    }
                }
            }
            for i in 0..n {
                if !lt.is_valid(i) || !key_ok(&lk, i) {
                    continue;
                }
                let g = lid[i] as usize;
                let (a, b) = (start[g], start[g + 1]);
                if let Some(k) = search(&bucket_times[a..b], $lv[i], spec.op) {
                    if within($lv[i], bucket_times[a + k], spec.tolerance) {
                        matched[i] = order[a + k];
                        if spec.residual.is_some() {
                            walks.push(spec.walk_from(i, &bucket_times[a..b], k, $lv[i], a));
                        }
                    }
                }
            }
        }};
    }
    match (&lt_vals, &rt_vals) {
        (Times::I(lv), Times::I(rv)) => run!(lv, rv, i64),
        (Times::F(lv), Times::F(rv)) => run!(lv, rv, f64),
        (Times::I(lv), Times::F(rv)) => {
            let lf: Vec<f64> = lv.iter().map(|&x| x as f64).collect();
            run!(lf, rv, f64)
        }
        (Times::F(lv), Times::I(rv)) => {
            let rf: Vec<f64> = rv.iter().map(|&x| x as f64).collect();
            run!(lv, rf, f64)
        }
    }
    if let Some(residual) = spec.residual {
        walk(ctx, residual, (l, r), Some(&order), spec.backward(), walks, &mut matched)?;
    }
    let m = Matched::of(l.clone(), r.clone(), matched, spec.outer);
    let types: Vec<DataType> = l.columns.iter().chain(&r.columns).map(|c| c.data_type()).collect();
    let cols = spec
        .emitted(l.columns.len(), r.columns.len())
        .iter()
        .map(|&j| assemble(j, l.columns.len(), types[j], std::slice::from_ref(&m)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Batch::shared(cols, m.rows()))
}

/// SPLICE JOIN: every left row with the latest right row at or before it (`l.ts >= r.ts`),
/// and every right row with the latest left row strictly before it (`r.ts > l.ts`), merged in
/// time order (at equal times right rows come first, so each left row sees them). Rows with
/// NULL keys or times appear once with the other side NULL.
pub fn splice_join(
    ctx: &ExecContext,
    l: &Batch,
    r: &Batch,
    lk: &[BExpr],
    rk: &[BExpr],
    lts: &BExpr,
    rts: &BExpr,
) -> Result<Batch> {
    let spec = |a, b, c, d, op| AsofSpec {
        left_keys: a,
        right_keys: b,
        left_ts: c,
        right_ts: d,
        op,
        outer: AsofOuter::Left,
        tolerance: None,
        residual: None,
        emit: None,
    };
    let left_rows = asof_join(ctx, l, r, spec(lk, rk, lts, rts, BinaryOp::GtEq))?;
    let right_rows = asof_join(ctx, r, l, spec(rk, lk, rts, lts, BinaryOp::Gt))?;
    let (wl, wr) = (l.columns.len(), r.columns.len());
    // right_rows is [right..., left...]: put the left columns first.
    let mut cols = Vec::with_capacity(wl + wr);
    for j in 0..wl + wr {
        let (a, b) = if j < wl {
            (&left_rows.columns[j], &right_rows.columns[wr + j])
        } else {
            (&left_rows.columns[j], &right_rows.columns[j - wl])
        };
        cols.push(Column::concat(&[&**a, &**b]));
    }
    // Event times: a left row's own time, a right row's own time; NULL times first.
    let (lt, rt) = (eval(ctx, lts, l)?, eval(ctx, rts, r)?);
    let event = Column::concat(&[&*lt, &*rt]);
    let n = l.rows + r.rows;
    let times: Vec<i64> = (0..n).map(|i| event.get(i).as_i64().unwrap_or(i64::MIN)).collect();
    let mut idx: Vec<u32> = (0..n as u32).collect();
    // Right events first at equal times (`false < true`, so a right row gets `false`).
    idx.sort_by_key(|&i| {
        let i = i as usize;
        (event.is_valid(i), times[i], i < l.rows, i)
    });
    Ok(Batch::new(cols, n).take(&idx))
}

/// Two scans of keyed, time-sorted tables joined on their partition keys and designated
/// timestamps, their partitions paired by key (see [`crate::plan::physical::merge_shape`]).
pub(super) struct Paired<'a> {
    pub lt: &'a Table,
    pub lc: &'a [usize],
    pub rt: &'a Table,
    pub rc: &'a [usize],
    /// Schema positions of the designated timestamps.
    pub lts: usize,
    pub rts: usize,
    /// The left scan's pieces, in scan order.
    pub left: Vec<Piece<'a>>,
    /// The right scan's keyed pieces by dictionary code.
    right: HashMap<u32, Piece<'a>>,
}

impl<'a> Paired<'a> {
    /// The right piece of `lp`'s key, if the right side has one.
    pub fn right_of(&self, lp: &Piece) -> Option<&Piece<'a>> {
        let k = lp.part.key()?;
        self.right.get(&self.rt.dict().code(self.lt.dict().get(k))?)
    }

    /// A bundle of left pieces with their right pieces, in order: `each(left, right, span,
    /// right_at)` gets a left piece, its right piece if any, the span of its rows among the
    /// bundle's left rows and where its right rows start among the bundle's right rows. Then
    /// the bundle's left rows and right rows of the scans' columns, one piece after another.
    pub fn walk_bundle(
        &self,
        bundle: &[Piece<'a>],
        mut each: impl FnMut(&Piece, Option<&Piece>, Range<usize>, usize) -> Result<()>,
    ) -> Result<(Batch, Batch)> {
        let rps: Vec<Option<&Piece>> = bundle.iter().map(|lp| self.right_of(lp)).collect();
        let (mut at, mut right_at) = (0, 0);
        for (lp, rp) in bundle.iter().zip(&rps) {
            each(lp, *rp, at..at + lp.range.len(), right_at)?;
            at += lp.range.len();
            right_at += rp.map_or(0, |r| r.range.len());
        }
        let lb = pieces_batch(self.lt, self.lc, &bundle.iter().collect::<Vec<_>>())?;
        let rb = pieces_batch(self.rt, self.rc, &rps.into_iter().flatten().collect::<Vec<_>>())?;
        Ok((lb, rb))
    }
}

/// The partitions of two scans paired by key (the physical planner checked the shape: see
/// [`crate::plan::physical::merge_shape`]). Partitions are time-sorted: a table keeps them so.
pub(super) fn paired<'a>(left: &'a Plan, right: &'a Plan) -> Result<Paired<'a>> {
    let shape = || SqlError::Internal("a partition-pair join over inputs that are not keyed, timed scans".into());
    let (Plan::Scan { table: lt, columns: lc, range: lr }, Plan::Scan { table: rt, columns: rc, range: rr }) =
        (left, right)
    else {
        return Err(shape());
    };
    let right: HashMap<u32, Piece> = pieces(rt, rr).into_iter().filter_map(|p| p.part.key().map(|k| (k, p))).collect();
    let left = pieces(lt, lr);
    let (Some(lts), Some(rts)) = (lt.ts_col(), rt.ts_col()) else { return Err(shape()) };
    Ok(Paired { lt, lc, rt, rc, lts, rts, left, right })
}

/// Both inputs are scans of partitioned, time-sorted tables joined on their partition keys and
/// designated timestamps (the shape of `trades ASOF JOIN quotes ON sym = sym AND ts >= ts`):
/// pair the partitions by key and merge each pair with forward cursors (`quarters`, or one
/// cursor row by row with a residual condition) — no hashing, no search per row.
/// Each left partition's matches go through `finish` on the same helper thread. Returns the
/// finished partitions in left order and the types of `[left..., right...]`.
fn partition_wise<R: Send>(
    ctx: &ExecContext,
    left: &Plan,
    right: &Plan,
    spec: &AsofSpec,
    finish: impl Fn(Matched) -> Result<R> + Sync,
) -> Result<(Vec<R>, Vec<DataType>)> {
    if spec.op == BinaryOp::Eq || spec.outer.keeps_right() {
        return Err(SqlError::Internal("a nearest, RIGHT or FULL ASOF JOIN has no partition merge".into()));
    }
    let pp = paired(left, right)?;
    let Paired { lt, lc, rt, rc, lts, rts, left: lps, .. } = &pp;
    let (lts, rts) = (*lts, *rts);
    // Each left partition merges with its right partition alone: on every core, small
    // partitions a bundle at a time (their matches, left rows and right rows one after another).
    let one = |bundle: &[Piece]| -> Result<R> {
        let mut matched = vec![NULL_INDEX; bundle.iter().map(|p| p.range.len()).sum()];
        let mut walks = Vec::new();
        let (lb, rb) = pp.walk_bundle(bundle, |lp, rp, span, right_at| match rp {
            Some(rp) => {
                let at = (right_at, span.start);
                merge_pair((lp, lts), (rp, rts), spec, at, &mut matched[span], &mut walks)
            }
            None => Ok(()),
        })?;
        if let Some(residual) = spec.residual {
            walk(ctx, residual, (&lb, &rb), None, spec.backward(), walks, &mut matched)?;
        }
        finish(Matched::of(lb, rb, matched, spec.outer))
    };
    let total = lps.iter().map(|p| p.range.len()).sum();
    let types: Vec<DataType> = lc
        .iter()
        .map(|&c| lt.schema().columns[c].data_type)
        .chain(rc.iter().map(|&c| rt.schema().columns[c].data_type))
        .collect();
    ctx.par_map(&bundles(lps), total, |_, x| one(x)).map(|outs| (outs, types))
}

/// The matches of left piece `l` in right piece `r` (each with its designated timestamp's
/// schema position), merged with forward cursors: `out[i]` becomes `base` plus the position in
/// `r`'s range of left row `i`'s match, and stays `NULL_INDEX` without one. `at` is (`base`,
/// where `l`'s rows start among the bundle's left rows); with a residual, each match's walk
/// (over the bundle's rows) goes to `walks`.
fn merge_pair(
    l: (&Piece, usize),
    r: (&Piece, usize),
    spec: &AsofSpec,
    at: (usize, usize),
    out: &mut [u32],
    walks: &mut Vec<Walk>,
) -> Result<()> {
    let (base, left_at) = at;
    let ((lp, lts), (rp, rts)) = (l, r);
    debug_assert_eq!(out.len(), lp.range.len());
    // The rows where they live (a pack shared with other small partitions, or their own).
    let ((lcol, lr), (rcol, rr)) = (lp.col(lts), rp.col(rts));
    let (Some(lv), Some(rv)) = (lcol.as_i64_slice(), rcol.as_i64_slice()) else {
        return Err(SqlError::Internal("ASOF timestamps are not 64-bit".into()));
    };
    // NULL timestamps sort first in a partition: skip them on both sides.
    let (l0, r0) = (first_valid(lcol, &lr), first_valid(rcol, &rr));
    let rs = &rv[r0..rr.end];
    let target = |k: usize| (base + r0 - rr.start + k) as u32;
    let left = &lv[l0..lr.end];
    let out = &mut out[l0 - lr.start..];
    if spec.residual.is_none() {
        cursors(left, rs, spec, |i, k| out[i] = target(k));
        return Ok(());
    }
    let mut j = 0usize;
    for (i, &t) in left.iter().enumerate() {
        if let Some(k) = step(rs, &mut j, t, spec) {
            out[i] = target(k);
            walks.push(spec.walk_from(left_at + l0 - lr.start + i, rs, k, t, base + r0 - rr.start));
        }
    }
    Ok(())
}

/// One left time's match among the sorted right times `rs` (within the tolerance), the cursor
/// `j` moved on from where the previous, earlier left time left it.
#[inline(always)]
fn step(rs: &[i64], j: &mut usize, t: i64, spec: &AsofSpec) -> Option<usize> {
    let hit = match spec.op {
        BinaryOp::GtEq => {
            *j = advance(rs, *j, t, true);
            j.checked_sub(1)
        }
        BinaryOp::Gt => {
            *j = advance(rs, *j, t, false);
            j.checked_sub(1)
        }
        BinaryOp::LtEq => {
            *j = advance(rs, *j, t, false);
            (*j < rs.len()).then_some(*j)
        }
        _ => {
            *j = advance(rs, *j, t, true);
            (*j < rs.len()).then_some(*j)
        }
    };
    hit.filter(|&k| within(t, rs[k], spec.tolerance))
}

/// Every match of the sorted left times `left` among the sorted right times `rs`, reported as
/// `found(left index, right index)`, by the cursors of [`quarters`].
fn cursors(left: &[i64], rs: &[i64], spec: &AsofSpec, mut found: impl FnMut(usize, usize)) {
    // `step`'s cursor after `t`: past the right times before it (at or before it, inclusive).
    let inclusive = !matches!(spec.op, BinaryOp::Gt | BinaryOp::LtEq);
    let place = |t: i64| rs.partition_point(|&r| if inclusive { r <= t } else { r < t });
    let report = |i: usize, hit: Option<usize>| {
        if let Some(k) = hit {
            found(i, k);
        }
    };
    if spec.op == BinaryOp::GtEq && spec.tolerance.is_none() {
        // The usual form (`t.ts >= q.ts`, no tolerance) in a loop of its own, without the
        // operator's and the tolerance's tests in every step.
        let latest = |j: &mut usize, t: i64| {
            *j = advance(rs, *j, t, true);
            j.checked_sub(1)
        };
        return quarters(left, 0, place, latest, report);
    }
    quarters(left, 0, place, |j, t| step(rs, j, t, spec), report);
}

/// The partition-wise ASOF (`partition_wise`) as one batch, built a column at a time on
/// every core: left columns concatenated (LEFT) or gathered (inner), right columns gathered
/// straight from the partitions' columns.
pub fn partitioned(ctx: &ExecContext, left: &Plan, right: &Plan, spec: &AsofSpec) -> Result<Batch> {
    let (outs, types) = partition_wise(ctx, left, right, spec, Ok)?;
    let nl = left.width();
    let rows: usize = outs.iter().map(Matched::rows).sum();
    let emitted = spec.emitted(nl, types.len() - nl);
    ctx.par_map(&emitted, rows, |_, &j| assemble(j, nl, types[j], &outs)).map(|cols| Batch::shared(cols, rows))
}

/// The partition-wise ASOF (`partition_wise`) as one batch per left partition, each built
/// on the helper thread that merged it: a LEFT join's left columns are the partition's own
/// (shared, not copied), right columns are gathered from the paired right partition. No left
/// partition: [`partitioned`]'s one empty batch, which carries the column types.
pub fn partitioned_chunks(ctx: &ExecContext, left: &Plan, right: &Plan, spec: &AsofSpec) -> Result<Vec<Batch>> {
    let nl = left.width();
    let chunk = |m: Matched| -> Result<Batch> {
        let cols = spec
            .emitted(nl, m.rb.columns.len())
            .iter()
            .map(|&j| {
                let c = m.lb.columns.get(j).or_else(|| j.checked_sub(nl).and_then(|k| m.rb.columns.get(k)));
                let ty = c.ok_or_else(|| SqlError::Internal(format!("ASOF output column {j} out of range")))?;
                assemble(j, nl, ty.data_type(), std::slice::from_ref(&m))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Batch::shared(cols, m.rows()))
    };
    let (chunks, _) = partition_wise(ctx, left, right, spec, chunk)?;
    if chunks.is_empty() {
        return Ok(vec![partitioned(ctx, left, right, spec)?]);
    }
    Ok(chunks)
}

/// ASOF matches of left rows `lb` in right rows `rb`: the output's left rows (all of them in
/// order for LEFT, else `li`) and their right rows `ri` (`NULL_INDEX`: none). RIGHT and FULL
/// end with the right rows no left row matched, their left row `NULL_INDEX`.
struct Matched {
    lb: Batch,
    rb: Batch,
    li: Option<Vec<u32>>,
    ri: Vec<u32>,
}

impl Matched {
    /// From each left row's match (`NULL_INDEX`: none): every left row (LEFT, FULL) or the
    /// matched ones, then (RIGHT, FULL) the right rows no left row matched.
    fn of(lb: Batch, rb: Batch, matched: Vec<u32>, outer: AsofOuter) -> Matched {
        debug_assert_eq!(matched.len(), lb.rows);
        let unmatched = outer.keeps_right().then(|| {
            let mut hit = vec![false; rb.rows];
            for &j in matched.iter().filter(|&&j| j != NULL_INDEX) {
                hit[j as usize] = true;
            }
            (0..rb.rows as u32).filter(|&j| !hit[j as usize]).collect::<Vec<u32>>()
        });
        let (mut li, mut ri): (Vec<u32>, Vec<u32>) = match (outer.keeps_left(), &unmatched) {
            (true, None) => return Matched { lb, rb, li: None, ri: matched },
            (true, Some(_)) => ((0..lb.rows as u32).collect(), matched),
            (false, _) => {
                matched.iter().enumerate().filter(|(_, &j)| j != NULL_INDEX).map(|(i, &j)| (i as u32, j)).unzip()
            }
        };
        if let Some(extra) = unmatched {
            li.resize(li.len() + extra.len(), NULL_INDEX);
            ri.extend(extra);
        }
        debug_assert_eq!(li.len(), ri.len());
        Matched { lb, rb, li: Some(li), ri }
    }

    fn rows(&self) -> usize {
        self.ri.len()
    }
}

/// Output column `j` (`[left..., right...]`, `nl` left columns, type `ty`) of the matches
/// `parts`, one after another: the one place an ASOF result is assembled. A LEFT join's left
/// columns are shared when there is one part (concatenated otherwise); inner left columns and
/// right columns are gathered (a right `NULL_INDEX` gives NULL).
fn assemble(j: usize, nl: usize, ty: DataType, parts: &[Matched]) -> Result<Arc<Column>> {
    let bad = || SqlError::Internal(format!("ASOF output column {j} out of range"));
    if let ([m], true, None) = (parts, j < nl, parts.first().and_then(|m| m.li.as_ref())) {
        return m.lb.columns.get(j).cloned().ok_or_else(bad);
    }
    let mut cols = Vec::with_capacity(parts.len());
    for m in parts {
        let col = if j < nl { m.lb.columns.get(j) } else { m.rb.columns.get(j - nl) };
        cols.push(&**col.ok_or_else(bad)?);
    }
    if j < nl && parts.iter().all(|m| m.li.is_none()) {
        return Ok(Arc::new(if cols.is_empty() { Column::nulls(ty, 0) } else { Column::concat(&cols) }));
    }
    let gathered: Vec<(&Column, &[u32])> = cols
        .into_iter()
        .zip(parts)
        .map(|(c, m)| match (j < nl, &m.li) {
            (true, Some(li)) => (c, li.as_slice()),
            _ => (c, m.ri.as_slice()),
        })
        .collect();
    Column::gather(ty, &gathered).map(Arc::new).map_err(SqlError::Internal)
}

#[cfg(test)]
mod tests {
    use super::search;
    use crate::parser::ast::BinaryOp;

    #[test]
    fn nearest_either_side() {
        // Ties go to the later time; equal times give their last row.
        let b = [3, 3, 7, 15, 25, 25, 35];
        assert_eq!(search(&b, 0, BinaryOp::Eq), Some(1));
        assert_eq!(search(&b, 5, BinaryOp::Eq), Some(2));
        assert_eq!(search(&b, 10, BinaryOp::Eq), Some(2));
        assert_eq!(search(&b, 20, BinaryOp::Eq), Some(5));
        assert_eq!(search(&b, 40, BinaryOp::Eq), Some(6));
        assert_eq!(search::<i64>(&[], 4, BinaryOp::Eq), None);
        assert!(super::within(5, 7, Some(2)) && !super::within(5, 8, Some(2)) && super::within(5, 3, None));
    }

    /// The four-cursor merge finds, for every left time, what a search of the right times does
    /// (then the tolerance): every inequality, equal times on both sides, odd and tiny counts.
    #[test]
    fn cursors_match_a_search_per_row() {
        use crate::plan::{AsofOuter, BExpr};
        use zepto_storage::DataType;
        let mut rnd = zepto_storage::rng::XorShift::new(0x2545_f491_4f6c_dd1d);
        let ts = BExpr::Col(0, DataType::Timestamp);
        for round in 0..400 {
            let mut sorted = |n: u64| {
                let mut v: Vec<i64> = (0..n).map(|_| rnd.below(60) as i64 - 10).collect();
                v.sort_unstable();
                v
            };
            let (mut left, mut right) = (sorted(40), sorted(40));
            // Tiny and odd counts too: a random prefix of each.
            left.truncate(rnd.index(41));
            right.truncate(rnd.index(41));
            let op = [BinaryOp::GtEq, BinaryOp::Gt, BinaryOp::LtEq, BinaryOp::Lt][round % 4];
            let tolerance = (round % 3 == 0).then(|| rnd.below(6) as i64);
            let spec = super::AsofSpec {
                left_keys: &[],
                right_keys: &[],
                left_ts: &ts,
                right_ts: &ts,
                op,
                outer: AsofOuter::Left,
                tolerance,
                residual: None,
                emit: None,
            };
            let mut got = vec![None; left.len()];
            super::cursors(&left, &right, &spec, |i, k| {
                assert!(got[i].replace(k).is_none(), "left row {i} reported twice");
            });
            let want: Vec<Option<usize>> = left
                .iter()
                .map(|&t| search(&right, t, op).filter(|&k| super::within(t, right[k], tolerance)))
                .collect();
            assert_eq!(got, want, "{op:?} tolerance {tolerance:?} left {left:?} right {right:?}");
        }
    }

    #[test]
    fn nearest_on_each_side() {
        let b = [1, 3, 3, 7];
        assert_eq!(search(&b, 3, BinaryOp::GtEq), Some(2));
        assert_eq!(search(&b, 3, BinaryOp::Gt), Some(0));
        assert_eq!(search(&b, 0, BinaryOp::GtEq), None);
        assert_eq!(search(&b, 3, BinaryOp::LtEq), Some(1));
        assert_eq!(search(&b, 3, BinaryOp::Lt), Some(3));
        assert_eq!(search(&b, 8, BinaryOp::LtEq), None);
    }
}
