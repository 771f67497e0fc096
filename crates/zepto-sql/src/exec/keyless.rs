//! Aggregates without GROUP BY over the in-memory partitions (`SELECT sum(x), count(*) FROM t
//! [WHERE ...]`): the scan's units (partitions and whole packs) cut into runs of about
//! [`ITEM_ROWS`] rows, each run folded unit by unit into one set of accumulators on a core,
//! one partial per run.
//!
//! The general partial path (`partials.rs`) makes a partial per bundle: a bundle's small pieces
//! copied into one batch, then a group, its states and their columns allocated and merged again.
//! Over 100 partitions of 10k rows that was a third of a `sum(price)` on one core, beside the
//! summing itself. Here a unit's columns are read where they are, and a run's accumulators take
//! every unit in turn.
//!
//! Runs are cut by rows, not by cores, so a float sum adds its units in the same order on any
//! machine: in scan order within a run, then the runs' sums in order.

use super::accum::OneGroup;
use super::aggregate::Grouped;
use super::bundle::runs_of_rows;
use super::scan::{pieces_batch, ScanPart, Unit};
use super::ExecContext;
use crate::error::Result;
use crate::plan::physical::ScanShape;
use crate::plan::AggCall;

/// Rows a run of units gathers: enough to share the run's accumulators and partial, few enough
/// that a table of a million rows still gives every core of a small machine several runs.
const ITEM_ROWS: usize = 64 * 1024;

/// One partial (a single group) per run of `units` with rows left after the scan's filters;
/// every one of `aggs` [`AggCall::folds`] (the planner's `AggHow::Partials { fold: true }`).
pub fn partials(ctx: &ExecContext, s: &ScanShape, units: &[Unit], aggs: &[AggCall]) -> Result<Vec<Grouped>> {
    let rows: usize = units.iter().map(ScanPart::rows).sum();
    let runs = runs_of_rows(units, ScanPart::rows, rows.div_ceil(ITEM_ROWS));
    let one = OneGroup::new(aggs);
    let fold = |c: &ExecContext, run: &&[Unit]| -> Result<Option<Grouped>> {
        let mut accs = one.accumulators();
        let mut any = false;
        for u in run.iter() {
            let b = s.apply_filter(c, pieces_batch(s.table, s.columns, &[u])?)?;
            if b.rows > 0 {
                one.fold(c, &b, &mut accs)?;
                any = true;
            }
        }
        if !any {
            return Ok(None);
        }
        let states = accs.iter_mut().map(|a| a.state()).collect::<Result<Vec<_>>>()?;
        Ok(Some(Grouped { keys: Vec::new(), aggs: states, groups: 1 }))
    };
    Ok(ctx.par_map(&runs, rows, fold)?.into_iter().flatten().collect())
}
