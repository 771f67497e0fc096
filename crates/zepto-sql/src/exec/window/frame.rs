//! Frames: each window position's `[start, end)` range of positions, and aggregates over
//! those ranges. Every frame edge only moves forward as the current row does, so sums and
//! counts slide (prefix sums; compensated sums for floats), MIN/MAX use a monotonic deque,
//! and only the rare holistic aggregates (median, quantiles, DISTINCT) are computed frame by
//! frame.

use super::layout::Layout;
use crate::error::{Result, SqlError};
use crate::exec::aggregate::{from_opt_f64, run_agg, to_f64};
use crate::exec::sort::value_cmp;
use crate::exec::Batch;
use crate::plan::functions::AggFunc;
use crate::plan::window::{Edge, Frame, Offset};
use crate::plan::{AggCall, BExpr};
use std::cmp::Ordering;
use std::collections::VecDeque;
use zepto_storage::column::NULL_INDEX;
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

/// Frame holistic aggregates are computed for one frame at a time; this caps the total
/// number of (frame, row) pairs they may touch.
const MAX_EXPANDED: usize = 50_000_000;

/// `[start, end)` of every window position (empty frames have `end == start`).
pub fn bounds(l: &mut Layout, f: &Frame) -> Result<(Vec<u32>, Vec<u32>)> {
    let n = l.n;
    let mut fs = vec![0u32; n];
    let mut fe = vec![0u32; n];
    let needs_peers = !f.rows && (f.start == Edge::CurrentRow || f.end == Edge::CurrentRow);
    let offset = |e: &Edge| matches!(e, Edge::Preceding(_) | Edge::Following(_));
    let range_offsets = !f.rows && (offset(&f.start) || offset(&f.end));
    let keys = if range_offsets { Some(RangeKeys::new(l)?) } else { None };
    let (plo, phi): (Vec<u32>, Vec<u32>) = if needs_peers || range_offsets {
        let (a, b) = l.peers();
        (a.to_vec(), b.to_vec())
    } else {
        (vec![], vec![])
    };
    let parts: Vec<(usize, usize)> = l.partitions().collect();
    for (ps, pe) in parts {
        let seg = keys.as_ref().map(|k| k.non_null_segment(ps, pe));
        for k in ps..pe {
            let edge = |e: Edge, is_end: bool| -> usize {
                match e {
                    Edge::UnboundedPreceding => ps,
                    Edge::UnboundedFollowing => pe,
                    Edge::CurrentRow if f.rows => k + is_end as usize,
                    Edge::CurrentRow => (if is_end { phi[k] } else { plo[k] }) as usize,
                    Edge::Preceding(o) | Edge::Following(o) if f.rows => {
                        let Offset::Int(o) = o else { return k };
                        let o = o.min(n as i64) as usize;
                        let preceding = matches!(e, Edge::Preceding(_));
                        let base = k + is_end as usize;
                        if preceding {
                            base.saturating_sub(o).max(ps)
                        } else {
                            (base + o).min(pe)
                        }
                    }
                    Edge::Preceding(o) | Edge::Following(o) => {
                        let (Some(keys), Some((a, b))) = (&keys, seg) else { return k };
                        if k < a || k >= b {
                            // NULL order value: its frame edges are its peers (the NULLs).
                            return (if is_end { phi[k] } else { plo[k] }) as usize;
                        }
                        keys.search(a, b, k, o, matches!(e, Edge::Preceding(_)), is_end)
                    }
                }
            };
            let s = edge(f.start, false);
            let e = edge(f.end, true).max(s);
            fs[k] = s as u32;
            fe[k] = e as u32;
        }
    }
    Ok((fs, fe))
}

/// The single RANGE ORDER BY key in window order, as ascending numbers (DESC negated).
struct RangeKeys {
    ints: Option<Vec<i128>>,
    floats: Option<Vec<f64>>,
    valid: Vec<bool>,
}

