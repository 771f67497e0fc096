//! Numeric conversions the kernels share: any numeric column as doubles, and a DOUBLE column
//! from optional values.

use crate::error::{Result, SqlError};
use std::borrow::Cow;
use zepto_storage::{Bitmap, Column, ColumnData};

/// A FLOAT64 column from optional values (`None` = NULL).
pub fn from_opt_f64(it: impl Iterator<Item = Option<f64>>) -> Column {
    let (lo, _) = it.size_hint();
    let (mut vals, mut valid) = (Vec::with_capacity(lo), Vec::with_capacity(lo));
    for v in it {
        vals.push(v.unwrap_or(0.0));
        valid.push(v.is_some() as i64);
    }
    Column::new(ColumnData::Float64(vals.into()), validity(&valid))
}

/// Values as f64 (NULL slots hold 0).
pub fn to_f64(c: &Column) -> Result<Cow<'_, [f64]>> {
    Ok(match &c.data() {
        ColumnData::Float64(v) => Cow::Borrowed(v.as_slice()),
        ColumnData::Float32(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        ColumnData::Int32(v) | ColumnData::Date(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => {
            Cow::Owned(v.iter().map(|&x| x as f64).collect())
        }
        ColumnData::Int128(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        ColumnData::Bool(v) => Cow::Owned(v.iter().map(|&x| x as u8 as f64).collect()),
        ColumnData::Null(n) => Cow::Owned(vec![0.0; *n]),
        d => return Err(SqlError::exec(format!("expected a numeric value, got {}", d.data_type()))),
    })
}

/// A validity bitmap from counts of values (valid where positive), or none when every
/// count is.
pub fn validity(counts: &[i64]) -> Option<Bitmap> {
    (!counts.iter().all(|&c| c > 0)).then(|| Bitmap::from_bools(counts.iter().map(|&c| c > 0)))
}
