//! Logical plans, and the steps that make one runnable.
//!
//! The binder ([`binder`]) turns the AST into a [`Plan`] tree whose expressions ([`BExpr`],
//! defined in [`crate::expr`] and re-exported here) reference input columns by position and
//! carry their result types; every implicit cast is explicit here, so the executor never
//! guesses a type. The optimizer ([`optimizer`]) rewrites it with named rules (filters into
//! scans, column pruning), and the physical planner ([`physical`]) chooses how each operator
//! of the optimized plan runs: binder → optimizer → physical planner → executor.

mod ann;
pub(crate) mod bind_expr;
pub mod binder;
pub mod bucket_topn;
mod catalog_functions;
mod cost;
pub mod dist;
pub mod optimizer;
pub mod physical;
mod shape;
pub mod srf;
mod time_merge;
pub use binder::{sample, window};

use crate::expr::functions::{agg_name, AggFunc};
pub use crate::expr::{ArrayOf, BExpr, Correlated, OuterRef, SubqueryKind};
use crate::parser::ast::{BinaryOp, JoinKind, SetOp};
pub use ann::{AnnSearch, SortHow};
pub use physical::{AggHow, AsofHow, LatestHow, PairHow, PhysicalPlan, WindowHow};
use std::sync::Arc;
use zepto_storage::{DataType, Table};

/// An output column of a plan node.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Table name or alias the column can be qualified with.
    pub qualifier: Option<String>,
    /// Column name, as output (alias or canonical SQL of the expression).
    pub name: String,
    /// The column's type.
    pub data_type: DataType,
    /// This column is its table's designated timestamp (first/last order by it).
    pub designated_ts: bool,
    /// The other side's copy of a `JOIN ... USING` column: reachable qualified (`r.k`), but
    /// not by its bare name and not in `*` (the kept copy stands for both).
    pub using_copy: bool,
    /// Where `t.*` lists this column, relative to its own position (a RIGHT or FULL JOIN
    /// USING moves the left table's own copy of a merged column after the others; `t.*`
    /// still lists it in the table's order). Relative, so it survives the scope being
    /// appended to another.
    pub star_offset: Option<isize>,
    /// A VARCHAR holding a PostgreSQL array ([`crate::eval::array`]): its items' type.
    pub array_of: Option<ArrayOf>,
}

impl Field {
    /// An unqualified output column of `data_type` (not a designated timestamp, not a USING
    /// copy).
    pub fn new(name: impl Into<String>, data_type: DataType) -> Field {
        Field {
            qualifier: None,
            name: name.into(),
            data_type,
            designated_ts: false,
            using_copy: false,
            star_offset: None,
            array_of: None,
        }
    }
}

/// The rows an as-of join keeps beyond its matches (each with NULLs for the other side): the
/// left rows without a match, and the right rows no left row matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AsofOuter {
    /// Matches only (ASOF JOIN).
    Inner,
    /// And unmatched left rows (ASOF LEFT JOIN).
    Left,
    /// And unmatched right rows (ASOF RIGHT JOIN).
    Right,
    /// And both (ASOF FULL JOIN).
    Full,
}

impl AsofOuter {
    /// Whether left rows without a match are kept.
    pub fn keeps_left(self) -> bool {
        matches!(self, AsofOuter::Left | AsofOuter::Full)
    }

    /// Whether right rows that no left row matched are kept.
    pub fn keeps_right(self) -> bool {
        matches!(self, AsofOuter::Right | AsofOuter::Full)
    }

    /// The keyword before `JOIN` after `ASOF`, with a space (`""` for inner).
    pub fn sql(self) -> &'static str {
        match self {
            AsofOuter::Inner => "",
            AsofOuter::Left => "LEFT ",
            AsofOuter::Right => "RIGHT ",
            AsofOuter::Full => "FULL ",
        }
    }
}

/// A bound aggregate call: function, argument expressions over the input and result type.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AggCall {
    /// The aggregate function.
    pub func: AggFunc,
    /// Arguments, bound against the aggregate's input.
    pub args: Vec<BExpr>,
    /// `f(DISTINCT ...)`: duplicates of the arguments ignored.
    pub distinct: bool,
    /// Order column for first/last (the designated timestamp), if known; for arg_min/arg_max,
    /// their `v` when it is the designated timestamp (rows in runs are in its order).
    pub order: Option<BExpr>,
    /// The result type.
    pub ty: DataType,
}

