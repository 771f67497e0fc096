//! The executor: runs a [`Plan`] bottom-up, one operator at a time over whole columns
//! (kdb-style column-at-a-time), with typed kernels and no per-row heap allocation on the hot
//! paths (scans, filters, arithmetic, hash aggregation, hash joins).

pub mod accum;
pub mod aggregate;
mod ann;
pub mod asof;
mod asof_bounds;
mod asof_walk;
mod bucket_topn;
mod bucket_walk;
mod bundle;
pub mod context;
pub mod eval;
mod exchange;
mod fill;
pub(crate) mod hash;
pub mod history;
mod join;
mod keyless;
pub mod latest;
mod merge_cursor;
mod merge_order;
mod merge_split;
mod nearest;
mod partials;
mod partitioned;
mod prefetch;
mod project_set;
mod scan;
mod scan_filter;
mod setops;
pub mod sort;
mod topn;
mod window;
mod window_join;

use crate::error::{Result, SqlError};
pub use crate::eval::{and_validity, cast, cmp, mask_indices, numeric, Batch};
use crate::interrupt::RunContext;
use crate::parser::ast::JoinKind;
use crate::plan::{AggCall, AggHow, AsofHow, BExpr, LatestHow, PairHow, PhysicalPlan, Plan, SortHow, WindowHow};
pub use context::{ExecContext, OpStats};
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, DataType};

/// Run a physical plan to one batch, as part of `query`.
pub fn execute(query: &RunContext, plan: &PhysicalPlan) -> Result<Batch> {
    let ctx = ExecContext::new(query);
    let plan = history::resolve(&ctx, plan.root())?;
    run(&ctx, &plan)
}

/// The executor as the binder sees it ([`crate::plan::binder::Execute`]): it runs the
/// uncorrelated subqueries that binding turns into constants.
pub struct Executor;

impl crate::plan::binder::Execute for Executor {
    fn execute(&self, run: &RunContext, plan: &PhysicalPlan) -> Result<Batch> {
        execute(run, plan)
    }
}

/// Below this many rows per batch on average, a result's batches are made one.
pub const MIN_CHUNK_ROWS: usize = 64;

/// The plan's result as batches of the same columns, one after another (at least one batch,
/// which carries the column types when there are no rows). A query's final result is kept this
/// way, as the operators whose output is naturally per partition produce it: a scan's whole
/// partitions and a partition-wise LEFT ASOF JOIN's left columns are the table's own columns,
/// shared rather than copied into one column. Every other plan gives one batch.
pub fn execute_chunks(query: &RunContext, plan: &PhysicalPlan) -> Result<Vec<Batch>> {
    let ctx = ExecContext::new(query);
    let plan = history::resolve(&ctx, plan.root())?;
    run_chunks(&ctx, &plan).map(tidy_chunks)
}

/// EXPLAIN ANALYZE: run the plan with a profile, and print the plan that ran (history scans
/// read into memory) with each node's operator, rows, batches, time and peak memory.
pub fn explain_analyze(
    query: &RunContext,
    plan: &PhysicalPlan,
    names: &[crate::plan::Field],
) -> Result<(String, Vec<Batch>)> {
    let ctx = ExecContext::profiling(query);
    let plan = history::resolve(&ctx, plan.root())?;
    let out = run_chunks(&ctx, &plan).map(tidy_chunks)?;
    let text = plan.explain_with(names, &|node| ctx.stats(node).map(|s| describe_stats(&s)));
    Ok((text, out))
}

fn describe_stats(s: &OpStats) -> String {
    if s.fused {
        return "(fused into its parent)".to_string();
    }
    let ms = s.elapsed.as_secs_f64() * 1e3;
    format!("(rows={} batches={} time={ms:.3} ms peak_mem={} bytes)", s.rows, s.batches, s.peak_bytes)
}

