//! `vwap(price, size)`: Σ price·size / Σ size over the rows where both are present; NULL
//! where the sizes sum to zero. State: the two sums.

use super::dot::{lane_dot, lane_dot_i64, AsF64};
use super::kernels::{at, to_f64};
use super::product::run_dot_i64;
use super::{runs, Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use zepto_storage::{Column, ColumnData};

#[derive(Default)]
pub struct Vwap {
    num: Vec<f64>,
    den: Vec<f64>,
}

impl Vwap {
    fn grow(&mut self, ngroups: usize) {
        let n = self.num.len().max(ngroups);
        self.num.resize(n, 0.0);
        self.den.resize(n, 0.0);
    }

    /// NULL-free runs: each run's Σ p·s and Σ s, `dot(start, end)`, added to its group.
    fn add_runs(&mut self, starts: &[u32], n: usize, dot: impl Fn(usize, usize) -> (f64, f64)) {
        for (g, (a, b)) in runs(starts, n).enumerate() {
            let (num, den) = dot(a, b);
            self.num[g] += num;
            self.den[g] += den;
        }
    }
}

/// Σ p·s and Σ s of two slices in lanes ([`lane_dot`]) read in place, whatever the sizes' type.
fn lanes<'a, S: AsF64>(pv: &'a [f64], sv: &'a [S]) -> impl Fn(usize, usize) -> (f64, f64) + 'a {
    move |a, b| lane_dot(&pv[a..b], &sv[a..b])
}

impl Accumulator for Vwap {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let [p, s] = input.args.as_slice() else { return Err(SqlError::Internal("vwap takes two arguments".into())) };
        let pv = to_f64(p)?;
        self.grow(ngroups);
        let every = p.validity().is_none() && s.validity().is_none();
        if let (Rows::Runs { starts, n }, true) = (rows, every) {
            // Sizes are read in place (no converted copy of an integer column).
            // BIGINT sizes by AVX2 lanes where their range allows it, and narrow blocks where a
            // DOUBLE column and they keep them ([`run_dot_i64`]).
            match (p.data(), s.data()) {
                (ColumnData::Float64(pb), ColumnData::Int64(sb)) => {
                    self.add_runs(starts, n, |a, b| run_dot_i64(pb, sb, a..b))
                }
                (_, ColumnData::Int64(sv)) => self.add_runs(starts, n, |a, b| {
                    let (pr, sr) = (&pv[a..b], &sv[a..b]);
                    lane_dot_i64(pr, sr).unwrap_or_else(|| lane_dot(pr, sr))
                }),
                (_, ColumnData::Int32(sv)) => self.add_runs(starts, n, lanes(&pv, sv)),
                _ => {
                    let sv = to_f64(s)?;
                    self.add_runs(starts, n, lanes(&pv, &sv))
                }
            }
            return Ok(());
        }
        let sv = to_f64(s)?;
        for (i, &g) in rows.ids().iter().enumerate() {
            if every || (p.is_valid(i) && s.is_valid(i)) {
                self.num[g as usize] += pv[i] * sv[i];
                self.den[g as usize] += sv[i];
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Ok(vec![
            Column::from_data(ColumnData::Float64(std::mem::take(&mut self.num).into())),
            Column::from_data(ColumnData::Float64(std::mem::take(&mut self.den).into())),
        ])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        Ok(vec![
            Column::from_data(ColumnData::Float64(at(&self.num, ids).into())),
            Column::from_data(ColumnData::Float64(at(&self.den, ids).into())),
        ])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let bad = || SqlError::Internal("vwap state is two DOUBLE columns".into());
        let [n, d] = state else { return Err(bad()) };
        let (ColumnData::Float64(n), ColumnData::Float64(d)) = (&n.data(), &d.data()) else { return Err(bad()) };
        self.grow(ngroups);
        for (i, &g) in ids.iter().enumerate() {
            self.num[g as usize] += n[i];
            self.den[g as usize] += d[i];
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        Ok(super::from_opt_f64(self.num.iter().zip(&self.den).map(|(n, &d)| (d != 0.0).then(|| n / d))))
    }
}
