//! `min(x)` and `max(x)` of any ordered type (NULLs skipped; NaN is the largest double, as
//! in DuckDB). State: the extreme value per group (NULL for a group with none). NULL-free
//! numbers reduce as values (runs of doubles in four-row chunks, `run_extremes.rs`; lanes per
//! id); anything else finds each group's best row.

use super::block_runs;
use super::kernels::{best_rows, choose, grow, in_range, pad, run_int_extremes, sliding_best};
use super::narrow_runs;
use super::run_extremes::run_extremes;
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use crate::exec::cmp::value_cmp;
use std::cmp::Ordering;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, ColumnData};

pub struct MinMax {
    max: bool,
    /// Each group's extreme so far (NULL: none yet); `None` before the first update.
    best: Option<Column>,
}

/// A merge of fewer rows than the groups over this touches only their groups.
const SPARSE_MERGE: usize = 8;

impl MinMax {
    pub fn new(max: bool) -> MinMax {
        MinMax { max, best: None }
    }

    fn want(&self) -> Ordering {
        if self.max {
            Ordering::Greater
        } else {
            Ordering::Less
        }
    }

    /// Each group's extreme among `x`'s rows.
    fn candidates(&self, x: &Column, rows: Rows, ngroups: usize) -> Column {
        if let Some(c) = self.by_value(x, rows, ngroups) {
            return c;
        }
        let best = best_rows(x, &rows.ids(), ngroups, self.want(), true);
        x.take_opt(&best)
    }

    /// The extremes as values, for NULL-free numbers where every group has a row; `None`
    /// otherwise (strings, NULLs, empty groups, and NaN among rows by id: the row search).
    fn by_value(&self, x: &Column, rows: Rows, ngroups: usize) -> Option<Column> {
        if x.validity().is_some() || rows.is_empty() {
            return None;
        }
        let max = self.max;
        macro_rules! reduce {
            ($v:expr, $t:ty, $variant:ident) => {{
                let init = if max { <$t>::MIN } else { <$t>::MAX };
                let mut acc = match rows {
                    // Runs cover every group: the kernel's (or the summaries') answer is the
                    // state.
                    Rows::Runs { starts, n } => match block_runs::int_runs(x, starts, n) {
                        Some(ss) => ss
                            .iter()
                            .map(|s| <$t>::try_from(if max { s.max } else { s.min }))
                            .collect::<std::result::Result<Vec<$t>, _>>()
                            .ok()?,
                        None => run_int_extremes(&$v[..n], starts, max),
                    },
                    Rows::Ids { .. } => vec![init; ngroups],
                };
                acc.resize(ngroups.max(acc.len()), init);
                if let Rows::Ids { ids, .. } = rows {
                    let pick = |a: $t, y: $t| if max { a.max(y) } else { a.min(y) };
                    ids.iter().zip($v.iter()).for_each(|(&g, &y)| acc[g as usize] = pick(acc[g as usize], y));
                }
                ColumnData::$variant(acc.into())
            }};
        }
        let data = match &x.data() {
            ColumnData::Float64(v) => ColumnData::Float64((self.float_extremes(x, v, rows, ngroups)?).into()),
            ColumnData::Int64(v) => reduce!(v, i64, Int64),
            ColumnData::Timestamp(v) => reduce!(v, i64, Timestamp),
            ColumnData::Int32(v) => reduce!(v, i32, Int32),
            ColumnData::Date(v) => reduce!(v, i32, Date),
            _ => return None,
        };
        // Runs and dense ids cover every group; other ids may leave a group without a row (its
        // value stays the initial one), which only the row search reports as NULL.
        if let Rows::Ids { ids, dense: false } = rows {
            let mut seen = vec![false; ngroups];
            ids.iter().for_each(|&g| seen[g as usize] = true);
            if !seen.iter().all(|&s| s) {
                return None;
            }
        }
        Some(Column::from_data(data))
    }

    fn float_extremes(&self, x: &Column, v: &[f64], rows: Rows, ngroups: usize) -> Option<Vec<f64>> {
        match rows {
            Rows::Runs { starts, n } => Some(if let Some(e) = summarized_extremes(x, starts, n, self.max) {
                e
            } else if let Some((lo, hi)) = narrow_runs::float_extremes(x, starts, n) {
                if self.max {
                    hi
                } else {
                    lo
                }
            } else if self.max {
                run_extremes::<false, true>(v, starts, n).1
            } else {
                run_extremes::<true, false>(v, starts, n).0
            }),
            Rows::Ids { ids, .. } => {
                if v.iter().any(|f| f.is_nan()) {
                    return None; // NaN's place in the order: the row search
                }
                let mut acc = vec![if self.max { f64::NEG_INFINITY } else { f64::INFINITY }; ngroups];
                if self.max {
                    ids.iter().zip(v).for_each(|(&g, &y)| acc[g as usize] = acc[g as usize].max(y));
                } else {
                    ids.iter().zip(v).for_each(|(&g, &y)| acc[g as usize] = acc[g as usize].min(y));
                }
                Some(acc)
            }
        }
    }

