//! The SAMPLE BY Fill node: orders aggregated buckets by time and, per key, generates the
//! buckets of `[lo, hi)` that have no rows (see `plan::sample`). Output is bucket-major: every
//! key's row for the first bucket, then the second, and so on.
//!
//! With `ALIGN TO CALENDAR TIME ZONE` the buckets are steps of the zone's wall clock: the
//! buckets are read as wall-clock times, stepped there, and the generated ones named by the
//! instants they start at (a wall-clock time the zone skips: the instant after the gap).

use super::hash::group_ids;
use super::Batch;
use crate::error::{Result, SqlError};
use crate::eval::calendar::zone::Zone;
use crate::plan::sample::{FillPlan, FillValue};
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{time, Column, ColumnBuilder, ColumnData, Value};

/// Generated rows are capped: a wide range times many keys is almost always a mistake.
const MAX_FILLED_ROWS: usize = 20_000_000;

pub fn fill(b: Batch, p: &FillPlan) -> Result<Batch> {
    let n = b.rows;
    let bucket_col = &b.columns[p.bucket];
    let Some(bv) = bucket_col.as_i64_slice() else {
        return Err(SqlError::Internal("SAMPLE BY bucket is not a timestamp".into()));
    };
    let zone = p.zone.as_deref().map(Zone::parse).transpose().map_err(SqlError::exec)?;
    // On a zone's clock, the buckets' wall-clock starts (what the steps are counted on).
    let to_wall = |t: i64| zone.as_ref().map_or(t, |z| z.local(t).unwrap_or(t));
    let wall: Option<Vec<i64>> = zone.as_ref().map(|_| bv.iter().map(|&t| to_wall(t)).collect());
    let bv = wall.as_deref().unwrap_or(bv);
    let instant = |t: i64| zone.as_ref().map_or(Some(t), |z| z.utc(t));
    let keys: Vec<&Column> = p.keys.iter().map(|&k| &*b.columns[k]).collect();
    let groups = group_ids(&keys, n);
    let ng = groups.first.len();
    // Rows with a NULL bucket (NULL timestamps) are dropped, as QuestDB never has them.
    let rows: Vec<usize> = (0..n).filter(|&i| bucket_col.is_valid(i)).collect();
    if !p.fills() {
        let mut idx: Vec<u32> = rows.iter().map(|&i| i as u32).collect();
        idx.sort_by_key(|&i| (bv[i as usize], groups.ids[i as usize]));
        return Ok(b.take(&idx));
    }
    let steps = Steps { width: p.width, months: p.months };
    // The plan's bounds are wall-clock times already.
    let lo = p.lo.or_else(|| rows.iter().map(|&i| bv[i]).min());
    let hi = p.hi.or_else(|| rows.iter().map(|&i| bv[i]).max().map(|m| steps.next(m)));
    let (Some(lo), Some(hi)) = (lo, hi) else {
        // No rows and no bounds: nothing to fill.
        return Ok(b.take(&[]));
    };
    let nb = steps.count(lo, hi);
    let ng = ng.max(usize::from(p.keys.is_empty()));
    if nb.saturating_mul(ng) > MAX_FILLED_ROWS {
        return Err(SqlError::ResourcesExhausted(format!(
            "SAMPLE BY FILL would produce {nb} buckets x {ng} keys (limit {MAX_FILLED_ROWS} rows); narrow FROM/TO or widen the buckets"
        )));
    }
    // slot[g * nb + k]: the input row of key g in bucket k.
    let mut slot = vec![NULL_INDEX; nb * ng];
    for &i in &rows {
        if bv[i] < lo || bv[i] >= hi {
            continue;
        }
        let k = steps.index(lo, bv[i]);
        if k >= nb {
            continue;
        }
        let g = if p.keys.is_empty() { 0 } else { groups.ids[i] as usize };
        slot[g * nb + k] = i as u32;
    }
    // Output rows: (key, bucket) in bucket-major order.
    let total = nb * ng;
    let starts = bucket_instants(&steps, lo, nb, &instant)?;
    let mut out: Vec<Column> = Vec::with_capacity(b.columns.len());
    for (c, col) in b.columns.iter().enumerate() {
        let column = if c == p.bucket {
            Column::from_data(ColumnData::Timestamp((0..total).map(|r| starts[r / ng]).collect()))
        } else if p.keys.contains(&c) {
            let first: Vec<u32> = (0..total).map(|r| groups.first[r % ng]).collect();
            col.take(&first)
        } else {
            let mode = p.aggs.iter().find(|(i, _)| *i == c).map(|(_, m)| m).unwrap_or(&FillValue::Null);
            fill_column(col, mode, &slot, nb, ng)?
        };
        out.push(column);
    }
    let filled = Batch::new(out, total);
    // A bucket whose wall-clock start the zone skips (the hour a spring-forward day lacks)
    // would be named by an instant of a later bucket: left out when no row lies in it.
    let skipped: Vec<bool> = (0..nb)
        .map(|k| {
            let empty = (0..ng).all(|g| slot[g * nb + k] == NULL_INDEX);
            empty && zone.as_ref().is_some_and(|z| z.local(starts[k]) != Some(steps.at(lo, k)))
        })
        .collect();
    if !skipped.contains(&true) {
        return Ok(filled);
    }
    let keep: Vec<u32> = (0..total).filter(|&r| !skipped[r / ng]).map(|r| r as u32).collect();
    Ok(filled.take(&keep))
}

