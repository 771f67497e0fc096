//! `any_value(x)`: a non-NULL value of each group, DuckDB's (the first in input order here;
//! NULL when the group has none). Partial states merge keeping the value a group already has.

use super::kernels::{grow, in_range, pad};
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use zepto_storage::column::NULL_INDEX;
use zepto_storage::Column;

#[derive(Default)]
pub struct AnyValue {
    value: Option<Column>,
}

impl AnyValue {
    /// Fold in `x`'s rows (row `i` in group `ids[i]`): each group without a value yet takes
    /// its first non-NULL one.
    fn add(&mut self, x: &Column, ids: &[u32], ngroups: usize) {
        let has = |g: usize| self.value.as_ref().is_some_and(|v| g < v.len() && v.is_valid(g));
        let mut best = vec![NULL_INDEX; ngroups];
        for (i, &g) in ids.iter().enumerate() {
            let slot = &mut best[g as usize];
            if *slot == NULL_INDEX && x.is_valid(i) && !has(g as usize) {
                *slot = i as u32;
            }
        }
        match self.value.as_mut() {
            None => self.value = Some(pad(x.take_opt(&best), ngroups)),
            Some(v) => {
                grow(v, ngroups);
                let (groups, rows): (Vec<u32>, Vec<u32>) =
                    best.iter().enumerate().filter(|(_, &b)| b != NULL_INDEX).map(|(g, &b)| (g as u32, b)).unzip();
                v.patch(&groups, &x.take(&rows));
            }
        }
    }
}

fn before_input() -> SqlError {
    SqlError::Internal("any_value state before input".into())
}

impl Accumulator for AnyValue {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        self.add(input.arg()?, &rows.ids(), ngroups);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Ok(vec![self.value.take().ok_or_else(before_input)?])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        let v = self.value.as_ref().ok_or_else(before_input)?;
        Ok(vec![v.take_opt(&in_range(ids, v.len()))])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let [v] = state else { return Err(SqlError::Internal("any_value state is one column".into())) };
        self.add(v, ids, ngroups);
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        self.value.take().ok_or_else(before_input)
    }

    /// Each frame's first non-NULL row, found from the next such row at or after its start.
    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let x = input.arg()?;
        let mut next = vec![NULL_INDEX; x.len() + 1];
        for r in (0..x.len()).rev() {
            next[r] = if x.is_valid(r) { r as u32 } else { next[r + 1] };
        }
        let pick = |(&s, &e): (&u32, &u32)| match next.get(s as usize) {
            Some(&r) if r < e => r,
            _ => NULL_INDEX,
        };
        Ok(x.take_opt(&fs.iter().zip(fe).map(pick).collect::<Vec<u32>>()))
    }
}