impl RangeKeys {
    fn new(l: &Layout) -> Result<RangeKeys> {
        let [(c, key)] = l.order.as_slice() else {
            return Err(SqlError::Internal("RANGE offsets need exactly one ORDER BY key".into()));
        };
        let c = l.gather(c);
        let sign = if key.desc { -1 } else { 1 };
        let valid: Vec<bool> = (0..c.len()).map(|i| c.is_valid(i)).collect();
        let (mut ints, mut floats) = (None, None);
        match &c.data {
            ColumnData::Float32(_) | ColumnData::Float64(_) => {
                floats = Some(to_f64(&c)?.iter().map(|&x| x * sign as f64).collect());
            }
            ColumnData::Int32(v) | ColumnData::Date(v) => {
                ints = Some(v.iter().map(|&x| x as i128 * sign).collect());
            }
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
                ints = Some(v.iter().map(|&x| x as i128 * sign).collect());
            }
            d => {
                return Err(SqlError::exec(format!(
                    "a RANGE frame with offsets needs a numeric or temporal ORDER BY key, got {}",
                    d.data_type()
                )))
            }
        }
        Ok(RangeKeys { ints, floats, valid })
    }

    /// The non-NULL positions of a partition (NULLs sort all first or all last).
    fn non_null_segment(&self, ps: usize, pe: usize) -> (usize, usize) {
        let mut a = ps;
        while a < pe && !self.valid[a] {
            a += 1;
        }
        let mut b = pe;
        while b > a && !self.valid[b - 1] {
            b -= 1;
        }
        (a, b)
    }

    /// Frame edge for row `k` at `value ∓ offset` within the sorted non-NULL range `[a, b)`:
    /// a start edge is the first position with key ≥ target, an end edge the first with
    /// key > target.
    fn search(&self, a: usize, b: usize, k: usize, o: Offset, preceding: bool, is_end: bool) -> usize {
        if let Some(v) = &self.ints {
            let off = match o {
                Offset::Int(x) => x as i128,
                Offset::Float(x) => x as i128,
            };
            let t = if preceding { v[k] - off } else { v[k] + off };
            let s = &v[a..b];
            return a + if is_end { s.partition_point(|&x| x <= t) } else { s.partition_point(|&x| x < t) };
        }
        let v = self.floats.as_deref().unwrap_or(&[]);
        let off = match o {
            Offset::Int(x) => x as f64,
            Offset::Float(x) => x,
        };
        let t = if preceding { v[k] - off } else { v[k] + off };
        let s = &v[a..b];
        a + if is_end { s.partition_point(|&x| x <= t) } else { s.partition_point(|&x| x < t) }
    }
}

/// An aggregate over every position's frame. `args` are in window order.
pub fn aggregate(
    func: AggFunc,
    distinct: bool,
    ty: DataType,
    args: &[std::borrow::Cow<Column>],
    fs: &[u32],
    fe: &[u32],
) -> Result<Column> {
    let n = fs.len();
    if !distinct {
        match func {
            AggFunc::CountStar => {
                return Ok(ints((0..n).map(|k| (fe[k] - fs[k]) as i64)));
            }
            AggFunc::Count => {
                let pc = prefix_valid(&args[0]);
                return Ok(ints((0..n).map(|k| (pc[fe[k] as usize] - pc[fs[k] as usize]) as i64)));
            }
            AggFunc::Sum | AggFunc::Avg => return sum_avg(func == AggFunc::Avg, ty, &args[0], fs, fe),
            AggFunc::Min | AggFunc::Max => return Ok(min_max(func == AggFunc::Max, &args[0], fs, fe)),
            AggFunc::First | AggFunc::Last => {
                let idx: Vec<u32> = (0..n)
                    .map(|k| match (fs[k] < fe[k], func == AggFunc::First) {
                        (false, _) => NULL_INDEX,
                        (true, true) => fs[k],
                        (true, false) => fe[k] - 1,
                    })
                    .collect();
                return Ok(args[0].take_opt(&idx));
            }
            AggFunc::StddevPop | AggFunc::StddevSamp | AggFunc::VarPop | AggFunc::VarSamp => {
                return variance(func, &args[0], fs, fe);
            }
            _ => {}
        }
    }
    // Holistic aggregates: gather each frame's rows and aggregate them as one group.
    let total: usize = (0..n).map(|k| (fe[k] - fs[k]) as usize).sum();
    if total > MAX_EXPANDED {
        return Err(SqlError::ResourcesExhausted(format!(
            "window frames of this aggregate span {total} rows in total (limit {MAX_EXPANDED}); use a bounded ROWS frame"
        )));
    }
    let mut idx = Vec::with_capacity(total);
    let mut ids = Vec::with_capacity(total);
    for k in 0..n {
        for r in fs[k]..fe[k] {
            idx.push(r);
            ids.push(k as u32);
        }
    }
    let cols: Vec<Column> = args.iter().map(|c| c.take(&idx)).collect();
    let call = AggCall {
        func,
        args: cols.iter().enumerate().map(|(i, c)| BExpr::Col(i, c.data_type())).collect(),
        distinct,
        order: None,
        ty,
    };
    let b = Batch::new(cols, total);
    // Frame rows are in window order, not necessarily time order (twap sorts them itself).
    run_agg(&call, &b, &ids, n, false)
}

