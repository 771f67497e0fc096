//! Typed row comparators: the order of values of one column (NULLs aside), and of a sort key
//! (NULLs placed, DESC reversing only values). ORDER BY, min/max, quantiles and GREATEST use
//! them.

use super::sql_order::sql_cmp;
use std::cmp::Ordering;
use zepto_storage::{Column, ColumnData};

/// A comparator of two row indexes of a column or sort key.
pub type RowCmp<'a> = Box<dyn Fn(usize, usize) -> Ordering + 'a>;

/// Ascending comparison of two valid rows of one column (floats: NaN greatest).
pub fn value_cmp(c: &Column) -> RowCmp<'_> {
    match &c.data() {
        ColumnData::Bool(v) => Box::new(move |i, j| v[i].cmp(&v[j])),
        ColumnData::Int32(v) | ColumnData::Date(v) => Box::new(move |i, j| v[i].cmp(&v[j])),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            Box::new(move |i, j| v[i].cmp(&v[j]))
        }
        ColumnData::Int128(v) => Box::new(move |i, j| v[i].cmp(&v[j])),
        ColumnData::Float32(v) => Box::new(move |i, j| sql_cmp(v[i], v[j])),
        ColumnData::Float64(v) => Box::new(move |i, j| sql_cmp(v[i], v[j])),
        ColumnData::Varchar(s) => Box::new(move |i, j| s.get(i).cmp(s.get(j))),
        ColumnData::Symbol { codes, dict } => {
            // Rank dictionary entries once; rows then compare by rank.
            let mut order: Vec<u32> = (0..dict.len() as u32).collect();
            order.sort_by(|&a, &b| dict.get(a).cmp(dict.get(b)));
            let mut rank = vec![0u32; dict.len()];
            for (r, &code) in order.iter().enumerate() {
                rank[code as usize] = r as u32;
            }
            Box::new(move |i, j| rank[codes[i] as usize].cmp(&rank[codes[j] as usize]))
        }
        ColumnData::Vector { dim, values } => {
            // Lexicographic by element, as DuckDB orders arrays (elements are finite).
            let d = *dim as usize;
            Box::new(move |i, j| {
                let (a, b) = (values.get(i * d..(i + 1) * d), values.get(j * d..(j + 1) * d));
                a.partial_cmp(&b).unwrap_or(Ordering::Equal)
            })
        }
        ColumnData::Null(_) => Box::new(|_, _| Ordering::Equal),
    }
}

/// Full comparator for one sort key.
pub fn key_cmp<'a>(c: &'a Column, desc: bool, nulls_first: bool) -> RowCmp<'a> {
    let vc = value_cmp(c);
    if c.validity().is_none() && !matches!(c.data(), ColumnData::Null(_)) {
        return if desc { Box::new(move |i, j| vc(j, i)) } else { vc };
    }
    Box::new(move |i, j| match (c.is_valid(i), c.is_valid(j)) {
        (true, true) => {
            let o = vc(i, j);
            if desc {
                o.reverse()
            } else {
                o
            }
        }
        (false, false) => Ordering::Equal,
        (false, true) => {
            if nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        (true, false) => {
            if nulls_first {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    })
}
