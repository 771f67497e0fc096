//! `sum(x)` and `avg(x)`. Integers (and booleans) sum exactly in i128. The result type is
//! PostgreSQL's: `sum` of INTEGER or BOOLEAN is a BIGINT (it would take 2^32 rows to overflow:
//! an error then), of BIGINT or HUGEINT a HUGEINT (exact to ±1.7e38, past which it is an
//! error, as in DuckDB); floats sum in f64. State: the sum (HUGEINT for integer inputs,
//! DOUBLE for floats) and the count of values; NULL where no value.

use super::block_runs;
use super::frame_sums::float_frames;
use super::kernels::{at, checked_i64, frame_counts, int_values, lane_sum, to_f64, validity};
use super::narrow_runs;
use super::run_sums::run_sums_i64;
use super::scatter::add_pairs_by_ids;
use super::{runs, Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

pub struct SumAvg {
    avg: bool,
    ty: DataType,
    /// Whether the input is integer-like (summed in `isum`) rather than floating (`fsum`).
    ints: bool,
    isum: Vec<i128>,
    fsum: Vec<f64>,
    cnt: Vec<i64>,
}

impl SumAvg {
    pub fn new(avg: bool, ty: DataType) -> SumAvg {
        SumAvg { avg, ty, ints: false, isum: Vec::new(), fsum: Vec::new(), cnt: Vec::new() }
    }

    fn grow(&mut self, ngroups: usize) {
        let n = self.cnt.len().max(ngroups);
        self.cnt.resize(n, 0);
        if self.ints {
            self.isum.resize(n, 0);
        } else {
            self.fsum.resize(n, 0.0);
        }
    }

    fn update_ints(&mut self, x: &Column, v: &[i64], rows: Rows) {
        let every = x.validity().is_none();
        match rows {
            Rows::Runs { starts, n } => {
                if every {
                    for (g, ((s, e), t)) in runs(starts, n).zip(run_sums_i64(&v[..n], starts)).enumerate() {
                        self.isum[g] += t;
                        self.cnt[g] += (e - s) as i64;
                    }
                    return;
                }
                for (g, (s, e)) in runs(starts, n).enumerate() {
                    let (t, c) = (s..e)
                        .filter(|&i| every || x.is_valid(i))
                        .fold((0i128, 0), |(t, c), i| (t + v[i] as i128, c + 1));
                    self.isum[g] += t;
                    self.cnt[g] += c as i64;
                }
            }
            Rows::Ids { ids, .. } => {
                let (sums, counts) = (&mut self.isum, &mut self.cnt);
                match every {
                    true => add_pairs_by_ids(sums, counts, ids, |i| (i128::from(v[i]), 1)),
                    false => add_pairs_by_ids(sums, counts, ids, |i| match x.is_valid(i) {
                        true => (i128::from(v[i]), 1),
                        false => (0, 0),
                    }),
                }
            }
        }
    }

    /// The first rows of a state with no group yet, NULL-free runs of integers (a bar's
    /// volume): each run's sum and length become its group's state as they come, with no pass
    /// adding them into zeros.
    fn first_runs(&mut self, x: &Column, v: &[i64], starts: &[u32]) {
        debug_assert!(self.cnt.is_empty() && self.ints);
        self.isum = narrow_runs::int_sums(x, starts, v.len()).unwrap_or_else(|| run_sums_i64(v, starts));
        self.cnt = runs(starts, v.len()).map(|(s, e)| (e - s) as i64).collect();
    }

    /// Long runs of a NULL-free column, from its blocks' summaries ([`block_runs`]): `false`
    /// where they do not apply (nothing added).
    fn summarized(&mut self, x: &Column, starts: &[u32], n: usize, ngroups: usize) -> bool {
        let lens = runs(starts, n).map(|(s, e)| (e - s) as i64);
        if let Some(ss) = block_runs::int_runs(x, starts, n) {
            self.ints = true;
            self.grow(ngroups);
            for (g, (s, len)) in ss.iter().zip(lens).enumerate() {
                self.isum[g] += s.sum;
                self.cnt[g] += len;
            }
            return true;
        }
        let Some(ss) = block_runs::float_runs(x, starts, n) else { return false };
        self.grow(ngroups);
        for (g, (s, len)) in ss.iter().zip(lens).enumerate() {
            self.fsum[g] += s.sum;
            self.cnt[g] += len;
        }
        true
    }

    /// HUGEINT inputs (a sum of sums): each addition checked.
    fn update_i128(&mut self, x: &Column, v: &[i128], rows: Rows) -> Result<()> {
        let mut add = |g: usize, i: usize| -> Result<()> {
            if x.is_valid(i) {
                self.isum[g] = self.isum[g].checked_add(v[i]).ok_or_else(overflow)?;
                self.cnt[g] += 1;
            }
            Ok(())
        };
        match rows {
            Rows::Runs { starts, n } => {
                for (g, (s, e)) in runs(starts, n).enumerate() {
                    (s..e).try_for_each(|i| add(g, i))?;
                }
            }
            Rows::Ids { ids, .. } => ids.iter().enumerate().try_for_each(|(i, &g)| add(g as usize, i))?,
        }
        Ok(())
    }

    /// Each group's sum in the result type (BIGINT, HUGEINT or INTERVAL): a sum past it is an
    /// error; a group without values is 0 (its slot is NULL).
    fn int_result(&self, sums: impl Iterator<Item = (i128, bool)>) -> Result<ColumnData> {
        if self.ty == DataType::Int128 {
            return Ok(ColumnData::Int128(sums.map(|(s, any)| if any { s } else { 0 }).collect()));
        }
        let v = sums.map(|(s, any)| if any { checked_i64(s) } else { Ok(0) }).collect::<Result<Vec<i64>>>()?;
        Ok(if self.ty == DataType::Interval { ColumnData::Interval(v.into()) } else { ColumnData::Int64(v.into()) })
    }

    fn update_floats(&mut self, x: &Column, v: &[f64], rows: Rows) {
        let every = x.validity().is_none();
        match rows {
            Rows::Runs { starts, n } => {
                for (g, (s, e)) in runs(starts, n).enumerate() {
                    let (t, c) = if every {
                        (lane_sum(&v[s..e]), e - s)
                    } else {
                        (s..e).filter(|&i| x.is_valid(i)).fold((0.0, 0), |(t, c), i| (t + v[i], c + 1))
                    };
                    self.fsum[g] += t;
                    self.cnt[g] += c as i64;
                }
            }
            Rows::Ids { ids, .. } => {
                let (sums, counts) = (&mut self.fsum, &mut self.cnt);
                match every {
                    true => add_pairs_by_ids(sums, counts, ids, |i| (v[i], 1)),
                    // A NULL adds -0.0, which leaves every double as it is.
                    false => add_pairs_by_ids(sums, counts, ids, |i| if x.is_valid(i) { (v[i], 1) } else { (-0.0, 0) }),
                }
            }
        }
    }

    /// Adds group `g`'s float total and count of values from item `g` of `totals` (runs a
    /// kernel summed elsewhere: `product.rs`), the groups grown to `ngroups`.
    pub fn add_float_runs(&mut self, totals: impl Iterator<Item = (f64, usize)>, ngroups: usize) {
        debug_assert!(!self.ints, "float totals into an integer sum");
        self.grow(ngroups);
        for (g, (t, c)) in totals.enumerate() {
            self.fsum[g] += t;
            self.cnt[g] += c as i64;
        }
    }

    /// Adds group `g`'s exact integer total and count of values from item `g` of `totals`
    /// (runs of an integer column a kernel summed elsewhere: `product.rs`).
    pub fn add_int_runs(&mut self, totals: impl Iterator<Item = (i128, usize)>, ngroups: usize) {
        self.ints = true;
        self.grow(ngroups);
        for (g, (t, c)) in totals.enumerate() {
            self.isum[g] += t;
            self.cnt[g] += c as i64;
        }
    }

    /// Each group's sum as a double.
    fn sums_f64(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.cnt.len()).map(|g| if self.ints { self.isum[g] as f64 } else { self.fsum[g] })
    }
}

