//! One accumulator per aggregate: the only place an aggregate's meaning is written.
//!
//! Every operator that aggregates drives the same [`Accumulator`]:
//! - hash GROUP BY: rows go to groups by id ([`Rows::Ids`]);
//! - groups that are runs of neighbouring rows (one group per partition, time buckets in a
//!   time-sorted partition): [`Rows::Runs`], which each accumulator reduces slice by slice
//!   (multi-lane loops the compiler vectorizes, no scatter);
//! - partial aggregates (history row groups today, cluster nodes next): [`Accumulator::state`]
//!   gives each group's partial state as columns, and [`Accumulator::merge`] folds such
//!   columns into groups, so `update`, `state`, `merge`, `finish` is the partial/final split;
//! - window frames and WINDOW JOIN windows: [`Accumulator::frames`], an aggregate over every
//!   position's `[start, end)` range. Frame edges only move forward, so most aggregates slide
//!   (add the rows entering, retract the rows leaving; integer sums and float sums and
//!   averages take differences of prefix sums, the floats' in double-double: `frame_sums.rs`);
//!   the default gathers each frame's rows and aggregates them as one group, which is right
//!   for any aggregate.
//!
//! [`aggregate_all`] runs a list of aggregates over the same rows, and lets two of them share
//! a pass where their module offers one (`min` and `max` of a column: [`min_max::both`];
//! `sum(p * s)` and `sum(s)`: `product.rs`). A `sum` or `avg` of a product of two columns reads
//! them in place, without a column of products (`product.rs`).
//!
//! Adding an aggregate: a variant of [`AggFunc`] with its name and types in
//! `expr::functions` (and whether its partials merge: [`AggFunc::mergeable`]; the planner
//! asks [`AggCall::mergeable`]), and one type
//! here implementing [`Accumulator`], returned by [`accumulator`]. GROUP BY, bars, windows,
//! WINDOW JOIN and the history then all run it; `tests/accumulators.rs` checks it gives one
//! answer through all of them.

mod any_value;
mod arg_extreme;
mod bits;
mod block_runs;
mod count;
mod covariance;
mod dot;
mod dot_blocks;
mod first_last;
mod fold;
mod frame_sums;
mod geometric;
mod holistic;
mod kernels;
mod listing;
mod means;
mod min_max;
mod moments;
mod narrow_runs;
mod product;
mod run_extremes;
mod run_sums;
mod scatter;
mod sum;
mod variance;
mod vwap;

use super::eval::eval;
use super::hash::group_ids;
use super::{Batch, ExecContext};
use crate::error::{Result, SqlError};
use crate::expr::functions::AggFunc;
use crate::plan::{AggCall, BExpr};
pub use fold::OneGroup;
use std::borrow::Cow;
use zepto_storage::{Column, ColumnData, DataType};

pub use kernels::{from_opt_f64, prefix_valid, to_f64};
pub use min_max::both as min_and_max;

/// Which rows feed which group.
#[derive(Debug, Clone, Copy)]
pub enum Rows<'a> {
    /// Row `i` belongs to group `ids[i]`. `dense`: every group has at least one row (as hash
    /// GROUP BY's ids always do), which lets an accumulator skip looking for empty groups.
    Ids {
        /// The group of each row.
        ids: &'a [u32],
        /// Every group has at least one row.
        dense: bool,
    },
    /// Group `g` is rows `starts[g]..starts[g + 1]` (the last ends at `n`); rows are in
    /// designated-time order. `starts` is strictly increasing from 0 (empty when `n == 0`).
    Runs {
        /// First row of each group.
        starts: &'a [u32],
        /// Rows in all.
        n: usize,
    },
}

