//! The statistics of pairs `(y, x)`: `covar_pop`, `covar_samp`, `corr` and the `regr_*` family
//! (PostgreSQL's and DuckDB's argument order, the dependent value first). Only rows where both
//! are non-NULL count. Each input is reduced in two passes (the means, then the deviations'
//! squares and products), and states combine with Chan et al.'s pairwise update, as
//! `variance.rs` does for one variable: a beta of returns around 1e-4 keeps its digits where a
//! sum of products would cancel them away. State: count, the two means, and the sums of
//! squared deviations of each and of their products, per group.

use super::kernels::{at, from_opt_f64, to_f64};
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use crate::expr::functions::PairStat;
use zepto_storage::{Column, ColumnData};

/// One group's moments of its pairs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Moments {
    n: i64,
    mean_y: f64,
    mean_x: f64,
    /// Sums of squared deviations from the means (y, x) and of their products.
    syy: f64,
    sxx: f64,
    sxy: f64,
}

impl Moments {
    /// One pair more (Welford's update, for frames that grow a row at a time).
    fn add(&mut self, y: f64, x: f64) {
        self.n += 1;
        let n = self.n as f64;
        let (dy, dx) = (y - self.mean_y, x - self.mean_x);
        self.mean_y += dy / n;
        self.mean_x += dx / n;
        self.syy += dy * (y - self.mean_y);
        self.sxx += dx * (x - self.mean_x);
        self.sxy += dy * (x - self.mean_x);
    }

    /// Pearson's coefficient: over the root of the spreads' product (exactly 1 for a perfect
    /// fit), or the product of their roots where that product overflows or vanishes.
    fn corr(&self) -> f64 {
        let p = self.sxx * self.syy;
        if p.is_normal() {
            self.sxy / p.sqrt()
        } else {
            self.sxy / (self.sxx.sqrt() * self.syy.sqrt())
        }
    }

    /// `b` folded into `self` (Chan et al.).
    fn combine(&mut self, b: Moments) {
        if b.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = b;
            return;
        }
        let n = self.n + b.n;
        let (dy, dx) = (b.mean_y - self.mean_y, b.mean_x - self.mean_x);
        let w = self.n as f64 * b.n as f64 / n as f64;
        self.mean_y += dy * b.n as f64 / n as f64;
        self.mean_x += dx * b.n as f64 / n as f64;
        self.syy += b.syy + dy * dy * w;
        self.sxx += b.sxx + dx * dx * w;
        self.sxy += b.sxy + dy * dx * w;
        self.n = n;
    }

    /// The statistic, as DuckDB gives it: NULL without a pair (`regr_count` 0), NULL where a
    /// sample statistic has one pair or the intercept and R² have no spread in `x`; a zero
    /// spread elsewhere divides as IEEE does (`corr` of a constant is NaN).
    fn value(&self, stat: PairStat) -> Option<f64> {
        let n = self.n as f64;
        if self.n == 0 {
            return (stat == PairStat::RegrCount).then_some(0.0);
        }
        Some(match stat {
            PairStat::CovarPop => self.sxy / n,
            PairStat::CovarSamp if self.n < 2 => return None,
            PairStat::CovarSamp => self.sxy / (n - 1.0),
            PairStat::Corr => self.corr(),
            PairStat::RegrSlope => self.sxy / self.sxx,
            PairStat::RegrIntercept => {
                let slope = self.sxy / self.sxx;
                if slope.is_nan() {
                    return None;
                }
                self.mean_y - slope * self.mean_x
            }
            PairStat::RegrR2 if self.sxx == 0.0 => return None,
            PairStat::RegrR2 if self.syy == 0.0 => 1.0,
            PairStat::RegrR2 => (self.sxy / self.sxx) * (self.sxy / self.syy),
            PairStat::RegrCount => n,
            PairStat::RegrAvgY => self.mean_y,
            PairStat::RegrAvgX => self.mean_x,
            PairStat::RegrSyy => self.syy,
            PairStat::RegrSxx => self.sxx,
            PairStat::RegrSxy => self.sxy,
        })
    }
}

