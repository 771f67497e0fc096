//! `FLOAT[n]` columns to and from Arrow: written as `FixedSizeList<Float32, n>` (DuckDB's and
//! pyarrow's type for fixed-size arrays); read from a fixed-size list of that width or from a
//! `List`/`LargeList` whose every valid row has `n` elements (what Parquet files and clients
//! without fixed-size lists give), of `Float32` or `Float64` elements. A row of the wrong
//! length, a NULL element or a NaN/infinite element is an error naming the row: a vector
//! column holds whole, finite vectors or NULL.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, FixedSizeListArray, Float32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, Field};
use std::sync::Arc;

/// The Arrow type of a `FLOAT[dim]` column.
pub fn arrow_type(dim: u16) -> ArrowType {
    ArrowType::FixedSizeList(Arc::new(Field::new("item", ArrowType::Float32, true)), i32::from(dim))
}

/// A `FLOAT[dim]` column's flat values and validity as a `FixedSizeList<Float32, dim>`.
pub fn to_arrow(dim: u16, values: &[f32], nulls: Option<NullBuffer>) -> Result<ArrayRef, String> {
    let child = Float32Array::new(ScalarBuffer::from(values.to_vec()), None);
    let field = Arc::new(Field::new("item", ArrowType::Float32, true));
    let list = FixedSizeListArray::try_new(field, i32::from(dim), Arc::new(child), nulls).map_err(|e| e.to_string())?;
    Ok(Arc::new(list))
}

/// Why an array could not be appended to a vector column.
#[derive(Debug)]
pub enum Refused {
    /// The Arrow type is not a list of floats of this width.
    Type,
    /// Row `row` (0-based over the whole input) is not a whole finite vector of this width.
    Row(usize, String),
}

/// Append the rows of `arr` to a `FLOAT[dim]` column's flat `out` (NULL rows as zeros).
pub fn append(
    arr: &dyn Array,
    dim: u16,
    out: &mut Vec<f32>,
    nulls: Option<&NullBuffer>,
    row0: usize,
) -> Result<(), Refused> {
    let d = dim as usize;
    let (child, offsets): (&ArrayRef, Vec<(usize, usize)>) = match arr.data_type() {
        ArrowType::FixedSizeList(_, w) if *w as usize == d => {
            let l = arr.as_fixed_size_list();
            let base = l.value_offset_at(0);
            (l.values(), (0..arr.len()).map(|i| (base + i * d, base + (i + 1) * d)).collect())
        }
        ArrowType::List(_) => {
            let l = arr.as_list::<i32>();
            (l.values(), l.offsets().windows(2).map(|w| bounds(w, |x| x.max(0) as usize)).collect())
        }
        ArrowType::LargeList(_) => {
            let l = arr.as_list::<i64>();
            (l.values(), l.offsets().windows(2).map(|w| bounds(w, |x| x.max(0) as usize)).collect())
        }
        _ => return Err(Refused::Type),
    };
    let elems: Vec<f32> = match child.data_type() {
        ArrowType::Float32 => child.as_primitive::<Float32Type>().values().to_vec(),
        ArrowType::Float64 => child.as_primitive::<Float64Type>().values().iter().map(|&x| x as f32).collect(),
        _ => return Err(Refused::Type),
    };
    let child_nulls = child.logical_nulls().filter(|b| b.null_count() > 0);
    out.reserve(offsets.len() * d);
    for (i, &(start, end)) in offsets.iter().enumerate() {
        let bad = |message: String| Refused::Row(row0 + i, message);
        if nulls.is_some_and(|b| b.is_null(i)) {
            out.resize(out.len() + d, 0.0);
            continue;
        }
        if end - start != d {
            return Err(bad(format!("a vector of {} elements where FLOAT[{d}] has {d}", end - start)));
        }
        let row = elems.get(start..end).ok_or_else(|| bad("a list's offsets are out of its values".into()))?;
        if let Some(cn) = &child_nulls {
            if (start..end).any(|k| cn.is_null(k)) {
                return Err(bad("a vector element is NULL".into()));
            }
        }
        zepto_storage::vector::check_finite(row).map_err(|e| bad(e.to_string()))?;
        out.extend_from_slice(row);
    }
    Ok(())
}

/// `(start, end)` of one list row from a pair of offsets.
fn bounds<T: Copy>(w: &[T], f: impl Fn(T) -> usize) -> (usize, usize) {
    match w {
        [a, b] => (f(*a), f(*b).max(f(*a))),
        _ => (0, 0),
    }
}