impl<'a> Rows<'a> {
    /// Rows in groups `ids`, some of which may have no row.
    pub fn sparse(ids: &'a [u32]) -> Rows<'a> {
        Rows::Ids { ids, dense: false }
    }

    /// Rows in groups `ids`, every one of the `ngroups` groups having a row.
    pub fn dense(ids: &'a [u32], ngroups: usize) -> Rows<'a> {
        debug_assert!({
            let mut seen = vec![false; ngroups];
            ids.iter().for_each(|&g| seen[g as usize] = true);
            seen.iter().all(|&s| s)
        });
        Rows::Ids { ids, dense: true }
    }

    /// The number of input rows.
    pub fn len(&self) -> usize {
        match self {
            Rows::Ids { ids, .. } => ids.len(),
            Rows::Runs { n, .. } => *n,
        }
    }

    /// Whether there are no input rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Group id of every row (made from the runs when needed).
    pub fn ids(&self) -> Cow<'_, [u32]> {
        match self {
            Rows::Ids { ids, .. } => Cow::Borrowed(ids),
            Rows::Runs { starts, n } => {
                let mut ids = Vec::with_capacity(*n);
                for (g, (s, e)) in runs(starts, *n).enumerate() {
                    ids.resize(ids.len() + (e - s), g as u32);
                }
                Cow::Owned(ids)
            }
        }
    }
}

/// The `(start, end)` row range of every run.
pub fn runs(starts: &[u32], n: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    debug_assert!(starts.first().is_none_or(|&s| s == 0) && starts.windows(2).all(|w| w[0] < w[1]));
    debug_assert!(starts.last().is_none_or(|&s| (s as usize) < n));
    let ends = starts.iter().skip(1).map(|&s| s as usize).chain(std::iter::once(n));
    starts.iter().map(|&s| s as usize).zip(ends)
}

/// An aggregate's input rows: its evaluated arguments and, for `first`/`last`/`twap`, the
/// column that orders them (the designated timestamp). `sorted`: the rows are already in that
/// order, so "first by time" is "first by position" (always so for [`Rows::Runs`]).
pub struct Input<'a> {
    /// The evaluated arguments, one column each, all of the input's length.
    pub args: Vec<&'a Column>,
    /// The ordering column (designated timestamp) for `first`/`last`/`twap`, if any; for
    /// `arg_min`/`arg_max`, their `v` itself when it is that timestamp (the same column object,
    /// which is how they know a run's ends hold its extremes).
    pub order: Option<&'a Column>,
    /// The rows are already in `order`'s order.
    pub sorted: bool,
}

impl<'a> Input<'a> {
    /// The first argument (every aggregate but `count(*)` has one).
    pub fn arg(&self) -> Result<&'a Column> {
        self.args.first().copied().ok_or_else(|| SqlError::Internal("aggregate without an argument".into()))
    }
}

/// The per-group state of one aggregate. Groups are numbered densely from 0; every call says
/// how many groups there are now (`ngroups`), and state grows to match.
pub trait Accumulator: Send {
    /// Fold `rows` of `input` into their groups.
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()>;
    /// Each group's partial state, one row per group (columns as [`Accumulator::merge`] takes
    /// them). Errors for aggregates whose partials do not merge ([`AggFunc::mergeable`]).
    fn state(&mut self) -> Result<Vec<Column>>;
    /// The partial state of groups `ids` (row `i` is group `ids[i]`, columns as
    /// [`Accumulator::state`] gives them), every group's state left as it is: to finish a few
    /// groups again without taking the state of all. Every id is below the groups merged so
    /// far.
    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>>;
    /// Fold partial states (rows of [`Accumulator::state`] columns, row `i` into group
    /// `ids[i]`) into the groups.
    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()>;
    /// The result of every group.
    fn finish(&mut self) -> Result<Column>;
    /// The aggregate over every position's frame `fs[k]..fe[k]` of `input` (a fresh
    /// accumulator). By default each frame's rows are gathered and aggregated as one group;
    /// aggregates that slide override it.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let (idx, ids) = expand_frames(fs, fe)?;
        let cols: Vec<Column> = input.args.iter().map(|c| c.take(&idx)).collect();
        let order = input.order.map(|o| o.take(&idx));
        let gathered = Input { args: cols.iter().collect(), order: order.as_ref(), sorted: false };
        self.update(&gathered, Rows::sparse(&ids), fs.len())?;
        self.finish()
    }
}

/// What `state` and `merge` answer for an aggregate whose partials do not merge
/// ([`AggFunc::mergeable`]): the planner never asks for them.
fn no_partial_state(func: AggFunc) -> SqlError {
    SqlError::Internal(format!("{func:?} has no partial state"))
}

/// Frame aggregates computed frame by frame touch at most this many (frame, row) pairs, in
/// all (gathered as groups, or read in place as the pair statistics' frames are).
pub(super) const MAX_EXPANDED: usize = 50_000_000;

/// Frames that would touch more than [`MAX_EXPANDED`] rows in all.
pub(super) fn frames_too_long() -> SqlError {
    SqlError::ResourcesExhausted(format!(
        "window frames of this aggregate span more than {MAX_EXPANDED} rows in total; use a bounded ROWS frame"
    ))
}

