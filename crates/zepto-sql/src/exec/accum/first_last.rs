//! `first(x)` and `last(x)`: the value at the group's earliest / latest row by the designated
//! timestamp (by position when the rows are already in time order, or when the table has no
//! timestamp). The value itself may be NULL. Ties in time go to the earlier row for `first`
//! and the later one for `last`. State: the value and the time of the row picked; partial
//! states merge by time, ties to the earlier partial for `first`, the later for `last`.

use super::kernels::{best_rows, grow, in_range, pad};
use super::{runs, Accumulator, Input, Rows, Use};
use crate::error::{Result, SqlError};
use std::cmp::Ordering;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, DataType};

pub struct FirstLast {
    first: bool,
    /// Keep the picked rows' times: not for [`Use::Once`] (one update, then finish), which never
    /// compares them; gathering them costs a cache miss per group.
    timed: bool,
    /// (value, time of its row or `None` without a timestamp, whether a row was picked).
    state: Option<(Column, Option<Column>, Vec<bool>)>,
}

impl FirstLast {
    pub fn new(first: bool, used: Use) -> FirstLast {
        FirstLast { first, timed: used == Use::Any, state: None }
    }

    /// The row each group picks: by position, or by the order column's value.
    fn pick(&self, order: Option<&Column>, positional: bool, rows: Rows, ngroups: usize) -> Vec<u32> {
        if let (Some(o), false) = (order, positional) {
            let want = if self.first { Ordering::Less } else { Ordering::Greater };
            return best_rows(o, &rows.ids(), ngroups, want, self.first);
        }
        match rows {
            Rows::Runs { starts, .. } if self.first && starts.len() == ngroups => starts.to_vec(),
            Rows::Runs { starts, n } => {
                let mut best = vec![NULL_INDEX; ngroups];
                for (g, (s, e)) in runs(starts, n).enumerate() {
                    best[g] = if self.first { s } else { e - 1 } as u32;
                }
                best
            }
            Rows::Ids { ids, .. } => {
                let mut best = vec![NULL_INDEX; ngroups];
                for (i, &g) in ids.iter().enumerate() {
                    let slot = &mut best[g as usize];
                    if !self.first || *slot == NULL_INDEX {
                        *slot = i as u32;
                    }
                }
                best
            }
        }
    }

    fn add(&mut self, x: &Column, order: Option<&Column>, best: &[u32], ngroups: usize) {
        let val = pad(x.take_opt(best), ngroups);
        debug_assert!(self.timed || self.state.is_none(), "a one-shot first/last updated twice");
        let time = order.filter(|_| self.timed).map(|o| pad(o.take_opt(best), ngroups));
        let Some((ov, ot, op)) = self.state.take() else {
            // Only folds read which groups picked a row.
            let picked = if self.timed { picked(best, ngroups) } else { Vec::new() };
            self.state = Some((val, time, picked));
            return;
        };
        // Times are kept while every partial has them.
        let times = order.filter(|_| self.timed);
        let (mut ov, mut ot, mut op) = (ov, ot.filter(|_| times.is_some()), op);
        grow(&mut ov, ngroups);
        if let Some(t) = &mut ot {
            grow(t, ngroups);
        }
        op.resize(ngroups, false);
        let (groups, rows) = self.taken(best, ot.as_ref(), times, &mut op);
        ov.patch(&groups, &x.take(&rows));
        if let (Some(t), Some(o)) = (&mut ot, times) {
            t.patch(&groups, &o.take(&rows));
        }
        self.state = Some((ov, ot, op));
    }

    /// The groups whose value the picked rows `best` replace, and those rows: a group's first
    /// pick, or one earlier (`first`) or not earlier (`last`) than its own by the times (no
    /// times: partials come in order). Marks the groups picked in `op`.
    fn taken(&self, best: &[u32], old: Option<&Column>, new: Option<&Column>, op: &mut [bool]) -> (Vec<u32>, Vec<u32>) {
        let times = old.and_then(Column::as_i64_slice).zip(new.and_then(Column::as_i64_slice));
        let (mut groups, mut rows) = (Vec::new(), Vec::new());
        for (g, &b) in best.iter().enumerate() {
            if b == NULL_INDEX {
                continue;
            }
            let take = !op[g]
                || match times.map(|(a, t)| t[b as usize].cmp(&a[g])) {
                    None => !self.first,
                    Some(o) => (self.first && o == Ordering::Less) || (!self.first && o != Ordering::Less),
                };
            op[g] = true;
            if take {
                groups.push(g as u32);
                rows.push(b);
            }
        }
        (groups, rows)
    }
}

/// Whether each group picked a row.
fn picked(best: &[u32], ngroups: usize) -> Vec<bool> {
    let mut p: Vec<bool> = best.iter().map(|&b| b != NULL_INDEX).collect();
    p.resize(ngroups, false);
    p
}

impl Accumulator for FirstLast {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let x = input.arg()?;
        let sorted = input.sorted || matches!(rows, Rows::Runs { .. });
        let positional = input.order.is_none_or(|o| sorted && o.validity().is_none());
        let best = self.pick(input.order, positional, rows, ngroups);
        self.add(x, input.order, &best, ngroups);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        let (v, t, p) = self.state.take().ok_or_else(|| SqlError::Internal("first/last state before input".into()))?;
        let t = t.unwrap_or_else(|| Column::nulls(DataType::Timestamp, p.len()));
        Ok(vec![v, t])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        let (v, t, _) =
            self.state.as_ref().ok_or_else(|| SqlError::Internal("first/last state before input".into()))?;
        let idx = in_range(ids, v.len());
        let t = t.as_ref().map_or_else(|| Column::nulls(DataType::Timestamp, ids.len()), |t| t.take_opt(&idx));
        Ok(vec![v.take_opt(&idx), t])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let [v, t] = state else { return Err(SqlError::Internal("first/last state is two columns".into())) };
        if t.as_i64_slice().is_none() {
            return Err(SqlError::Internal(format!("first/last state time of type {}", t.data_type())));
        }
        let best = self.pick(Some(t), false, Rows::sparse(ids), ngroups);
        self.add(v, Some(t), &best, ngroups);
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        let (v, _, _) =
            self.state.take().ok_or_else(|| SqlError::Internal("first/last finished before input".into()))?;
        Ok(v)
    }

    /// Frames are in window order: the first / last position of each frame.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let idx: Vec<u32> = fs
            .iter()
            .zip(fe)
            .map(|(&s, &e)| match (s < e, self.first) {
                (false, _) => NULL_INDEX,
                (true, true) => s,
                (true, false) => e - 1,
            })
            .collect();
        Ok(input.arg()?.take_opt(&idx))
    }
}