impl AggCall {
    /// Whether this call runs as partial states merged per group: a mergeable function, no
    /// DISTINCT, and for `first`/`last` a time to merge by (the designated timestamp).
    pub fn mergeable(&self) -> bool {
        let timed =
            || self.order.as_ref().is_some_and(|o| matches!(o.data_type(), DataType::Timestamp | DataType::Int64));
        !self.distinct && self.func.mergeable() && (!matches!(self.func, AggFunc::First | AggFunc::Last) || timed())
    }

    /// Whether this call's accumulator folds batch after batch into one group, each adding its
    /// rows to what it holds (`exec/keyless.rs`): count, sum, avg, min and max, no DISTINCT.
    pub fn folds(&self) -> bool {
        let adds = matches!(
            self.func,
            AggFunc::CountStar | AggFunc::Count | AggFunc::Sum | AggFunc::Avg | AggFunc::Min | AggFunc::Max
        );
        adds && !self.distinct && self.order.is_none()
    }
}

/// One bound sort key.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SortKey {
    /// The value sorted by, over the input.
    pub expr: BExpr,
    /// Descending.
    pub desc: bool,
    /// NULLs before non-NULLs (resolved from NULLS FIRST/LAST and the default, NULLs last).
    pub nulls_first: bool,
}

/// Which partitions and time range a scan reads; enforced exactly by the scan.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScanRange {
    /// `None` = all partitions; otherwise these key values (strings; NULL never matches `=`).
    pub keys: Option<Vec<String>>,
    /// Inclusive designated-timestamp bounds.
    pub ts_lo: i64,
    /// Inclusive upper designated-timestamp bound, nanoseconds since the epoch.
    pub ts_hi: i64,
    /// With `keys`, also the partition of rows whose key is NULL (for a table without a
    /// partition key: its rows). Only a cluster node's ownership scope sets it
    /// ([`dist`]); `keys: None` reads that partition anyway.
    pub null_key: bool,
}

impl ScanRange {
    /// Whether the designated timestamp is bounded on either side (NULL times never pass).
    pub fn is_time_bounded(&self) -> bool {
        self.ts_lo != i64::MIN || self.ts_hi != i64::MAX
    }
}

impl Default for ScanRange {
    fn default() -> Self {
        ScanRange { keys: None, ts_lo: i64::MIN, ts_hi: i64::MAX, null_key: false }
    }
}

