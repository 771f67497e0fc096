//! ORDER BY: typed row comparators (NULLs placed per key, DESC reversing only values), a stable
//! full sort, and a partial selection for ORDER BY ... LIMIT k (top-N).

use super::eval::eval;
use super::Batch;
use crate::error::Result;
use crate::plan::SortKey;
use std::cmp::Ordering;
use zepto_storage::{Column, ColumnData};

pub type RowCmp<'a> = Box<dyn Fn(usize, usize) -> Ordering + 'a>;

/// Ascending comparison of two valid rows of one column (floats: NaN greatest).
pub fn value_cmp(c: &Column) -> RowCmp<'_> {
    match &c.data {
        ColumnData::Bool(v) => Box::new(move |i, j| v[i].cmp(&v[j])),
        ColumnData::Int32(v) | ColumnData::Date(v) => Box::new(move |i, j| v[i].cmp(&v[j])),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            Box::new(move |i, j| v[i].cmp(&v[j]))
        }
        ColumnData::Float32(v) => {
            Box::new(move |i, j| v[i].partial_cmp(&v[j]).unwrap_or_else(|| v[i].is_nan().cmp(&v[j].is_nan())))
        }
        ColumnData::Float64(v) => {
            Box::new(move |i, j| v[i].partial_cmp(&v[j]).unwrap_or_else(|| v[i].is_nan().cmp(&v[j].is_nan())))
        }
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
        ColumnData::Null(_) => Box::new(|_, _| Ordering::Equal),
    }
}

/// Full comparator for one sort key.
pub fn key_cmp<'a>(c: &'a Column, desc: bool, nulls_first: bool) -> RowCmp<'a> {
    let vc = value_cmp(c);
    if c.validity.is_none() && !matches!(c.data, ColumnData::Null(_)) {
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

pub fn sort_indices(b: &Batch, keys: &[SortKey], limit: Option<usize>) -> Result<Vec<u32>> {
    let cols = keys.iter().map(|k| eval(&k.expr, b)).collect::<Result<Vec<_>>>()?;
    let cmps: Vec<RowCmp> = cols.iter().zip(keys).map(|(c, k)| key_cmp(c, k.desc, k.nulls_first)).collect();
    let cmp = |a: &u32, b: &u32| {
        for c in &cmps {
            let o = c(*a as usize, *b as usize);
            if o != Ordering::Equal {
                return o;
            }
        }
        a.cmp(b)
    };
    let mut idx: Vec<u32> = (0..b.rows as u32).collect();
    match limit {
        Some(k) if k < idx.len() => {
            if k == 0 {
                return Ok(Vec::new());
            }
            idx.select_nth_unstable_by(k - 1, cmp);
            idx.truncate(k);
            idx.sort_unstable_by(cmp);
        }
        _ => idx.sort_unstable_by(cmp),
    }
    Ok(idx)
}
