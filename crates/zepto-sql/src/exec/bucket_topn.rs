//! A TopN led by a time bucket of a GROUP BY ([`SortHow::Buckets`](crate::plan::SortHow),
//! chosen and argued exact in [`crate::plan::bucket_topn`]): the aggregate runs over the scan
//! narrowed to the newest rows (`ts >= lo`, `lo` a bucket start) and, while that gives fewer
//! rows than the limit, again over a longer window (by what is missing, [`MAX_GROWTH`] times at
//! most), until it does or the window is the scan's whole range.
//!
//! Why: "the last five minutes' maximum" over a day of 4,000 series aggregated 2.9M rows to
//! keep five groups. The first window is the limit's number of buckets back from the newest
//! time in range (exact for fixed-width buckets when no bucket is empty), so one aggregate of
//! a few thousand rows usually answers it. Rows by their time itself (`TimeTopN`) start from
//! where the partitions put their `k`-th newest row instead ([`Ends::kth`]): the latest trade
//! of a symbol read 96k rows to keep one.

use super::{run, sort, Batch, ExecContext};
use crate::error::Result;
use crate::plan::bucket_topn::BucketTopN;
use crate::plan::{Plan, ScanRange, SortKey};
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, Table};

/// The most a window's span from the edge grows from one attempt to the next: a filter that
/// passes one row in a million reaches a day's whole range from a millisecond in four
/// attempts, where doubling took twenty-five (each a scan of every partition read).
const MAX_GROWTH: usize = 64;

/// The first `k` rows of `input` by `keys`, aggregated from its newest (or oldest) rows first.
pub fn top(ctx: &ExecContext, input: &Plan, keys: &[SortKey], k: usize, b: &BucketTopN) -> Result<Batch> {
    let Some(Plan::Scan { table, columns, range }) = scan_of(input) else { return whole(ctx, input, keys, k) };
    // Past the newest row (for the newest buckets): the first window may hold fewer buckets
    // than it could, never a part of one.
    let kth = b.is_time_itself().then_some(k);
    let Some(Ends { edge, far, kth }) = ends(table, columns, range, b.ts(), b.newest(), kth) else {
        return whole(ctx, input, keys, k);
    };
    let reach = Reach { edge, far, newest: b.newest() };
    let floor = |t: i64| bucket_start(ctx, b, columns.len(), t);
    let Some(start) = floor(edge)? else { return whole(ctx, input, keys, k) };
    let Some(before) = floor(start.saturating_sub(1))? else { return whole(ctx, input, keys, k) };
    let width = (start - before).max(1);
    let steps = i64::try_from(k).unwrap_or(i64::MAX);
    // Attempts stay alive to the end, so no node of a later one reuses an earlier one's
    // address in the run's profile.
    let mut tried: Vec<Box<Plan>> = Vec::new();
    let mut t = match kth {
        // Rows by their time: from where the partitions put the k-th newest (oldest) row.
        Some(kth) if b.newest() => kth,
        Some(kth) => kth.saturating_add(1),
        _ if b.newest() => reach.away(edge, (steps - 1).saturating_mul(width)),
        _ => reach.away(start, steps.saturating_mul(width)),
    };
    // The last window's bound and the rows it found.
    let mut last: Option<(i64, usize)> = None;
    loop {
        let Some(bound) = floor(t)? else { return whole(ctx, input, keys, k) };
        let (lo, hi) = if b.newest() { (bound, i64::MAX) } else { (i64::MIN, bound.saturating_sub(1)) };
        let covers = lo <= range.ts_lo && hi >= range.ts_hi;
        let moved = last.is_none_or(|(l, _)| if b.newest() { bound < l } else { bound > l });
        if covers || !moved || reach.too_far(bound, matches!(last, Some((_, 0)))) {
            return whole(ctx, input, keys, k);
        }
        // Boxed: the profile knows a node by its address, which a move into `tried` would change.
        let narrowed = Box::new(within(input, lo, hi));
        let out = run(ctx, &narrowed)?;
        if out.rows >= k {
            ctx.adopt(&narrowed, input);
            return sort::sorted(ctx, out, keys, Some(k));
        }
        tried.push(narrowed);
        t = reach.next(bound, out.rows, k, width);
        last = Some((bound, out.rows));
    }
}

/// Where the windows reach: from the edge (the newest time, or the oldest) toward the far end
/// of the rows' times.
struct Reach {
    edge: i64,
    far: i64,
    newest: bool,
}

impl Reach {
    /// `by` away from `from`, toward the far end (the older rows when the newest come first).
    fn away(&self, from: i64, by: i64) -> i64 {
        if self.newest {
            from.saturating_sub(by)
        } else {
            from.saturating_add(by)
        }
    }

    /// Whether a window out to `bound` reads about as much as all the rows cost: past half way
    /// to the far end, or past an eighth of the way when the last window found no row (then
    /// nothing says where the answer lies, and the attempts before the whole would be waste).
    fn too_far(&self, bound: i64, found_none: bool) -> bool {
        let span = self.edge.abs_diff(self.far);
        self.edge.abs_diff(bound) > if found_none { span / 8 } else { span / 2 }
    }

