//! `skewness(x)`, `kurtosis(x)`, `kurtosis_pop(x)` ([`MomentStat`]): each batch reduced in two
//! passes (each group's mean, then the sums of its deviations' second, third and fourth
//! powers), states combined with Pébay's pairwise update (Chan et al.'s, carried to the third
//! and fourth moments). Central moments, not raw power sums: values far from zero (prices)
//! keep their precision. State: count, mean, M2, M3, M4 per group.

use super::kernels::{at, from_opt_f64, running_frames, to_f64};
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use crate::expr::functions::MomentStat;
use zepto_storage::{Column, ColumnData};

/// One group's count, mean, and sums of its deviations' powers (`m2`, `m3`, `m4`).
#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Moments {
    n: i64,
    mean: f64,
    m2: f64,
    m3: f64,
    m4: f64,
}

impl Moments {
    /// The moments of the values of both.
    fn combine(self, b: Moments) -> Moments {
        let a = self;
        if b.n == 0 {
            return a;
        }
        if a.n == 0 {
            return b;
        }
        let (na, nb) = (a.n as f64, b.n as f64);
        let n = na + nb;
        let d = b.mean - a.mean;
        let dn = d / n;
        let m2 = a.m2 + b.m2 + d * dn * na * nb;
        let m3 = a.m3 + b.m3 + d * dn * dn * na * nb * (na - nb) + 3.0 * dn * (na * b.m2 - nb * a.m2);
        let m4 = a.m4
            + b.m4
            + d * dn * dn * dn * na * nb * (na * na - na * nb + nb * nb)
            + 6.0 * dn * dn * (na * na * b.m2 + nb * nb * a.m2)
            + 4.0 * dn * (na * b.m3 - nb * a.m3);
        Moments { n: a.n + b.n, mean: a.mean + nb * dn, m2, m3, m4 }
    }

    /// The moments of one value.
    fn one(x: f64) -> Moments {
        Moments { n: 1, mean: x, ..Moments::default() }
    }

    /// The statistic (`None`: NULL), as DuckDB defines it.
    fn value(self, stat: MomentStat) -> Option<f64> {
        let n = self.n as f64;
        let (m2, m3, m4) = (self.m2 / n, self.m3 / n, self.m4 / n);
        match stat {
            MomentStat::Skewness if self.n < 3 => None,
            MomentStat::Skewness if m2 == 0.0 => Some(f64::NAN),
            MomentStat::Skewness => Some((n * (n - 1.0)).sqrt() / (n - 2.0) * m3 / m2.powf(1.5)),
            MomentStat::Kurtosis if self.n < 4 || m2 == 0.0 => None,
            MomentStat::Kurtosis => {
                let g = m4 / (m2 * m2);
                Some((n - 1.0) * ((n + 1.0) * g - 3.0 * (n - 1.0)) / ((n - 2.0) * (n - 3.0)))
            }
            MomentStat::KurtosisPop if self.n < 1 || m2 == 0.0 => None,
            MomentStat::KurtosisPop => Some(m4 / (m2 * m2) - 3.0),
        }
    }
}

pub struct ShapeStat {
    stat: MomentStat,
    groups: Vec<Moments>,
}

impl ShapeStat {
    pub fn new(stat: MomentStat) -> ShapeStat {
        ShapeStat { stat, groups: Vec::new() }
    }

    fn grow(&mut self, ngroups: usize) {
        if self.groups.len() < ngroups {
            self.groups.resize(ngroups, Moments::default());
        }
    }
}

/// Per group, the moments of the valid values of `x` (`v`: its values as doubles), in two
/// passes.
fn two_pass(x: &Column, v: &[f64], ids: &[u32], ng: usize) -> Vec<Moments> {
    let (n, [mean]) = super::means::group_means(ids, ng, |i| x.is_valid(i), [v]);
    let mut out: Vec<Moments> =
        n.iter().zip(&mean).map(|(&n, &mean)| Moments { n, mean, ..Moments::default() }).collect();
    for (i, &g) in ids.iter().enumerate() {
        if x.is_valid(i) {
            let m = &mut out[g as usize];
            let d = v[i] - m.mean;
            let d2 = d * d;
            m.m2 += d2;
            m.m3 += d2 * d;
            m.m4 += d2 * d2;
        }
    }
    out
}

/// The moments of the valid values of `x` among rows `rows` (`v`: its values as doubles), in
/// two passes.
fn of_rows(x: &Column, v: &[f64], rows: std::ops::Range<usize>) -> Moments {
    let valid = || rows.clone().filter(|&r| x.is_valid(r)).map(|r| v[r]);
    let (n, mean) = super::means::mean_of(valid);
    let mut m = Moments { n, mean, ..Moments::default() };
    for x in valid() {
        let d = x - mean;
        let d2 = d * d;
        (m.m2, m.m3, m.m4) = (m.m2 + d2, m.m3 + d2 * d, m.m4 + d2 * d2);
    }
    m
}