/// Empty batches (a filter's) are dropped, but one is kept: it carries the column types. And
/// batches of a few rows (a GROUP BY per partition) are not worth keeping apart: below
/// MIN_CHUNK_ROWS on average, the result is one batch (a cheap copy of few rows).
fn tidy_chunks(mut out: Vec<Batch>) -> Vec<Batch> {
    if out.len() > 1 {
        let first = out.remove(0);
        out.retain(|b| b.rows > 0);
        if first.rows > 0 || out.is_empty() {
            out.insert(0, first);
        }
    }
    let rows: usize = out.iter().map(|b| b.rows).sum();
    if out.len() > 1 && rows < out.len() * MIN_CHUNK_ROWS {
        out = vec![concat_chunks(out)];
    }
    debug_assert!(!out.is_empty(), "a result has at least one batch");
    out
}

/// One node (an operator's input) to one batch.
pub(crate) fn run(ctx: &ExecContext, plan: &Plan) -> Result<Batch> {
    ctx.check()?;
    let started = ctx.start();
    let (op, b) = execute_node(ctx, plan)?;
    ctx.finish(started, plan, op, b.rows, 1);
    debug_assert_eq!(op, plan.operator(), "the executor runs the operator the planner chose");
    ctx.check()?;
    Ok(b)
}

/// One node to batches of the same columns (at least one).
fn run_chunks(ctx: &ExecContext, plan: &Plan) -> Result<Vec<Batch>> {
    ctx.check()?;
    let started = ctx.start();
    let (op, out) = chunks_node(ctx, plan)?;
    debug_assert!(!out.is_empty(), "{op} gave no batch");
    ctx.finish(started, plan, op, out.iter().map(|b| b.rows).sum(), out.len());
    debug_assert_eq!(op, plan.operator(), "the executor runs the operator the planner chose");
    ctx.check()?;
    Ok(out)
}

/// The operators whose output is naturally per partition give their batches; every other
/// node gives one.
fn chunks_node(ctx: &ExecContext, plan: &Plan) -> Result<(&'static str, Vec<Batch>)> {
    Ok(match plan {
        Plan::Scan { table, columns, range } => {
            ("Scan", per_run(table, range, |run| scan::pieces_batch(table, columns, run))?)
        }
        // Row-local expressions are evaluated batch by batch; a column reference shares its
        // input's column.
        Plan::Project { input, exprs } if exprs.iter().all(BExpr::is_row_local) => {
            ("Project", run_chunks(ctx, input)?.iter().map(|b| project(ctx, b, exprs)).collect::<Result<_>>()?)
        }
        Plan::Filter { input, pred } if pred.is_row_local() => match &**input {
            Plan::Scan { table, columns, range } => {
                ctx.fused(input);
                ("Filter", filtered_scan(ctx, table, columns, range, pred)?)
            }
            _ => ("Filter", run_chunks(ctx, input)?.iter().map(|b| filter(ctx, b, pred)).collect::<Result<_>>()?),
        },
        Plan::AsofJoin { left, right, how: AsofHow::PartitionMerge, .. } => {
            let (_, _, spec) = asof_spec(plan)?;
            ctx.fused(left);
            ctx.fused(right);
            ("AsofMergeJoin", asof::partitioned_chunks(ctx, left, right, &spec)?)
        }
        Plan::WindowJoin { left, right, aggs, how: PairHow::PartitionWise, .. } => {
            ctx.fused(left);
            ctx.fused(right);
            ("PartitionWindowJoin", window_join::partitioned_chunks(ctx, left, right, &band(plan)?, aggs)?)
        }
        Plan::Aggregate { input, keys, aggs, how: AggHow::PartitionWise { runs, ends } } => {
            ctx.fused(input);
            ("PartitionAggregate", partitioned::aggregate_chunks(ctx, input, keys, aggs, *runs, *ends)?)
        }
        Plan::Window { input, calls, how: WindowHow::PartitionWise } => {
            ctx.fused(input);
            ("PartitionWindow", window::partitioned_chunks(ctx, input, calls)?)
        }
        _ => {
            let (op, b) = execute_node(ctx, plan)?;
            (op, vec![b])
        }
    })
}