/// Every frame's rows (`idx`) and the frame each belongs to (`ids`).
fn expand_frames(fs: &[u32], fe: &[u32]) -> Result<(Vec<u32>, Vec<u32>)> {
    let total: usize = fs.iter().zip(fe).map(|(&s, &e)| e.saturating_sub(s) as usize).sum();
    if total > MAX_EXPANDED {
        return Err(frames_too_long());
    }
    let (mut idx, mut ids) = (Vec::with_capacity(total), Vec::with_capacity(total));
    for (k, (&s, &e)) in fs.iter().zip(fe).enumerate() {
        idx.extend(s..e.max(s));
        ids.resize(ids.len() + e.saturating_sub(s) as usize, k as u32);
    }
    Ok((idx, ids))
}

/// How an accumulator will be driven, told when it is built so that it keeps only what that
/// use reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Any sequence of `update`, `merge`, `state` and `finish`.
    Any,
    /// One `update`, then `finish`: no partial state is asked for or merged, so state that only
    /// orders partials (first/last's row times) need not be gathered.
    Once,
}

/// A fresh accumulator for `func` with result type `ty`, for any use.
pub fn accumulator(func: AggFunc, ty: DataType) -> Box<dyn Accumulator> {
    accumulator_for(func, ty, Use::Any)
}

/// A fresh accumulator for `func` with result type `ty`, driven as `used` says.
pub fn accumulator_for(func: AggFunc, ty: DataType, used: Use) -> Box<dyn Accumulator> {
    match func {
        AggFunc::CountStar => Box::new(count::Count::new(true)),
        AggFunc::Count => Box::new(count::Count::new(false)),
        AggFunc::Sum => Box::new(sum::SumAvg::new(false, ty)),
        AggFunc::Avg => Box::new(sum::SumAvg::new(true, ty)),
        AggFunc::Min => Box::new(min_max::MinMax::new(false)),
        AggFunc::Max => Box::new(min_max::MinMax::new(true)),
        AggFunc::First => Box::new(first_last::FirstLast::new(true, used)),
        AggFunc::Last => Box::new(first_last::FirstLast::new(false, used)),
        AggFunc::ArgMin => Box::new(arg_extreme::ArgExtreme::new(false)),
        AggFunc::ArgMax => Box::new(arg_extreme::ArgExtreme::new(true)),
        AggFunc::StddevSamp | AggFunc::StddevPop | AggFunc::VarSamp | AggFunc::VarPop => {
            Box::new(variance::Variance::new(func))
        }
        AggFunc::Vwap => Box::new(vwap::Vwap::default()),
        AggFunc::Median | AggFunc::Quantile(_) | AggFunc::PercentileCont(_) | AggFunc::Twap => {
            Box::new(holistic::Holistic::new(func))
        }
        AggFunc::BoolAnd => Box::new(min_max::MinMax::new(false)),
        AggFunc::BoolOr => Box::new(min_max::MinMax::new(true)),
        AggFunc::StringAgg(_) | AggFunc::ArrayAgg(_) => Box::new(listing::Listing::new(func)),
        AggFunc::Pair(stat) => Box::new(covariance::Covariance::new(stat)),
        AggFunc::Moment(stat) => Box::new(moments::ShapeStat::new(stat)),
        AggFunc::Product => Box::new(geometric::Geometric::new(false)),
        AggFunc::GeoMean => Box::new(geometric::Geometric::new(true)),
        AggFunc::Bits(op) => Box::new(bits::BitFold::new(op, ty)),
        AggFunc::AnyValue => Box::<any_value::AnyValue>::default(),
    }
}

/// What an aggregate produces: its result, or its partial state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The result value per group.
    Final,
    /// The partial state columns per group, to be merged later.
    Partial,
}

