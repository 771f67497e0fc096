//! The physical planner: decides, once, how each operator of an optimized plan runs, and
//! records the choice in the node (its `how`). The executor runs exactly that choice — no
//! fallback, no re-deciding at run time — and EXPLAIN prints it, so what EXPLAIN shows is what
//! runs.
//!
//! Every choice is a property of the plan's shape and of the tables' snapshots the plan holds,
//! never of the rows a query reads:
//! - GROUP BY ([`AggHow`]): straight from the Parquet history's row groups into partial
//!   aggregates when the input is a (filtered) scan that reaches history and every aggregate
//!   merges exactly; per partition when the keys include the scan's partition key (no group
//!   spans two partitions), without hashing when the other keys are runs in time; else hashed.
//! - ASOF JOIN ([`AsofHow`]): partitions paired by key and merged with forward cursors when both
//!   sides are scans joined on their partition keys and designated timestamps; else each left
//!   row binary-searches its key's right rows.
//! - WINDOW JOIN ([`PairHow`]): the same pairing, each left partition sweeping its right one;
//!   else one sweep over both inputs.
//! - Window functions ([`WindowHow`]): per partition when every call partitions by the scan's
//!   partition key; else over the whole input.
//! - LATEST ON ([`LatestHow`]): from partition tails when the key is the partition key and the
//!   time the designated timestamp; else by hashing the keys.
//! - ORDER BY a vector distance to a constant with a LIMIT ([`super::SortHow`]): from the
//!   candidates an HNSW index of the scanned column finds, when its metric is the distance's
//!   and the session allows it (`SET ann = off` does not); else a sort of the whole input.
//! - ORDER BY a time bucket of a GROUP BY with a LIMIT ([`super::bucket_topn`]): the newest
//!   (or oldest) rows aggregated first, the window widened until the limit is met.
//!
//! Plans reach the executor only as a [`PhysicalPlan`], which only [`plan`] makes.

use super::optimizer::Optimized;
pub use super::shape::{reads_history, scan_shape, ScanShape};
use super::{AggCall, BExpr, Plan};
use crate::expr::functions::{AggFunc, ScalarFunc};
use std::convert::Infallible;

/// A plan whose every operator's strategy is chosen: what the executor runs.
#[derive(Debug, Clone)]
pub struct PhysicalPlan {
    root: Plan,
}

impl PhysicalPlan {
    /// A fragment another node sent, as this node plans it ([`super::dist::fragment`]): its
    /// operators' strategies chosen here, over this node's snapshots.
    pub(crate) fn of_fragment(root: Plan) -> PhysicalPlan {
        debug_assert!(!root.any_node(&|p| matches!(p, Plan::Exchange { .. })), "a fragment never exchanges again");
        PhysicalPlan { root: choose(root, &crate::settings::Settings::default()) }
    }

    /// The root of the chosen plan.
    pub fn root(&self) -> &Plan {
        &self.root
    }
}

/// Choose how every operator of an optimized plan runs, under the session's settings; on a
/// cluster node, first spread the scans of the cluster's tables over their owners
/// ([`super::dist`]). Fails when the cluster's partitions are not all owned now.
pub fn plan(optimized: Optimized, run: &crate::interrupt::RunContext) -> crate::error::Result<PhysicalPlan> {
    let p = optimized.into_plan();
    let p = match run.cluster() {
        Some(c) => super::dist::distribute::distribute(p, &super::dist::distribute::Dist::new(c, run))?,
        None => p,
    };
    Ok(PhysicalPlan { root: choose(p, run.settings()) })
}

/// How a GROUP BY runs.
#[derive(Debug, Clone, PartialEq)]
pub enum AggHow {
    /// Hash the keys of the whole input.
    Hash,
    /// Each partition of the scan on its own (the keys include the partition key). `runs`:
    /// every other key is monotonic in the designated timestamp, so groups are runs of a
    /// time-sorted partition, found without hashing.
    PartitionWise {
        /// Groups are runs of time-sorted rows (no hashing).
        runs: bool,
        /// Each partition is one group (the partition key is the only key) and every aggregate
        /// reads a few rows of a group (`count(*)`, `first`, `last`): the work is a fixed cost
        /// per partition, not a pass over its rows, so the executor weighs partitions by that
        /// cost, not by their rows (`ends_only`).
        ends: bool,
    },
    /// Row groups of the Parquet history and in-memory partitions into partial aggregate
    /// states (every aggregate is [`AggCall::mergeable`]), merged per group.
    HistoryPartials,
    /// In-memory partitions (small ones a bundle at a time) into partial aggregate states on
    /// every core, merged per group: a scan whose keys do not include the partition key (or
    /// no keys at all), every aggregate [`AggCall::mergeable`]. No copy of the table is made.
    /// `fold`: no keys and every aggregate [`AggCall::folds`], so each core's runs of
    /// partitions fold in place into one group (`exec/keyless.rs`), no bundle copied.
    Partials {
        /// One group, runs of partitions folded in place.
        fold: bool,
    },
    /// Every key is monotonic in the designated timestamp (the timestamp itself, a time bucket
    /// of it), so each partition holds its groups as runs: nothing is hashed, and groups come
    /// in time order (see `plan/time_merge.rs`). `partials`: each partition's runs into
    /// partial states on every core, merged by sorting their keys (buckets of several rows);
    /// else the rows gathered and grouped by sorting their keys (the timestamp itself).
    TimeMerge {
        /// Partial states per partition, then merged.
        partials: bool,
    },
}