    /// The next window's bound after one out to `bound` found `found` of the `k` rows wanted:
    /// its span from the edge grown by what is missing (twice that, at least twice, at most
    /// [`MAX_GROWTH`] times: a filter few rows pass, or none yet), at least a bucket (`width`).
    fn next(&self, bound: i64, found: usize, k: usize, width: i64) -> i64 {
        let grow = if found == 0 { MAX_GROWTH } else { (2 * k).div_ceil(found).clamp(2, MAX_GROWTH) };
        let span = i64::try_from(self.edge.abs_diff(bound)).unwrap_or(i64::MAX).max(width);
        self.away(bound, span.saturating_mul(grow as i64 - 1))
    }
}

/// The TopN over all of `input`, as a plain TopN runs it.
fn whole(ctx: &ExecContext, input: &Plan, keys: &[SortKey], k: usize) -> Result<Batch> {
    super::top_rows(ctx, input, keys, k)
}

/// The one scan under `input` (a chain of single-input nodes down to it).
fn scan_of(input: &Plan) -> Option<&Plan> {
    let mut at = input;
    loop {
        match at {
            Plan::Scan { .. } => return Some(at),
            p => match p.inputs().as_slice() {
                [one] => at = one,
                _ => return None,
            },
        }
    }
}

/// `input` with its scan's time range cut to `[lo, hi]` as well.
fn within(input: &Plan, lo: i64, hi: i64) -> Plan {
    match input {
        Plan::Scan { table, columns, range } => {
            let range = ScanRange { ts_lo: range.ts_lo.max(lo), ts_hi: range.ts_hi.min(hi), ..range.clone() };
            Plan::Scan { table: Arc::clone(table), columns: columns.clone(), range }
        }
        p => match p.clone().map_inputs(|c| Ok::<_, std::convert::Infallible>(within(&c, lo, hi))) {
            Ok(p) => p,
            Err(never) => match never {},
        },
    }
}

/// Where the rows a scan reads lie in time, from one visit to each partition.
struct Ends {
    /// A time at or past the newest (or before the oldest) designated time, within the
    /// range's bound.
    edge: i64,
    /// The same at the other end.
    far: i64,
    /// For rows by their time (asked for `k`): the latest (newest first) of the partitions'
    /// `k`-th newest times in range, or the earliest of their `k`-th oldest, so that the first
    /// window holds `k` rows of one partition at least when one has them (a partition with
    /// fewer offers its oldest, or newest, time). `None` when no partition has a time in range.
    kth: Option<i64>,
}

/// [`Ends`] of the rows a scan of `table` over `range` reads (designated time at scan position
/// `ts`; `newest`: the edge is the newest end): each partition's first and last time read (no
/// search), and with `kth` two searches of it. `None` when no partition has a time.
fn ends(
    table: &Table,
    columns: &[usize],
    range: &ScanRange,
    ts: usize,
    newest: bool,
    kth: Option<usize>,
) -> Option<Ends> {
    let tc = *columns.get(ts)?;
    let (mut lo, mut hi, mut at_k): (Option<i64>, Option<i64>, Option<i64>) = (None, None, None);
    let pick = |a: Option<i64>, t: i64, max: bool| Some(a.map_or(t, |a| if max { a.max(t) } else { a.min(t) }));
    for p in super::scan::partitions(table, range) {
        let Some(v) = p.i64_values(tc) else { continue };
        // NULL times sort first: the last slot is a time unless every one is NULL.
        let nulls = p.null_prefix(tc);
        if nulls >= v.len() {
            continue;
        }
        (lo, hi) = (pick(lo, v[nulls], false), pick(hi, v[v.len() - 1], true));
        let Some(k) = kth else { continue };
        let r = p.ts_range(tc, range.ts_lo, range.ts_hi);
        let Some(take) = k.min(r.len()).checked_sub(1) else { continue };
        let i = if newest { r.end - 1 - take } else { r.start + take };
        if let Some(&t) = v.get(i) {
            at_k = pick(at_k, t, newest);
        }
    }
    let (lo, hi) = (lo?.max(range.ts_lo), hi?.min(range.ts_hi));
    let (edge, far) = if newest { (hi, lo) } else { (lo, hi) };
    Some(Ends { edge, far, kth: at_k })
}

/// The start of the bucket holding time `t`: the bucket expression over one row whose
/// designated time is `t` (`None` when it is NULL there).
fn bucket_start(ctx: &ExecContext, b: &BucketTopN, width: usize, t: i64) -> Result<Option<i64>> {
    let cols = (0..width)
        .map(|c| match c == b.ts() {
            true => Arc::new(Column::from_data(ColumnData::Timestamp(vec![t].into()))),
            false => super::scan::unread(1),
        })
        .collect();
    let row = Batch::shared(cols, 1);
    let v = super::eval::eval(ctx, b.bucket(), &row)?;
    Ok(v.is_valid(0).then(|| v.as_i64_slice().and_then(|s| s.first().copied())).flatten())
}