pub struct Covariance {
    stat: PairStat,
    groups: Vec<Moments>,
}

impl Covariance {
    pub fn new(stat: PairStat) -> Covariance {
        Covariance { stat, groups: Vec::new() }
    }

    fn grow(&mut self, ngroups: usize) {
        if self.groups.len() < ngroups {
            self.groups.resize(ngroups, Moments::default());
        }
    }
}

/// Per group, the moments of the pairs of rows `ids` (row `i` in group `ids[i]`) where `y`
/// and `x` are both valid: the corrected means ([`super::means`]), then the sums of squares
/// and products of the deviations from them.
fn two_pass(y: &Column, x: &Column, ids: &[u32], ng: usize) -> Result<Vec<Moments>> {
    let (yv, xv) = (to_f64(y)?, to_f64(x)?);
    let both = |i: usize| y.is_valid(i) && x.is_valid(i);
    let (cnt, [mean_y, mean_x]) = super::means::group_means(ids, ng, both, [&yv, &xv]);
    let mut m: Vec<Moments> =
        (0..ng).map(|g| Moments { n: cnt[g], mean_y: mean_y[g], mean_x: mean_x[g], ..Moments::default() }).collect();
    for (i, &g) in ids.iter().enumerate().filter(|&(i, _)| both(i)) {
        let s = &mut m[g as usize];
        let (dy, dx) = (yv[i] - s.mean_y, xv[i] - s.mean_x);
        (s.syy, s.sxx, s.sxy) = (s.syy + dy * dy, s.sxx + dx * dx, s.sxy + dy * dx);
    }
    Ok(m)
}

/// Per frame `fs[k]..fe[k]` of rows, the moments of its pairs: frames that share their start
/// and only grow (a running window) a pair at a time, others in two passes each.
fn frame_moments(y: &Column, x: &Column, fs: &[u32], fe: &[u32]) -> Result<Vec<Moments>> {
    let (yv, xv) = (to_f64(y)?, to_f64(x)?);
    let both = |i: usize| y.is_valid(i) && x.is_valid(i);
    let mut out = Vec::with_capacity(fs.len());
    let (mut start, mut end, mut run) = (usize::MAX, 0usize, Moments::default());
    // Rows the two-pass frames read, held to the cap frames gathered as groups have.
    let mut read = 0usize;
    for k in 0..fs.len() {
        let (a, b) = (fs[k] as usize, (fe[k] as usize).max(fs[k] as usize));
        let growing = a == start && b >= end;
        if growing || fs.get(k + 1).is_some_and(|&next| next as usize == a) {
            if !growing {
                (start, end, run) = (a, a, Moments::default());
            }
            for i in (end..b).filter(|&i| both(i)) {
                run.add(yv[i], xv[i]);
            }
            end = b;
            out.push(run);
            continue;
        }
        read += b - a;
        if read > super::MAX_EXPANDED {
            return Err(super::frames_too_long());
        }
        out.push(frame_two_pass(&yv, &xv, a..b, both));
    }
    Ok(out)
}

/// The moments of the valid pairs of rows `rows` of `yv` and `xv`, in two passes (the means
/// corrected as [`super::means`] corrects them).
fn frame_two_pass(yv: &[f64], xv: &[f64], rows: std::ops::Range<usize>, both: impl Fn(usize) -> bool) -> Moments {
    let kept = || rows.clone().filter(|&i| both(i));
    let (n, mean_y) = super::means::mean_of(|| kept().map(|i| yv[i]));
    let (_, mean_x) = super::means::mean_of(|| kept().map(|i| xv[i]));
    let mut m = Moments { n, mean_y, mean_x, ..Moments::default() };
    for i in kept() {
        let (dy, dx) = (yv[i] - m.mean_y, xv[i] - m.mean_x);
        (m.syy, m.sxx, m.sxy) = (m.syy + dy * dy, m.sxx + dx * dx, m.sxy + dy * dx);
    }
    m
}

/// The state's columns: count, then the five moments as doubles.
const WIDTH: usize = 6;