/// A bound logical plan node; each node's output columns are referenced by position.
#[derive(Debug, Clone)]
pub enum Plan {
    /// Read a table snapshot: the chosen columns, in the chosen partitions and time range.
    Scan {
        /// The snapshot read (taken when the query was bound).
        table: Arc<Table>,
        /// Schema positions of the columns read, in output order.
        columns: Vec<usize>,
        /// Partitions and time range to read.
        range: ScanRange,
    },
    /// Literal rows (VALUES, or one empty row for a FROM-less SELECT).
    Values {
        /// One expression per column of each row.
        rows: Vec<Vec<BExpr>>,
        /// Columns per row.
        width: usize,
    },
    /// `start, start + step, ...`: `count` values of one column (BIGINT or TIMESTAMP), from
    /// the table functions `range` and `generate_series`.
    Series {
        /// The first value.
        start: i64,
        /// The difference between neighbours (never 0).
        step: i64,
        /// How many values.
        count: u64,
        /// The column's type.
        data_type: DataType,
    },
    /// Keep the rows where `pred` is true (NULL drops the row).
    Filter {
        /// The rows filtered.
        input: Box<Plan>,
        /// A BOOLEAN predicate over the input.
        pred: BExpr,
    },
    /// Compute one output column per expression.
    Project {
        /// The rows projected.
        input: Box<Plan>,
        /// Output expressions over the input.
        exprs: Vec<BExpr>,
    },
    /// GROUP BY: one row per distinct key tuple (one row in all if there are no keys), keys then
    /// aggregates.
    Aggregate {
        /// The rows grouped.
        input: Box<Plan>,
        /// Grouping expressions (output first, in order).
        keys: Vec<BExpr>,
        /// Aggregate calls (output after the keys).
        aggs: Vec<AggCall>,
        /// Chosen by the physical planner.
        how: AggHow,
    },
    /// A relational join; output `[left..., right...]`.
    Join {
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
        /// Which pairs and unmatched rows it keeps (inner, outer, cross, ...).
        kind: JoinKind,
        /// Equality keys over the left input (hash join; empty means nested loops).
        left_keys: Vec<BExpr>,
        /// Equality keys over the right input, pairing with `left_keys`.
        right_keys: Vec<BExpr>,
        /// A further condition over `[left..., right...]` a pair must meet.
        residual: Option<BExpr>,
    },
    /// Equality keys plus one inequality `left_ts op right_ts` (op is `>=`, `>`, `<=` or `<`):
    /// every left row meets the nearest right row on the right side of the inequality. `=`
    /// stands for `nearest(l, r)`: the closest right row on either side (ties: the later).
    AsofJoin {
        /// The left input (every row is kept or matched once).
        left: Box<Plan>,
        /// The right input searched.
        right: Box<Plan>,
        /// Equality keys over the left input.
        left_keys: Vec<BExpr>,
        /// Equality keys over the right input.
        right_keys: Vec<BExpr>,
        /// The left time, nanoseconds.
        left_ts: BExpr,
        /// The right time, nanoseconds.
        right_ts: BExpr,
        /// The inequality (`>=`, `>`, `<=`, `<`) or `=` for nearest.
        op: BinaryOp,
        /// Which unmatched rows are kept, with NULLs for the other side.
        outer: AsofOuter,
        /// Maximum distance between the two times (inclusive).
        tolerance: Option<i64>,
        /// Other conditions between the two sides (over `[left..., right...]`), part of the
        /// match as in DuckDB: a left row meets the nearest right row that also satisfies them.
        residual: Option<BExpr>,
        /// The columns of `[left..., right...]` the join outputs, in order (None: all). Set by
        /// column pruning, so key and time columns read only to match are never built.
        emit: Option<Vec<usize>>,
        /// Chosen by the physical planner.
        how: AsofHow,
    },
    /// Order the rows (stable for equal keys).
    Sort {
        /// The rows sorted.
        input: Box<Plan>,
        /// Sort keys, most significant first.
        keys: Vec<SortKey>,
        /// TopN: only the first `limit` rows are needed.
        limit: Option<usize>,
        /// Chosen by the physical planner.
        how: SortHow,
    },
    /// Skip `offset` rows, then keep at most `limit`; counted from the last row backwards
    /// when `from_end` (QuestDB's `LIMIT -n` and `LIMIT lo, hi` with negative bounds).
    Limit {
        /// The rows limited.
        input: Box<Plan>,
        /// Rows skipped first.
        offset: usize,
        /// Most rows kept; `None` keeps all.
        limit: Option<usize>,
        /// `offset` and `limit` count from the end: rows `n - offset - limit .. n - offset`.
        from_end: bool,
    },
    /// The input's columns, then each set-returning call's; each input row repeated for its
    /// calls' rows (see [`srf`]).
    ProjectSet {
        /// The rows expanded.
        input: Box<Plan>,
        /// The calls, over the input.
        calls: Vec<srf::SrfCall>,
    },
    /// Duplicate rows removed (NULLs equal).
    Distinct {
        /// The rows deduplicated.
        input: Box<Plan>,
    },
    /// One row per left row: the left columns, then `aggs` over the right rows with equal keys
    /// and `right_ts` in `[left_ts + lo, left_ts + hi]`; `aggs` read right columns.
    WindowJoin {
        /// The left input (one output row each).
        left: Box<Plan>,
        /// The right input aggregated.
        right: Box<Plan>,
        /// Equality keys over the left input.
        left_keys: Vec<BExpr>,
        /// Equality keys over the right input.
        right_keys: Vec<BExpr>,
        /// The left time, nanoseconds.
        left_ts: BExpr,
        /// The right time, nanoseconds.
        right_ts: BExpr,
        /// Window start relative to the left time (nanoseconds, may be negative).
        lo: i64,
        /// Window end relative to the left time (nanoseconds, inclusive).
        hi: i64,
        /// Aggregates over the right rows in the window.
        aggs: Vec<AggCall>,
        /// Chosen by the physical planner.
        how: PairHow,
    },
    /// Full as-of merge: every left row with the latest right row at or before it, then every
    /// right row with the latest left row strictly before it (ties: right events first), in time
    /// order; output `[left..., right...]`.
    SpliceJoin {
        /// The left series.
        left: Box<Plan>,
        /// The right series.
        right: Box<Plan>,
        /// Equality keys over the left input.
        left_keys: Vec<BExpr>,
        /// Equality keys over the right input.
        right_keys: Vec<BExpr>,
        /// The left time, nanoseconds.
        left_ts: BExpr,
        /// The right time, nanoseconds.
        right_ts: BExpr,
    },
    /// Band join: pairs with equal keys and `right_ts` in `[left_ts + lo, left_ts + hi]`
    /// (`outer`: LEFT JOIN), output `[left..., right...]`.
    RangeJoin {
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
        /// Equality keys over the left input.
        left_keys: Vec<BExpr>,
        /// Equality keys over the right input.
        right_keys: Vec<BExpr>,
        /// The left time, nanoseconds.
        left_ts: BExpr,
        /// The right time, nanoseconds.
        right_ts: BExpr,
        /// Band start relative to the left time (nanoseconds, may be negative).
        lo: i64,
        /// Band end relative to the left time (nanoseconds, inclusive).
        hi: i64,
        /// Keep unmatched left rows with NULLs (LEFT JOIN).
        outer: bool,
    },
    /// The last row (greatest `ts`; NULL `ts` never) of every distinct `keys` tuple, in `ts`
    /// order.
    Latest {
        /// The rows searched.
        input: Box<Plan>,
        /// The key expressions.
        keys: Vec<BExpr>,
        /// The time (nanoseconds) that decides the last row.
        ts: BExpr,
        /// Chosen by the physical planner.
        how: LatestHow,
    },
    /// SAMPLE BY buckets: the aggregate output ordered by bucket, with missing buckets of
    /// every key filled (FILL modes) over `[lo, hi)`.
    Fill {
        /// The aggregate output, one row per (bucket, key).
        input: Box<Plan>,
        /// Buckets, range and FILL modes.
        spec: sample::FillPlan,
    },
    /// The input's columns followed by one column per window call.
    Window {
        /// The rows the window functions run over.
        input: Box<Plan>,
        /// The window calls, in output order.
        calls: Vec<window::WinCall>,
        /// Chosen by the physical planner.
        how: WindowHow,
    },
    /// UNION, INTERSECT or EXCEPT of two inputs of the same width and types.
    SetOp {
        /// Which set operation.
        op: SetOp,
        /// `ALL`: keep duplicates (bag semantics); otherwise the output is distinct.
        all: bool,
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
    },
    /// A fragment's rows from every owner of the cluster's partitions (see [`dist`]):
    /// this node's (`input`, the fragment over the partitions `mine`), then each remote's.
    Exchange {
        /// The fragment over this node's partitions.
        input: Box<Plan>,
        /// The other nodes, their partitions and the request each runs.
        remotes: Vec<crate::cluster::Remote>,
        /// The partitions this node answers for.
        mine: Vec<i32>,
        /// Carries the requests.
        cluster: crate::cluster::ClusterRef,
    },
    /// GROUP BY into partial states: the keys, then each aggregate's state columns (one
    /// group per distinct key tuple; no rows, no groups).
    PartialAggregate {
        /// The rows grouped.
        input: Box<Plan>,
        /// Grouping expressions.
        keys: Vec<BExpr>,
        /// Aggregates (every one [`AggCall::mergeable`]).
        aggs: Vec<AggCall>,
    },
    /// Partial states merged per group: the input is `nkeys` key columns then each
    /// aggregate's state columns; the output is the keys then each aggregate's result, as
    /// the GROUP BY over the rows the states came from.
    MergeAggregate {
        /// The partial states (of [`Plan::PartialAggregate`]s).
        input: Box<Plan>,
        /// Key columns first in the input.
        nkeys: usize,
        /// The aggregates.
        aggs: Vec<AggCall>,
        /// The types of the columns the partial aggregates read: the aggregate over no rows
        /// (no key, no state) is computed over an empty input of them.
        empty: Vec<DataType>,
    },
}

