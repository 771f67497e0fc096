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
    let steps = Steps { width: p.width, months: p.months };
    if !p.fills() {
        return Ok(b.take(&bucket_major(&rows, bv, &groups.ids, ng, &steps)));
    }
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

/// `rows` in bucket-major order: by bucket start `bv`, then key `ids` (of `ng` keys, numbered
/// in the order they first appear), then row. Counted where [`counted_order`] can, sorted
/// otherwise.
fn bucket_major(rows: &[usize], bv: &[i64], ids: &[u32], ng: usize, steps: &Steps) -> Vec<u32> {
    counted_order(rows, bv, ids, ng, steps).unwrap_or_else(|| {
        let mut keyed: Vec<(i64, u32, u32)> = rows.iter().map(|&i| (bv[i], ids[i], i as u32)).collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, _, i)| i).collect()
    })
}

/// [`bucket_major`]'s order in two stable counting passes, by key and then by the bucket's
/// position among the steps: `None` where the buckets span more than four positions a row,
/// or where those positions do not order the starts (a start off the steps; checked).
fn counted_order(rows: &[usize], bv: &[i64], ids: &[u32], ng: usize, steps: &Steps) -> Option<Vec<u32>> {
    // Without keys every row has key 0 of one. A last bucket saturating at i64's top may
    // count one position short: its rows find no slot, and the sort takes over.
    let lo = rows.iter().map(|&i| bv[i]).min()?;
    let hi = rows.iter().map(|&i| bv[i]).max()?;
    let nb = steps.count(lo, steps.next(hi));
    if nb > 4 * rows.len() + 64 {
        return None;
    }
    // Each row's bucket position, computed once.
    let mut at = vec![0u32; bv.len()];
    for &i in rows {
        at[i] = u32::try_from(steps.index(lo, bv[i])).ok()?;
    }
    let rows: Vec<u32> = rows.iter().map(|&i| i as u32).collect();
    let by_key = counting_sort(&rows, ng, |i| ids[i as usize] as usize)?;
    let out = counting_sort(&by_key, nb, |i| at[i as usize] as usize)?;
    let rank = |i: u32| (bv[i as usize], ids[i as usize], i);
    out.windows(2).all(|w| rank(w[0]) < rank(w[1])).then_some(out)
}

/// `items` stably ordered by `slot` (below `slots`; `None` if one is not).
fn counting_sort(items: &[u32], slots: usize, slot: impl Fn(u32) -> usize) -> Option<Vec<u32>> {
    let mut at = vec![0u32; slots + 1];
    for &i in items {
        *at.get_mut(slot(i) + 1)? += 1;
    }
    for k in 1..=slots {
        at[k] += at[k - 1];
    }
    let mut out = vec![0u32; items.len()];
    for &i in items {
        let s = &mut at[slot(i)];
        out[*s as usize] = i;
        *s += 1;
    }
    Some(out)
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

    /// Position of the bucket starting at `b` (>= `lo`). Fixed steps whose distance fits an
    /// i64 divide as doubles, the floor put right by a step or two (an i128 division per row
    /// cost more than the rest of SAMPLE BY's ordering); months count months.
    fn index(&self, lo: i64, b: i64) -> usize {
        if self.months > 0 {
            return ((time::month_index(b) - time::month_index(lo)) / self.months) as usize;
        }
        let (Some(d), w) = (b.checked_sub(lo), self.width) else {
            return self.index_wide(lo, b);
        };
        let mut k = (d as f64 / w as f64) as i64;
        while k > 0 && k.saturating_mul(w) > d {
            k -= 1;
        }
        while k.checked_add(1).and_then(|n| n.checked_mul(w)).is_some_and(|x| x <= d) {
            k += 1;
        }
        debug_assert_eq!(k as usize, self.index_wide(lo, b));
        k as usize
    }

    /// [`Steps::index`] of fixed steps in i128, for any two times.
    fn index_wide(&self, lo: i64, b: i64) -> usize {
        ((b as i128 - lo as i128) / self.width as i128) as usize
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A bucket's position by doubles is the exact division's, at the ends of i64 too.
    #[test]
    fn positions_are_the_division_s() {
        let mut rng = zepto_storage::rng::XorShift::new(0x9b05_688c_2b3e_6c1f);
        let widths = [1, 3, 60_000_000_000, 86_400_000_000_000, i64::MAX / 3, i64::MAX];
        for round in 0..2000 {
            let steps = Steps { width: widths[round % widths.len()], months: 0 };
            let lo = [i64::MIN, -(rng.below(1 << 40) as i64), 0][round % 3];
            let b = lo.saturating_add((rng.below(u64::MAX) >> (round % 63 + 1)) as i64);
            assert_eq!(steps.index(lo, b), steps.index_wide(lo, b), "width {} lo {lo} b {b}", steps.width);
        }
    }

    /// Counted or sorted, the rows come out by (bucket, key, row): buckets on the steps and
    /// off them, a span too wide to count, months, keys in any order, repeated pairs.
    #[test]
    fn bucket_major_orders_by_bucket_key_and_row() {
        let mut rng = zepto_storage::rng::XorShift::new(0x510e_527f_ade6_82d1);
        let mut counted = 0;
        for round in 0..300 {
            let n = rng.below(400) as usize;
            let steps = match round % 3 {
                0 => Steps { width: 60, months: 0 },
                1 => Steps { width: 1, months: 0 },
                _ => Steps { width: 0, months: 1 },
            };
            let unit = if steps.months > 0 { 31 * 86_400_000_000_000 } else { steps.width };
            // Months span at most 2,000 (a time stays in range).
            let spread = [8, 200, if steps.months > 0 { 2_000 } else { 1_000_000 }][round % 5 % 3];
            let off = round % 4 == 3;
            let bv: Vec<i64> = (0..n)
                .map(|_| {
                    let k = rng.below(spread) as i64 * unit;
                    let t = if steps.months > 0 { time::month_start(time::month_index(k)) } else { k };
                    t + if off { rng.below(3) as i64 } else { 0 }
                })
                .collect();
            let ng = 1 + rng.below(9) as usize;
            let ids: Vec<u32> = (0..n).map(|_| rng.below(ng as u64) as u32).collect();
            let rows: Vec<usize> = (0..n).filter(|_| rng.below(10) != 0).collect();
            let mut want: Vec<u32> = rows.iter().map(|&i| i as u32).collect();
            want.sort_by_key(|&i| (bv[i as usize], ids[i as usize], i));
            assert_eq!(bucket_major(&rows, &bv, &ids, ng, &steps), want, "round {round}");
            // Few buckets on the steps are counted.
            if spread == 8 && !off && !rows.is_empty() {
                assert_eq!(counted_order(&rows, &bv, &ids, ng, &steps), Some(want), "round {round} counted");
                counted += 1;
            }
        }
        assert!(counted > 30, "{counted} counted");
    }
}