fn ints(it: impl Iterator<Item = i64>) -> Column {
    Column::from_data(ColumnData::Int64(it.collect()))
}

/// Number of valid values before each position (length n + 1).
pub fn prefix_valid(c: &Column) -> Vec<u32> {
    let mut pc = Vec::with_capacity(c.len() + 1);
    let mut acc = 0u32;
    pc.push(0);
    for i in 0..c.len() {
        acc += c.is_valid(i) as u32;
        pc.push(acc);
    }
    pc
}

/// Integer-like values as i64 (booleans 0/1), or `None` for floats.
fn int_values(c: &Column) -> Option<Vec<i64>> {
    Some(match &c.data {
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.clone(),
        ColumnData::Int32(v) | ColumnData::Date(v) => v.iter().map(|&x| x as i64).collect(),
        ColumnData::Bool(v) => v.iter().map(|&x| x as i64).collect(),
        ColumnData::Null(n) => vec![0; *n],
        _ => return None,
    })
}

fn sum_avg(avg: bool, ty: DataType, x: &Column, fs: &[u32], fe: &[u32]) -> Result<Column> {
    let n = fs.len();
    let pc = prefix_valid(x);
    let count = |k: usize| pc[fe[k] as usize] - pc[fs[k] as usize];
    if let Some(v) = int_values(x) {
        // Exact prefix sums.
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
        if avg {
            return Ok(from_opt_f64((0..n).map(|k| (count(k) > 0).then(|| sum(k) as f64 / count(k) as f64))));
        }
        let mut out = Vec::with_capacity(n);
        let mut valid = Bitmap::default();
        for k in 0..n {
            let s = i64::try_from(sum(k)).map_err(|_| SqlError::exec("out of range: sum() overflows BIGINT"))?;
            out.push(s);
            valid.push(count(k) > 0);
        }
        let data = if ty == DataType::Interval { ColumnData::Interval(out) } else { ColumnData::Int64(out) };
        return Ok(Column::new(data, Some(valid)));
    }
    // Floats: a sliding Neumaier-compensated sum (frames only move forward).
    let v = to_f64(x)?;
    let (mut lo, mut hi) = (0usize, 0usize);
    let (mut s, mut comp) = (0.0f64, 0.0f64);
    // Neumaier step on register-held state: (sum, compensation) + y.
    #[inline(always)]
    fn add(s: f64, comp: f64, y: f64) -> (f64, f64) {
        let t = s + y;
        let c = if s.abs() >= y.abs() { (s - t) + y } else { (y - t) + s };
        (t, comp + c)
    }
    let all_valid = x.validity.is_none();
    let mut vals = vec![0.0f64; n];
    let mut valid = vec![false; n];
    for k in 0..n {
        let (a, b) = (fs[k] as usize, fe[k] as usize);
        if a >= hi || a < lo {
            // Disjoint from the previous frame (a new partition): restart.
            lo = a;
            hi = a;
            s = 0.0;
            comp = 0.0;
        }
        while hi < b {
            if all_valid || x.is_valid(hi) {
                (s, comp) = add(s, comp, v[hi]);
            }
            hi += 1;
        }
        while lo < a {
            if all_valid || x.is_valid(lo) {
                (s, comp) = add(s, comp, -v[lo]);
            }
            lo += 1;
        }
        let c = count(k);
        let total = s + comp;
        vals[k] = if avg { total / c.max(1) as f64 } else { total };
        valid[k] = c > 0;
    }
    let validity = Bitmap::from_bools(valid);
    Ok(Column::new(ColumnData::Float64(vals), Some(validity)))
}