/// An `AsofJoin` node's inputs and spec.
fn asof_spec(plan: &Plan) -> Result<(&Plan, &Plan, asof::AsofSpec<'_>)> {
    asof::AsofSpec::of(plan).ok_or_else(|| SqlError::Internal("not an ASOF JOIN node".into()))
}

/// A `WindowJoin` node's band.
fn band(plan: &Plan) -> Result<window_join::Band<'_>> {
    match plan {
        Plan::WindowJoin { left_keys, right_keys, left_ts, right_ts, lo, hi, .. } => {
            Ok(window_join::Band { left_keys, right_keys, left_ts, right_ts, lo: *lo, hi: *hi })
        }
        _ => Err(SqlError::Internal("not a WINDOW JOIN node".into())),
    }
}

/// The positions of the rows of `b` that every predicate of `preds` keeps, each evaluated
/// only over the rows the ones before it kept: a later predicate never sees a row an earlier
/// one dropped, not even to fail on it (a tenant scope's filter comes first, see
/// [`crate::access`]). `None` without predicates (every row).
pub(crate) fn rows_passing(ctx: &ExecContext, b: &Batch, preds: &[&BExpr]) -> Result<Option<Vec<u32>>> {
    let mut kept: Option<Vec<u32>> = None;
    for pred in preds {
        let rows = match &kept {
            None => eval::selection(ctx, pred, b)?,
            Some(prev) if prev.is_empty() => break,
            Some(prev) => {
                let sub = b.take(prev);
                let hit = eval::selection(ctx, pred, &sub)?;
                hit.iter().filter_map(|&j| prev.get(j as usize).copied()).collect()
            }
        };
        kept = Some(rows);
    }
    Ok(kept)
}

/// A filter over a scan, run fused ([`scan_filter`]): a batch per run of the scan's units, as
/// the scan alone hands them out, of the rows `pred` keeps. The runs are filtered on every
/// core: a TopN or a projection over a filter that keeps few rows is the filter's time.
fn filtered_scan(
    ctx: &ExecContext,
    table: &zepto_storage::Table,
    columns: &[usize],
    range: &crate::plan::ScanRange,
    pred: &BExpr,
) -> Result<Vec<Batch>> {
    let us = scan::units(table, range);
    if us.is_empty() {
        return Ok(vec![scan_filter::filtered_run::<scan::Unit>(ctx, table, columns, &[], pred)?]);
    }
    let rows = us.iter().map(scan::ScanPart::rows).sum();
    let one = |c: &ExecContext, run: &&[scan::Unit]| {
        scan_filter::filtered_run(c, table, columns, &run.iter().collect::<Vec<_>>(), pred)
    };
    ctx.par_map(&bundle::output_runs(&us), rows, one)
}

/// `batch` of each output run of the units a scan of `table` over `range` reads
/// ([`bundle::output_runs`]: whole large partitions and whole packs alone, runs of small
/// partitions together); one batch of no unit when there is none.
fn per_run(
    table: &zepto_storage::Table,
    range: &crate::plan::ScanRange,
    batch: impl Fn(&[&scan::Unit]) -> Result<Batch>,
) -> Result<Vec<Batch>> {
    let us = scan::units(table, range);
    if us.is_empty() {
        return Ok(vec![batch(&[])?]);
    }
    bundle::output_runs(&us).into_iter().map(|run| batch(&run.iter().collect::<Vec<_>>())).collect()
}