impl Plan {
    /// Indented tree for EXPLAIN.
    pub fn explain(&self, names: &[Field]) -> String {
        self.explain_with(names, &|_| None)
    }

    /// [`Plan::explain`] with a note after each node's line (`note(node)`: EXPLAIN ANALYZE's
    /// stats of the node's run).
    pub fn explain_with(&self, names: &[Field], note: &dyn Fn(&Plan) -> Option<String>) -> String {
        self.explain_as(names, note, &|_| false)
    }

    /// [`Plan::explain`] for a session scoped to a tenant (`access`): a scan of a table the
    /// scope filters names no totals (how many partitions, history files and row groups the
    /// table holds, which would tell how much other tenants hold).
    pub fn explain_for(&self, names: &[Field], access: &crate::access::TableAccess) -> String {
        self.explain_hiding(names, &|t| access.scope_of(t.schema()).is_some())
    }

    /// [`Plan::explain`], the scans of tables for which `hide_totals` holds printed without
    /// the table's totals.
    pub(crate) fn explain_hiding(&self, names: &[Field], hide_totals: &dyn Fn(&Table) -> bool) -> String {
        self.explain_as(names, &|_| None, hide_totals)
    }

    /// [`Plan::explain_with`], the scans of tables for which `hide_totals` holds printed
    /// without the table's totals.
    fn explain_as(
        &self,
        names: &[Field],
        note: &dyn Fn(&Plan) -> Option<String>,
        hide_totals: &dyn Fn(&Table) -> bool,
    ) -> String {
        let mut out = String::new();
        self.explain_into(0, &mut out, &Explaining { note, hide_totals });
        let cols: Vec<&str> = names.iter().map(|f| f.name.as_str()).collect();
        format!("output: {}\n{out}", cols.join(", "))
    }

