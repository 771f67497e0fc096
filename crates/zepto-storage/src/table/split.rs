//! A batch's rows split among partitions in one pass per column. Gathering each partition's
//! rows by index (`Column::take` per partition) reads the whole column once per partition that
//! has rows on a cache line; scattering reads it once and appends each row to its partition's
//! buffer, sized exactly beforehand. A bulk load spends most of its partitioning time here.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnData};
use crate::strings::StrVec;

/// A batch's rows grouped by the partitions that get any: work and memory follow the batch,
/// not the table's partition count (an ingest batch of 1,000 rows into a table of 100k
/// symbols touches at most 1,000 partitions).
#[derive(Debug)]
pub(super) struct Placement {
    /// Row `i` goes to `targets[part[i]]`.
    part: Vec<u32>,
    /// Partition slots that get rows, in order of first row.
    targets: Vec<usize>,
    /// Rows per target.
    sizes: Vec<usize>,
}

impl Placement {
    /// `slots[i]` is row `i`'s partition slot, each below `nslots`.
    pub(super) fn new(mut slots: Vec<u32>, nslots: usize) -> Placement {
        const NONE: u32 = u32::MAX;
        let (mut targets, mut sizes) = (Vec::new(), Vec::new());
        let mut number = |dense: &mut u32, s: &mut u32| {
            if *dense == NONE {
                *dense = targets.len() as u32;
                targets.push(*s as usize);
                sizes.push(0usize);
            }
            sizes[*dense as usize] += 1;
            *s = *dense;
        };
        // A table wider than the batch: a map of the slots seen, not one entry per partition.
        if nslots <= slots.len().saturating_mul(4) {
            let mut dense = vec![NONE; nslots];
            slots.iter_mut().for_each(|s| number(&mut dense[*s as usize], s));
        } else {
            let mut dense: HashMap<u32, u32> = HashMap::new();
            slots.iter_mut().for_each(|s| number(dense.entry(*s).or_insert(NONE), s));
        }
        Placement { part: slots, targets, sizes }
    }

    /// The partition slots that get rows, in order of first row.
    pub(super) fn targets(&self) -> &[usize] {
        &self.targets
    }

    /// The batch's row indices grouped by target (input order within each), and the span of
    /// each target's rows in them: one counting sort, no buffer per target.
    pub(super) fn grouped_rows(&self) -> (Vec<u32>, Vec<Range<usize>>) {
        let mut spans = Vec::with_capacity(self.sizes.len());
        let mut at = 0;
        for &k in &self.sizes {
            spans.push(at..at + k);
            at += k;
        }
        let mut next: Vec<usize> = spans.iter().map(|r| r.start).collect();
        let mut rows = vec![0u32; self.part.len()];
        for (i, &t) in self.part.iter().enumerate() {
            rows[next[t as usize]] = i as u32;
            next[t as usize] += 1;
        }
        (rows, spans)
    }

    /// Each target's rows of `batch`, in input order: split once per column (on every core
    /// when `parallel`, as for a bulk load), or the whole batch when it goes to one partition.
    /// Each column is dropped once split, so a bulk load holds its rows about once, not twice:
    /// only the columns being split exist both whole and in parts.
    pub(super) fn split_batch(&self, batch: Vec<Column>, parallel: bool) -> Vec<Vec<Column>> {
        if let [_] = self.targets[..] {
            return vec![batch];
        }
        let width = batch.len();
        let cells: Vec<Mutex<Vec<Column>>> = (0..width).map(|_| Mutex::new(Vec::new())).collect();
        let one = |(i, c): (usize, Column)| {
            let parts = split(&c, &self.part, &self.sizes);
            drop(c);
            *cells[i].lock().unwrap_or_else(PoisonError::into_inner) = parts;
        };
        let items: Vec<(usize, Column)> = batch.into_iter().enumerate().collect();
        if parallel {
            crate::par::for_each(items, one);
        } else {
            items.into_iter().for_each(one);
        }
        let mut out: Vec<Vec<Column>> = self.targets.iter().map(|_| Vec::with_capacity(width)).collect();
        for cell in cells {
            let parts = cell.into_inner().unwrap_or_else(PoisonError::into_inner);
            debug_assert_eq!(parts.len(), out.len());
            parts.into_iter().zip(out.iter_mut()).for_each(|(c, cols)| cols.push(c));
        }
        out
    }
}