/// A `Sort` node's rows, the way the planner chose to sort them.
fn sort_node(
    ctx: &ExecContext,
    input: &Plan,
    keys: &[crate::plan::SortKey],
    limit: Option<usize>,
    how: &SortHow,
) -> Result<(&'static str, Batch)> {
    Ok(match (how, limit) {
        (SortHow::Ann(a), _) => ("AnnTopN", sort::sorted(ctx, ann_input(ctx, input, a)?, keys, limit)?),
        (SortHow::Buckets(b), Some(k)) => (b.name(), bucket_topn::top(ctx, input, keys, k, b)?),
        (SortHow::Full, Some(k)) => ("TopN", top_rows(ctx, input, keys, k)?),
        (SortHow::Full | SortHow::Buckets(_), None) => ("Sort", sort::sorted(ctx, run(ctx, input)?, keys, limit)?),
    })
}

/// The first `k` rows of `input` by `keys`, from its chunks as they are (`topn.rs`: no copy of
/// the table to keep `k` rows), or sorting them all where the first key has no ranks.
fn top_rows(ctx: &ExecContext, input: &Plan, keys: &[crate::plan::SortKey], k: usize) -> Result<Batch> {
    let chunks = run_chunks(ctx, input)?;
    match topn::top(ctx, &chunks, keys, k)? {
        Some(b) => Ok(b),
        None => sort::sorted(ctx, concat_chunks(chunks), keys, Some(k)),
    }
}

/// A `Filter` node's rows as one batch: fused with the scan under it when there is one.
fn filter_node(ctx: &ExecContext, input: &Plan, pred: &BExpr) -> Result<Batch> {
    match input {
        Plan::Scan { table, columns, range } if pred.is_row_local() => {
            ctx.fused(input);
            Ok(concat_chunks(filtered_scan(ctx, table, columns, range, pred)?))
        }
        _ => filter(ctx, &run(ctx, input)?, pred),
    }
}

/// The rows of `b` where `pred` holds.
fn filter(ctx: &ExecContext, b: &Batch, pred: &BExpr) -> Result<Batch> {
    Ok(b.keep(&eval::selection(ctx, pred, b)?))
}

/// `exprs` over `b`; a plain column reference shares the input column.
/// The input of an index-backed TopN: the projection (its sort key a vector distance) of the
/// candidate rows the index finds in the (filtered) scan under it, run fused.
fn ann_input(ctx: &ExecContext, input: &Plan, a: &crate::plan::AnnSearch) -> Result<Batch> {
    let internal = || SqlError::Internal("an index TopN over something other than a projected scan".into());
    let Plan::Project { input: scanned, exprs } = input else { return Err(internal()) };
    let s = crate::plan::physical::scan_shape(scanned).ok_or_else(internal)?;
    ctx.fused(input);
    project(ctx, &ann::candidates(ctx, &s, a)?, exprs)
}