/// The instant each of the `nb` buckets from `lo` starts at (`instant`: a wall-clock time's
/// instant on the zone's clock, the identity without a zone).
fn bucket_instants(steps: &Steps, lo: i64, nb: usize, instant: &dyn Fn(i64) -> Option<i64>) -> Result<Vec<i64>> {
    (0..nb)
        .map(|k| instant(steps.at(lo, k)).ok_or_else(|| SqlError::exec("a SAMPLE BY bucket is out of range")))
        .collect()
}

fn fill_column(col: &Column, mode: &FillValue, slot: &[u32], nb: usize, ng: usize) -> Result<Column> {
    let total = nb * ng;
    let src = |r: usize| slot[(r % ng) * nb + r / ng];
    if col.is_empty() && !matches!(mode, FillValue::Value(_)) {
        return Ok(Column::nulls(col.data_type(), total));
    }
    match mode {
        FillValue::None | FillValue::Null => Ok(col.take_opt(&(0..total).map(src).collect::<Vec<_>>())),
        FillValue::Prev => {
            let mut last = vec![NULL_INDEX; ng];
            let idx: Vec<u32> = (0..total)
                .map(|r| {
                    let s = src(r);
                    if s != NULL_INDEX {
                        last[r % ng] = s;
                    }
                    last[r % ng]
                })
                .collect();
            Ok(col.take_opt(&idx))
        }
        FillValue::Value(v) => {
            let mut b = ColumnBuilder::new(col.data_type(), total);
            for r in 0..total {
                match src(r) {
                    NULL_INDEX => b.push_value(v)?,
                    s => b.push_value(&col.get(s as usize))?,
                }
            }
            Ok(b.finish())
        }
        FillValue::Linear => {
            let mut b = ColumnBuilder::new(col.data_type(), total);
            for r in 0..total {
                let (g, k) = (r % ng, r / ng);
                let s = slot[g * nb + k];
                if s != NULL_INDEX {
                    b.push_value(&col.get(s as usize))?;
                    continue;
                }
                let prev = (0..k).rev().find(|&j| slot[g * nb + j] != NULL_INDEX);
                let next = (k + 1..nb).find(|&j| slot[g * nb + j] != NULL_INDEX);
                let v = match (prev, next) {
                    (Some(a), Some(c)) => {
                        let (va, vc) = (col.get(slot[g * nb + a] as usize), col.get(slot[g * nb + c] as usize));
                        interpolate(&va, &vc, (k - a) as i64, (c - a) as i64)
                    }
                    _ => Value::Null,
                };
                b.push_value(&v)?;
            }
            Ok(b.finish())
        }
    }
}

/// `a + (c - a) * num / den`, in the values' own type: for integers and timestamps computed
/// in doubles and truncated toward zero (as QuestDB's FILL(LINEAR) gives them).
fn interpolate(a: &Value, c: &Value, num: i64, den: i64) -> Value {
    let t = num as f64 / den as f64;
    let whole = |x: i64, y: i64| (x as f64 + (y as f64 - x as f64) * t) as i64;
    match (a, c) {
        (Value::Float64(x), Value::Float64(y)) => Value::Float64(x + (y - x) * t),
        (Value::Float32(x), Value::Float32(y)) => Value::Float32(x + (y - x) * t as f32),
        (Value::Int64(x), Value::Int64(y)) => Value::Int64(whole(*x, *y)),
        (Value::Int32(x), Value::Int32(y)) => Value::Int32(whole(i64::from(*x), i64::from(*y)) as i32),
        (Value::Timestamp(x), Value::Timestamp(y)) => Value::Timestamp(whole(*x, *y)),
        _ => Value::Null,
    }
}

/// Bucket arithmetic: fixed widths in nanoseconds, or calendar months.
struct Steps {
    width: i64,
    months: i64,
}

impl Steps {
    /// Start of the bucket after the one starting at `b`.
    fn next(&self, b: i64) -> i64 {
        if self.months > 0 {
            time::month_start(time::month_index(b) + self.months)
        } else {
            b.saturating_add(self.width)
        }
    }

    /// Number of buckets starting in `[lo, hi)`.
    fn count(&self, lo: i64, hi: i64) -> usize {
        if hi <= lo {
            return 0;
        }
        if self.months > 0 {
            ((time::month_index(hi - 1) - time::month_index(lo)) / self.months + 1) as usize
        } else {
            ((hi as i128 - lo as i128 + self.width as i128 - 1) / self.width as i128) as usize
        }
    }

    /// Position of the bucket starting at `b` (>= `lo`).
    fn index(&self, lo: i64, b: i64) -> usize {
        if self.months > 0 {
            ((time::month_index(b) - time::month_index(lo)) / self.months) as usize
        } else {
            ((b as i128 - lo as i128) / self.width as i128) as usize
        }
    }

    /// Start of bucket `k`.
    fn at(&self, lo: i64, k: usize) -> i64 {
        if self.months > 0 {
            time::month_start(time::month_index(lo) + k as i64 * self.months)
        } else {
            lo.saturating_add(k as i64 * self.width)
        }
    }
}
