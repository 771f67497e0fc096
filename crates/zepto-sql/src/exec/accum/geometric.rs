//! `product(x)` and `geomean(x)`: per group, the count of non-NULL values and either their
//! product or the sum of their natural logarithms (the geometric mean is the exponential of
//! that sum's mean; a value at or under zero has no logarithm and fails the query, as in
//! DuckDB). Both answer DOUBLE, NULL for a group without a value. A product counts its zeros
//! apart and multiplies the other values (and the zeros' signs): a group holding a zero is a
//! zero of the product's sign whatever order its values come in (an overflow to infinity
//! times zero would be NaN in one order, 0 in another).

use super::kernels::{at, from_opt_f64, running_frames, to_f64};
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

    /// `state` (count, product or log sum, zeros) with value `x` folded in.
    fn step(&self, (n, acc, zeros): (i64, f64, i64), x: f64) -> Result<(i64, f64, i64)> {
        Ok(match (self.logs, no_log(x)) {
            (true, Some(what)) => {
                return Err(SqlError::exec(format!("out of range: cannot take the logarithm of {what} in geomean()")))
            }
            (true, None) => (n + 1, acc + x.ln(), zeros),
            // A zero's sign still counts, as in an IEEE product.
            (false, _) if x == 0.0 => (n + 1, acc * 1f64.copysign(x), zeros + 1),
            (false, _) => (n + 1, acc * x, zeros),
        })
    }

    /// The result of a group's state.
    fn value(&self, (n, acc, zeros): (i64, f64, i64)) -> Option<f64> {
        match (n, self.logs) {
            (0, _) => None,
            (n, true) => Some((acc / n as f64).exp()),
            (_, false) if zeros > 0 && !acc.is_nan() => Some(0f64.copysign(acc)),
            (_, false) => Some(acc),
        }
    }

    /// The state before any value.
    fn empty(&self) -> (i64, f64, i64) {
        (0, if self.logs { 0.0 } else { 1.0 }, 0)
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
            let (n, acc, zeros) = self.step(self.empty(), v[i])?;
            self.fold(g as usize, n, acc, zeros);
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
        let state = self.n.iter().zip(&self.acc).zip(&self.zeros).map(|((&n, &a), &z)| (n, a, z));
        Ok(from_opt_f64(state.map(|s| self.value(s))))
    }

    /// Frames that share their start and only grow (a running frame) a value at a time; any
    /// other frame over its rows.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let x = input.arg()?;
        let v = to_f64(x)?;
        let add = |s: &mut (i64, f64, i64), r: usize| {
            if x.is_valid(r) {
                *s = self.step(*s, v[r])?;
            }
            Ok(())
        };
        let whole = |rows: std::ops::Range<usize>| {
            let mut s = self.empty();
            for r in rows.filter(|&r| x.is_valid(r)) {
                s = self.step(s, v[r])?;
            }
            Ok(self.value(s))
        };
        let out = running_frames(fs, fe, || self.empty(), add, |&s| self.value(s), whole)?;
        Ok(from_opt_f64(out.into_iter()))
    }
}