pub(crate) fn project(ctx: &ExecContext, b: &Batch, exprs: &[BExpr]) -> Result<Batch> {
    let cols = exprs
        .iter()
        .map(|e| match e {
            BExpr::Col(i, _) => {
                b.columns.get(*i).cloned().ok_or_else(|| SqlError::Internal(format!("column {i} out of range")))
            }
            e => eval::eval(ctx, e, b).map(|c| Arc::new(c.into_owned())),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Batch::shared(cols, b.rows))
}

/// A partition-wise operator's batches, or one empty batch of `types` when no partition gave
/// one (a result has at least one batch: it carries the column types).
pub(super) fn or_empty(outs: Vec<Batch>, types: &[zepto_storage::DataType]) -> Result<Vec<Batch>> {
    if outs.is_empty() {
        return Ok(vec![Batch::new(types.iter().map(|&t| Column::nulls(t, 0)).collect(), 0)]);
    }
    Ok(outs)
}

/// Column `j` of `batches`, one after another.
fn concat_column(batches: &[Batch], j: usize) -> Arc<Column> {
    Arc::new(Column::concat(&batches.iter().map(|b| &*b.columns[j]).collect::<Vec<_>>()))
}

/// Rows from which [`concat_chunks`] copies its columns on every core.
const PAR_CONCAT_ROWS: usize = 16 << 10;

/// Batches of the same columns as one batch (shared when there is one); from
/// `PAR_CONCAT_ROWS` rows a column per item of the pool, on every core (a caller joining a
/// query's many small per-partition batches is otherwise the one thread working). It copies a
/// finished result, outside any statement: a session's parallel threshold does not apply.
pub fn concat_chunks(mut chunks: Vec<Batch>) -> Batch {
    if chunks.len() == 1 {
        return chunks.remove(0);
    }
    let rows = chunks.iter().map(|b| b.rows).sum();
    let cols: Vec<usize> = (0..chunks.first().map_or(0, |b| b.columns.len())).collect();
    let columns = if rows >= PAR_CONCAT_ROWS && cols.len() > 1 {
        zepto_storage::par::map(&cols, |&j| concat_column(&chunks, j))
    } else {
        cols.iter().map(|&j| concat_column(&chunks, j)).collect()
    };
    Batch::shared(columns, rows)
}

/// Partition results one after another inside a query (`types`: the columns' types, for no
/// partitions): a column per item of [`ExecContext::par_map`], so the columns go to every core.
pub(crate) fn concat_batches(ctx: &ExecContext, outs: &[Batch], types: &[zepto_storage::DataType]) -> Result<Batch> {
    let rows = outs.iter().map(|b| b.rows).sum();
    let column = |&j: &usize| -> Result<Arc<Column>> {
        Ok(if outs.is_empty() { Arc::new(Column::nulls(types[j], 0)) } else { concat_column(outs, j) })
    };
    let cols = ctx.par_map(&(0..types.len()).collect::<Vec<_>>(), rows, |_, j| column(j))?;
    Ok(Batch::shared(cols, rows))
}

/// One node to one batch, by the operator the physical planner chose.
fn execute_node(ctx: &ExecContext, plan: &Plan) -> Result<(&'static str, Batch)> {
    Ok(match plan {
        Plan::Scan { table, columns, range } => ("Scan", scan::scan(table, columns, range)?),
        Plan::Values { rows, width } => ("Values", values(ctx, rows, *width)?),
        Plan::Series { start, step, count, data_type } => ("Series", series(ctx, *start, *step, *count, *data_type)?),
        Plan::Filter { input, pred } => ("Filter", filter_node(ctx, input, pred)?),
        Plan::Project { input, exprs } => ("Project", project(ctx, &run(ctx, input)?, exprs)?),
        Plan::Aggregate { input, keys, aggs, how } => aggregate_node(ctx, input, keys, aggs, how)?,
        Plan::Join { kind: JoinKind::Window, .. } => {
            return Err(SqlError::plan("WINDOW JOIN needs aggregates over the right side in the select list", None))
        }
        Plan::Join { left, right, kind, left_keys, right_keys, residual } => {
            let (l, r) = (run(ctx, left)?, run(ctx, right)?);
            let op = if left_keys.is_empty() { "NestedLoopJoin" } else { "HashJoin" };
            (op, join::join(ctx, &l, &r, *kind, left_keys, right_keys, residual.as_ref())?)
        }
        Plan::AsofJoin { left, right, how, .. } => {
            let (_, _, spec) = asof_spec(plan)?;
            match how {
                AsofHow::PartitionMerge => {
                    ctx.fused(left);
                    ctx.fused(right);
                    ("AsofMergeJoin", asof::partitioned(ctx, left, right, &spec)?)
                }
                AsofHow::KeySearch => {
                    ("AsofSearchJoin", asof::asof_join(ctx, &run(ctx, left)?, &run(ctx, right)?, spec)?)
                }
            }
        }
        Plan::Sort { input, keys, limit, how } => sort_node(ctx, input, keys, *limit, how)?,
        Plan::Limit { input, offset, limit, from_end } => {
            let b = run(ctx, input)?;
            let (offset, limit) = if *from_end { from_start(b.rows, *offset, *limit) } else { (*offset, *limit) };
            ("Limit", self::limit(b, offset, limit))
        }
        Plan::Latest { input, keys, ts, how } => match how {
            LatestHow::PartitionTails => {
                ctx.fused(input);
                ("LatestTails", latest::tails(ctx, input, keys, ts)?)
            }
            LatestHow::HashByKey => ("LatestHash", latest::by_hash(ctx, run(ctx, input)?, keys, ts)?),
        },
        Plan::SpliceJoin { left, right, left_keys, right_keys, left_ts, right_ts } => {
            let (l, r) = (run(ctx, left)?, run(ctx, right)?);
            ("SpliceJoin", asof::splice_join(ctx, &l, &r, left_keys, right_keys, left_ts, right_ts)?)
        }
        Plan::RangeJoin { left, right, left_keys, right_keys, left_ts, right_ts, lo, hi, outer } => {
            let (l, r) = (run(ctx, left)?, run(ctx, right)?);
            let band = window_join::Band { left_keys, right_keys, left_ts, right_ts, lo: *lo, hi: *hi };
            ("RangeJoin", window_join::range_join(ctx, &l, &r, &band, *outer)?)
        }
        Plan::WindowJoin { left, right, aggs, how, .. } => {
            let band = band(plan)?;
            match how {
                PairHow::PartitionWise => {
                    ctx.fused(left);
                    ctx.fused(right);
                    ("PartitionWindowJoin", window_join::partitioned(ctx, left, right, &band, aggs)?)
                }
                PairHow::Sweep => {
                    ("WindowJoin", window_join::window_join(ctx, run(ctx, left)?, &run(ctx, right)?, &band, aggs)?)
                }
            }
        }
        Plan::Fill { input, spec } => ("SampleFill", fill::fill(run(ctx, input)?, spec)?),
        Plan::Exchange { input, remotes, cluster, .. } => {
            ("Exchange", exchange::exchange(ctx, input, remotes, cluster)?)
        }
        Plan::PartialAggregate { input, keys, aggs } => {
            ("PartialAggregate", exchange::partial_node(ctx, input, keys, aggs)?)
        }
        Plan::MergeAggregate { input, nkeys, aggs, empty } => {
            ("MergeAggregate", exchange::merge_aggregate(ctx, &run(ctx, input)?, *nkeys, aggs, empty)?)
        }
        Plan::Window { input, calls, how } => match how {
            WindowHow::PartitionWise => {
                ctx.fused(input);
                ("PartitionWindow", window::partitioned(ctx, input, calls)?)
            }
            WindowHow::Whole => ("Window", window::window(ctx, run(ctx, input)?, calls)?),
        },
        Plan::ProjectSet { input, calls } => ("ProjectSet", project_set::project_set(ctx, &run(ctx, input)?, calls)?),
        Plan::Distinct { input } => {
            let b = run(ctx, input)?;
            let idx = hash::distinct_rows(&b);
            ("Distinct", hash::keys_take(&b, &idx))
        }
        Plan::SetOp { op, all, left, right } => {
            let (l, r) = (run(ctx, left)?, run(ctx, right)?);
            ("SetOp", setops::set_op(*op, *all, l, r)?)
        }
    })
}

/// A GROUP BY node, by the strategy the planner chose.
fn aggregate_node(
    ctx: &ExecContext,
    input: &Plan,
    keys: &[BExpr],
    aggs: &[AggCall],
    how: &AggHow,
) -> Result<(&'static str, Batch)> {
    Ok(match how {
        AggHow::Hash => ("HashAggregate", aggregate::aggregate(ctx, &run(ctx, input)?, keys, aggs)?),
        AggHow::PartitionWise { runs, ends } => {
            ctx.fused(input);
            ("PartitionAggregate", concat_chunks(partitioned::aggregate_chunks(ctx, input, keys, aggs, *runs, *ends)?))
        }
        AggHow::HistoryPartials => {
            ctx.fused(input);
            ("HistoryAggregate", partials::aggregate(ctx, input, keys, aggs, partials::Merge::Hash)?)
        }
        AggHow::Partials { fold } => {
            ctx.fused(input);
            // The planner's promise, checked: a fold has no keys and folds every call.
            if *fold && !(keys.is_empty() && aggs.iter().all(AggCall::folds)) {
                return Err(SqlError::Internal("a fold planned for keys or calls that do not fold".into()));
            }
            let how = if *fold { partials::Merge::Fold } else { partials::Merge::Hash };
            ("ParallelAggregate", partials::aggregate(ctx, input, keys, aggs, how)?)
        }
        AggHow::TimeMerge { partials: true } => {
            ctx.fused(input);
            ("TimeMergeAggregate", partials::aggregate(ctx, input, keys, aggs, partials::Merge::InTime)?)
        }
        AggHow::TimeMerge { partials: false } => {
            ("TimeMergeAggregate", aggregate::aggregate_in_order(ctx, &run(ctx, input)?, keys, aggs)?)
        }
    })
}

/// Literal rows.
fn values(ctx: &ExecContext, rows: &[Vec<BExpr>], width: usize) -> Result<Batch> {
    let empty = Batch::new(vec![], 1);
    if width == 0 {
        return Ok(Batch::new(vec![], rows.len()));
    }
    let mut cols = Vec::with_capacity(width);
    for j in 0..width {
        let parts =
            rows.iter().map(|r| eval::eval(ctx, &r[j], &empty).map(|c| c.into_owned())).collect::<Result<Vec<_>>>()?;
        let refs: Vec<&Column> = parts.iter().collect();
        cols.push(Column::concat(&refs));
    }
    Ok(Batch::new(cols, rows.len()))
}

/// `count` values `start, start + step, ...` of `data_type` (BIGINT or TIMESTAMP; the binder
/// made sure they stay in range). The memory is reserved against the query's limit first.
fn series(ctx: &ExecContext, start: i64, step: i64, count: u64, data_type: DataType) -> Result<Batch> {
    let too_big = || SqlError::plan(format!("a series of {count} rows is too large"), None);
    let n = usize::try_from(count).map_err(|_| too_big())?;
    ctx.run_context().reserve(count.checked_mul(8).ok_or_else(too_big)?)?;
    let mut v: Vec<i64> = Vec::new();
    v.try_reserve_exact(n).map_err(|_| too_big())?;
    for chunk in 0..n.div_ceil(1 << 16) {
        ctx.check()?;
        let from = chunk << 16;
        v.extend((from..n.min(from + (1 << 16))).map(|i| start.wrapping_add((i as i64).wrapping_mul(step))));
    }
    let data = match data_type {
        DataType::Timestamp => ColumnData::Timestamp(v.into()),
        _ => ColumnData::Int64(v.into()),
    };
    Ok(Batch::new(vec![Column::from_data(data)], n))
}

/// Rows `offset..offset + limit` of `b`.
/// A range counted from the end of `n` rows (skip `offset` last rows, keep `limit` before
/// them) as one counted from the start.
fn from_start(n: usize, offset: usize, limit: Option<usize>) -> (usize, Option<usize>) {
    let end = n.saturating_sub(offset);
    let start = limit.map_or(0, |l| end.saturating_sub(l));
    (start, Some(end - start))
}

fn limit(b: Batch, offset: usize, limit: Option<usize>) -> Batch {
    let start = offset.min(b.rows);
    let end = match limit {
        Some(l) => start.saturating_add(l).min(b.rows),
        None => b.rows,
    };
    if start == 0 && end == b.rows {
        return b;
    }
    let idx: Vec<u32> = (start as u32..end as u32).collect();
    b.take(&idx)
}
