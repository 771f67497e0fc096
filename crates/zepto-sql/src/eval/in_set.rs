//! `x [NOT] IN (constants)` over a batch by a lookup per row in the constants' hash set
//! ([`InSet`]), three-valued as SQL's IN: true on a member; NULL when `x` is NULL, or when it
//! matches nothing and some item was NULL; false otherwise (`NOT IN` flips true and false).

use crate::expr::in_set::InSet;
use zepto_storage::{Bitmap, Column, ColumnData, DataType};

/// Whether each row of `x` is in `set` (or, `negated`, not in it), with SQL's NULLs.
pub fn in_set(x: &Column, set: &InSet, negated: bool) -> Column {
    let n = x.len();
    if matches!(x.data(), ColumnData::Null(_)) {
        return Column::nulls(DataType::Bool, n);
    }
    let hit = members(x, set);
    debug_assert_eq!(hit.len(), n);
    let validity = if set.has_null() {
        // A row that matched nothing is unknown; so is a NULL row.
        Some(Bitmap::from_bools((0..n).map(|i| hit[i] && x.is_valid(i))))
    } else {
        x.validity().cloned()
    };
    let values = if negated { hit.into_iter().map(|h| !h).collect() } else { hit };
    Column::new(ColumnData::Bool(values.into()), validity)
}

/// Whether each row's value is a member (anything for a NULL row).
fn members(x: &Column, set: &InSet) -> Vec<bool> {
    match x.data() {
        ColumnData::Bool(v) => v.iter().map(|&b| set.has_int(i64::from(b))).collect(),
        ColumnData::Int32(v) | ColumnData::Date(v) => v.iter().map(|&k| set.has_int(i64::from(k))).collect(),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            v.iter().map(|&k| set.has_int(k)).collect()
        }
        ColumnData::Int128(v) => v.iter().map(|&k| set.has_wide(k)).collect(),
        ColumnData::Float32(v) => v.iter().map(|&k| set.has_float(f64::from(k))).collect(),
        ColumnData::Float64(v) => v.iter().map(|&k| set.has_float(k)).collect(),
        ColumnData::Varchar(s) => s.iter().map(|t| set.has_str(t)).collect(),
        ColumnData::Symbol { codes, dict } => {
            // Decide once per dictionary entry, from whichever side is smaller.
            let mut table = vec![false; dict.len()];
            if set.len() < dict.len() {
                for k in set.strs().filter_map(|s| dict.code(s)) {
                    table[k as usize] = true;
                }
            } else {
                for (slot, s) in table.iter_mut().zip(dict.iter()) {
                    *slot = set.has_str(s);
                }
            }
            codes.iter().map(|&c| table.get(c as usize).copied().unwrap_or(false)).collect()
        }
        ColumnData::Vector { .. } | ColumnData::Null(_) => vec![false; x.len()],
    }
}