    fn explain_into(&self, depth: usize, out: &mut String, how: &Explaining<'_>) {
        out.push_str(&"  ".repeat(depth));
        out.push_str(self.operator());
        for part in [Some(self.explain_detail(how.hide_totals)), (how.note)(self)]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
        {
            out.push(' ');
            out.push_str(&part);
        }
        out.push('\n');
        for input in self.inputs() {
            input.explain_into(depth + 1, out, how);
        }
    }

    /// The name of the operator that runs this node, as the physical planner chose it: the
    /// first word of its EXPLAIN line, and the name the executor reports when it runs it.
    pub fn operator(&self) -> &'static str {
        match self {
            Plan::Scan { .. } => "Scan",
            Plan::Values { .. } => "Values",
            Plan::Series { .. } => "Series",
            Plan::Filter { .. } => "Filter",
            Plan::Project { .. } => "Project",
            Plan::Aggregate { how: AggHow::Hash, .. } => "HashAggregate",
            Plan::Aggregate { how: AggHow::PartitionWise { .. }, .. } => "PartitionAggregate",
            Plan::Aggregate { how: AggHow::HistoryPartials, .. } => "HistoryAggregate",
            Plan::Aggregate { how: AggHow::Partials { .. }, .. } => "ParallelAggregate",
            Plan::Aggregate { how: AggHow::TimeMerge { .. }, .. } => "TimeMergeAggregate",
            Plan::Join { kind: JoinKind::Window, .. } => "WindowJoin",
            Plan::Join { left_keys, .. } if left_keys.is_empty() => "NestedLoopJoin",
            Plan::Join { .. } => "HashJoin",
            Plan::AsofJoin { how: AsofHow::PartitionMerge, .. } => "AsofMergeJoin",
            Plan::AsofJoin { how: AsofHow::KeySearch, .. } => "AsofSearchJoin",
            Plan::Sort { how: SortHow::Ann(_), .. } => "AnnTopN",
            Plan::Sort { how: SortHow::Buckets(b), .. } => b.name(),
            Plan::Sort { limit: Some(_), .. } => "TopN",
            Plan::Sort { .. } => "Sort",
            Plan::Limit { .. } => "Limit",
            Plan::Distinct { .. } => "Distinct",
            Plan::ProjectSet { .. } => "ProjectSet",
            Plan::Fill { .. } => "SampleFill",
            Plan::SpliceJoin { .. } => "SpliceJoin",
            Plan::RangeJoin { .. } => "RangeJoin",
            Plan::WindowJoin { how: PairHow::PartitionWise, .. } => "PartitionWindowJoin",
            Plan::WindowJoin { how: PairHow::Sweep, .. } => "WindowJoin",
            Plan::Latest { how: LatestHow::PartitionTails, .. } => "LatestTails",
            Plan::Latest { how: LatestHow::HashByKey, .. } => "LatestHash",
            Plan::Window { how: WindowHow::PartitionWise, .. } => "PartitionWindow",
            Plan::Window { how: WindowHow::Whole, .. } => "Window",
            Plan::SetOp { .. } => "SetOp",
            Plan::Exchange { .. } => "Exchange",
            Plan::PartialAggregate { .. } => "PartialAggregate",
            Plan::MergeAggregate { .. } => "MergeAggregate",
        }
    }

    /// What EXPLAIN prints after the operator's name (a scan of a table `hide_totals`
    /// names: without the table's totals).
    fn explain_detail(&self, hide_totals: &dyn Fn(&Table) -> bool) -> String {
        match self {
            Plan::Scan { table, columns, range } => explain_scan(table, columns, range, !hide_totals(table)),
            Plan::Values { rows, .. } => format!("rows={}", rows.len()),
            Plan::Series { start, step, count, .. } => format!("start={start} step={step} rows={count}"),
            Plan::Filter { pred, input } => {
                let fused = (matches!(**input, Plan::Scan { .. }) && pred.is_row_local())
                    .then_some("(fused with the scan: kept rows gathered)");
                [explain_in_sets(pred)]
                    .into_iter()
                    .chain(fused.map(str::to_string))
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            Plan::Distinct { .. } => String::new(),
            Plan::ProjectSet { calls, .. } => {
                let c: Vec<String> = calls.iter().map(srf::SrfCall::describe).collect();
                format!("[{}]", c.join(", "))
            }
            Plan::Project { exprs, .. } => format!("exprs={}", exprs.len()),
            Plan::Aggregate { keys, aggs, how, .. } => {
                let how = match how {
                    AggHow::Hash => "",
                    AggHow::PartitionWise { ends: true, .. } => " (per partition, one group each, read at its ends)",
                    AggHow::PartitionWise { runs: true, .. } => " (per partition, groups as runs in time)",
                    AggHow::PartitionWise { runs: false, .. } => " (per partition, hashed)",
                    AggHow::HistoryPartials => " (partials per row group and partition, merged)",
                    AggHow::Partials { fold: false } => " (partials per partition on every core, merged)",
                    AggHow::Partials { fold: true } => " (runs of partitions folded in place on every core, merged)",
                    AggHow::TimeMerge { partials: true } => {
                        " (runs in time per partition into partials on every core, merged in time order)"
                    }
                    AggHow::TimeMerge { partials: false } => " (groups by merging the partitions' time order)",
                };
                format!("keys={} aggs=[{}]{how}", keys.len(), agg_names(aggs))
            }
            Plan::Join { kind, left_keys, .. } if left_keys.is_empty() => format!("{kind:?}"),
            Plan::Join { kind, left_keys, .. } => format!("{kind:?} keys={}", left_keys.len()),
            Plan::AsofJoin { left_keys, op, outer, tolerance, residual, how, .. } => {
                let how = match how {
                    AsofHow::PartitionMerge => "partition-pair merge",
                    AsofHow::KeySearch => "per-key binary search",
                };
                let cond = if *op == BinaryOp::Eq { "nearest".to_string() } else { format!("ts {}", op.sql()) };
                let tol = tolerance.map(|t| format!(" tolerance={t}")).unwrap_or_default();
                let more = if residual.is_some() { " and a condition between the sides" } else { "" };
                format!("{}keys={} on {cond}{tol}{more} ({how})", outer.sql(), left_keys.len())
            }
            Plan::Sort { how: SortHow::Ann(a), limit: Some(l), .. } => format!("{} limit={l}", a.describe()),
            Plan::Sort { how: SortHow::Buckets(b), keys, limit: Some(l), .. } => {
                format!("keys={} limit={l} {}", keys.len(), b.describe())
            }
            Plan::Sort { keys, limit: Some(l), .. } => format!("keys={} limit={l}", keys.len()),
            Plan::Sort { keys, .. } => format!("keys={}", keys.len()),
            Plan::Limit { offset, limit, from_end: false, .. } => format!("offset={offset} limit={limit:?}"),
            Plan::Limit { offset, limit, from_end: true, .. } => {
                format!("from the end: offset={offset} limit={limit:?}")
            }
            Plan::Fill { spec, .. } => spec.describe(),
            Plan::SpliceJoin { left_keys, .. } => format!("keys={} (two as-of merges)", left_keys.len()),
            Plan::RangeJoin { left_keys, lo, hi, outer, .. } => format!(
                "{}keys={} band=[{lo:+}, {hi:+}] (sorted sweep)",
                if *outer { "LEFT " } else { "" },
                left_keys.len()
            ),
            Plan::WindowJoin { left_keys, lo, hi, aggs, how, .. } => {
                let how = match how {
                    PairHow::PartitionWise => "partition pairs, sorted sweep",
                    PairHow::Sweep => "sorted sweep",
                };
                format!("keys={} window=[{lo:+}, {hi:+}] aggs=[{}] ({how})", left_keys.len(), agg_names(aggs))
            }
            Plan::Latest { keys, how, .. } => {
                let how = match how {
                    LatestHow::PartitionTails => "partition tails",
                    LatestHow::HashByKey => "hash by key",
                };
                format!("keys={} ({how})", keys.len())
            }
            Plan::Window { calls, .. } => {
                let c: Vec<&str> = calls.iter().map(|c| c.describe.as_str()).collect();
                format!("[{}]", c.join("; "))
            }
            Plan::SetOp { op, all, .. } => format!("{op:?}{}", if *all { " ALL" } else { "" }),
            Plan::Exchange { remotes, mine, .. } => {
                let others: Vec<String> = remotes.iter().map(|r| format!("{} {:?}", r.node, r.partitions)).collect();
                format!(
                    "partitions: here {mine:?}; {}",
                    if others.is_empty() { "no other node".into() } else { others.join("; ") }
                )
            }
            Plan::PartialAggregate { keys, aggs, .. } => {
                format!("keys={} aggs=[{}] (partial states: merged by the node above)", keys.len(), agg_names(aggs))
            }
            Plan::MergeAggregate { nkeys, aggs, .. } => {
                format!("keys={nkeys} aggs=[{}] (states merged per group)", agg_names(aggs))
            }
        }
    }

    /// The number of columns the plan outputs.
    pub fn width(&self) -> usize {
        match self {
            Plan::Scan { columns, .. } => columns.len(),
            Plan::Values { width, .. } => *width,
            Plan::Series { .. } => 1,
            Plan::Filter { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::Latest { input, .. }
            | Plan::Fill { input, .. } => input.width(),
            Plan::Project { exprs, .. } => exprs.len(),
            Plan::Window { input, calls, .. } => input.width() + calls.len(),
            Plan::ProjectSet { input, calls } => {
                input.width() + calls.iter().map(|c| c.output_types().len()).sum::<usize>()
            }
            Plan::Aggregate { keys, aggs, .. } => keys.len() + aggs.len(),
            Plan::WindowJoin { left, aggs, .. } => left.width() + aggs.len(),
            Plan::AsofJoin { emit: Some(e), .. } => e.len(),
            Plan::Join { left, right, .. }
            | Plan::AsofJoin { left, right, .. }
            | Plan::RangeJoin { left, right, .. }
            | Plan::SpliceJoin { left, right, .. } => left.width() + right.width(),
            Plan::SetOp { left, .. } => left.width(),
            Plan::Exchange { input, .. } => input.width(),
            Plan::PartialAggregate { keys, aggs, .. } => {
                keys.len() + aggs.iter().map(|a| a.func.state_width()).sum::<usize>()
            }
            Plan::MergeAggregate { nkeys, aggs, .. } => nkeys + aggs.len(),
        }
    }

    /// Whether `f` holds for this node or any node below it.
    pub fn any_node(&self, f: &dyn Fn(&Plan) -> bool) -> bool {
        f(self) || self.inputs().iter().any(|i| i.any_node(f))
    }

    /// The plan's direct inputs (left before right).
    pub fn inputs(&self) -> Vec<&Plan> {
        match self {
            Plan::Scan { .. } | Plan::Values { .. } | Plan::Series { .. } => Vec::new(),
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::ProjectSet { input, .. }
            | Plan::Window { input, .. }
            | Plan::Latest { input, .. }
            | Plan::Fill { input, .. }
            | Plan::Exchange { input, .. }
            | Plan::PartialAggregate { input, .. }
            | Plan::MergeAggregate { input, .. } => vec![input],
            Plan::Join { left, right, .. }
            | Plan::SetOp { left, right, .. }
            | Plan::AsofJoin { left, right, .. }
            | Plan::WindowJoin { left, right, .. }
            | Plan::RangeJoin { left, right, .. }
            | Plan::SpliceJoin { left, right, .. } => vec![left, right],
        }
    }

    /// The plan with each direct input replaced by `f(input)` (left before right).
    pub fn map_inputs<E>(mut self, mut f: impl FnMut(Plan) -> Result<Plan, E>) -> Result<Plan, E> {
        let mut apply = |b: &mut Box<Plan>| -> Result<(), E> {
            let old = std::mem::replace(&mut **b, Plan::Values { rows: Vec::new(), width: 0 });
            **b = f(old)?;
            Ok(())
        };
        match &mut self {
            Plan::Scan { .. } | Plan::Values { .. } | Plan::Series { .. } => {}
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::ProjectSet { input, .. }
            | Plan::Window { input, .. }
            | Plan::Latest { input, .. }
            | Plan::Fill { input, .. }
            | Plan::Exchange { input, .. }
            | Plan::PartialAggregate { input, .. }
            | Plan::MergeAggregate { input, .. } => apply(input)?,
            Plan::Join { left, right, .. }
            | Plan::SetOp { left, right, .. }
            | Plan::AsofJoin { left, right, .. }
            | Plan::WindowJoin { left, right, .. }
            | Plan::RangeJoin { left, right, .. }
            | Plan::SpliceJoin { left, right, .. } => {
                apply(left)?;
                apply(right)?;
            }
        }
        Ok(self)
    }
}

/// Aggregates as EXPLAIN names them: as written (`arg_min`, `count_star` for `count(*)`), a
/// quantile with its fraction, `arg_min by time` when its order is the designated timestamp's.
fn agg_names(aggs: &[AggCall]) -> String {
    let name = |a: &AggCall| match a.func {
        AggFunc::Quantile(q) | AggFunc::PercentileCont(q) => format!("{}({q})", agg_name(a.func)),
        AggFunc::ArgMin | AggFunc::ArgMax if a.order.is_some() => format!("{} by time", agg_name(a.func)),
        f => agg_name(f).to_string(),
    };
    aggs.iter().map(name).collect::<Vec<_>>().join(", ")
}

/// A filter's `IN` lists that run as hash lookups, with their sizes (empty when none does).
fn explain_in_sets(pred: &BExpr) -> String {
    let sizes = std::cell::RefCell::new(Vec::new());
    pred.any(&|e| {
        if let BExpr::InSet { set, .. } = e {
            sizes.borrow_mut().push(set.len().to_string());
        }
        false
    });
    let sizes = sizes.into_inner();
    if sizes.is_empty() {
        return String::new();
    }
    format!("IN by hash lookup over {} constants", sizes.join(", "))
}
/// How a plan is explained: a note after each node's line, and which tables' scans name
/// no totals.
struct Explaining<'a> {
    note: &'a dyn Fn(&Plan) -> Option<String>,
    hide_totals: &'a dyn Fn(&Table) -> bool,
}

