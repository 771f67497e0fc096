//! Holistic aggregates, which need every value of a group at once: `median`, `quantile`
//! (discrete), `percentile_cont` (interpolated) and `twap` (time-weighted, needs the rows in
//! time order). The state is the rows themselves, so their partials do not merge
//! ([`crate::expr::functions::AggFunc::mergeable`] is false): the planner keeps them on paths
//! that see whole groups.

use super::kernels::{from_opt_f64, to_f64};
use super::{Accumulator, Input, Rows};
use crate::error::{Result, SqlError};
use crate::exec::cmp::value_cmp;
use crate::expr::functions::AggFunc;
use std::borrow::Cow;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

pub struct Holistic {
    func: AggFunc,
    /// The rows seen: arguments, order column, group ids; `sorted` while every part was in time order.
    args: Vec<Vec<Column>>,
    order: Vec<Option<Column>>,
    ids: Vec<u32>,
    ngroups: usize,
    sorted: bool,
}

impl Holistic {
    pub fn new(func: AggFunc) -> Holistic {
        Holistic { func, args: Vec::new(), order: Vec::new(), ids: Vec::new(), ngroups: 0, sorted: true }
    }

    /// Column `j` of every part, one after another (the part itself when there is one).
    fn column(&self, j: usize) -> Result<Cow<'_, Column>> {
        let parts: Vec<&Column> = self.args.iter().filter_map(|a| a.get(j)).collect();
        match parts.as_slice() {
            [] => Err(SqlError::Internal(format!("{:?} has no argument {j}", self.func))),
            [one] => Ok(Cow::Borrowed(one)),
            many => Ok(Cow::Owned(Column::concat(many))),
        }
    }
}

impl Accumulator for Holistic {
    fn update(&mut self, input: &Input, rows: Rows, ngroups: usize) -> Result<()> {
        self.sorted &= self.args.is_empty() && (input.sorted || matches!(rows, Rows::Runs { .. }));
        self.args.push(input.args.iter().map(|c| (*c).clone()).collect());
        self.order.push(input.order.cloned());
        self.ids.extend_from_slice(&rows.ids());
        self.ngroups = self.ngroups.max(ngroups);
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<Column>> {
        Err(super::no_partial_state(self.func))
    }

    fn state_of(&self, _: &[u32]) -> Result<Vec<Column>> {
        Err(super::no_partial_state(self.func))
    }

    fn merge(&mut self, _: &[&Column], _: &[u32], _: usize) -> Result<()> {
        Err(super::no_partial_state(self.func))
    }

    fn finish(&mut self) -> Result<Column> {
        let (ids, ng) = (&self.ids, self.ngroups);
        if self.func != AggFunc::Twap {
            return quantile(self.func, &*self.column(0)?, ids, ng);
        }
        let x = self.column(0)?;
        let t = match self.column(1) {
            Ok(t) => t,
            Err(_) => {
                let parts: Vec<&Column> = self.order.iter().flatten().collect();
                if parts.len() != self.order.len() || parts.is_empty() {
                    return Err(SqlError::Internal("twap without a time".into()));
                }
                Cow::Owned(Column::concat(&parts))
            }
        };
        twap(&x, &t, ids, ng, self.sorted)
    }
}

/// Time-weighted average per group: Σ x_i·(t_{i+1} − t_i) / (t_last − t_first) over the rows
/// with both values, in time order (among equal times the later row carries the interval);
/// a group spanning no time gives the plain average.
pub(super) fn twap(x: &Column, t: &Column, ids: &[u32], ng: usize, sorted: bool) -> Result<Column> {
    let xv = to_f64(x)?;
    let tv: Vec<i64> = match &t.data() {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) => v.clone().into(),
        ColumnData::Int32(v) | ColumnData::Date(v) => v.iter().map(|&y| y as i64).collect(),
        d => return Err(SqlError::exec(format!("twap() needs timestamps, got {}", d.data_type()))),
    };
    let mut rows: Vec<u32> =
        (0..ids.len() as u32).filter(|&i| x.is_valid(i as usize) && t.is_valid(i as usize)).collect();
    if sorted {
        rows.sort_by_key(|&i| ids[i as usize]);
    } else {
        rows.sort_by_key(|&i| (ids[i as usize], tv[i as usize], i));
    }
    let mut out = vec![None; ng];
    let mut k = 0;
    while k < rows.len() {
        let g = ids[rows[k] as usize];
        let mut e = k;
        while e < rows.len() && ids[rows[e] as usize] == g {
            e += 1;
        }
        let run = &rows[k..e];
        let (t0, t1) = (tv[run[0] as usize], tv[run[run.len() - 1] as usize]);
        out[g as usize] = Some(if t1 > t0 {
            let num: f64 =
                run.windows(2).map(|w| xv[w[0] as usize] * (tv[w[1] as usize] - tv[w[0] as usize]) as f64).sum();
            num / (t1 - t0) as f64
        } else {
            run.iter().map(|&i| xv[i as usize]).sum::<f64>() / run.len() as f64
        });
        k = e;
    }
    Ok(from_opt_f64(out.into_iter()))
}

pub(super) fn quantile(f: AggFunc, x: &Column, ids: &[u32], ng: usize) -> Result<Column> {
    let cmp = value_cmp(x);
    let mut rows: Vec<u32> = (0..ids.len() as u32).filter(|&i| x.is_valid(i as usize)).collect();
    rows.sort_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]).then_with(|| cmp(a as usize, b as usize)));
    let mut start = vec![0usize; ng + 1];
    for &r in &rows {
        start[ids[r as usize] as usize + 1] += 1;
    }
    for g in 0..ng {
        start[g + 1] += start[g];
    }
    let q = match f {
        AggFunc::Quantile(q) | AggFunc::PercentileCont(q) => q,
        _ => 0.5,
    };
    if let AggFunc::Quantile(_) = f {
        let pick: Vec<u32> = (0..ng)
            .map(|g| {
                let n = start[g + 1] - start[g];
                if n == 0 {
                    NULL_INDEX
                } else {
                    rows[start[g] + ((n as f64 * q).ceil() as usize).clamp(1, n) - 1]
                }
            })
            .collect();
        return Ok(x.take_opt(&pick));
    }
    let is_ts = x.data_type() == DataType::Timestamp;
    let v = to_f64(x)?;
    let ints = x.as_i64_slice();
    let mut out = Vec::with_capacity(ng);
    let mut valid = Bitmap::default();
    for g in 0..ng {
        let n = start[g + 1] - start[g];
        if n == 0 {
            out.push(0.0);
            valid.push(false);
            continue;
        }
        let pos = (n - 1) as f64 * q;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        let (a, b) = (rows[start[g] + lo] as usize, rows[start[g] + hi] as usize);
        let val = match (is_ts, ints) {
            (true, Some(iv)) => iv[a] as f64 + (iv[b] - iv[a]) as f64 * (pos - lo as f64),
            _ => v[a] + (v[b] - v[a]) * (pos - lo as f64),
        };
        out.push(val);
        valid.push(true);
    }
    if is_ts {
        let ts: Vec<i64> = out.iter().map(|&f| f.round() as i64).collect();
        return Ok(Column::new(ColumnData::Timestamp(ts.into()), Some(valid)));
    }
    Ok(Column::new(ColumnData::Float64(out.into()), Some(valid)))
}
