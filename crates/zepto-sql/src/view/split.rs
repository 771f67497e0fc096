//! A view's query taken apart for upkeep: the one GROUP BY over a (filtered) scan of the base
//! table, which is kept as partial states, and the plan above it, which runs over the
//! finished groups at each read.

use crate::error::{Result, SqlError};
use crate::plan::physical::scan_shape;
use crate::plan::{AggCall, BExpr, Plan, ScanRange};
use std::sync::Arc;
use zepto_storage::{ColumnDef, Schema, Table, TableOptions};

/// The parts of a view's query (see the module docs).
pub(crate) struct Split {
    /// The base table's name.
    pub base: String,
    /// Schema positions of the base columns the aggregate reads, in scan order.
    pub columns: Vec<usize>,
    /// The scan's keys and time range (the WHERE clause pushed into it).
    pub range: ScanRange,
    /// The filters above the scan, nearest first, over the scan's columns.
    pub filters: Vec<BExpr>,
    /// Group keys, over the scan's columns.
    pub keys: Vec<BExpr>,
    /// Aggregates (every one mergeable), over the scan's columns.
    pub aggs: Vec<AggCall>,
    /// The plan above the aggregate, scanning `groups` where the aggregate was.
    pub top: Plan,
    /// An empty table of the aggregate's output (keys, then aggregates): what `top` reads.
    pub groups: Arc<Table>,
}

fn refused(what: &str) -> SqlError {
    SqlError::plan(format!("a materialized view cannot keep this query incrementally: {what}"), None)
}

/// Take an optimized view query apart, or say what in it is not incremental.
pub(crate) fn split(plan: Plan) -> Result<Split> {
    let scans = count(&plan, &|p| matches!(p, Plan::Scan { .. }));
    let aggregates = count(&plan, &|p| matches!(p, Plan::Aggregate { .. }));
    if aggregates == 0 {
        return Err(refused(
            "it has no GROUP BY, SAMPLE BY or aggregate (a view keeps aggregates; query the table for its rows)",
        ));
    }
    if scans != 1 || aggregates != 1 {
        return Err(refused("it reads more than one table or aggregates twice (joins, unions, subqueries in FROM)"));
    }
    let (agg, top) = take_aggregate(plan);
    let Some(Plan::Aggregate { input, keys, aggs, .. }) = agg else {
        return Err(SqlError::Internal("a counted aggregate was not found".into()));
    };
    let Some(s) = scan_shape(&input) else {
        return Err(refused(
            "its aggregate reads something computed from the table (window functions, LATEST ON, DISTINCT)",
        ));
    };
    if let Some(a) = aggs.iter().find(|a| !a.mergeable()) {
        return Err(refused(&format!(
            "{}{} does not merge from partial results (count, sum, min, max, avg, first, last, arg_min, arg_max, vwap and the variance family do)",
            format!("{:?}", a.func).to_lowercase(),
            if a.distinct { " DISTINCT" } else { "" }
        )));
    }
    if crate::system::is_catalog_table(s.table.name()) {
        return Err(refused("it reads a system catalog"));
    }
    let groups = Arc::new(groups_table(&keys, &aggs)?);
    let width = keys.len() + aggs.len();
    let top = put_back(top, &groups, width);
    Ok(Split {
        base: s.table.name().to_string(),
        columns: s.columns.to_vec(),
        range: s.range.clone(),
        filters: s.filters.iter().map(|f| (*f).clone()).collect(),
        keys,
        aggs,
        top,
        groups,
    })
}

impl Split {
    /// Whether output column `out` of the view is the base table's column `base_col` as a
    /// group key, passed through unchanged to every row (projections, filters, sorts and
    /// limits above the groups keep it; anything else computes it or mixes rows).
    pub(crate) fn passes_key_through(&self, out: usize, base_col: usize) -> bool {
        let Some(k) = passed_through(&self.top, out) else { return false };
        matches!(self.keys.get(k), Some(BExpr::Col(c, _)) if self.columns.get(*c) == Some(&base_col))
    }
}

/// The column of the groups' scan that output column `i` of `p` (the plan above it) is, row
/// for row and unchanged; `None` when a node computes it or mixes rows (a window, a fill).
fn passed_through(p: &Plan, i: usize) -> Option<usize> {
    match p {
        Plan::Scan { columns, .. } => columns.get(i).copied(),
        Plan::Project { exprs, input } => match exprs.get(i)? {
            BExpr::Col(j, _) => passed_through(input, *j),
            _ => None,
        },
        Plan::Filter { input, .. } | Plan::Sort { input, .. } | Plan::Limit { input, .. } => passed_through(input, i),
        _ => None,
    }
}

/// How many nodes of `p` satisfy `f`.
fn count(p: &Plan, f: &dyn Fn(&Plan) -> bool) -> usize {
    usize::from(f(p)) + p.inputs().iter().map(|i| count(i, f)).sum::<usize>()
}

/// `p` without its aggregate (a placeholder in its place), and the aggregate.
fn take_aggregate(p: Plan) -> (Option<Plan>, Plan) {
    if matches!(p, Plan::Aggregate { .. }) {
        return (Some(p), placeholder());
    }
    let mut found = None;
    let rest = p
        .map_inputs(|i| {
            let (a, r) = take_aggregate(i);
            found = found.take().or(a);
            Ok::<_, std::convert::Infallible>(r)
        })
        .unwrap_or_else(|never| match never {});
    (found, rest)
}

fn placeholder() -> Plan {
    Plan::Values { rows: Vec::new(), width: usize::MAX }
}

/// `p` with its placeholder a scan of every column of `groups`.
fn put_back(p: Plan, groups: &Arc<Table>, width: usize) -> Plan {
    if matches!(p, Plan::Values { width: usize::MAX, .. }) {
        return Plan::Scan { table: groups.clone(), columns: (0..width).collect(), range: ScanRange::default() };
    }
    p.map_inputs(|i| Ok::<_, std::convert::Infallible>(put_back(i, groups, width)))
        .unwrap_or_else(|never| match never {})
}

/// `p` reading `rows` (a table of the groups' layout) where it read `groups`.
pub(crate) fn reading(p: Plan, groups: &Arc<Table>, rows: &Arc<Table>) -> Plan {
    match p {
        Plan::Scan { table, columns, range } if Arc::ptr_eq(&table, groups) => {
            Plan::Scan { table: rows.clone(), columns, range }
        }
        p => p
            .map_inputs(|i| Ok::<_, std::convert::Infallible>(reading(i, groups, rows)))
            .unwrap_or_else(|never| match never {}),
    }
}

/// An empty table of the aggregate's output: keys `k0..`, aggregates `a0..`.
fn groups_table(keys: &[BExpr], aggs: &[AggCall]) -> Result<Table> {
    let columns = keys
        .iter()
        .enumerate()
        .map(|(i, k)| ColumnDef { name: format!("k{i}"), data_type: k.data_type() })
        .chain(aggs.iter().enumerate().map(|(i, a)| ColumnDef { name: format!("a{i}"), data_type: a.ty }))
        .collect();
    Ok(Table::new("view groups", Schema { columns }, &TableOptions::default())?)
}
