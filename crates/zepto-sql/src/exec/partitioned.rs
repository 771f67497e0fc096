//! Partition-wise aggregation: when a GROUP BY includes the partition key, no group spans two
//! partitions, so each partition (piece of a scan) is aggregated on its own — over its shared
//! columns, without concatenating the table — and the results are appended. Inside a
//! time-sorted partition, keys that are monotonic in the designated timestamp (`ts`,
//! `xbar(w, ts)`, `date_trunc(u, ts)`) change only between runs, so groups are found by
//! comparing neighbours: no hashing at all (kdb+'s `select ... by sym, bar` on a sorted table).

use super::aggregate::aggregate_grouped;
use super::interrupt::par_map;
use super::scan::{filtered_piece, pieces, scan_shape, ScanShape};
use super::Batch;
use crate::error::Result;
use crate::plan::functions::ScalarFunc;
use crate::plan::{AggCall, BExpr, Plan};
use std::sync::Arc;
use zepto_storage::Column;

/// `Some(result)` when the plan shape allows partition-wise aggregation.
pub fn try_aggregate(input: &Plan, keys: &[BExpr], aggs: &[AggCall]) -> Option<Result<Batch>> {
    let shape = scan_shape(input)?;
    let ScanShape { table, columns, range, .. } = shape;
    let kp = columns.iter().position(|&c| Some(c) == table.key_col)?;
    if !keys.iter().any(|k| matches!(k, BExpr::Col(i, _) if *i == kp)) {
        return None;
    }
    let tp = table.ts_col.and_then(|t| columns.iter().position(|&c| c == t));
    // Keys other than the partition key must all be run keys to skip hashing.
    let run_keys: Option<Vec<usize>> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| !matches!(k, BExpr::Col(i, _) if *i == kp))
        .map(|(j, k)| tp.filter(|&t| monotonic_in(k, t)).map(|_| j))
        .collect();
    let ps = pieces(table, range);
    if ps.is_empty() {
        return None;
    }
    // Partitions aggregate independently: on every core.
    let one = |p: &super::scan::Piece| -> Result<Option<Batch>> {
        let b = filtered_piece(&shape, p)?;
        if b.rows == 0 {
            return Ok(None);
        }
        let runs = run_keys.as_deref().filter(|_| p.part.sorted);
        aggregate_grouped(&b, keys, aggs, runs).map(Some)
    };
    let rows = ps.iter().map(|p| p.range.len()).sum();
    let outs: Vec<Batch> = match par_map(&ps, rows, one) {
        Ok(o) => o.into_iter().flatten().collect(),
        Err(e) => return Some(Err(e)),
    };
    if outs.is_empty() {
        return None;
    }
    let rows = outs.iter().map(|b| b.rows).sum();
    let width = outs[0].columns.len();
    let cols = (0..width)
        .map(|j| {
            let refs: Vec<&Column> = outs.iter().map(|b| &*b.columns[j]).collect();
            Arc::new(Column::concat(&refs))
        })
        .collect();
    Some(Ok(Batch::shared(cols, rows)))
}

/// Non-decreasing in column `t` (the designated timestamp): `t`, `xbar(const, t)`,
/// `date_trunc(const, t)`.
pub(super) fn monotonic_in(k: &BExpr, t: usize) -> bool {
    match k {
        BExpr::Col(i, _) => *i == t,
        BExpr::Func { func: ScalarFunc::Xbar | ScalarFunc::DateTrunc | ScalarFunc::MonthBucket, args, .. } => {
            matches!(args.as_slice(), [BExpr::Lit(..), BExpr::Col(i, _)] if *i == t)
        }
        _ => false,
    }
}