/// A scan's EXPLAIN detail: its columns, partitions, time range and history files; without
/// `totals`, nothing counted over the whole table (its partitions, history files and row
/// groups): a tenant-scoped session's view.
fn explain_scan(table: &Table, columns: &[usize], range: &ScanRange, totals: bool) -> String {
    let mut s = format!("{} columns={:?}", table.name(), columns);
    if let Some(k) = &range.keys {
        s.push_str(&format!(" partitions={k:?}{}", if range.null_key { " + NULL key" } else { "" }));
    } else if totals {
        s.push_str(&format!(" partitions=all({})", table.partitions().len()));
    } else {
        s.push_str(" partitions=all");
    }
    if range.is_time_bounded() {
        s.push_str(&format!(" ts=[{}, {}] (binary search)", fmt_ts(range.ts_lo), fmt_ts(range.ts_hi)));
    }
    if !totals {
        if !table.history().files.is_empty() {
            s.push_str(" + history parquet");
        }
        return s;
    }
    if !table.history().files.is_empty() {
        let r = table.history_reader().map(|h| h.plan(table, range.keys.as_deref(), range.ts_lo, range.ts_hi));
        match r {
            Some(Ok(h)) => s.push_str(&format!(
                " + history parquet files={}/{} row_groups={}/{}",
                h.files, h.files_total, h.row_groups, h.row_groups_total
            )),
            Some(Err(e)) => s.push_str(&format!(" + history (unreadable: {e})")),
            None => s.push_str(" + history (no reader)"),
        }
    }
    s
}

fn fmt_ts(v: i64) -> String {
    match v {
        i64::MIN => "-inf".into(),
        i64::MAX => "+inf".into(),
        v => zepto_storage::time::format_timestamp(v),
    }
}
