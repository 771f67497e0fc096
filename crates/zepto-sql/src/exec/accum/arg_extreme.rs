//! `arg_min(x, v)` and `arg_max(x, v)` (also `min_by`/`max_by`, ClickHouse's `argMin`/`argMax`):
//! the `x` of the group's row with the smallest / largest `v`, as DuckDB defines them. Rows
//! where `x` or `v` is NULL are skipped (a group with none gives NULL); `v` and `x` order as
//! `min` and `max` order them (any ordered type, NaN the largest double).
//!
//! Ties in `v` are settled by `x`: `arg_min` takes the row of the smallest (`v`, `x`) pair,
//! `arg_max` the largest. The answer is then one value however the rows are split and merged
//! (partitions, row groups of history, cluster nodes, a view's batches); DuckDB keeps whichever
//! tied row it meets first, which depends on the order rows arrive in (its
//! `arg_min(x, {'a': v, 'b': x})` over the rows without NULLs is this rule). One exception:
//! `-0.0` and `0.0` compare equal, so which of the two a tie between them keeps may differ.
//! State: the `x` and `v` picked; partial states merge by the same rule. The time-ordered
//! form, `first`/`last`, is `first_last.rs`.
//!
//! When `v` is the very column the input is ordered by (the planner gives the designated
//! timestamp as the call's order: `arg_min(price, ts)`), a run of rows ([`Rows::Runs`], in
//! time order) has its least `v` at its start and its greatest at its end: a run's pick is
//! read from that end, comparing only the rows tied with it (a bar's open and close read two
//! rows, not the bar).

use super::kernels::{all_valid, grow, in_range, pad, sliding_best};
use super::{runs, Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use crate::eval::sql_order::sql_cmp;
use crate::exec::cmp::{value_cmp, RowCmp};
use std::cell::OnceCell;
use std::cmp::Ordering;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Column, ColumnData};

pub struct ArgExtreme {
    max: bool,
    /// Each group's picked `x` and `v` (both NULL: none yet); `None` before the first input.
    state: Option<(Column, Column)>,
}

impl ArgExtreme {
    pub fn new(max: bool) -> ArgExtreme {
        ArgExtreme { max, state: None }
    }

    fn want(&self) -> Ordering {
        if self.max {
            Ordering::Greater
        } else {
            Ordering::Less
        }
    }

    /// Fold the rows `best` picked of `x` and `v` (group `g`'s at `best[g]`, `NULL_INDEX` or
    /// past the end for none) into the state.
    fn add(&mut self, x: &Column, v: &Column, best: &[u32], ngroups: usize) {
        let (cx, cv) = (pad(x.take_opt(best), ngroups), pad(v.take_opt(best), ngroups));
        let Some((mut ox, mut ov)) = self.state.take() else {
            self.state = Some((cx, cv));
            return;
        };
        grow(&mut ox, ngroups);
        grow(&mut ov, ngroups);
        // Group `g`'s state is row `g` of both, its candidate row `ngroups + g`.
        let (xs, vs) = (Column::concat(&[&ox, &cx]), Column::concat(&[&ov, &cv]));
        let beats = boxed(&xs, &vs, self.want());
        let groups: Vec<u32> = (0..ngroups)
            .filter(|&g| best.get(g).is_some_and(|&b| b != NULL_INDEX))
            .filter(|&g| !ov.is_valid(g) || beats.at(ngroups + g, g))
            .map(|g| g as u32)
            .collect();
        ox.patch(&groups, &cx.take(&groups));
        ov.patch(&groups, &cv.take(&groups));
        self.state = Some((ox, ov));
    }
}

/// The order of rows the pick follows: the (`v`, `x`) pair as `want` says (module docs), `v`
/// compared by `by_v`, `x` by its comparator, made on the first tie (ranking a SYMBOL `x`
/// sorts its dictionary). Rows compared are valid in both.
struct Beats<'a, V> {
    x: &'a Column,
    by_x: OnceCell<RowCmp<'a>>,
    by_v: V,
    want: Ordering,
}

impl<'a, V: Fn(usize, usize) -> Ordering> Beats<'a, V> {
    fn new(x: &'a Column, by_v: V, want: Ordering) -> Beats<'a, V> {
        Beats { x, by_x: OnceCell::new(), by_v, want }
    }

    /// Whether rows `i` and `j` hold equal `v`.
    fn tied(&self, i: usize, j: usize) -> bool {
        (self.by_v)(i, j) == Ordering::Equal
    }

    /// Whether row `i` is picked over row `j`.
    fn at(&self, i: usize, j: usize) -> bool {
        match (self.by_v)(i, j) {
            Ordering::Equal => self.by_x.get_or_init(|| value_cmp(self.x))(i, j) == self.want,
            o => o == self.want,
        }
    }
}

/// [`Beats`] with `v` compared through its row comparator.
fn boxed<'a>(x: &'a Column, v: &'a Column, want: Ordering) -> Beats<'a, RowCmp<'a>> {
    Beats::new(x, value_cmp(v), want)
}