impl Accumulator for Covariance {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let [y, x] = input.args.as_slice() else {
            return Err(SqlError::Internal("a statistic of pairs takes two arguments".into()));
        };
        self.grow(ngroups);
        for (g, m) in two_pass(y, x, &rows.ids(), ngroups)?.into_iter().enumerate() {
            self.groups[g].combine(m);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        let ids: Vec<u32> = (0..self.groups.len() as u32).collect();
        let out = self.state_of(&ids);
        self.groups.clear();
        out
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        let g = at(&self.groups, ids);
        let f = |part: fn(&Moments) -> f64| Column::from_data(ColumnData::Float64(g.iter().map(part).collect()));
        Ok(vec![
            Column::from_data(ColumnData::Int64(g.iter().map(|m| m.n).collect())),
            f(|m| m.mean_y),
            f(|m| m.mean_x),
            f(|m| m.syy),
            f(|m| m.sxx),
            f(|m| m.sxy),
        ])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let bad = || SqlError::Internal(format!("a pair statistic's state is BIGINT and {} DOUBLEs", WIDTH - 1));
        let [n, rest @ ..] = state else { return Err(bad()) };
        let ColumnData::Int64(n) = &n.data() else { return Err(bad()) };
        let f: Vec<&[f64]> = rest
            .iter()
            .map(|c| match c.data() {
                ColumnData::Float64(v) => Ok(v.as_slice()),
                _ => Err(bad()),
            })
            .collect::<Result<_>>()?;
        let [my, mx, syy, sxx, sxy] = f.as_slice() else { return Err(bad()) };
        self.grow(ngroups);
        for (i, &g) in ids.iter().enumerate() {
            let m = Moments { n: n[i], mean_y: my[i], mean_x: mx[i], syy: syy[i], sxx: sxx[i], sxy: sxy[i] };
            self.groups[g as usize].combine(m);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        Ok(result(self.stat, &self.groups))
    }

    /// Running frames a pair at a time, others in two passes each (`frame_moments`): no
    /// frame's rows are gathered into groups.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let [y, x] = input.args.as_slice() else {
            return Err(SqlError::Internal("a statistic of pairs takes two arguments".into()));
        };
        Ok(result(self.stat, &frame_moments(y, x, fs, fe)?))
    }
}

