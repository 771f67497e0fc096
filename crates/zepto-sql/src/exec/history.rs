//! Queries over memory and Parquet history, transparently.
//!
//! Before a plan runs, every scan of a table whose history files overlap the scan's time range
//! is replaced by a scan of one in-memory table holding exactly what the scan can read: the
//! history rows the reader returns after file and row-group pruning (time and partition key),
//! followed by the in-memory rows of the same keys and time range, partitioned and time-sorted
//! like any table. Every operator (partition-wise aggregation, ASOF merges, LATEST ON, window
//! functions) then runs unchanged. Only the scan's columns are decoded (plus the key and
//! timestamp the table layout needs).
//!
//! A scan whose time range misses the history (the usual real-time query) is left alone and
//! pays nothing.

use super::scan::pieces;
use crate::error::{Result, SqlError};
use crate::plan::{Plan, ScanRange};
use std::borrow::Cow;
use std::sync::Arc;
use zepto_storage::{Column, Schema, Table, TableOptions};

/// Whether `table`'s history has files a scan over `range` must read.
fn reads_history(table: &Table, range: &ScanRange) -> bool {
    table.history().overlapping(range.ts_lo, range.ts_hi).next().is_some()
}

fn any_history(p: &Plan) -> bool {
    match p {
        Plan::Scan { table, range, .. } => reads_history(table, range),
        p => p.inputs().into_iter().any(any_history),
    }
}

/// `plan` with its history scans materialized (borrowed as is when there are none).
pub fn resolve(plan: &Plan) -> Result<Cow<'_, Plan>> {
    if !any_history(plan) {
        return Ok(Cow::Borrowed(plan));
    }
    Ok(Cow::Owned(rewrite(plan.clone())?))
}

fn rewrite(p: Plan) -> Result<Plan> {
    match p {
        Plan::Scan { table, columns, range } if reads_history(&table, &range) => {
            let (table, columns) = materialize(&table, &columns, &range)?;
            Ok(Plan::Scan { table, columns, range })
        }
        p => p.map_inputs(rewrite),
    }
}

/// One table with what a scan of `table` over `columns` and `range` reads, from history and
/// memory, and the scan's columns renumbered into it.
fn materialize(table: &Table, columns: &[usize], range: &ScanRange) -> Result<(Arc<Table>, Vec<usize>)> {
    let reader = table
        .history_reader()
        .ok_or_else(|| SqlError::Internal(format!("table '{}' has history but no reader", table.name)))?;
    // The scan's columns plus the layout columns, in schema order.
    let mut need: Vec<usize> = columns.iter().copied().chain(table.key_col).chain(table.ts_col).collect();
    need.sort_unstable();
    need.dedup();
    let schema = Schema { columns: need.iter().map(|&c| table.schema.columns[c].clone()).collect() };
    let name_of = |c: Option<usize>| c.map(|i| table.schema.columns[i].name.clone());
    let opts = TableOptions { partition_key: name_of(table.key_col), timestamp: name_of(table.ts_col) };
    let mut out = Table::new(&table.name, schema, &opts)?;
    let rows = reader.read(table, &need, range.keys.as_deref(), range.ts_lo, range.ts_hi)?;
    for (_, cols) in rows.parts {
        super::interrupt::check()?;
        out.append(cols)?;
    }
    for piece in pieces(table, range) {
        let r = &piece.range;
        let cols: Vec<Column> = need.iter().map(|&c| piece.part.columns[c].slice(r.start, r.len())).collect();
        out.append(cols)?;
    }
    let remap = columns
        .iter()
        .map(|c| need.iter().position(|n| n == c))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| SqlError::Internal("a scan column went missing".into()))?;
    Ok((Arc::new(out), remap))
}
