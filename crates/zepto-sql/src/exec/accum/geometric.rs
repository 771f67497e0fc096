//! `product(x)` and `geomean(x)`: per group, the count of non-NULL values and either their
//! product or the sum of their natural logarithms (the geometric mean is the exponential of
//! that sum's mean; a value at or under zero has no logarithm and fails the query, as in
//! DuckDB). Both answer DOUBLE, NULL for a group without a value. A product counts its zeros
//! apart and multiplies the other values (and the zeros' signs): a group holding a zero is a
//! zero of the product's sign whatever order its values come in (an overflow to infinity
//! times zero would be NaN in one order, 0 in another).

use super::kernels::{at, from_opt_f64, to_f64};
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use zepto_storage::{Column, ColumnData};

pub struct Geometric {
    /// `geomean` (logarithms summed) rather than `product`.
    logs: bool,
    n: Vec<i64>,
    acc: Vec<f64>,
    /// Zeros a product's group held (left out of `acc`).
    zeros: Vec<i64>,
}

impl Geometric {
    /// `product(x)`, or `geomean(x)` when `logs`.
    pub fn new(logs: bool) -> Geometric {
        Geometric { logs, n: Vec::new(), acc: Vec::new(), zeros: Vec::new() }
    }

    fn grow(&mut self, ngroups: usize) {
        let n = self.n.len().max(ngroups);
        self.n.resize(n, 0);
        self.acc.resize(n, if self.logs { 0.0 } else { 1.0 });
        self.zeros.resize(n, 0);
    }

    fn fold(&mut self, g: usize, n: i64, acc: f64, zeros: i64) {
        self.n[g] += n;
        self.zeros[g] += zeros;
        if self.logs {
            self.acc[g] += acc;
        } else {
            self.acc[g] *= acc;
        }
    }
}

/// Why `x` has no logarithm (`None`: it has one).
fn no_log(x: f64) -> Option<&'static str> {
    if x == 0.0 {
        Some("zero")
    } else if x < 0.0 {
        Some("a negative number")
    } else {
        None
    }
}

impl Accumulator for Geometric {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let x = input.arg()?;
        let v = to_f64(x)?;
        self.grow(ngroups);
        for (i, &g) in rows.ids().iter().enumerate() {
            if !x.is_valid(i) {
                continue;
            }
            match (self.logs, no_log(v[i])) {
                (true, Some(what)) => {
                    return Err(SqlError::exec(format!(
                        "out of range: cannot take the logarithm of {what} in geomean()"
                    )))
                }
                (true, None) => self.fold(g as usize, 1, v[i].ln(), 0),
                // A zero's sign still counts, as in an IEEE product.
                (false, _) if v[i] == 0.0 => self.fold(g as usize, 1, 1f64.copysign(v[i]), 1),
                (false, _) => self.fold(g as usize, 1, v[i], 0),
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Ok(vec![
            Column::from_data(ColumnData::Int64(std::mem::take(&mut self.n).into())),
            Column::from_data(ColumnData::Float64(std::mem::take(&mut self.acc).into())),
            Column::from_data(ColumnData::Int64(std::mem::take(&mut self.zeros).into())),
        ])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        Ok(vec![
            Column::from_data(ColumnData::Int64(at(&self.n, ids).into())),
            Column::from_data(ColumnData::Float64(at(&self.acc, ids).into())),
            Column::from_data(ColumnData::Int64(at(&self.zeros, ids).into())),
        ])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let bad = || SqlError::Internal("product state is (BIGINT, DOUBLE, BIGINT)".into());
        let [n, acc, zeros] = state else { return Err(bad()) };
        let (ColumnData::Int64(n), ColumnData::Float64(acc), ColumnData::Int64(zeros)) =
            (n.data(), acc.data(), zeros.data())
        else {
            return Err(bad());
        };
        self.grow(ngroups);
        for (i, &g) in ids.iter().enumerate() {
            self.fold(g as usize, n[i], acc[i], zeros[i]);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        let value = |((&n, &acc), &zeros): ((&i64, &f64), &i64)| match (n, self.logs) {
            (0, _) => None,
            (n, true) => Some((acc / n as f64).exp()),
            (_, false) if zeros > 0 && !acc.is_nan() => Some(0f64.copysign(acc)),
            (_, false) => Some(acc),
        };
        Ok(from_opt_f64(self.n.iter().zip(&self.acc).zip(&self.zeros).map(value)))
    }
}
