//! How a GROUP BY whose keys are all monotonic in the designated timestamp runs in time order
//! (`AggHow::TimeMerge`, when `physical` finds it eligible): the planner's half of
//! `exec::merge_order`.
//!
//! Each time-sorted partition holds such keys as runs, so groups need no hashing. Two ways:
//! * **Partials** (`partials: true`): each partition's runs aggregate into partial states on
//!   every core, and the partials, a few sorted runs, merge by a sort. It pays where a
//!   partition's rows make several rows a group (minute bars of ticks): the partials are few.
//! * **In order** (`partials: false`): the rows are gathered and their keys sorted, which
//!   merges the partitions' runs. For a key of the timestamp itself (nearly a group per row),
//!   where partials would copy every row twice and a hash would probe a table of every row;
//!   over up to [`IN_ORDER_MAX_PARTITIONS`] partitions read (past that, merging their runs
//!   costs more than the hash, and the groups come in order of first appearance).
//!
//! Where neither pays (buckets finer than a partition's rows: a second over ticks spread
//! across many symbols) the hashing paths stay. The estimate is from the table as it is:
//! per partition, its rows over the buckets its time span covers, over up to
//! [`SAMPLE`] partitions spread across the table.

use super::{BExpr, ScanRange};
use crate::expr::functions::ScalarFunc;
use zepto_storage::{Table, Value};

/// Partitions looked at for the estimate, at most.
const SAMPLE: usize = 256;

/// Rows per group per partition from which partials pay.
const PARTIALS_FROM: f64 = 4.0;

/// Partitions read up to which sorting a timestamp key's gathered rows (merging the
/// partitions' runs) pays. A merge costs a pass per doubling of the runs; a hash of every row
/// costs about the same whatever they are. 1M trades grouped by `ts`: over 100 partitions the
/// merge took 27.6-35 ms against the hash's 33-35, over 100k partitions of ten rows 52.6
/// against 39.5. Two points: they cross somewhere between a few hundred and a few thousand.
const IN_ORDER_MAX_PARTITIONS: usize = 1024;

/// Whether the in-order way (`partials: false`) pays for a key of the timestamp itself: the
/// scan reads few enough partitions (runs) to merge. A scan of some keys reads theirs; a
/// scan of every key counts every partition (a time bound only shortens the runs).
pub(super) fn in_order_pays(table: &Table, range: &ScanRange) -> bool {
    let runs = range.keys.as_ref().map_or(table.partitions().len(), |k| k.len() + usize::from(range.null_key));
    runs <= IN_ORDER_MAX_PARTITIONS
}

/// Whether partials pay for bucket `keys` (every one a bucket of the designated timestamp,
/// column `ts_col` of `table`): its partitions hold several rows a bucket of the widest key.
pub(super) fn partials_pay(table: &Table, ts_col: usize, keys: &[BExpr]) -> bool {
    let Some(width) = keys.iter().map(bucket_ns).collect::<Option<Vec<i64>>>().and_then(|w| w.into_iter().max()) else {
        return false;
    };
    rows_per_bucket(table, ts_col, width) >= PARTIALS_FROM
}

/// The width of a time bucket key, in nanoseconds (at least 1), when its literal says it.
fn bucket_ns(k: &BExpr) -> Option<i64> {
    const DAY: i64 = 86_400 * 1_000_000_000;
    let BExpr::Func { func, args, .. } = k else { return None };
    let w = match (func, args.as_slice()) {
        (ScalarFunc::Xbar, [BExpr::Lit(w, _), _]) => w.as_i64()?,
        // The fixed units as the engine spells them; calendar units at their shortest.
        (ScalarFunc::DateTrunc, [BExpr::Lit(Value::Str(unit), _), _]) => match unit.to_ascii_lowercase().as_str() {
            "month" | "months" => 28 * DAY,
            "quarter" | "quarters" => 90 * DAY,
            "year" | "years" => 365 * DAY,
            u => zepto_storage::time::unit_ns(u)?,
        },
        _ => return None,
    };
    (w > 0).then_some(w)
}

/// The mean, over sampled partitions, of a partition's rows per bucket of `width` ns its time
/// span covers (0 for an empty table).
fn rows_per_bucket(table: &Table, ts_col: usize, width: i64) -> f64 {
    let parts = table.partitions();
    let step = parts.len().div_ceil(SAMPLE).max(1);
    let (mut rows, mut buckets) = (0f64, 0f64);
    for p in parts.iter().step_by(step) {
        let Some(v) = p.i64_values(ts_col) else { continue };
        let from = p.null_prefix(ts_col);
        let (Some(&lo), Some(&hi)) = (v.get(from), v.last()) else { continue };
        rows += (v.len() - from) as f64;
        buckets += ((hi as i128 - lo as i128) / width as i128 + 1) as f64;
    }
    if buckets == 0.0 {
        0.0
    } else {
        rows / buckets
    }
}
