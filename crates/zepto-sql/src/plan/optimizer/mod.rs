//! The optimizer: rewrites a bound logical [`Plan`] into an equivalent one that reads less,
//! between the binder and the physical planner.
//!
//! ```text
//!   binder ──► Plan ──► optimize: RULES in order ──► Optimized ──► physical::plan ──► PhysicalPlan
//! ```
//!
//! Each rewrite is a [`Rule`] with a name, in its own module with its unit tests, and
//! [`RULES`] runs them in order, once each. A rule never changes a query's answer or its
//! output columns; it only moves work to where it is cheaper. The physical planner takes only
//! an [`Optimized`] plan, which only [`optimize`] makes, so every plan that runs (statements,
//! and the subqueries the binder and correlated evaluation run) has been through every rule.
//!
//! The rules:
//! 1. [`PushFilterIntoScan`]: a filter over a scan (directly, or over other filters over it,
//!    such as a tenant scope's) gives the scan the partitions and time range its conjuncts
//!    select; what the scan then enforces exactly leaves the filter.
//! 2. [`PruneColumns`]: the columns each node needs flow down the plan, so scans read only
//!    those. Last, because it sees the plan's final shape (a pushed-down conjunct no longer
//!    needs its column above the scan).
//!
//! What stays in the binder, and why:
//! - **Constant folding** (`bind_expr::fold`) runs as each expression is bound. The binder's own
//!   decisions need constants as values: LIMIT/OFFSET, TOLERANCE, quantile fractions, window
//!   frame offsets, the window bounds of WINDOW JOIN and band joins, SAMPLE BY's range; and a
//!   bad constant (a cast that fails) is reported with its position before any row is read.
//!   Uncorrelated subqueries run in the binder for the same reason and become literals, so the
//!   rules here see `ts > (SELECT max(ts) ...)` as `ts > <literal>`.
//! - **WINDOW JOIN's WHERE** is split by side in the binder (`binder/window_join.rs`): a
//!   right-side condition chooses the rows the windows are formed from, so that split is what
//!   the statement means, not an optimization. Each conjunct becomes a filter over its side,
//!   and the rule pushes what each of them can enforce into the side's scan.
//! - **Band joins** (`JOIN ... ON r.ts BETWEEN l.ts - a AND l.ts + b` run as a `RangeJoin`) are
//!   recognized by the binder while it splits the ON condition into keys and the rest.

mod filter_into_scan;
mod prune;

pub(crate) use filter_into_scan::scan_range;
pub use filter_into_scan::PushFilterIntoScan;
pub use prune::PruneColumns;

use super::Plan;

/// One rewrite of a logical plan.
pub trait Rule: Sync {
    /// A short name for the rule (snake case), as tests and docs refer to it.
    fn name(&self) -> &'static str;
    /// The plan rewritten; a plan the rule does not apply to comes back unchanged. The
    /// rewritten plan has the same output columns and gives the same rows.
    fn rewrite(&self, plan: Plan) -> Plan;
}

/// The rules [`optimize`] runs, in this order.
pub const RULES: &[&dyn Rule] = &[&PushFilterIntoScan, &PruneColumns];

/// A logical plan every rule of [`RULES`] has rewritten: what the physical planner takes.
#[derive(Debug, Clone)]
pub struct Optimized(Plan);

impl Optimized {
    /// The rewritten plan, for the physical planner (and tests) to take apart.
    pub fn into_plan(self) -> Plan {
        self.0
    }
}

/// Run every rule of [`RULES`] over `plan`, in order.
pub fn optimize(plan: Plan) -> Optimized {
    Optimized(RULES.iter().fold(plan, |p, rule| rule.rewrite(p)))
}

/// `plan` with `f` applied to every node, inputs first (post-order): what a rule that rewrites
/// nodes one at a time runs.
#[recursive::recursive]
pub(crate) fn transform_up(plan: Plan, f: &impl Fn(Plan) -> Plan) -> Plan {
    let plan = match plan.map_inputs(|input| Ok::<_, std::convert::Infallible>(transform_up(input, f))) {
        Ok(p) => p,
        Err(never) => match never {},
    };
    f(plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_run_in_order_pruning_last() {
        let names: Vec<&str> = RULES.iter().map(|r| r.name()).collect();
        assert_eq!(names, ["push_filter_into_scan", "prune_columns"]);
    }

    #[test]
    fn the_binder_leaves_a_where_over_its_scan_and_optimize_pushes_it_in() {
        let engine = crate::Engine::new();
        engine.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, x DOUBLE, y DOUBLE)").expect("ddl");
        let sql = "SELECT x FROM t WHERE sym = 'A' AND x > 1";
        let stmts = crate::parser::parse_statements(sql).expect("parses");
        let crate::parser::ast::Statement::Query(q) = &stmts[0] else { panic!("a query") };
        let mut binder = crate::plan::binder::Binder::new(
            engine.catalog().clone(),
            crate::access::TableAccess::all(),
            std::sync::Arc::new(crate::exec::Executor),
            &crate::RunContext::unlimited(),
        );
        let (bound, fields) = binder.bind_query(q).expect("binds");
        let explain = |p: &Plan| p.explain(&fields);
        assert_eq!(
            explain(&bound),
            "output: x\nProject exprs=1\n  Filter (fused with the scan: kept rows gathered)\n    Scan t columns=[0, 1, 2, 3] partitions=all(0)\n"
        );
        let optimized = optimize(bound).into_plan();
        assert_eq!(
            explain(&optimized),
            "output: x\nProject exprs=1\n  Filter (fused with the scan: kept rows gathered)\n    Scan t columns=[2] partitions=[\"A\"]\n"
        );
    }
}
