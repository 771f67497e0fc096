//! A batch's rows split among partitions in one pass per column. Gathering each partition's
//! rows by index (`Column::take` per partition) reads the whole column once per partition that
//! has rows on a cache line; scattering reads it once and appends each row to its partition's
//! buffer, sized exactly beforehand. A bulk load spends most of its partitioning time here.

use crate::bitmap::Bitmap;
use crate::column::{Column, ColumnData};
use crate::strings::StrVec;

/// The rows of `c` split by `slots` (row `i` goes to part `slots[i]`), in input order within a
/// part; `sizes[s]` is the number of rows of part `s`.
pub(super) fn split(c: &Column, slots: &[u32], sizes: &[usize]) -> Vec<Column> {
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
}
