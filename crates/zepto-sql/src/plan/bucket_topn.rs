//! The physical planner's choice for "the newest (or oldest) k time buckets":
//! `SELECT time_bucket(w, ts) AS b, agg(...) FROM t [WHERE ...] GROUP BY b[, ...] ORDER BY b
//! DESC LIMIT k` ([`super::SortHow::Buckets`]): aggregate only the newest rows first, instead of every
//! row of the table for the sake of five groups.
//!
//! Why it is exact: the sort's first key is a group key that is a *floor* of the scan's
//! designated timestamp `ts` (`xbar`/`time_bucket`, `date_trunc`, `month_bucket`,
//! `timestamp_floor` of a constant and `ts`): non-decreasing, never above `ts`, and its own
//! floor. For such an `f` and any bucket start `lo = f(t)`, the rows with `ts >= lo` are
//! exactly the rows of the buckets `>= lo`, so the aggregate over them gives those buckets'
//! groups complete, and every other group sorts after all of them. When that aggregate has at
//! least `k` rows (after any HAVING), its first `k` are the answer; otherwise the executor
//! moves `lo` back, doubling the span, until it does or the window is the scan's whole range.
//! Ascending is the mirror image (`ts < hi` with `hi` a bucket start).
//!
//! The designated timestamp itself is such a floor (its own bucket, a nanosecond wide), so the
//! same holds for plain rows: `SELECT * FROM t WHERE sym = 'A' ORDER BY ts DESC LIMIT 1` (the
//! latest trade) reads the rows at or after a time `lo` instead of sorting every row of the
//! partition. Its first window starts where the partitions' own order puts the `k`-th newest
//! row (`TimeTopN` in EXPLAIN).
//!
//! Chosen when: the TopN's first key is an output column that column-only projections and
//! filters (WHERE, HAVING) pass down from such a group key of an aggregate over a (filtered)
//! scan, or from the designated timestamp of the scan itself, of memory alone (not the Parquet
//! history), and NULL buckets cannot lead the order (NULLs last, or the scan's time range is
//! bounded, which NULL times never satisfy).

use super::shape::{reads_history, scan_shape};
use super::{BExpr, Plan, SortKey};
use crate::expr::functions::ScalarFunc;
use zepto_storage::{DataType, Value};

/// How a TopN led by a time bucket runs (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct BucketTopN {
    /// The bucket: a floor of the scan's designated timestamp, over the scan's columns.
    bucket: BExpr,
    /// The designated timestamp's position among the scan's columns.
    ts: usize,
    /// Newest buckets first (the key sorts descending).
    newest: bool,
}

impl BucketTopN {
    /// The bucket expression, over the scan's columns.
    pub fn bucket(&self) -> &BExpr {
        &self.bucket
    }

    /// The designated timestamp's position among the scan's columns.
    pub fn ts(&self) -> usize {
        self.ts
    }

    /// Whether the newest buckets come first.
    pub fn newest(&self) -> bool {
        self.newest
    }

    /// Whether the key is the designated timestamp itself (its own bucket), not a coarser floor.
    pub fn is_time_itself(&self) -> bool {
        matches!(self.bucket, BExpr::Col(i, _) if i == self.ts)
    }

    /// The operator's name in EXPLAIN and profiles.
    pub fn name(&self) -> &'static str {
        if self.is_time_itself() {
            "TimeTopN"
        } else {
            "BucketTopN"
        }
    }

    /// For EXPLAIN.
    pub fn describe(&self) -> String {
        let end = if self.newest { "newest" } else { "oldest" };
        match self.is_time_itself() {
            true => format!("(in time order: the {end} rows first, the window widened until the limit is met)"),
            false => {
                format!("(time buckets: the {end} rows aggregated first, the window widened until the limit is met)")
            }
        }
    }
}

/// The bucket plan for a TopN over `input` by `keys`, keeping `limit` rows, if it applies.
pub fn choose(input: &Plan, keys: &[SortKey], limit: Option<usize>) -> Option<BucketTopN> {
    let (first, _) = keys.split_first()?;
    let BExpr::Col(col, _) = first.expr else { return None };
    limit.filter(|&k| k > 0)?;
    let (bucket, agg_input) = time_key(input, col)?;
    let s = scan_shape(agg_input)?;
    let ts = s.table.ts_col().and_then(|t| s.columns.iter().position(|&c| c == t))?;
    let itself = matches!(bucket, BExpr::Col(i, _) if i == ts);
    let fits = (itself || is_floor_of(&bucket, ts))
        && bucket.data_type() == DataType::Timestamp
        && !reads_history(s.table, s.range)
        && (!first.nulls_first || s.range.is_time_bounded());
    fits.then_some(BucketTopN { bucket, ts, newest: first.desc })
}

/// What output column `col` of `p` is, passed up through column-only projections and filters:
/// a group key of an aggregate, with the aggregate's input, or a column of a scan, with the
/// scan.
fn time_key(p: &Plan, col: usize) -> Option<(BExpr, &Plan)> {
    match p {
        Plan::Project { input, exprs } => match exprs.get(col)? {
            BExpr::Col(i, _) => time_key(input, *i),
            _ => None,
        },
        Plan::Filter { input, .. } => time_key(input, col),
        Plan::Aggregate { input, keys, .. } => Some((keys.get(col)?.clone(), input)),
        Plan::Scan { table, columns, .. } => {
            let ty = table.schema().columns.get(*columns.get(col)?)?.data_type;
            Some((BExpr::Col(col, ty), p))
        }
        _ => None,
    }
}

/// Whether `k` is a floor of column `t`: non-decreasing in it, never above it, its own floor.
/// (`xbar` of a negative width rounds up: only a positive one is a floor.)
fn is_floor_of(k: &BExpr, t: usize) -> bool {
    let BExpr::Func { func, args, .. } = k else { return false };
    let of_t = |x: &BExpr| matches!(x, BExpr::Col(i, _) if *i == t);
    match (func, args.as_slice()) {
        (ScalarFunc::Xbar, [BExpr::Lit(Value::Interval(w), _), x]) => *w > 0 && of_t(x),
        (ScalarFunc::DateTrunc | ScalarFunc::MonthBucket | ScalarFunc::TimestampFloor, [BExpr::Lit(..), x]) => of_t(x),
        _ => false,
    }
}