/// How an ASOF JOIN runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsofHow {
    /// Right rows bucketed by key and ordered by time; each left row binary-searches.
    KeySearch,
    /// Partitions paired by key, each pair merged with forward cursors.
    PartitionMerge,
}

/// How a WINDOW JOIN runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairHow {
    /// One sorted sweep over both inputs.
    Sweep,
    /// Partitions paired by key, each left partition sweeping its right one.
    PartitionWise,
}

/// How window functions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowHow {
    /// Over the whole input.
    Whole,
    /// Each partition of the scan on its own.
    PartitionWise,
}

/// How LATEST ON runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatestHow {
    /// The greatest time per hashed key.
    HashByKey,
    /// The last row of each partition (searched from its end under a filter).
    PartitionTails,
}

fn choose(p: Plan, settings: &crate::settings::Settings) -> Plan {
    let p = match p.map_inputs(|c| Ok::<_, Infallible>(choose(c, settings))) {
        Ok(p) => p,
        Err(never) => match never {},
    };
    match p {
        Plan::Aggregate { input, keys, aggs, .. } => {
            let how = agg_how(&input, &keys, &aggs);
            Plan::Aggregate { input, keys, aggs, how }
        }
        mut p @ Plan::AsofJoin { .. } => {
            if let Plan::AsofJoin { left, right, left_keys, right_keys, left_ts, right_ts, op, outer, how, .. } = &mut p
            {
                // The partition-pair merge walks left partitions: right rows no left row
                // matched (RIGHT, FULL) are the search's to find.
                let merge = *op != super::BinaryOp::Eq
                    && !outer.keeps_right()
                    && merge_shape(left, right, left_keys, right_keys, left_ts, right_ts);
                *how = if merge { AsofHow::PartitionMerge } else { AsofHow::KeySearch };
            }
            p
        }
        Plan::WindowJoin { left, right, left_keys, right_keys, left_ts, right_ts, lo, hi, aggs, .. } => {
            let paired = merge_shape(&left, &right, &left_keys, &right_keys, &left_ts, &right_ts);
            let how = if paired { PairHow::PartitionWise } else { PairHow::Sweep };
            Plan::WindowJoin { left, right, left_keys, right_keys, left_ts, right_ts, lo, hi, aggs, how }
        }
        Plan::Window { input, calls, .. } => {
            let by_part = !calls.is_empty()
                && partition_key_pos(&input)
                    .is_some_and(|kp| calls.iter().all(|c| c.partition.iter().any(|e| is_col(e, kp))));
            let how = if by_part { WindowHow::PartitionWise } else { WindowHow::Whole };
            Plan::Window { input, calls, how }
        }
        Plan::Sort { input, keys, limit, .. } => {
            let ann = if settings.ann() { super::ann::choose(&input, &keys, limit) } else { None };
            let how = match ann {
                Some(a) => super::SortHow::Ann(a),
                None => super::bucket_topn::choose(&input, &keys, limit)
                    .map_or(super::SortHow::Full, super::SortHow::Buckets),
            };
            Plan::Sort { input, keys, limit, how }
        }
        Plan::Latest { input, keys, ts, .. } => {
            let how =
                if tail_shape(&input, &keys, &ts).is_some() { LatestHow::PartitionTails } else { LatestHow::HashByKey };
            Plan::Latest { input, keys, ts, how }
        }
        p => p,
    }
}

fn agg_how(input: &Plan, keys: &[BExpr], aggs: &[AggCall]) -> AggHow {
    let history =
        scan_shape(input).is_some_and(|s| reads_history(s.table, s.range) && s.table.history_reader().is_some());
    if history && aggs.iter().all(AggCall::mergeable) {
        return AggHow::HistoryPartials;
    }
    let tp = scan_shape(input).and_then(|s| s.table.ts_col().and_then(|t| s.columns.iter().position(|&c| c == t)));
    let Some(kp) = partition_key_pos(input).filter(|&kp| keys.iter().any(|k| is_col(k, kp))) else {
        return if let Some(partials) = time_merge(input, keys, aggs, tp) {
            AggHow::TimeMerge { partials }
        } else if partials_pay(input, keys, aggs, tp) {
            AggHow::Partials { fold: keys.is_empty() && aggs.iter().all(AggCall::folds) }
        } else {
            AggHow::Hash
        };
    };
    let runs = keys.iter().filter(|k| !is_col(k, kp)).all(|k| tp.is_some_and(|t| monotonic_in(k, t)));
    AggHow::PartitionWise { runs, ends: ends_only(keys, aggs, kp) }
}