impl Accumulator for SumAvg {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        let x = input.arg()?;
        if let ColumnData::Int128(v) = x.data() {
            self.ints = true;
            self.grow(ngroups);
            return self.update_i128(x, v, rows);
        }
        if let Rows::Runs { starts, n } = rows {
            if self.summarized(x, starts, n, ngroups) {
                return Ok(());
            }
        }
        match int_values(x) {
            Some(v) => {
                self.ints = true;
                match rows {
                    Rows::Runs { starts, n } if self.cnt.is_empty() && x.validity().is_none() => {
                        self.first_runs(x, &v[..n], starts);
                        self.grow(ngroups);
                    }
                    _ => {
                        self.grow(ngroups);
                        self.update_ints(x, &v, rows);
                    }
                }
            }
            None => {
                let v = to_f64(x)?;
                self.grow(ngroups);
                self.update_floats(x, &v, rows);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        let sums = if self.ints {
            Column::from_data(ColumnData::Int128(std::mem::take(&mut self.isum).into()))
        } else {
            Column::from_data(ColumnData::Float64(std::mem::take(&mut self.fsum).into()))
        };
        Ok(vec![sums, Column::from_data(ColumnData::Int64(std::mem::take(&mut self.cnt).into()))])
    }

    fn state_of(&self, ids: &[u32]) -> Result<Vec<Column>> {
        let sums = if self.ints {
            Column::from_data(ColumnData::Int128(at(&self.isum, ids).into()))
        } else {
            Column::from_data(ColumnData::Float64(at(&self.fsum, ids).into()))
        };
        Ok(vec![sums, Column::from_data(ColumnData::Int64(at(&self.cnt, ids).into()))])
    }

    fn merge(&mut self, state: &[&Column], ids: &[u32], ngroups: usize) -> Result<()> {
        let [s, c] = state else { return Err(SqlError::Internal("sum/avg state is two columns".into())) };
        let ColumnData::Int64(c) = &c.data() else { return Err(SqlError::Internal("sum/avg count is BIGINT".into())) };
        match &s.data() {
            ColumnData::Int128(v) => {
                self.ints = true;
                self.grow(ngroups);
                for (i, &g) in ids.iter().enumerate() {
                    self.isum[g as usize] = self.isum[g as usize].checked_add(v[i]).ok_or_else(overflow)?;
                    self.cnt[g as usize] += c[i];
                }
            }
            ColumnData::Float64(v) => {
                self.grow(ngroups);
                for (i, &g) in ids.iter().enumerate() {
                    self.fsum[g as usize] += v[i];
                    self.cnt[g as usize] += c[i];
                }
            }
            d => return Err(SqlError::Internal(format!("sum/avg state of type {}", d.data_type()))),
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Column> {
        let valid = validity(&self.cnt);
        let data = if self.avg {
            ColumnData::Float64(
                self.sums_f64().zip(&self.cnt).map(|(s, &c)| if c > 0 { s / c as f64 } else { 0.0 }).collect(),
            )
        } else if self.ty == DataType::Float64 {
            ColumnData::Float64(self.sums_f64().collect())
        } else if self.ty == DataType::Int128 && valid.is_none() {
            // Every group has a value: the exact sums are the result as they are (the state
            // left empty, not half taken).
            self.cnt.clear();
            ColumnData::Int128(std::mem::take(&mut self.isum).into())
        } else {
            self.int_result(self.isum.iter().zip(&self.cnt).map(|(&s, &c)| (s, c > 0)))?
        };
        Ok(Column::new(data, valid))
    }

    fn frames(&mut self, input: &Input, fs: &[u32], fe: &[u32]) -> Result<Column> {
        let x = input.arg()?;
        // Frames lie within the input (`window/frame.rs`, `window_join.rs` make them so;
        // `frame_counts` asserts it): the prefix lookups below index by them.
        let count = frame_counts(x, fs, fe);
        let valid = Some(Bitmap::from_bools(count.iter().map(|&c| c > 0)));
        if let Some(v) = int_values(x) {
            return self.int_frames(x, &v, fs, fe, &count, valid);
        }
        let v = to_f64(x)?;
        let sums = float_frames(x, &v, fs, fe);
        let vals = if self.avg { sums.iter().zip(&count).map(|(s, &c)| s / c.max(1) as f64).collect() } else { sums };
        Ok(Column::new(ColumnData::Float64(vals.into()), valid))
    }
}

impl SumAvg {
    /// Integer frames: exact prefix sums.
    fn int_frames(
        &self,
        x: &Column,
        v: &[i64],
        fs: &[u32],
        fe: &[u32],
        count: &[u32],
        valid: Option<Bitmap>,
    ) -> Result<Column> {
        let mut ps = Vec::with_capacity(v.len() + 1);
        let mut acc = 0i128;
        ps.push(0i128);
        for (i, &y) in v.iter().enumerate() {
            if x.is_valid(i) {
                acc += y as i128;
            }
            ps.push(acc);
        }
        let sum = |k: usize| ps[fe[k] as usize] - ps[fs[k] as usize];
        let n = fs.len();
        if self.avg || self.ty == DataType::Float64 {
            let div = |k: usize| if self.avg { count[k].max(1) as f64 } else { 1.0 };
            return Ok(Column::new(ColumnData::Float64((0..n).map(|k| sum(k) as f64 / div(k)).collect()), valid));
        }
        Ok(Column::new(self.int_result((0..n).map(|k| (sum(k), count[k] > 0)))?, valid))
    }
}

fn overflow() -> SqlError {
    SqlError::exec("out of range: sum() overflows HUGEINT")
}