/// `a` over the rows of `b` grouped by `rows` (`ngroups` groups): its result column, or its
/// state columns in [`Mode::Partial`]. DISTINCT keeps the first row of every distinct
/// (group, value) pair, then aggregates as usual.
pub fn aggregate(
    ctx: &ExecContext,
    a: &AggCall,
    b: &Batch,
    rows: Rows,
    ngroups: usize,
    sorted: bool,
    mode: Mode,
) -> Result<Vec<Column>> {
    if let Some(done) = product::over_runs(a, b, rows, ngroups, mode) {
        return done;
    }
    let args = a.args.iter().map(|e| eval(ctx, e, b)).collect::<Result<Vec<_>>>()?;
    let order = a.order.as_ref().map(|o| eval(ctx, o, b)).transpose()?;
    if a.distinct && !args.is_empty() {
        let ids = rows.ids();
        let gid = Column::from_data(ColumnData::Int64(ids.iter().map(|&g| g as i64).collect()));
        // Distinct over all the arguments, as PostgreSQL's: `vwap(DISTINCT p, s)` keeps pairs.
        let keys: Vec<&Column> = std::iter::once(&gid).chain(args.iter().map(|c| &**c)).collect();
        let keep = group_ids(&keys, ids.len()).first;
        let ids2: Vec<u32> = keep.iter().map(|&i| ids[i as usize]).collect();
        // Deduplication keeps a row of every group that had one.
        let dense = !matches!(rows, Rows::Ids { dense: false, .. });
        let args2: Vec<Column> = distinct_args(args.iter().map(|c| &**c), &keep);
        let order2 = order.as_ref().map(|o| o.take(&keep));
        let input = Input { args: args2.iter().collect(), order: order2.as_ref(), sorted: false };
        return run(a, &input, Rows::Ids { ids: &ids2, dense }, ngroups, mode);
    }
    let input = Input { args: args.iter().map(|c| &**c).collect(), order: order.as_deref(), sorted };
    run(a, &input, rows, ngroups, mode)
}

/// Every one of `aggs` over the rows of `b` grouped by `rows`, as [`aggregate`] gives each,
/// with the work two of them share done once: `min(c)` and `max(c)` of the same DOUBLE column
/// over runs read it in one pass where [`min_max::both`] can (bars' high and low), and
/// `sum(p * s)` beside `sum(s)` read `s` once where `product.rs` can (VWAP written as two
/// sums).
pub fn aggregate_all(
    ctx: &ExecContext,
    aggs: &[AggCall],
    b: &Batch,
    rows: Rows,
    ngroups: usize,
    sorted: bool,
    mode: Mode,
) -> Result<Vec<Vec<Column>>> {
    let mut done: Vec<Option<Vec<Column>>> = vec![None; aggs.len()];
    if let Rows::Runs { .. } = rows {
        for (lo, hi, c) in extreme_pairs(aggs) {
            let Some(x) = b.columns.get(c) else { continue };
            if let Some((l, h)) = min_max::both(x, rows) {
                // A min/max's partial state is its result (`MinMax::state`), one column.
                debug_assert!(aggs[lo].func.state_width() == 1 && aggs[hi].func.state_width() == 1);
                (done[lo], done[hi]) = (Some(vec![l]), Some(vec![h]));
            }
        }
    }
    for (i, j) in product::pairs(aggs) {
        if let Some(r) = product::both(&aggs[i], &aggs[j], b, rows, ngroups, mode) {
            let [x, y] = r?;
            (done[i], done[j]) = (Some(x), Some(y));
        }
    }
    // Sized first, as `Grouped::into_batch` is (`collect` of results grows its vector).
    let mut out = Vec::with_capacity(aggs.len());
    for (a, d) in aggs.iter().zip(done) {
        out.push(d.map_or_else(|| aggregate(ctx, a, b, rows, ngroups, sorted, mode), Ok)?);
    }
    Ok(out)
}

/// The positions of `min(c)` and `max(c)` calls over the same DOUBLE column `c` (neither
/// DISTINCT), each call in one pair at most, with `c`'s position. Columns only: the argument
/// is read, not evaluated, and two expressions that compare equal may still differ (a
/// `-0.0` literal equals `0.0`).
fn extreme_pairs(aggs: &[AggCall]) -> Vec<(usize, usize, usize)> {
    let column = |a: &AggCall, f: AggFunc| match a.args.as_slice() {
        [BExpr::Col(c, DataType::Float64)] if a.func == f && !a.distinct => Some(*c),
        _ => None,
    };
    // No allocation unless a pair is found: this runs once per partition of a GROUP BY.
    let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
    for (lo, c) in aggs.iter().enumerate().filter_map(|(i, a)| Some((i, column(a, AggFunc::Min)?))) {
        let taken = |j: usize| pairs.iter().any(|&(_, hi, _)| hi == j);
        let partner = (0..aggs.len()).find(|&j| !taken(j) && column(&aggs[j], AggFunc::Max) == Some(c));
        if let Some(hi) = partner {
            pairs.push((lo, hi, c));
        }
    }
    pairs
}

