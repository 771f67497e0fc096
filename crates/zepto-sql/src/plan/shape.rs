//! The shapes the physical planner and the executor recognize in a plan: a scan, optionally
//! under a filter, and whether a scan reaches the Parquet history. Kept apart from the
//! planner's choices so that each choice module (`physical`, `ann`) reads shapes without
//! importing the other.

use super::{BExpr, Plan, ScanRange};
use std::sync::Arc;
use zepto_storage::Table;

/// A scan, optionally under a filter: the input shape the partition-wise operators take.
pub struct ScanShape<'a> {
    /// The scanned table snapshot.
    pub table: &'a Arc<Table>,
    /// Schema positions of the columns read.
    pub columns: &'a [usize],
    /// Partitions and time range read.
    pub range: &'a ScanRange,
    /// The filter above the scan, if any.
    pub filter: Option<&'a BExpr>,
}

/// `input` as a (filtered) scan, if it is one.
pub fn scan_shape(input: &Plan) -> Option<ScanShape<'_>> {
    let (scan, filter) = match input {
        Plan::Filter { input: inner, pred } => (&**inner, Some(pred)),
        p => (p, None),
    };
    let Plan::Scan { table, columns, range } = scan else { return None };
    Some(ScanShape { table, columns, range, filter })
}

/// Whether `table`'s history has files a scan over `range` must read.
pub fn reads_history(table: &Table, range: &ScanRange) -> bool {
    table.history().overlapping(range.ts_lo, range.ts_hi).next().is_some()
}
