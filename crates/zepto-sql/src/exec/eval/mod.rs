//! Expression evaluation inside the executor: the evaluator of [`crate::eval`] with correlated
//! subqueries wired in. A correlated subquery is planned and run again per outer tuple, which
//! takes the planner and the executor, both above the evaluator, so the executor hands that
//! step to it as [`Subqueries`] (`correlated.rs`), carrying the run's context: the subquery
//! is bound and run under the query's control, on the thread (and memory baseline) of the
//! operator that evaluates it.

mod correlated;

use super::{Batch, ExecContext};
use crate::error::Result;
use crate::eval::Subqueries;
use crate::plan::{BExpr, Correlated};
use std::borrow::Cow;
use zepto_storage::Column;

/// `e` over the rows of `b`, correlated subqueries included (run as part of `ctx`'s query).
pub fn eval<'a>(ctx: &ExecContext, e: &'a BExpr, b: &'a Batch) -> Result<Cow<'a, Column>> {
    crate::eval::eval(e, b, &Replan(ctx))
}

/// The rows of `b` where `e` holds, ascending ([`crate::eval::selection`]: a column compared
/// with a number straight to its rows).
pub fn selection(ctx: &ExecContext, e: &BExpr, b: &Batch) -> Result<Vec<u32>> {
    crate::eval::selection(e, b, &Replan(ctx))
}

/// Runs correlated subqueries: planned and executed once per distinct outer tuple.
struct Replan<'c>(&'c ExecContext);

impl Subqueries for Replan<'_> {
    fn correlated(&self, sub: &Correlated, lhs: Option<&BExpr>, b: &Batch) -> Result<Column> {
        correlated::eval_correlated(self.0, sub, lhs, b)
    }
}
