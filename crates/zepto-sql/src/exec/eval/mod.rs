//! Expression evaluation inside the executor: the evaluator of [`crate::eval`] with correlated
//! subqueries wired in. A correlated subquery is planned and run again per outer tuple, which
//! takes the planner and the executor, both above the evaluator, so the executor hands that
//! step to it as [`Subqueries`] (`correlated.rs`).

mod correlated;

use super::Batch;
use crate::error::Result;
use crate::eval::Subqueries;
use crate::plan::{BExpr, Correlated};
use std::borrow::Cow;
use zepto_storage::Column;

/// `e` over the rows of `b`, correlated subqueries included.
pub fn eval<'a>(e: &'a BExpr, b: &'a Batch) -> Result<Cow<'a, Column>> {
    crate::eval::eval(e, b, &Replan)
}

/// Runs correlated subqueries: planned and executed once per distinct outer tuple.
struct Replan;

impl Subqueries for Replan {
    fn correlated(&self, sub: &Correlated, lhs: Option<&BExpr>, b: &Batch) -> Result<Column> {
        correlated::eval_correlated(sub, lhs, b)
    }
}
