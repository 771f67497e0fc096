//! Aggregates folded batch after batch into one group: the accumulators of a keyless aggregate
//! (`exec/keyless.rs`) take each unit of a run in turn, every call one that
//! [`AggCall::folds`]. What `aggregate_all` shares between two calls is shared here too, found
//! once per query: `min(c)` and `max(c)` of one DOUBLE column read in one pass, `sum(p * s)`
//! read in place (`product.rs`, its state merged in).

use super::{accumulator_for, extreme_pairs, min_max, product, Accumulator, Input, Mode, Rows, Use};
use crate::error::Result;
use crate::exec::eval::eval;
use crate::exec::{Batch, ExecContext};
use crate::plan::AggCall;

/// How `aggs` fold into one group: their pairs, found once.
pub struct OneGroup<'a> {
    aggs: &'a [AggCall],
    /// `(min, max, column)` positions of the `min(c)`/`max(c)` pairs over one DOUBLE column.
    pairs: Vec<(usize, usize, usize)>,
    /// The aggregates in a pair (folded with it).
    paired: Vec<bool>,
}

impl<'a> OneGroup<'a> {
    /// The fold of `aggs`, every one [`AggCall::folds`].
    pub fn new(aggs: &'a [AggCall]) -> OneGroup<'a> {
        debug_assert!(aggs.iter().all(AggCall::folds));
        let pairs = extreme_pairs(aggs);
        let mut paired = vec![false; aggs.len()];
        for &(lo, hi, _) in &pairs {
            (paired[lo], paired[hi]) = (true, true);
        }
        OneGroup { aggs, pairs, paired }
    }

    /// Fresh accumulators, one per aggregate, for any number of [`OneGroup::fold`]s.
    pub fn accumulators(&self) -> Vec<Box<dyn Accumulator>> {
        self.aggs.iter().map(|a| accumulator_for(a.func, a.ty, Use::Any)).collect()
    }

    /// Every aggregate over all the rows of `b` (which has rows) as one group, folded into
    /// `accs` ([`OneGroup::accumulators`]).
    pub fn fold(&self, ctx: &ExecContext, b: &Batch, accs: &mut [Box<dyn Accumulator>]) -> Result<()> {
        debug_assert!(b.rows > 0 && accs.len() == self.aggs.len());
        let rows = Rows::Runs { starts: &[0], n: b.rows };
        for &(lo, hi, c) in &self.pairs {
            match b.columns.get(c).and_then(|x| min_max::both(x, rows)) {
                Some((l, h)) => {
                    accs[lo].merge(&[&l], &[0], 1)?;
                    accs[hi].merge(&[&h], &[0], 1)?;
                }
                None => {
                    self.one(ctx, lo, b, &mut accs[lo])?;
                    self.one(ctx, hi, b, &mut accs[hi])?;
                }
            }
        }
        for (i, acc) in accs.iter_mut().enumerate() {
            if !self.paired[i] {
                self.one(ctx, i, b, acc)?;
            }
        }
        Ok(())
    }

    /// Aggregate `i` over all the rows of `b`, folded into `acc`.
    fn one(&self, ctx: &ExecContext, i: usize, b: &Batch, acc: &mut Box<dyn Accumulator>) -> Result<()> {
        let a = &self.aggs[i];
        let rows = Rows::Runs { starts: &[0], n: b.rows };
        if let Some(state) = product::over_runs(a, b, rows, 1, Mode::Partial) {
            return acc.merge(&state?.iter().collect::<Vec<_>>(), &[0], 1);
        }
        let args = a.args.iter().map(|e| eval(ctx, e, b)).collect::<Result<Vec<_>>>()?;
        let input = Input { args: args.iter().map(|c| &**c).collect(), order: None, sorted: true };
        acc.update(&input, rows, 1)
    }
}