/// MIN/MAX over sliding frames with a monotonic deque of positions.
fn min_max(max: bool, x: &Column, fs: &[u32], fe: &[u32]) -> Column {
    let n = fs.len();
    let cmp = value_cmp(x);
    // `a` should leave the deque before `b` arrives when `b` is at least as good.
    let dominated = |a: usize, b: usize| {
        let o = cmp(b, a);
        if max {
            o != Ordering::Less
        } else {
            o != Ordering::Greater
        }
    };
    let mut dq: VecDeque<usize> = VecDeque::new();
    let (mut lo, mut hi) = (0usize, 0usize);
    let mut idx = Vec::with_capacity(n);
    for k in 0..n {
        let (a, b) = (fs[k] as usize, fe[k] as usize);
        if a >= hi || a < lo {
            dq.clear();
            lo = a;
            hi = a;
        }
        while hi < b {
            if x.is_valid(hi) {
                while dq.back().is_some_and(|&t| dominated(t, hi)) {
                    dq.pop_back();
                }
                dq.push_back(hi);
            }
            hi += 1;
        }
        lo = lo.max(a);
        while dq.front().is_some_and(|&t| t < a) {
            dq.pop_front();
        }
        idx.push(dq.front().map_or(NULL_INDEX, |&t| t as u32));
    }
    x.take_opt(&idx)
}

/// Variance family: Welford over growing frames, two passes over each frame otherwise.
fn variance(func: AggFunc, x: &Column, fs: &[u32], fe: &[u32]) -> Result<Column> {
    let n = fs.len();
    let v = to_f64(x)?;
    let finish = |cnt: usize, m2: f64| -> Option<f64> {
        let samp = matches!(func, AggFunc::StddevSamp | AggFunc::VarSamp);
        let d = if samp { cnt.checked_sub(1)? } else { cnt };
        if d == 0 {
            return None;
        }
        let var = (m2 / d as f64).max(0.0);
        Some(if matches!(func, AggFunc::StddevSamp | AggFunc::StddevPop) { var.sqrt() } else { var })
    };
    let mut out = Vec::with_capacity(n);
    // Welford state for frames that share their start and only grow.
    let (mut ws, mut we, mut cnt, mut mean, mut m2) = (usize::MAX, 0usize, 0usize, 0.0f64, 0.0f64);
    for k in 0..n {
        let (a, b) = (fs[k] as usize, fe[k] as usize);
        let growing = a == ws && b >= we;
        if growing || (k + 1 < n && fs[k + 1] as usize == a) {
            if !growing {
                // Start a growing run.
                (ws, we, cnt, mean, m2) = (a, a, 0, 0.0, 0.0);
            }
            while we < b {
                if x.is_valid(we) {
                    cnt += 1;
                    let d = v[we] - mean;
                    mean += d / cnt as f64;
                    m2 += d * (v[we] - mean);
                }
                we += 1;
            }
            out.push(finish(cnt, m2));
            continue;
        }
        let (mut c, mut s) = (0usize, 0.0f64);
        for r in a..b {
            if x.is_valid(r) {
                c += 1;
                s += v[r];
            }
        }
        if c == 0 {
            out.push(None);
            continue;
        }
        let mu = s / c as f64;
        let mut q = 0.0;
        for r in a..b {
            if x.is_valid(r) {
                q += (v[r] - mu) * (v[r] - mu);
            }
        }
        out.push(finish(c, q));
    }
    Ok(from_opt_f64(out.into_iter()))
}