    /// [`MinMax::fold`] of `x`'s rows (row `i` into group `ids[i]`) into a state of many more
    /// groups, touching only the groups they fall in.
    fn fold_sparse(&mut self, x: &Column, ids: &[u32], ngroups: usize) {
        let want = self.want();
        let best = best_rows(x, ids, ngroups, want, true);
        let (groups, rows): (Vec<u32>, Vec<u32>) =
            best.iter().enumerate().filter(|(_, &r)| r != NULL_INDEX).map(|(g, &r)| (g as u32, r)).unzip();
        let Some(old) = self.best.as_mut() else { return };
        grow(old, ngroups);
        let cand = x.take(&rows);
        let k = groups.len();
        let both = Column::concat(&[&old.take(&groups), &cand]);
        let cmp = value_cmp(&both);
        let (at, pick): (Vec<u32>, Vec<u32>) = (0..k)
            .filter(|&j| cand.is_valid(j) && (!both.is_valid(j) || cmp(k + j, j) == want))
            .map(|j| (groups[j], j as u32))
            .unzip();
        old.patch(&at, &cand.take(&pick));
    }

    /// Fold one extreme per group into the state (ties keep the state's).
    fn fold(&mut self, cand: Column, ngroups: usize) {
        let cand = pad(cand, ngroups);
        self.best = Some(match self.best.take() {
            None => cand,
            Some(old) => {
                let old = pad(old, ngroups);
                let cmp_col = Column::concat(&[&old, &cand]);
                let cmp = value_cmp(&cmp_col);
                let want = self.want();
                choose(&old, &cand, |g| cand.is_valid(g) && (!old.is_valid(g) || cmp(ngroups + g, g) == want))
            }
        });
    }
}

/// `min(x)` and `max(x)` over the same rows at once, where that reads `x` once: NULL-free
/// DOUBLEs over runs (`run_extremes` asked for both, as each alone asks for its side).
/// `None` otherwise: the two accumulators then run one after the other.
pub fn both(x: &Column, rows: Rows) -> Option<(Column, Column)> {
    let (Rows::Runs { starts, n }, ColumnData::Float64(v), None) = (rows, x.data(), x.validity()) else {
        return None;
    };
    if n == 0 {
        return None;
    }
    if let Some(ss) = block_runs::float_runs(x, starts, n) {
        let side = |max| ss.iter().map(|s| block_runs::float_extreme(s, max)).collect::<Option<Vec<f64>>>();
        if let (Some(lo), Some(hi)) = (side(false), side(true)) {
            return Some((
                Column::from_data(ColumnData::Float64(lo.into())),
                Column::from_data(ColumnData::Float64(hi.into())),
            ));
        }
    }
    let (lo, hi) =
        narrow_runs::float_extremes(x, starts, n).unwrap_or_else(|| run_extremes::<true, true>(v, starts, n));
    Some((Column::from_data(ColumnData::Float64(lo.into())), Column::from_data(ColumnData::Float64(hi.into()))))
}

/// Each run's least (or greatest) double from its blocks' summaries ([`block_runs`]): `None`
/// where the runs are short or a summary cannot tell.
fn summarized_extremes(x: &Column, starts: &[u32], n: usize, max: bool) -> Option<Vec<f64>> {
    block_runs::float_runs(x, starts, n)?.iter().map(|s| block_runs::float_extreme(s, max)).collect()
}

impl Accumulator for MinMax {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let cand = self.candidates(input.arg()?, rows, ngroups);
        self.fold(cand, ngroups);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Ok(vec![self.finish()?])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        let best = self.best.as_ref().ok_or_else(|| SqlError::Internal("min/max state before any input".into()))?;
        Ok(vec![best.take_opt(&in_range(ids, best.len()))])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let [x] = state else { return Err(SqlError::Internal("min/max state is one column".into())) };
        if self.best.is_some() && ids.len() * SPARSE_MERGE < ngroups {
            self.fold_sparse(x, ids, ngroups);
            return Ok(());
        }
        let cand = self.candidates(x, Rows::sparse(ids), ngroups);
        self.fold(cand, ngroups);
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        self.best.take().ok_or_else(|| SqlError::Internal("min/max finished before any input".into()))
    }

    /// Sliding frames: a monotonic deque of positions (a row leaves when a later row at least
    /// as good arrives, and when the frame's start passes it).
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let x = input.arg()?;
        let cmp = value_cmp(x);
        let max = self.max;
        let dominated = |a: usize, b: usize| {
            let o = cmp(b, a);
            if max {
                o != Ordering::Less
            } else {
                o != Ordering::Greater
            }
        };
        let idx = sliding_best(fs, fe, |i| x.is_valid(i), dominated);
        Ok(x.take_opt(&idx))
    }
}
