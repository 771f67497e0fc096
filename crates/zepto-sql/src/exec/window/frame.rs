//! Frames: each window position's `[start, end)` range of positions. Every frame edge only
//! moves forward as the current row does; aggregates over the frames are the accumulators'
//! ([`crate::exec::accum::frames`]).

use super::layout::Layout;
use crate::error::{Result, SqlError};
use crate::exec::accum::to_f64;
use crate::plan::window::{Edge, Frame, Offset};
use zepto_storage::ColumnData;

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
        match &c.data() {
            ColumnData::Float32(_) | ColumnData::Float64(_) => {
                floats = Some(to_f64(&c)?.iter().map(|&x| x * sign as f64).collect());
            }
            ColumnData::Int32(v) | ColumnData::Date(v) => {
                ints = Some(v.iter().map(|&x| x as i128 * sign).collect());
            }
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
                ints = Some(v.iter().map(|&x| x as i128 * sign).collect());
            }
            ColumnData::Int128(v) => ints = Some(v.iter().map(|&x| x.saturating_mul(sign)).collect()),
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