/// The row each group picks (module docs), over the rows where neither `x` nor `v` is NULL;
/// `NULL_INDEX` for a group without one. `v` of integers, times or doubles is compared in
/// place; `x` only where `v` ties.
fn picks(x: &Column, v: &Column, ids: &[u32], ngroups: usize, want: Ordering) -> Vec<u32> {
    match v.data() {
        ColumnData::Int64(t) | ColumnData::Timestamp(t) | ColumnData::Interval(t) => {
            walk(x, v, |i, j| t[i].cmp(&t[j]), ids, ngroups, want)
        }
        ColumnData::Int32(t) | ColumnData::Date(t) => walk(x, v, |i, j| t[i].cmp(&t[j]), ids, ngroups, want),
        ColumnData::Float64(t) => walk(x, v, |i, j| sql_cmp(t[i], t[j]), ids, ngroups, want),
        _ => {
            let by_v = value_cmp(v);
            walk(x, v, by_v, ids, ngroups, want)
        }
    }
}

/// [`picks`] with `v`'s rows compared by `by_v` (as `value_cmp` compares them).
#[inline(always)]
fn walk(
    x: &Column,
    v: &Column,
    by_v: impl Fn(usize, usize) -> Ordering,
    ids: &[u32],
    ngroups: usize,
    want: Ordering,
) -> Vec<u32> {
    let beats = Beats::new(x, by_v, want);
    let every = all_valid(x) && all_valid(v);
    let mut best = vec![NULL_INDEX; ngroups];
    for (i, &g) in ids.iter().enumerate() {
        if !(every || (x.is_valid(i) && v.is_valid(i))) {
            continue;
        }
        let slot = &mut best[g as usize];
        if *slot == NULL_INDEX || beats.at(i, *slot as usize) {
            *slot = i as u32;
        }
    }
    best
}

/// The row each run picks when `v` is in time order within runs (module docs): the first
/// row with `x` from the run's picking end, or a row tied with it in `v` that beats it.
/// `None` when `v` has NULLs (the general walk skips them).
fn picks_at_ends(x: &Column, v: &Column, starts: &[u32], n: usize, want: Ordering) -> Option<Vec<u32>> {
    if !all_valid(v) {
        return None;
    }
    let beats = boxed(x, v, want);
    debug_assert!(runs(starts, n).all(|(s, e)| (s + 1..e).all(|i| (beats.by_v)(i - 1, i) != Ordering::Greater)));
    // Times compare as integers (no call through the comparator for the common untied end).
    let times = v.as_i64_slice();
    let tied = |i: usize, j: usize| times.map_or_else(|| beats.tied(i, j), |t| t[i] == t[j]);
    let pick = |rows: &mut dyn Iterator<Item = usize>| {
        let mut best = NULL_INDEX;
        for i in rows.filter(|&i| x.is_valid(i)) {
            if best == NULL_INDEX {
                best = i as u32;
            } else if !tied(i, best as usize) {
                break;
            } else if beats.at(i, best as usize) {
                best = i as u32;
            }
        }
        best
    };
    let from_end = want == Ordering::Greater;
    Some(runs(starts, n).map(|(s, e)| if from_end { pick(&mut (s..e).rev()) } else { pick(&mut (s..e)) }).collect())
}

/// The two arguments, `x` and `v`.
fn pair<'a>(input: &Input<'a>) -> Result<(&'a Column, &'a Column)> {
    match input.args[..] {
        [x, v] => Ok((x, v)),
        _ => Err(SqlError::Internal("arg_min/arg_max take two arguments".into())),
    }
}

fn before_input() -> SqlError {
    SqlError::Internal("arg_min/arg_max state asked for before any input".into())
}

impl Accumulator for ArgExtreme {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let (x, v) = pair(input)?;
        let at_ends = match rows {
            Rows::Runs { starts, n } if input.order.is_some_and(|o| std::ptr::eq(o, v)) => {
                picks_at_ends(x, v, starts, n, self.want())
            }
            _ => None,
        };
        let best = at_ends.unwrap_or_else(|| picks(x, v, &rows.ids(), ngroups, self.want()));
        self.add(x, v, &best, ngroups);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        let (x, v) = self.state.take().ok_or_else(before_input)?;
        Ok(vec![x, v])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        let (x, v) = self.state.as_ref().ok_or_else(before_input)?;
        let idx = in_range(ids, x.len());
        Ok(vec![x.take_opt(&idx), v.take_opt(&idx)])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let [x, v] = state else { return Err(SqlError::Internal("arg_min/arg_max state is two columns".into())) };
        self.add(x, v, &picks(x, v, ids, ngroups, self.want()), ngroups);
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        let (x, _) = self.state.take().ok_or_else(before_input)?;
        Ok(x)
    }

    /// Sliding frames (a running window from the partition's start included): a row leaves
    /// the candidates once a later row is at least as good.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let (x, v) = pair(input)?;
        let beats = boxed(x, v, self.want());
        let idx = sliding_best(fs, fe, |i| x.is_valid(i) && v.is_valid(i), |t, later| !beats.at(t, later));
        Ok(x.take_opt(&idx))
    }
}