fn run(a: &AggCall, input: &Input, rows: Rows, ngroups: usize, mode: Mode) -> Result<Vec<Column>> {
    let used = match mode {
        Mode::Final => Use::Once,
        Mode::Partial => Use::Any,
    };
    let mut acc = accumulator_for(a.func, a.ty, used);
    acc.update(input, rows, ngroups)?;
    match mode {
        Mode::Final => Ok(vec![acc.finish()?]),
        Mode::Partial => {
            let state = acc.state()?;
            debug_assert_eq!(state.len(), a.func.state_width(), "{:?} declares its state's width", a.func);
            Ok(state)
        }
    }
}

/// How many state columns `a`'s partial state has (0 for aggregates without one).
pub fn state_width(a: &AggCall) -> usize {
    a.func.state_width()
}

/// `a`'s result per group from partial states (rows of `state`, row `i` in group `ids[i]`).
pub fn merge(a: &AggCall, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<Column> {
    let mut acc = accumulator(a.func, a.ty);
    acc.merge(state, ids, ngroups)?;
    acc.finish()
}

/// `func` over every position's frame `fs[k]..fe[k]` of `args` (in window order; positional
/// first/last). DISTINCT frames are gathered and deduplicated frame by frame.
pub fn frames(
    func: AggFunc,
    distinct: bool,
    ty: DataType,
    args: &[Cow<Column>],
    fs: &[u32],
    fe: &[u32],
) -> Result<Column> {
    debug_assert_eq!(fs.len(), fe.len());
    if distinct && !args.is_empty() {
        let (idx, ids) = expand_frames(fs, fe)?;
        let gid = Column::from_data(ColumnData::Int64(ids.iter().map(|&g| g as i64).collect()));
        let taken: Vec<Column> = args.iter().map(|c| c.take(&idx)).collect();
        let keys: Vec<&Column> = std::iter::once(&gid).chain(&taken).collect();
        let keep = group_ids(&keys, ids.len()).first;
        let ids2: Vec<u32> = keep.iter().map(|&i| ids[i as usize]).collect();
        let kept: Vec<u32> = keep.iter().map(|&i| idx[i as usize]).collect();
        let cols: Vec<Column> = distinct_args(args.iter().map(|c| &**c), &kept);
        let input = Input { args: cols.iter().collect(), order: None, sorted: false };
        let mut acc = accumulator(func, ty);
        acc.update(&input, Rows::sparse(&ids2), fs.len())?;
        return acc.finish();
    }
    let input = Input { args: args.iter().map(|c| &**c).collect(), order: None, sorted: true };
    accumulator(func, ty).frames(&input, fs, fe)
}

/// The rows `keep` of a DISTINCT aggregate's arguments: the first is the distinct key, whose
/// zeros are one value (`hash::key_take`: +0.0 whichever zero its first row held).
fn distinct_args<'a>(args: impl Iterator<Item = &'a Column>, keep: &[u32]) -> Vec<Column> {
    args.enumerate().map(|(k, c)| if k == 0 { super::hash::key_take(c, keep) } else { c.take(keep) }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(func: AggFunc, arg: BExpr, distinct: bool) -> AggCall {
        AggCall { func, ty: arg.data_type(), args: vec![arg], distinct, order: None }
    }

    #[test]
    fn min_and_max_pair_over_the_same_double_column_only() {
        use AggFunc::{Max, Min, Sum};
        let col = |c: usize| BExpr::Col(c, DataType::Float64);
        let aggs = vec![
            call(Max, col(2), false), // pairs with the min after it
            call(Sum, col(2), false),
            call(Min, col(2), false),
            call(Min, col(2), false), // a second min: its max is taken
            call(Min, col(3), true),  // DISTINCT
            call(Max, col(3), false),
            call(Min, BExpr::Col(4, DataType::Int64), false), // not a DOUBLE
            call(Max, BExpr::Col(4, DataType::Int64), false),
            call(Min, col(5), false), // no max of column 5
            call(Max, col(6), false),
        ];
        assert_eq!(extreme_pairs(&aggs), vec![(2, 0, 2)]);
        // Equal expressions are not paired: `x * -0.0` and `x * 0.0` compare equal.
        let times = |z: f64| BExpr::Binary {
            op: crate::parser::ast::BinaryOp::Mul,
            left: Box::new(col(2)),
            right: Box::new(BExpr::Lit(zepto_storage::Value::Float64(z), DataType::Float64)),
            ty: DataType::Float64,
        };
        assert!(extreme_pairs(&[call(Min, times(-0.0), false), call(Max, times(0.0), false)]).is_empty());
    }
}
