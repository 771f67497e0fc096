//! `count(*)` (every row) and `count(x)` (rows where `x` is not NULL). State: the count.

use super::kernels::{all_valid, at, frame_counts};
use super::scatter::add_by_ids;
use super::{runs, Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use zepto_storage::{Column, ColumnData};

pub struct Count {
    star: bool,
    n: Vec<i64>,
}

impl Count {
    pub fn new(star: bool) -> Count {
        Count { star, n: Vec::new() }
    }
}

impl Accumulator for Count {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        self.n.resize(self.n.len().max(ngroups), 0);
        let x = if self.star { None } else { Some(input.arg()?) };
        let every = x.is_none_or(all_valid);
        // The rows that hold a value, or `None` when every row does.
        let partial = x.filter(|_| !every);
        match rows {
            Rows::Runs { starts, n } => {
                for (g, (s, e)) in runs(starts, n).enumerate() {
                    self.n[g] += match partial {
                        None => (e - s) as i64,
                        Some(x) => (s..e).filter(|&i| x.is_valid(i)).count() as i64,
                    };
                }
            }
            Rows::Ids { ids, .. } => match partial {
                None => add_by_ids(&mut self.n, ids, |_| 1),
                Some(x) => add_by_ids(&mut self.n, ids, |i| x.is_valid(i) as i64),
            },
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Ok(vec![self.finish()?])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        Ok(vec![Column::from_data(ColumnData::Int64(at(&self.n, ids).into()))])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let [c] = state else { return Err(SqlError::Internal("count state is one column".into())) };
        let ColumnData::Int64(v) = &c.data() else { return Err(SqlError::Internal("count state is BIGINT".into())) };
        self.n.resize(self.n.len().max(ngroups), 0);
        for (i, &g) in ids.iter().enumerate() {
            self.n[g as usize] += v[i];
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        Ok(Column::from_data(ColumnData::Int64(std::mem::take(&mut self.n).into())))
    }

    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let lens = fs.iter().zip(fe).map(|(&s, &e)| (e - s) as i64);
        if self.star {
            return Ok(Column::from_data(ColumnData::Int64(lens.collect())));
        }
        let n = frame_counts(input.arg()?, fs, fe).into_iter().map(i64::from);
        Ok(Column::from_data(ColumnData::Int64(n.collect())))
    }
}