fn floats(v: Vec<f64>) -> Column {
    Column::from_data(ColumnData::Float64(v.into()))
}

impl Accumulator for ShapeStat {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let x = input.arg()?;
        let v = to_f64(x)?;
        self.grow(ngroups);
        for (g, m) in two_pass(x, &v, &rows.ids(), ngroups).into_iter().enumerate() {
            self.groups[g] = self.groups[g].combine(m);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        let ids: Vec<u32> = (0..self.groups.len() as u32).collect();
        let s = self.state_of(&ids);
        self.groups.clear();
        s
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        let g = at(&self.groups, ids);
        Ok(vec![
            Column::from_data(ColumnData::Int64(g.iter().map(|m| m.n).collect::<Vec<_>>().into())),
            floats(g.iter().map(|m| m.mean).collect()),
            floats(g.iter().map(|m| m.m2).collect()),
            floats(g.iter().map(|m| m.m3).collect()),
            floats(g.iter().map(|m| m.m4).collect()),
        ])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let bad = || SqlError::Internal("moment state is (BIGINT, DOUBLE, DOUBLE, DOUBLE, DOUBLE)".into());
        let [n, mean, m2, m3, m4] = state else { return Err(bad()) };
        let f = |c: &Column| match c.data() {
            ColumnData::Float64(v) => Ok(v.clone()),
            _ => Err(bad()),
        };
        let ColumnData::Int64(n) = n.data() else { return Err(bad()) };
        let (mean, m2, m3, m4) = (f(mean)?, f(m2)?, f(m3)?, f(m4)?);
        self.grow(ngroups);
        for (i, &g) in ids.iter().enumerate() {
            let b = Moments { n: n[i], mean: mean[i], m2: m2[i], m3: m3[i], m4: m4[i] };
            self.groups[g as usize] = self.groups[g as usize].combine(b);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        Ok(from_opt_f64(self.groups.iter().map(|m| m.value(self.stat))))
    }

    /// Frames that share their start and only grow (a running frame) a value at a time; any
    /// other frame in two passes over its rows.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let x = input.arg()?;
        let v = to_f64(x)?;
        let add = |run: &mut Moments, r: usize| {
            if x.is_valid(r) {
                *run = run.combine(Moments::one(v[r]));
            }
            Ok(())
        };
        let whole = |rows| Ok(of_rows(x, &v, rows).value(self.stat));
        let out = running_frames(fs, fe, Moments::default, add, |m| m.value(self.stat), whole)?;
        Ok(from_opt_f64(out.into_iter()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moments combined pairwise equal those of all the values at once, whatever the split.
    #[test]
    fn combined_moments_equal_one_pass() {
        let v: Vec<f64> = (0..40).map(|i| 100.0 + ((i * 37) % 11) as f64 * 0.25 + (i as f64).sqrt()).collect();
        let x = Column::from_data(ColumnData::Float64(v.clone().into()));
        let whole = two_pass(&x, &v, &[0; 40], 1)[0];
        for cut in [1, 7, 20, 39] {
            let (a, b) = (&v[..cut], &v[cut..]);
            let part = |s: &[f64]| {
                two_pass(&Column::from_data(ColumnData::Float64(s.to_vec().into())), s, &vec![0; s.len()], 1)[0]
            };
            let c = part(a).combine(part(b));
            assert_eq!(c.n, whole.n);
            for (got, want) in [(c.mean, whole.mean), (c.m2, whole.m2), (c.m3, whole.m3), (c.m4, whole.m4)] {
                assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "cut {cut}: {got} vs {want}");
            }
        }
    }

    /// DuckDB's answers for 1, 2, 4, 10 (and its NULLs and NaN).
    #[test]
    fn statistics_as_duckdb_gives_them() {
        let v = [1.0, 2.0, 4.0, 10.0];
        let x = Column::from_data(ColumnData::Float64(v.to_vec().into()));
        let m = two_pass(&x, &v, &[0; 4], 1)[0];
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(m.value(MomentStat::Skewness), 1.4693345482106233));
        assert!(close(m.value(MomentStat::Kurtosis), 2.0307692307692315));
        assert!(close(m.value(MomentStat::KurtosisPop), -0.9292307692307693));
        let same = Moments { n: 4, mean: 1.0, ..Moments::default() };
        assert!(same.value(MomentStat::Skewness).is_some_and(f64::is_nan));
        assert_eq!((same.value(MomentStat::Kurtosis), same.value(MomentStat::KurtosisPop)), (None, None));
        let two = Moments { n: 2, ..m };
        assert_eq!((two.value(MomentStat::Skewness), two.value(MomentStat::Kurtosis)), (None, None));
    }
}