/// The rows of `c` split by `slots` (row `i` goes to part `slots[i]`), in input order within a
/// part; `sizes[s]` is the number of rows of part `s`.
fn split(c: &Column, slots: &[u32], sizes: &[usize]) -> Vec<Column> {
    debug_assert_eq!(c.len(), slots.len());
    debug_assert_eq!(sizes.iter().sum::<usize>(), slots.len());
    macro_rules! fixed {
        ($v:expr, $variant:ident) => {
            scatter($v, slots, sizes).into_iter().map(ColumnData::$variant).collect()
        };
    }
    let data: Vec<ColumnData> = match c.data() {
        ColumnData::Bool(v) => fixed!(v, Bool),
        ColumnData::Int32(v) => fixed!(v, Int32),
        ColumnData::Int64(v) => fixed!(v, Int64),
        ColumnData::Int128(v) => fixed!(v, Int128),
        ColumnData::Float32(v) => fixed!(v, Float32),
        ColumnData::Float64(v) => fixed!(v, Float64),
        ColumnData::Timestamp(v) => fixed!(v, Timestamp),
        ColumnData::Date(v) => fixed!(v, Date),
        ColumnData::Interval(v) => fixed!(v, Interval),
        ColumnData::Symbol { codes, dict } => scatter(codes, slots, sizes)
            .into_iter()
            .map(|codes| ColumnData::Symbol { codes, dict: dict.clone() })
            .collect(),
        ColumnData::Varchar(s) => {
            let mut out: Vec<StrVec> = sizes.iter().map(|&n| StrVec::with_capacity(n, 0)).collect();
            for (i, &p) in slots.iter().enumerate() {
                out[p as usize].push(s.get(i));
            }
            out.into_iter().map(ColumnData::Varchar).collect()
        }
        ColumnData::Vector { dim, values } => {
            let d = *dim as usize;
            let mut out: Vec<Vec<f32>> = sizes.iter().map(|&n| Vec::with_capacity(n * d)).collect();
            for (row, &p) in values.chunks_exact(d.max(1)).zip(slots) {
                out[p as usize].extend_from_slice(row);
            }
            out.into_iter().map(|values| ColumnData::Vector { dim: *dim, values }).collect()
        }
        ColumnData::Null(_) => sizes.iter().map(|&n| ColumnData::Null(n)).collect(),
    };
    let validity: Vec<Option<Bitmap>> = match c.validity() {
        None => sizes.iter().map(|_| None).collect(),
        Some(b) => {
            let mut out: Vec<Bitmap> = sizes.iter().map(|_| Bitmap::default()).collect();
            for (i, &p) in slots.iter().enumerate() {
                out[p as usize].push(b.get(i));
            }
            out.into_iter().map(Some).collect()
        }
    };
    data.into_iter().zip(validity).map(|(d, v)| Column::new(d, v)).collect()
}

/// `v` split by `slots` into parts of `sizes` rows: one read of `v`, each part's buffer
/// allocated at its size up front.
fn scatter<T: Copy>(v: &[T], slots: &[u32], sizes: &[usize]) -> Vec<Vec<T>> {
    let mut out: Vec<Vec<T>> = sizes.iter().map(|&n| Vec::with_capacity(n)).collect();
    for (&x, &p) in v.iter().zip(slots) {
        out[p as usize].push(x);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;
    use crate::value::Value;
    use crate::ColumnBuilder;

    #[test]
    fn split_equals_taking_each_parts_rows() {
        let mut r = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1du64);
        let mut rnd = move |n: u64| r.below(n);
        for round in 0..40 {
            let n = rnd(300) as usize;
            let parts = 1 + rnd(7) as usize;
            let slots: Vec<u32> = (0..n).map(|_| rnd(parts as u64) as u32).collect();
            let mut sizes = vec![0usize; parts];
            slots.iter().for_each(|&s| sizes[s as usize] += 1);
            let cols = [DataType::Int64, DataType::Float64, DataType::Varchar, DataType::Symbol, DataType::Bool]
                .into_iter()
                .map(|dt| {
                    let mut b = ColumnBuilder::new(dt, n);
                    for i in 0..n {
                        let v = match (rnd(5), dt) {
                            (0, _) => Value::Null,
                            (_, DataType::Int64) => Value::Int64(i as i64),
                            (_, DataType::Float64) => Value::Float64(i as f64 / 4.0),
                            (_, DataType::Bool) => Value::Bool(i % 3 == 0),
                            _ => Value::Str(format!("s{}", i % 11)),
                        };
                        b.push_value(&v).expect("a value of the column's type");
                    }
                    b.finish()
                })
                .chain([Column::nulls(DataType::Int32, n)]);
            for c in cols {
                let got = split(&c, &slots, &sizes);
                assert_eq!(got.len(), parts);
                for (s, g) in got.iter().enumerate() {
                    let rows: Vec<u32> = (0..n as u32).filter(|&i| slots[i as usize] == s as u32).collect();
                    let want = c.take(&rows);
                    assert_eq!(g.len(), rows.len(), "round {round}");
                    let same = (0..rows.len()).all(|i| g.get(i) == want.get(i));
                    assert!(same, "round {round}, {:?}, part {s}", c.data_type());
                }
            }
        }
    }

    #[test]
    fn placement_numbers_the_slots_that_get_rows_in_order_of_first_row() {
        let mut r = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15u64);
        for round in 0..60 {
            let n = 1 + r.below(200) as usize;
            // Both ways of numbering: tables narrower and far wider than the batch.
            let nslots = 1 + r.below(if round % 2 == 0 { 8 } else { 100_000 }) as usize;
            let slots: Vec<u32> = (0..n).map(|_| r.below(nslots as u64) as u32).collect();
            let place = Placement::new(slots.clone(), nslots);
            let mut want_targets: Vec<usize> = Vec::new();
            for &s in &slots {
                if !want_targets.contains(&(s as usize)) {
                    want_targets.push(s as usize);
                }
            }
            assert_eq!(place.targets(), &want_targets[..], "round {round}");
            for (i, &s) in slots.iter().enumerate() {
                assert_eq!(place.targets()[place.part[i] as usize], s as usize, "round {round}, row {i}");
            }
            let want_sizes: Vec<usize> =
                want_targets.iter().map(|&t| slots.iter().filter(|&&s| s as usize == t).count()).collect();
            assert_eq!(place.sizes, want_sizes, "round {round}");
            let (rows, spans) = place.grouped_rows();
            for (t, span) in spans.iter().enumerate() {
                let want: Vec<u32> =
                    (0..n as u32).filter(|&i| slots[i as usize] as usize == place.targets()[t]).collect();
                assert_eq!(rows[span.clone()], want[..], "round {round}, target {t}");
            }
        }
    }
}
