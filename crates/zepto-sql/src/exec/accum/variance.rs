//! `var_samp`, `var_pop`, `stddev_samp`, `stddev_pop`. Each input is reduced in two passes
//! (the mean, then squared deviations from it); states combine with Chan et al.'s pairwise
//! update. State: count, mean and M2 (the sum of squared deviations) per group.

use super::kernels::{at, from_opt_f64, int_values, running_frames, to_f64};
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use crate::expr::functions::AggFunc;
use zepto_storage::{Column, ColumnData};

pub struct Variance {
    func: AggFunc,
    n: Vec<i64>,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

impl Variance {
    pub fn new(func: AggFunc) -> Variance {
        Variance { func, n: Vec::new(), mean: Vec::new(), m2: Vec::new() }
    }

    fn grow(&mut self, ngroups: usize) {
        let n = self.n.len().max(ngroups);
        self.n.resize(n, 0);
        self.mean.resize(n, 0.0);
        self.m2.resize(n, 0.0);
    }

    /// Fold a group's (count, mean, M2) into its state.
    fn combine(&mut self, g: usize, nb: i64, mb: f64, m2b: f64) {
        let na = self.n[g];
        if nb == 0 {
            return;
        }
        if na == 0 {
            (self.n[g], self.mean[g], self.m2[g]) = (nb, mb, m2b);
            return;
        }
        let n = na + nb;
        let delta = mb - self.mean[g];
        self.mean[g] += delta * nb as f64 / n as f64;
        self.m2[g] += m2b + delta * delta * (na as f64 * nb as f64 / n as f64);
        self.n[g] = n;
    }

    /// The result from a count and M2.
    fn value(&self, n: i64, m2: f64) -> Option<f64> {
        let samp = matches!(self.func, AggFunc::StddevSamp | AggFunc::VarSamp);
        let d = if samp { n - 1 } else { n };
        if d <= 0 {
            return None;
        }
        let var = (m2 / d as f64).max(0.0);
        Some(if matches!(self.func, AggFunc::StddevSamp | AggFunc::StddevPop) { var.sqrt() } else { var })
    }
}

/// Per group: count, mean and M2 of the valid values of `x` (`v`: its values as doubles), in
/// two passes. Integer means are exact (i128 sums).
fn two_pass(x: &Column, v: &[f64], ids: &[u32], ng: usize) -> (Vec<i64>, Vec<f64>, Vec<f64>) {
    let mut cnt = vec![0i64; ng];
    let mut mean = vec![0.0f64; ng];
    if let Some(iv) = int_values(x) {
        let mut s = vec![0i128; ng];
        for (i, &g) in ids.iter().enumerate() {
            if x.is_valid(i) {
                s[g as usize] += iv[i] as i128;
                cnt[g as usize] += 1;
            }
        }
        mean.iter_mut()
            .zip(s.iter().zip(&cnt))
            .for_each(|(m, (&s, &c))| *m = if c > 0 { s as f64 / c as f64 } else { 0.0 });
    } else {
        (cnt, [mean]) = super::means::group_means(ids, ng, |i| x.is_valid(i), [v]);
    }
    let mut m2 = vec![0.0f64; ng];
    for (i, &g) in ids.iter().enumerate() {
        if x.is_valid(i) {
            let d = v[i] - mean[g as usize];
            m2[g as usize] += d * d;
        }
    }
    (cnt, mean, m2)
}

impl Accumulator for Variance {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let x = input.arg()?;
        let v = to_f64(x)?;
        self.grow(ngroups);
        let (c, m, q) = two_pass(x, &v, &rows.ids(), ngroups);
        for g in 0..ngroups {
            self.combine(g, c[g], m[g], q[g]);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Ok(vec![
            Column::from_data(ColumnData::Int64(std::mem::take(&mut self.n).into())),
            Column::from_data(ColumnData::Float64(std::mem::take(&mut self.mean).into())),
            Column::from_data(ColumnData::Float64(std::mem::take(&mut self.m2).into())),
        ])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        Ok(vec![
            Column::from_data(ColumnData::Int64(at(&self.n, ids).into())),
            Column::from_data(ColumnData::Float64(at(&self.mean, ids).into())),
            Column::from_data(ColumnData::Float64(at(&self.m2, ids).into())),
        ])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let bad = || SqlError::Internal("variance state is (BIGINT, DOUBLE, DOUBLE)".into());
        let [n, m, q] = state else { return Err(bad()) };
        let (ColumnData::Int64(n), ColumnData::Float64(m), ColumnData::Float64(q)) = (&n.data(), &m.data(), &q.data())
        else {
            return Err(bad());
        };
        self.grow(ngroups);
        for (i, &g) in ids.iter().enumerate() {
            self.combine(g as usize, n[i], m[i], q[i]);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        Ok(from_opt_f64(self.n.iter().zip(&self.m2).map(|(&n, &q)| self.value(n, q))))
    }

    /// Welford over frames that share their start and only grow; two passes over each frame
    /// otherwise.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let x = input.arg()?;
        let v = to_f64(x)?;
        // Welford's (count, mean, M2) over a running frame.
        let add = |(cnt, mean, m2): &mut (i64, f64, f64), r: usize| {
            if x.is_valid(r) {
                *cnt += 1;
                let d = v[r] - *mean;
                *mean += d / *cnt as f64;
                *m2 += d * (v[r] - *mean);
            }
            Ok(())
        };
        let whole = |rows: std::ops::Range<usize>| {
            let (c, mu) = super::means::mean_of(|| rows.clone().filter(|&r| x.is_valid(r)).map(|r| v[r]));
            let q: f64 = rows.filter(|&r| x.is_valid(r)).map(|r| (v[r] - mu) * (v[r] - mu)).sum();
            Ok(self.value(c, q))
        };
        let value = |&(cnt, _, m2): &(i64, f64, f64)| self.value(cnt, m2);
        let out = running_frames(fs, fe, || (0, 0.0, 0.0), add, value, whole)?;
        Ok(from_opt_f64(out.into_iter()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A constant column whose mean is not its sum's exact quotient (0.1 three times) has a
    /// variance of exactly 0, grouped and over a sliding frame, as DuckDB gives it.
    #[test]
    fn a_constant_column_has_no_variance() {
        let x = Column::from_data(ColumnData::Float64(vec![0.1; 3].into()));
        let input = Input { args: vec![&x], order: None, sorted: false };
        let mut acc = Variance::new(AggFunc::VarSamp);
        acc.update(&input, Rows::sparse(&[0, 0, 0]), 1).expect("update");
        assert_eq!(acc.finish().expect("finish").get(0), zepto_storage::Value::Float64(0.0));
        let mut acc = Variance::new(AggFunc::VarPop);
        let framed = acc.frames(&input, &[0, 1], &[3, 3]).expect("frames");
        assert_eq!(framed.get(0), zepto_storage::Value::Float64(0.0));
    }
}
