//! The shapes the physical planner and the executor recognize in a plan: a scan, optionally
//! under filters, and whether a scan reaches the Parquet history. Kept apart from the
//! planner's choices so that each choice module (`physical`, `ann`) reads shapes without
//! importing the other.

use super::{BExpr, Plan, ScanRange};
use std::sync::Arc;
use zepto_storage::Table;

/// A scan, optionally under filters: the input shape the partition-wise operators take.
pub struct ScanShape<'a> {
    /// The scanned table snapshot.
    pub table: &'a Arc<Table>,
    /// Schema positions of the columns read.
    pub columns: &'a [usize],
    /// Partitions and time range read.
    pub range: &'a ScanRange,
    /// The filters above the scan, the nearest to it first: each sees only the rows the ones
    /// before it keep (a tenant scope's filter sits nearest, see [`crate::access`]). Usually
    /// none or one.
    pub filters: Vec<&'a BExpr>,
    /// Which of the scan's columns the consumer reads after the filters (`None`: all). The
    /// others are read by the filters alone: the filtered batch holds untyped NULL
    /// placeholders there instead of gathering them ([`ScanShape::gather_only`]).
    gather: Option<Vec<bool>>,
}

impl ScanShape<'_> {
    /// The shape whose filtered batches gather only the columns `used` marks (one flag per
    /// scan column); the rest stay placeholders of the right length, never to be read.
    pub fn gather_only(mut self, used: Vec<bool>) -> Self {
        assert_eq!(used.len(), self.columns.len(), "one flag per scan column");
        self.gather = Some(used);
        self
    }

    /// Whether the consumer reads scan column `c` after the filters.
    pub fn gathers(&self, c: usize) -> bool {
        self.gather.as_ref().is_none_or(|g| g[c])
    }
}

/// `input` as a scan under zero or more filters, if it is one.
pub fn scan_shape(input: &Plan) -> Option<ScanShape<'_>> {
    let mut filters = Vec::new();
    let mut p = input;
    while let Plan::Filter { input: inner, pred } = p {
        filters.push(pred);
        p = inner;
    }
    let Plan::Scan { table, columns, range } = p else { return None };
    filters.reverse();
    Some(ScanShape { table, columns, range, filters, gather: None })
}

/// Whether `table`'s history has files a scan over `range` must read.
pub fn reads_history(table: &Table, range: &ScanRange) -> bool {
    table.history().overlapping(range.ts_lo, range.ts_hi).next().is_some()
}