/// The statistic of each of `groups`.
fn result(stat: PairStat, groups: &[Moments]) -> Column {
    match stat {
        PairStat::RegrCount => Column::from_data(ColumnData::Int64(groups.iter().map(|m| m.n).collect())),
        _ => from_opt_f64(groups.iter().map(|m| m.value(stat))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moments of `pairs` (y, x) in one go.
    fn of(pairs: &[(f64, f64)]) -> Moments {
        let y = Column::from_data(ColumnData::Float64(pairs.iter().map(|p| p.0).collect()));
        let x = Column::from_data(ColumnData::Float64(pairs.iter().map(|p| p.1).collect()));
        two_pass(&y, &x, &vec![0; pairs.len()], 1).expect("moments")[0]
    }

    /// Partial moments combined give what one pass over all pairs gives, and the statistics
    /// are the textbook ones.
    #[test]
    fn combined_moments_match_one_pass() {
        let pairs: Vec<(f64, f64)> =
            (0..50).map(|i| (1e-4 * ((i * 7919) % 13) as f64 + 3.0, 1e-4 * ((i * 104_729) % 17) as f64)).collect();
        let whole = of(&pairs);
        let mut parts = of(&pairs[..17]);
        parts.combine(of(&pairs[17..40]));
        parts.combine(of(&pairs[40..]));
        parts.combine(Moments::default());
        // Within rounding of the sums' scale (a sum of products may cancel to near zero).
        let scale = (whole.sxx * whole.syy).sqrt();
        for (a, b) in [(parts.sxy, whole.sxy), (parts.sxx, whole.sxx), (parts.syy, whole.syy)] {
            assert!((a - b).abs() <= 1e-12 * scale.max(b.abs()), "{a} against {b}");
        }
        assert_eq!(parts.n, 50);
        assert!((parts.mean_y - whole.mean_y).abs() <= 1e-15 * whole.mean_y.abs());
        let m = of(&[(1.0, 3.0), (2.0, 1.0), (3.0, 2.0)]);
        assert_eq!(m.value(PairStat::CovarPop), Some(-1.0 / 3.0));
        assert_eq!(m.value(PairStat::CovarSamp), Some(-0.5));
        assert_eq!(m.value(PairStat::RegrIntercept), Some(3.0));
        assert_eq!(m.value(PairStat::RegrR2), Some(0.25));
        let flat_x = of(&[(1.0, 3.0), (2.0, 3.0)]);
        assert!(flat_x.value(PairStat::RegrSlope).is_some_and(f64::is_nan));
        assert_eq!(flat_x.value(PairStat::RegrIntercept), None);
        assert_eq!(of(&[(1.0, 3.0), (1.0, 2.0)]).value(PairStat::RegrR2), Some(1.0));
        assert_eq!(Moments::default().value(PairStat::RegrCount), Some(0.0));
        assert_eq!(Moments::default().value(PairStat::Corr), None);
        // A perfect fit is exactly one.
        let fit = of(&[(2.0, 1.0), (4.0, 2.0), (6.0, 3.0)]);
        assert_eq!((fit.value(PairStat::Corr), fit.value(PairStat::RegrR2)), (Some(1.0), Some(1.0)));
    }

    /// A constant column's deviations are exactly zero, grouped or over frames of either
    /// kind, though its mean is not a sum's exact quotient: no spread in `x` gives NaN and
    /// NULL, not a slope from rounding.
    #[test]
    fn a_constant_column_has_no_spread() {
        let pairs = [(1.0, 0.1), (2.0, 0.1), (4.0, 0.1)];
        let m = of(&pairs);
        assert_eq!(m.sxx, 0.0);
        assert!(m.value(PairStat::RegrSlope).is_some_and(f64::is_nan));
        assert_eq!((m.value(PairStat::RegrIntercept), m.value(PairStat::RegrR2)), (None, None));
        let y = Column::from_data(ColumnData::Float64(pairs.iter().map(|p| p.0).collect()));
        let x = Column::from_data(ColumnData::Float64(pairs.iter().map(|p| p.1).collect()));
        let (running, sliding) = (frame_moments(&y, &x, &[0, 0], &[2, 3]), frame_moments(&y, &x, &[0, 1], &[3, 3]));
        for f in running.expect("running").into_iter().chain(sliding.expect("sliding")) {
            assert_eq!(f.sxx, 0.0, "{f:?}");
        }
    }

    /// Running frames (a pair at a time), sliding ones and empty ones give each frame's own
    /// moments, NULL pairs left out.
    #[test]
    fn frames_give_each_frames_moments() {
        let y = Column::from_data(ColumnData::Float64((0..40).map(|i| ((i * 37) % 11) as f64 / 3.0).collect()));
        let valid: Vec<bool> = (0..40).map(|i| i != 3 && i != 17).collect();
        let x = Column::new(
            ColumnData::Float64((0..40).map(|i| (i % 7) as f64).collect()),
            Some(zepto_storage::Bitmap::from_bools(valid)),
        );
        let running: Vec<(u32, u32)> = (0..40).map(|e| (0, e + 1)).collect();
        let sliding: Vec<(u32, u32)> =
            (0..40u32).map(|e| (e.saturating_sub(4), e + 1)).chain([(5, 5), (9, 2)]).collect();
        for frames in [running, sliding] {
            let (fs, fe): (Vec<u32>, Vec<u32>) = frames.iter().copied().unzip();
            let got = frame_moments(&y, &x, &fs, &fe).expect("frames");
            for (k, &(a, b)) in frames.iter().enumerate() {
                let rows: Vec<u32> = (a..b.max(a)).collect();
                let want = two_pass(&y.take(&rows), &x.take(&rows), &vec![0; rows.len()], 1).expect("moments")[0];
                assert_eq!(got[k].n, want.n, "frame {a}..{b}");
                for (g, w) in [(got[k].sxy, want.sxy), (got[k].sxx, want.sxx), (got[k].mean_y, want.mean_y)] {
                    assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "frame {a}..{b}: {g} against {w}");
                }
            }
        }
    }
}