/// Whether a partition-wise GROUP BY reads only a few rows of each partition
/// ([`AggHow::PartitionWise`]'s `ends`): the partition key (position `kp`) is every key, and
/// every aggregate is `count(*)`, `first` or `last` (a group's size, its first or last row),
/// none DISTINCT.
fn ends_only(keys: &[BExpr], aggs: &[AggCall], kp: usize) -> bool {
    let few = |a: &AggCall| matches!(a.func, AggFunc::CountStar | AggFunc::First | AggFunc::Last) && !a.distinct;
    keys.iter().all(|k| is_col(k, kp)) && aggs.iter().all(few)
}

/// Whether a GROUP BY without the partition key runs as partials per partition: over a scan
/// of the memory (the history has its own path), every aggregate mergeable, unless
/// - the scan reads no column (`count(*)`): the hash path copies nothing then;
/// - a key is the designated timestamp itself (`tp`: its position), nearly one group per row:
///   partials would not shrink the rows, and merging them would hash every row a second time.
fn partials_pay(input: &Plan, keys: &[BExpr], aggs: &[AggCall], tp: Option<usize>) -> bool {
    scan_shape(input).is_some_and(|s| !s.columns.is_empty() && !reads_history(s.table, s.range))
        && aggs.iter().all(AggCall::mergeable)
        && !tp.is_some_and(|t| keys.iter().any(|k| is_col(k, t)))
}

/// How a GROUP BY without the partition key runs in time order ([`AggHow::TimeMerge`]), if
/// it does (see [`super::time_merge`]): over a scan of the memory that reads a column, every
/// aggregate mergeable, every key (at least one) monotonic in the designated timestamp (`tp`:
/// its position), and for a key of the timestamp itself, few enough partitions read to merge.
/// `Some(partials)`.
fn time_merge(input: &Plan, keys: &[BExpr], aggs: &[AggCall], tp: Option<usize>) -> Option<bool> {
    let t = tp?;
    let s = scan_shape(input)?;
    let eligible = !s.columns.is_empty()
        && !reads_history(s.table, s.range)
        && aggs.iter().all(AggCall::mergeable)
        && !keys.is_empty()
        && keys.iter().all(|k| monotonic_in(k, t));
    if !eligible {
        return None;
    }
    if keys.iter().any(|k| is_col(k, t)) {
        return super::time_merge::in_order_pays(s.table, s.range).then_some(false);
    }
    let ts_col = s.table.ts_col()?;
    super::time_merge::partials_pay(s.table, ts_col, keys).then_some(true)
}

fn is_col(e: &BExpr, i: usize) -> bool {
    matches!(e, BExpr::Col(j, _) if *j == i)
}

/// The position of the table's partition key among the columns of a (filtered) scan.
fn partition_key_pos(input: &Plan) -> Option<usize> {
    let s = scan_shape(input)?;
    s.columns.iter().position(|&c| Some(c) == s.table.key_col())
}

/// Both inputs are scans of partitioned tables joined on their partition keys (one key each)
/// and designated timestamps: partitions pair by key, each pair time-sorted.
pub fn merge_shape(left: &Plan, right: &Plan, lk: &[BExpr], rk: &[BExpr], lts: &BExpr, rts: &BExpr) -> bool {
    let (Plan::Scan { table: lt, columns: lc, .. }, Plan::Scan { table: rt, columns: rc, .. }) = (left, right) else {
        return false;
    };
    let is_col = |e: &BExpr, cols: &[usize], want: Option<usize>| matches!(e, BExpr::Col(i, _) if want.is_some() && cols.get(*i).copied() == want);
    matches!((lk, rk), ([l], [r]) if is_col(l, lc, lt.key_col()) && is_col(r, rc, rt.key_col()))
        && is_col(lts, lc, lt.ts_col())
        && is_col(rts, rc, rt.ts_col())
}

/// LATEST ON's partition-tail shape: a (filtered) scan keyed by its partition key and ordered
/// by its designated timestamp.
pub fn tail_shape<'a>(input: &'a Plan, keys: &[BExpr], ts: &BExpr) -> Option<ScanShape<'a>> {
    let s = scan_shape(input)?;
    let (Some(kc), Some(tc)) = (s.table.key_col(), s.table.ts_col()) else { return None };
    match (keys, ts) {
        ([BExpr::Col(k, _)], BExpr::Col(t, _)) if s.columns.get(*k) == Some(&kc) && s.columns.get(*t) == Some(&tc) => {
            Some(s)
        }
        _ => None,
    }
}

/// Non-decreasing in column `t` (the designated timestamp): `t`, `xbar(const, t)`,
/// `date_trunc(const, t)`, `month_bucket(const, t)`.
pub fn monotonic_in(k: &BExpr, t: usize) -> bool {
    match k {
        BExpr::Col(i, _) => *i == t,
        BExpr::Func { func: ScalarFunc::Xbar | ScalarFunc::DateTrunc | ScalarFunc::MonthBucket, args, .. } => {
            matches!(args.as_slice(), [BExpr::Lit(..), BExpr::Col(i, _)] if *i == t)
        }
        _ => false,
    }
}
