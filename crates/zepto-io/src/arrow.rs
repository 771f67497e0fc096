//! Conversion between engine columns and Arrow arrays, shared by the Parquet files and the
//! Arrow IPC stream format (HTTP ingest and results).
//!
//! Reading ([`Acc`]) appends Arrow arrays of any compatible type to a target column: fixed-width
//! values are copied a buffer at a time, validity bitmaps are appended byte-wise (Arrow's layout
//! is ours), and a `SYMBOL` target interns each distinct string of an Arrow dictionary once.
//! Writing ([`to_arrow`]) maps each engine type to one Arrow type (see [`to_arrow`]).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::IoError;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, Decimal128Type, DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
    DurationSecondType, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, Int32Array, LargeStringArray, NullArray,
    PrimitiveArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, Field, TimeUnit};
use std::sync::Arc;
use zepto_storage::{Bitmap, Column, ColumnData, ColumnDef, DataType, Dict, StrVec, ValidRun};

use zepto_storage::time::NS_PER_DAY;

/// Which source field feeds each schema column: matched by name, an exact-case match winning
/// over a case-insensitive one. Errors if none matches (a wrong file or body, surely).
pub fn match_columns(fields: &[Arc<Field>], schema: &[ColumnDef], what: &str) -> Result<Vec<Option<usize>>, IoError> {
    let source: Vec<Option<usize>> = schema
        .iter()
        .map(|c| {
            fields
                .iter()
                .position(|f| f.name() == &c.name)
                .or_else(|| fields.iter().position(|f| f.name().eq_ignore_ascii_case(&c.name)))
        })
        .collect();
    if !schema.is_empty() && source.iter().all(Option::is_none) {
        let have: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
        let want: Vec<&str> = schema.iter().map(|c| c.name.as_str()).collect();
        return Err(IoError::Invalid(format!(
            "{what} has none of the columns {} (it has {})",
            want.join(", "),
            have.join(", ")
        )));
    }
    Ok(source)
}

/// Append one record batch to `accs` (one per schema column); `column(k)` is the batch's
/// array for source field `k`, `row0` the batch's first row (for errors).
pub fn append_batch(
    accs: &mut [Acc],
    schema: &[ColumnDef],
    source: &[Option<usize>],
    row0: usize,
    mut column: impl FnMut(usize) -> Result<ArrayRef, IoError>,
) -> Result<(), IoError> {
    for ((acc, c), s) in accs.iter_mut().zip(schema).zip(source) {
        if let Some(k) = *s {
            let arr = column(k)?;
            acc.append(arr.as_ref(), row0).map_err(|e| e.into_io(c, arr.data_type()))?;
        }
    }
    Ok(())
}

/// The finished columns: accumulated ones, and NULLs for schema columns with no source.
pub fn finish_columns(accs: Vec<Acc>, schema: &[ColumnDef], source: &[Option<usize>], rows: usize) -> Vec<Column> {
    accs.into_iter()
        .zip(source)
        .zip(schema)
        .map(|((acc, s), c)| if s.is_some() { acc.finish() } else { Column::nulls(c.data_type, rows) })
        .collect()
}

/// Why one array could not be appended.
#[derive(Debug)]
pub enum AppendError {
    /// The Arrow type cannot become the column's type.
    Type,
    /// A value does not fit; `row` is 0-based over the whole file.
    Value {
        /// The value's row.
        row: usize,
        /// What is wrong with it.
        message: String,
    },
}

impl AppendError {
    /// The error as an [`IoError`] naming column `c` and the Arrow type `dt` it came as.
    pub fn into_io(self, c: &ColumnDef, dt: &ArrowType) -> IoError {
        match self {
            AppendError::Type => IoError::Invalid(format!(
                "column '{}': cannot read Arrow type {dt} as {}",
                c.name,
                c.data_type.sql_name()
            )),
            AppendError::Value { row, message } => IoError::BadValue { row: row + 1, column: c.name.clone(), message },
        }
    }
}

/// One schema column being filled from successive record batches.
pub struct Acc {
    dt: DataType,
    data: ColumnData,
    /// `None` while every row so far is valid.
    validity: Option<Bitmap>,
    len: usize,
    /// SYMBOL: the dictionary being built, and the code of each value of the last Arrow
    /// dictionary seen (reused while batches share that dictionary).
    dict: Dict,
    remap: Option<(ArrayRef, Vec<u32>)>,
}

impl Acc {
    /// An empty accumulator for column `c`, with room for `capacity` rows.
    pub fn new(c: &ColumnDef, capacity: usize) -> Acc {
        Acc::with_dict(c, capacity, Dict::default())
    }

    fn with_dict(c: &ColumnDef, capacity: usize, dict: Dict) -> Acc {
        let data = ColumnData::with_capacity(c.data_type, capacity);
        Acc { dt: c.data_type, data, validity: None, len: 0, dict, remap: None }
    }

    /// [`Acc::new`], a SYMBOL column's strings coded against `dict` (a version of the target
    /// table's dictionary) when given instead of a dictionary of its own.
    pub fn new_in(c: &ColumnDef, capacity: usize, dict: Option<&Dict>) -> Acc {
        // A dictionary of its own is a store of its own (an index and locks): an Arrow append
        // of four columns made and dropped four per batch.
        Acc::with_dict(c, capacity, dict.cloned().unwrap_or_default())
    }

    /// Room for `rows` more rows, if the allocator grants it at once (a read that has decoded
    /// as many rows as it first made room for takes the file's word for the rest: one move of
    /// the column instead of one per doubling).
    pub fn try_reserve_rows(&mut self, rows: usize) -> bool {
        self.data.try_reserve_rows(rows)
    }

    /// Append all rows of `arr`; `row0` is the file row of its first element (for errors).
    pub fn append(&mut self, arr: &dyn Array, row0: usize) -> Result<(), AppendError> {
        let n = arr.len();
        let nulls = arr.logical_nulls().filter(|b| b.null_count() > 0);
        let nulls = nulls.as_ref();
        let start = self.data.len();
        if *arr.data_type() == ArrowType::Null {
            // An all-NULL column of any type fits any target.
            self.extend_zeros(n);
        } else {
            match &mut self.data {
                ColumnData::Bool(v) => match arr.as_boolean_opt() {
                    Some(a) => v.extend(a.values().iter()),
                    None => return Err(AppendError::Type),
                },
                ColumnData::Int32(v) => int32(arr, v.vec_mut(0), nulls, row0)?,
                ColumnData::Int64(v) => int64(arr, v.vec_mut(0), nulls, row0)?,
                ColumnData::Int128(v) => int128(arr, v.vec_mut(0))?,
                ColumnData::Float32(v) => float32(arr, v.vec_mut(0))?,
                ColumnData::Float64(v) => float64(arr, v.vec_mut(0))?,
                ColumnData::Timestamp(v) => timestamp(arr, v.vec_mut(0), nulls, row0)?,
                ColumnData::Date(v) => match arr.data_type() {
                    ArrowType::Date32 => {
                        v.extend_from_slice(arr.as_primitive::<arrow_array::types::Date32Type>().values())
                    }
                    ArrowType::Date64 => {
                        let a = arr.as_primitive::<arrow_array::types::Date64Type>().values();
                        convert(a, v.vec_mut(0), nulls, row0, |ms| i32::try_from(ms.div_euclid(86_400_000)).ok())?
                    }
                    _ => return Err(AppendError::Type),
                },
                ColumnData::Interval(v) => interval(arr, v.vec_mut(0), nulls, row0)?,
                ColumnData::Varchar(s) => varchar(arr, s, nulls, row0)?,
                ColumnData::Symbol { codes, .. } => match arr.data_type() {
                    ArrowType::Dictionary(..) => {
                        let remap = &mut self.remap;
                        dictionary_symbols(arr, codes.vec_mut(0), nulls, &mut self.dict, remap, row0)?
                    }
                    _ => plain_symbols(arr, codes.vec_mut(0), &mut self.dict)?,
                },
                ColumnData::Vector { dim, values } => {
                    crate::arrow_vector::append(arr, *dim, values.vec_mut(0), nulls, row0).map_err(|e| match e {
                        crate::arrow_vector::Refused::Type => AppendError::Type,
                        crate::arrow_vector::Refused::Row(row, message) => AppendError::Value { row, message },
                    })?
                }
                ColumnData::Null(k) => *k += n,
            }
            zero_nulls(&mut self.data, start, nulls);
        }
        if self.dt != DataType::Null {
            match (nulls, &mut self.validity) {
                (Some(b), valid) => {
                    let bits = valid.get_or_insert_with(|| Bitmap::new_set(self.len));
                    bits.append_bits(b.inner().values(), b.inner().offset(), n);
                }
                (None, Some(bits)) => bits.extend_set(n),
                (None, None) => {}
            }
        }
        self.len += n;
        debug_assert_eq!(self.data.len(), self.len);
        Ok(())
    }

    fn extend_zeros(&mut self, n: usize) {
        match &mut self.data {
            ColumnData::Bool(v) => v.resize(v.len() + n, false),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.resize(v.len() + n, 0),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.resize(v.len() + n, 0),
            ColumnData::Int128(v) => v.resize(v.len() + n, 0),
            ColumnData::Float32(v) => v.resize(v.len() + n, 0.0),
            ColumnData::Float64(v) => v.resize(v.len() + n, 0.0),
            ColumnData::Varchar(s) => (0..n).for_each(|_| s.push("")),
            ColumnData::Symbol { codes, .. } => codes.resize(codes.len() + n, 0),
            ColumnData::Vector { dim, values } => values.resize(values.len() + n * *dim as usize, 0.0),
            ColumnData::Null(k) => *k += n,
        }
    }

    /// Hand the rows appended so far to `f`, then forget them, keeping their room and the
    /// dictionary (later rows' codes go on indexing it): a column split as it is decoded
    /// holds one batch at a time.
    pub fn drain(&mut self, f: impl FnOnce(&ColumnData, Option<&Bitmap>)) {
        f(&self.data, self.validity.as_ref());
        self.data.clear();
        self.validity = None;
        self.len = 0;
    }

    /// The column appended so far.
    pub fn finish(self) -> Column {
        let mut data = self.data;
        if let ColumnData::Symbol { dict, .. } = &mut data {
            *dict = Arc::new(self.dict);
        }
        Column::new(data, self.validity)
    }
}

/// Set the NULL slots appended since `start` to the type's zero value (the engine's invariant;
/// Parquet decoding can leave stale values there).
fn zero_nulls(data: &mut ColumnData, start: usize, nulls: Option<&NullBuffer>) {
    fn z<T: Copy>(v: &mut [T], start: usize, nulls: &NullBuffer, zero: T) {
        for (slot, valid) in v.iter_mut().skip(start).zip(nulls.iter()) {
            if !valid {
                *slot = zero;
            }
        }
    }
    let Some(nulls) = nulls else { return };
    match data {
        ColumnData::Bool(v) => z(v, start, nulls, false),
        ColumnData::Int32(v) | ColumnData::Date(v) => z(v, start, nulls, 0),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => z(v, start, nulls, 0),
        ColumnData::Int128(v) => z(v, start, nulls, 0),
        ColumnData::Float32(v) => z(v, start, nulls, 0.0),
        ColumnData::Float64(v) => z(v, start, nulls, 0.0),
        ColumnData::Symbol { codes, .. } => z(codes, start, nulls, 0),
        // Strings are pushed as "" for NULL rows already, vectors as zeros.
        ColumnData::Varchar(_) | ColumnData::Vector { .. } | ColumnData::Null(_) => {}
    }
}

/// Convert valid values with `f` (`None` = out of range); NULL slots become zero.
fn convert<T: Copy, U: Default>(
    src: &[T],
    out: &mut Vec<U>,
    nulls: Option<&NullBuffer>,
    row0: usize,
    f: impl Fn(T) -> Option<U>,
) -> Result<(), AppendError> {
    out.reserve(src.len());
    let bad = |i: usize| AppendError::Value { row: row0 + i, message: "value out of range for the column type".into() };
    match nulls {
        None => {
            for (i, &x) in src.iter().enumerate() {
                out.push(f(x).ok_or_else(|| bad(i))?);
            }
        }
        Some(nulls) => {
            for (i, (&x, valid)) in src.iter().zip(nulls.iter()).enumerate() {
                out.push(if valid { f(x).ok_or_else(|| bad(i))? } else { U::default() });
            }
        }
    }
    Ok(())
}

/// `arr`'s values as a column of type `dt` stores them, borrowed as they lie, when appending
/// it would copy them unchanged: no NULLs, the same width and meaning (timestamps in ns).
pub(crate) fn plain_values(arr: &dyn Array, dt: DataType) -> Option<ValidRun<'_>> {
    use arrow_array::types::{Date32Type, Float32Type, Float64Type};
    if arr.logical_null_count() > 0 {
        return None;
    }
    Some(match (dt, arr.data_type()) {
        (DataType::Int64, ArrowType::Int64) => ValidRun::I64(values::<Int64Type>(arr)),
        (DataType::Timestamp, ArrowType::Timestamp(TimeUnit::Nanosecond, _)) => {
            ValidRun::I64(values::<TimestampNanosecondType>(arr))
        }
        (DataType::Int32, ArrowType::Int32) => ValidRun::I32(values::<Int32Type>(arr)),
        (DataType::Date, ArrowType::Date32) => ValidRun::I32(values::<Date32Type>(arr)),
        (DataType::Float64, ArrowType::Float64) => ValidRun::F64(values::<Float64Type>(arr)),
        (DataType::Float32, ArrowType::Float32) => ValidRun::F32(values::<Float32Type>(arr)),
        _ => return None,
    })
}

fn values<T: ArrowPrimitiveType>(arr: &dyn Array) -> &[T::Native] {
    arr.as_primitive::<T>().values()
}

fn int32(arr: &dyn Array, v: &mut Vec<i32>, nulls: Option<&NullBuffer>, row0: usize) -> Result<(), AppendError> {
    match arr.data_type() {
        ArrowType::Int32 => v.extend_from_slice(values::<Int32Type>(arr)),
        ArrowType::Int8 => v.extend(values::<Int8Type>(arr).iter().map(|&x| i32::from(x))),
        ArrowType::Int16 => v.extend(values::<Int16Type>(arr).iter().map(|&x| i32::from(x))),
        ArrowType::UInt8 => v.extend(values::<UInt8Type>(arr).iter().map(|&x| i32::from(x))),
        ArrowType::UInt16 => v.extend(values::<UInt16Type>(arr).iter().map(|&x| i32::from(x))),
        ArrowType::Int64 => convert(values::<Int64Type>(arr), v, nulls, row0, |x| i32::try_from(x).ok())?,
        ArrowType::UInt32 => convert(values::<UInt32Type>(arr), v, nulls, row0, |x| i32::try_from(x).ok())?,
        ArrowType::UInt64 => convert(values::<UInt64Type>(arr), v, nulls, row0, |x| i32::try_from(x).ok())?,
        _ => return Err(AppendError::Type),
    }
    Ok(())
}

fn int64(arr: &dyn Array, v: &mut Vec<i64>, nulls: Option<&NullBuffer>, row0: usize) -> Result<(), AppendError> {
    match arr.data_type() {
        ArrowType::Int64 => v.extend_from_slice(values::<Int64Type>(arr)),
        ArrowType::Int8 => v.extend(values::<Int8Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::Int16 => v.extend(values::<Int16Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::Int32 => v.extend(values::<Int32Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::UInt8 => v.extend(values::<UInt8Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::UInt16 => v.extend(values::<UInt16Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::UInt32 => v.extend(values::<UInt32Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::UInt64 => convert(values::<UInt64Type>(arr), v, nulls, row0, |x| i64::try_from(x).ok())?,
        _ => return Err(AppendError::Type),
    }
    Ok(())
}

/// HUGEINT from Arrow `Decimal128` of scale 0 (how it leaves) or any integer type.
fn int128(arr: &dyn Array, v: &mut Vec<i128>) -> Result<(), AppendError> {
    match arr.data_type() {
        ArrowType::Decimal128(_, 0) => v.extend_from_slice(values::<Decimal128Type>(arr)),
        ArrowType::Int64 => v.extend(values::<Int64Type>(arr).iter().map(|&x| i128::from(x))),
        ArrowType::Int32 => v.extend(values::<Int32Type>(arr).iter().map(|&x| i128::from(x))),
        ArrowType::Int16 => v.extend(values::<Int16Type>(arr).iter().map(|&x| i128::from(x))),
        ArrowType::Int8 => v.extend(values::<Int8Type>(arr).iter().map(|&x| i128::from(x))),
        ArrowType::UInt64 => v.extend(values::<UInt64Type>(arr).iter().map(|&x| i128::from(x))),
        _ => return Err(AppendError::Type),
    }
    Ok(())
}

fn float64(arr: &dyn Array, v: &mut Vec<f64>) -> Result<(), AppendError> {
    match arr.data_type() {
        ArrowType::Float64 => v.extend_from_slice(values::<arrow_array::types::Float64Type>(arr)),
        ArrowType::Float32 => v.extend(values::<arrow_array::types::Float32Type>(arr).iter().map(|&x| f64::from(x))),
        ArrowType::Int8 => v.extend(values::<Int8Type>(arr).iter().map(|&x| f64::from(x))),
        ArrowType::Int16 => v.extend(values::<Int16Type>(arr).iter().map(|&x| f64::from(x))),
        ArrowType::Int32 => v.extend(values::<Int32Type>(arr).iter().map(|&x| f64::from(x))),
        ArrowType::Int64 => v.extend(values::<Int64Type>(arr).iter().map(|&x| x as f64)),
        ArrowType::UInt8 => v.extend(values::<UInt8Type>(arr).iter().map(|&x| f64::from(x))),
        ArrowType::UInt16 => v.extend(values::<UInt16Type>(arr).iter().map(|&x| f64::from(x))),
        ArrowType::UInt32 => v.extend(values::<UInt32Type>(arr).iter().map(|&x| f64::from(x))),
        ArrowType::UInt64 => v.extend(values::<UInt64Type>(arr).iter().map(|&x| x as f64)),
        _ => return Err(AppendError::Type),
    }
    Ok(())
}

fn float32(arr: &dyn Array, v: &mut Vec<f32>) -> Result<(), AppendError> {
    match arr.data_type() {
        ArrowType::Float32 => v.extend_from_slice(values::<arrow_array::types::Float32Type>(arr)),
        ArrowType::Float64 => v.extend(values::<arrow_array::types::Float64Type>(arr).iter().map(|&x| x as f32)),
        ArrowType::Int8 => v.extend(values::<Int8Type>(arr).iter().map(|&x| f32::from(x))),
        ArrowType::Int16 => v.extend(values::<Int16Type>(arr).iter().map(|&x| f32::from(x))),
        ArrowType::Int32 => v.extend(values::<Int32Type>(arr).iter().map(|&x| x as f32)),
        ArrowType::Int64 => v.extend(values::<Int64Type>(arr).iter().map(|&x| x as f32)),
        ArrowType::UInt8 => v.extend(values::<UInt8Type>(arr).iter().map(|&x| f32::from(x))),
        ArrowType::UInt16 => v.extend(values::<UInt16Type>(arr).iter().map(|&x| f32::from(x))),
        ArrowType::UInt32 => v.extend(values::<UInt32Type>(arr).iter().map(|&x| x as f32)),
        ArrowType::UInt64 => v.extend(values::<UInt64Type>(arr).iter().map(|&x| x as f32)),
        _ => return Err(AppendError::Type),
    }
    Ok(())
}

/// Multiply by `k` (a unit conversion to nanoseconds), copying outright when `k` is 1. The
/// largest and smallest-but-one values of any unit are the infinite timestamps (DuckDB writes
/// `'infinity'` as `i64::MAX` microseconds).
fn scale(src: &[i64], v: &mut Vec<i64>, k: i64, nulls: Option<&NullBuffer>, row0: usize) -> Result<(), AppendError> {
    use zepto_storage::time::{TS_INFINITY, TS_NEG_INFINITY};
    if k == 1 {
        v.extend_from_slice(src);
        Ok(())
    } else {
        convert(src, v, nulls, row0, |x| match x {
            TS_INFINITY | TS_NEG_INFINITY => Some(x),
            _ => x.checked_mul(k),
        })
    }
}

fn nanos_per(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000_000,
        TimeUnit::Millisecond => 1_000_000,
        TimeUnit::Microsecond => 1_000,
        TimeUnit::Nanosecond => 1,
    }
}

fn timestamp(arr: &dyn Array, v: &mut Vec<i64>, nulls: Option<&NullBuffer>, row0: usize) -> Result<(), AppendError> {
    match arr.data_type() {
        // Zoned and naive timestamps alike: the stored value is the same i64.
        ArrowType::Timestamp(unit, _) => {
            let src = match unit {
                TimeUnit::Second => values::<TimestampSecondType>(arr),
                TimeUnit::Millisecond => values::<TimestampMillisecondType>(arr),
                TimeUnit::Microsecond => values::<TimestampMicrosecondType>(arr),
                TimeUnit::Nanosecond => values::<TimestampNanosecondType>(arr),
            };
            scale(src, v, nanos_per(unit), nulls, row0)
        }
        ArrowType::Date32 => {
            let src = arr.as_primitive::<arrow_array::types::Date32Type>().values();
            convert(src, v, nulls, row0, |d| i64::from(d).checked_mul(NS_PER_DAY))
        }
        ArrowType::Date64 => {
            let src = arr.as_primitive::<arrow_array::types::Date64Type>().values();
            convert(src, v, nulls, row0, |ms| ms.checked_mul(1_000_000))
        }
        _ => Err(AppendError::Type),
    }
}

fn interval(arr: &dyn Array, v: &mut Vec<i64>, nulls: Option<&NullBuffer>, row0: usize) -> Result<(), AppendError> {
    match arr.data_type() {
        // What `write_parquet` writes for INTERVAL: nanoseconds (narrower in the log's
        // batches, `crate::narrow`).
        ArrowType::Int64 => v.extend_from_slice(values::<Int64Type>(arr)),
        ArrowType::Int32 => v.extend(values::<Int32Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::Int16 => v.extend(values::<Int16Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::Int8 => v.extend(values::<Int8Type>(arr).iter().map(|&x| i64::from(x))),
        ArrowType::Duration(unit) => {
            let src = match unit {
                TimeUnit::Second => values::<DurationSecondType>(arr),
                TimeUnit::Millisecond => values::<DurationMillisecondType>(arr),
                TimeUnit::Microsecond => values::<DurationMicrosecondType>(arr),
                TimeUnit::Nanosecond => values::<DurationNanosecondType>(arr),
            };
            scale(src, v, nanos_per(unit), nulls, row0)?
        }
        _ => return Err(AppendError::Type),
    }
    Ok(())
}

/// Call `f(i, s)` for every slot of a string array (NULL slots included, with whatever string
/// they hold). `false` if `arr` is not a string array.
fn for_each_str<'a>(arr: &'a dyn Array, mut f: impl FnMut(usize, &'a str)) -> bool {
    match arr.data_type() {
        ArrowType::Utf8 => arr.as_string::<i32>().iter().enumerate().for_each(|(i, s)| f(i, s.unwrap_or(""))),
        ArrowType::LargeUtf8 => arr.as_string::<i64>().iter().enumerate().for_each(|(i, s)| f(i, s.unwrap_or(""))),
        ArrowType::Utf8View => arr.as_string_view().iter().enumerate().for_each(|(i, s)| f(i, s.unwrap_or(""))),
        _ => return false,
    }
    true
}

/// A dictionary array's keys, typed as they come.
enum Keys<'a> {
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
}

/// `$body` with `$it` bound to an iterator of the keys as `usize`s (a negative key becomes a
/// huge one, i.e. out of range), compiled once per key type.
macro_rules! with_keys {
    ($keys:expr, |$it:ident| $body:expr) => {
        match $keys {
            Keys::I8(k) => with_keys!(@cast k, $it, $body),
            Keys::I16(k) => with_keys!(@cast k, $it, $body),
            Keys::I32(k) => with_keys!(@cast k, $it, $body),
            Keys::I64(k) => with_keys!(@cast k, $it, $body),
            Keys::U8(k) => with_keys!(@cast k, $it, $body),
            Keys::U16(k) => with_keys!(@cast k, $it, $body),
            Keys::U32(k) => with_keys!(@cast k, $it, $body),
            Keys::U64(k) => {
                let $it = k.iter().map(|&x| usize::try_from(x).unwrap_or(usize::MAX));
                $body
            }
        }
    };
    (@cast $k:ident, $it:ident, $body:expr) => {{
        let $it = $k.iter().map(|&x| x as usize);
        $body
    }};
}

/// The keys of a dictionary array (`None` for any other array).
fn dict_keys(arr: &dyn Array) -> Option<Keys<'_>> {
    fn k<K: ArrowDictionaryKeyType>(arr: &dyn Array) -> &[K::Native] {
        arr.as_dictionary::<K>().keys().values()
    }
    Some(match arr.data_type() {
        ArrowType::Dictionary(key, _) => match key.as_ref() {
            ArrowType::Int8 => Keys::I8(k::<Int8Type>(arr)),
            ArrowType::Int16 => Keys::I16(k::<Int16Type>(arr)),
            ArrowType::Int32 => Keys::I32(k::<Int32Type>(arr)),
            ArrowType::Int64 => Keys::I64(k::<Int64Type>(arr)),
            ArrowType::UInt8 => Keys::U8(k::<UInt8Type>(arr)),
            ArrowType::UInt16 => Keys::U16(k::<UInt16Type>(arr)),
            ArrowType::UInt32 => Keys::U32(k::<UInt32Type>(arr)),
            ArrowType::UInt64 => Keys::U64(k::<UInt64Type>(arr)),
            _ => return None,
        },
        _ => return None,
    })
}

/// The strings of a dictionary's values array, in order (NULL values as "").
fn value_strs(values: &dyn Array) -> Vec<&str> {
    let mut strs = Vec::with_capacity(values.len());
    for_each_str(values, |_, x| strs.push(x));
    strs
}

fn is_string(dt: &ArrowType) -> bool {
    matches!(dt, ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View)
}

fn varchar(arr: &dyn Array, s: &mut StrVec, nulls: Option<&NullBuffer>, row0: usize) -> Result<(), AppendError> {
    let valid = |i: usize| nulls.is_none_or(|b| b.is_valid(i));
    if let ArrowType::Dictionary(_, vt) = arr.data_type() {
        if !is_string(vt) {
            return Err(AppendError::Type);
        }
        let strs = value_strs(arr.as_any_dictionary().values().as_ref());
        let keys = dict_keys(arr).ok_or(AppendError::Type)?;
        with_keys!(keys, |it| {
            for (i, k) in it.enumerate() {
                let v = if valid(i) { strs.get(k).copied().ok_or_else(|| bad_key(row0 + i, strs.len()))? } else { "" };
                s.push(v);
            }
        });
        return Ok(());
    }
    if for_each_str(arr, |i, x| s.push(if valid(i) { x } else { "" })) {
        Ok(())
    } else {
        Err(AppendError::Type)
    }
}

/// A dictionary value no valid row has used yet ([`symbol`]'s map).
const UNSET_CODE: u32 = u32::MAX;

/// A row's code while its key is past the dictionary's values: an error unless the row is
/// NULL (a NULL row's key may be anything, Arrow says). Below [`UNSET_CODE`], so that one
/// look for codes at or above it finds both.
const BAD_KEY: u32 = u32::MAX - 1;

/// The error for row `row`, whose dictionary key is not below `values` (negative, or past the
/// end): refused, not read as some other value.
fn bad_key(row: usize, values: usize) -> AppendError {
    AppendError::Value { row, message: format!("dictionary key out of range (the dictionary has {values} values)") }
}

/// The codes of a dictionary array of strings' rows, appended to `codes`. Each dictionary
/// value is interned once, when a valid row first uses it (batches of one column chunk share
/// the dictionary, and `remap` its codes): a value no row uses (a sliced or filtered table's, a
/// categorical's declared categories) never reaches the table's dictionary.
fn dictionary_symbols(
    arr: &dyn Array,
    codes: &mut Vec<u32>,
    nulls: Option<&NullBuffer>,
    dict: &mut Dict,
    remap: &mut Option<(ArrayRef, Vec<u32>)>,
    row0: usize,
) -> Result<(), AppendError> {
    match arr.data_type() {
        ArrowType::Dictionary(_, vt) if is_string(vt) => {}
        _ => return Err(AppendError::Type),
    }
    let values = arr.as_any_dictionary().values();
    let keys = dict_keys(arr).ok_or(AppendError::Type)?;
    let same = remap.as_ref().is_some_and(|(v, _)| std::ptr::addr_eq(Arc::as_ptr(v), Arc::as_ptr(values)));
    if !same {
        *remap = Some((values.clone(), vec![UNSET_CODE; values.len()]));
    }
    let map = remap.as_mut().map(|(_, m)| m).ok_or(AppendError::Type)?;
    // Each row's code gathered from the map (unset where no row used its value yet,
    // `BAD_KEY` for a key out of range), NULL rows zeroed, then a valid row's bad key refused
    // and the unset ones interned in row order.
    let start = codes.len();
    with_keys!(keys, |it| codes.extend(it.map(|k| map.get(k).copied().unwrap_or(BAD_KEY))));
    let new = codes.get_mut(start..).unwrap_or_default();
    if let Some(n) = nulls {
        n.iter().zip(new.iter_mut()).filter(|(valid, _)| !valid).for_each(|(_, c)| *c = 0);
    }
    if !new.iter().any(|&c| c >= BAD_KEY) {
        return Ok(());
    }
    if let Some(i) = new.iter().position(|&c| c == BAD_KEY) {
        return Err(bad_key(row0 + i, values.len()));
    }
    // The dictionary's strings, read once.
    let strs = value_strs(values.as_ref());
    with_keys!(keys, |it| {
        for (c, k) in new.iter_mut().zip(it).filter(|(c, _)| **c == UNSET_CODE) {
            let m = map.get_mut(k).ok_or(AppendError::Type)?;
            if *m == UNSET_CODE {
                *m = dict.intern(strs.get(k).copied().unwrap_or(""));
            }
            *c = *m;
        }
    });
    Ok(())
}

/// The codes of a string array's rows, appended to `codes`.
fn plain_symbols(arr: &dyn Array, codes: &mut Vec<u32>, dict: &mut Dict) -> Result<(), AppendError> {
    // The whole column in one batch: the dictionary's index is read once, not once per row.
    // The array's own iterator gives NULL rows as `None` (a string array's nulls are its
    // logical ones).
    let new = match arr.data_type() {
        ArrowType::Utf8 => dict.intern_many(arr.as_string::<i32>().iter()),
        ArrowType::LargeUtf8 => dict.intern_many(arr.as_string::<i64>().iter()),
        ArrowType::Utf8View => dict.intern_many(arr.as_string_view().iter()),
        _ => return Err(AppendError::Type),
    };
    if codes.is_empty() {
        *codes = new;
    } else {
        codes.extend(new);
    }
    Ok(())
}

/// `c`'s validity as Arrow's NULL buffer (`None`: no NULLs).
pub(crate) fn null_buffer(c: &Column) -> Option<NullBuffer> {
    let v = c.validity()?;
    let bits = BooleanBuffer::new(Buffer::from_slice_ref(v.as_bytes()), 0, v.len());
    Some(NullBuffer::new(bits))
}

/// One column as an Arrow array. Types: TIMESTAMP → `Timestamp(Nanosecond)` (no time zone),
/// DATE → `Date32`, SYMBOL → `Dictionary(Int32, Utf8)`, VARCHAR → `LargeUtf8`, HUGEINT →
/// `Decimal128(38, 0)`, INTERVAL →
/// `Int64` nanoseconds, `FLOAT[n]` → `FixedSizeList<Float32, n>`, untyped NULL → Arrow `Null`.
pub fn to_arrow(c: &Column, rows: usize) -> Result<ArrayRef, String> {
    let nulls = null_buffer(c);
    let e = |e: arrow_schema::ArrowError| e.to_string();
    fn prim<T: ArrowPrimitiveType>(v: &[T::Native], nulls: Option<NullBuffer>) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v.to_vec()), nulls))
    }
    Ok(match &c.data() {
        ColumnData::Bool(v) => Arc::new(BooleanArray::new(BooleanBuffer::from(v.as_slice()), nulls)),
        ColumnData::Int32(v) => prim::<Int32Type>(v, nulls),
        ColumnData::Int64(v) => prim::<Int64Type>(v, nulls),
        ColumnData::Int128(v) => Arc::new(
            PrimitiveArray::<Decimal128Type>::new(ScalarBuffer::from(v.to_vec()), nulls)
                .with_precision_and_scale(38, 0)
                .map_err(e)?,
        ),
        ColumnData::Float32(v) => prim::<arrow_array::types::Float32Type>(v, nulls),
        ColumnData::Float64(v) => prim::<arrow_array::types::Float64Type>(v, nulls),
        ColumnData::Timestamp(v) => prim::<TimestampNanosecondType>(v, nulls),
        ColumnData::Date(v) => prim::<arrow_array::types::Date32Type>(v, nulls),
        ColumnData::Interval(v) => prim::<Int64Type>(v, nulls),
        ColumnData::Varchar(s) => {
            // StrVec is LargeUtf8's layout: copy both buffers as they are.
            let offsets = OffsetBuffer::new(ScalarBuffer::from(s.offsets().to_vec()));
            Arc::new(LargeStringArray::try_new(offsets, Buffer::from_slice_ref(s.bytes()), nulls).map_err(e)?)
        }
        ColumnData::Symbol { codes, dict } => {
            let values = crate::export::dict_values(dict)?;
            // Codes below dict.len() <= i32::MAX (`dict_values` checked), so the casts are exact.
            let keys = Int32Array::new(codes.iter().map(|&k| k as i32).collect(), nulls);
            Arc::new(DictionaryArray::try_new(keys, values).map_err(e)?)
        }
        ColumnData::Vector { dim, values } => crate::arrow_vector::to_arrow(*dim, values, nulls)?,
        ColumnData::Null(_) => Arc::new(NullArray::new(rows)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::{Int16Type, Int8Type, UInt32Type};
    use arrow_array::{PrimitiveArray, StringArray};
    use zepto_storage::rng::XorShift;
    use zepto_storage::Value;

    /// A dictionary array of `keys` (NULL where `None`) into `values`, keyed by `K`.
    fn dict_array<K: ArrowDictionaryKeyType>(keys: &[Option<usize>], values: &ArrayRef) -> ArrayRef
    where
        K::Native: TryFrom<usize>,
    {
        let keys: PrimitiveArray<K> = keys.iter().map(|k| k.and_then(|k| K::Native::try_from(k).ok())).collect();
        Arc::new(DictionaryArray::<K>::try_new(keys, values.clone()).expect("keys in range"))
    }

    /// A dictionary array whose keys may be past its values (as a producer that skipped
    /// Arrow's checks hands over through the C interface).
    fn unchecked_dict(keys: Vec<Option<i8>>, values: &[&str]) -> ArrayRef {
        let values: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
        let keys: PrimitiveArray<Int8Type> = keys.into_iter().collect();
        // SAFETY: only Acc::append reads this array, and it must not trust the keys: that is
        // what the test checks.
        #[allow(unsafe_code)]
        let arr = unsafe { DictionaryArray::<Int8Type>::new_unchecked(keys, values) };
        Arc::new(arr)
    }

    /// A valid row whose key is negative or past the dictionary is refused, naming the row
    /// (counted from the batch's first row in the file), for SYMBOL and VARCHAR alike; a NULL
    /// row's key is not looked at.
    #[test]
    fn dictionary_keys_out_of_range_are_refused_with_their_row() {
        for dt in [DataType::Symbol, DataType::Varchar] {
            let def = ColumnDef { name: "s".into(), data_type: dt };
            let ok = unchecked_dict(vec![Some(0), None, Some(1)], &["a", "b"]);
            let mut acc = Acc::new(&def, 0);
            acc.append(ok.as_ref(), 0).expect("keys in range");
            for bad in [2, 100, -1] {
                let arr = unchecked_dict(vec![Some(1), Some(0), Some(bad), Some(0)], &["a", "b"]);
                match Acc::new(&def, 0).append(arr.as_ref(), 40) {
                    Err(AppendError::Value { row, message }) => {
                        assert_eq!(row, 42, "{dt:?} key {bad}");
                        assert!(message.contains("dictionary key out of range"), "{message}");
                    }
                    other => panic!("{dt:?} key {bad}: {:?}", other.map(|_| ())),
                }
            }
            // A NULL row's key may be anything.
            let keys: PrimitiveArray<Int8Type> = vec![Some(1), Some(7), Some(0)].into_iter().collect();
            let nulls = arrow_buffer::NullBuffer::from(vec![true, false, true]);
            let keys = PrimitiveArray::<Int8Type>::new(keys.values().clone(), Some(nulls));
            let values: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
            #[allow(unsafe_code)]
            // SAFETY: as in `unchecked_dict`.
            let arr = unsafe { DictionaryArray::<Int8Type>::new_unchecked(keys, values) };
            let mut acc = Acc::new(&def, 0);
            acc.append(&arr, 0).expect("a NULL row's key is not read");
            let col = acc.finish();
            let got: Vec<Value> = (0..col.len()).map(|i| col.get(i)).collect();
            assert_eq!(got, vec![Value::Str("b".into()), Value::Null, Value::Str("a".into())], "{dt:?}");
        }
    }

    /// Dictionary batches (of three key types, some sharing one dictionary, some with a new
    /// one, with NULL rows and values no row uses) append as SYMBOL the strings of their rows,
    /// each string interned when a valid row first uses it, in row order: no unused value
    /// reaches the dictionary.
    #[test]
    fn dictionary_batches_intern_the_strings_their_rows_use_in_row_order() {
        let mut r = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let def = ColumnDef { name: "s".into(), data_type: DataType::Symbol };
        for round in 0..30 {
            let mut acc = Acc::new(&def, 0);
            let mut want: Vec<Option<String>> = Vec::new();
            let mut values: ArrayRef = Arc::new(StringArray::from(vec!["unused"]));
            for batch in 0..6 {
                if batch == 0 || r.below(3) == 0 {
                    let n = 1 + r.below(40) as usize;
                    let strs: Vec<String> = (0..n).map(|i| format!("v{}_{}", r.below(30), i % 3)).collect();
                    values = Arc::new(StringArray::from(strs));
                }
                let rows = r.below(300) as usize;
                let keys: Vec<Option<usize>> =
                    (0..rows).map(|_| (r.below(5) != 0).then(|| r.below(values.len() as u64) as usize)).collect();
                let strs = values.as_string::<i32>();
                want.extend(keys.iter().map(|k| k.map(|k| strs.value(k).to_string())));
                let arr = match batch % 3 {
                    0 => dict_array::<Int8Type>(&keys, &values),
                    1 => dict_array::<Int16Type>(&keys, &values),
                    _ => dict_array::<UInt32Type>(&keys, &values),
                };
                acc.append(arr.as_ref(), 0).expect("a dictionary of strings appends as SYMBOL");
            }
            let col = acc.finish();
            let got: Vec<Option<String>> = (0..col.len())
                .map(|i| match col.get(i) {
                    Value::Str(s) => Some(s.to_string()),
                    Value::Null => None,
                    v => panic!("round {round}: {v:?} in a SYMBOL column"),
                })
                .collect();
            assert_eq!(got, want, "round {round}");
            let ColumnData::Symbol { dict, codes } = col.data() else { panic!("a SYMBOL column") };
            let mut first_use: Vec<&str> = Vec::new();
            for s in want.iter().flatten() {
                if !first_use.contains(&s.as_str()) {
                    first_use.push(s);
                }
            }
            assert_eq!(dict.iter().collect::<Vec<_>>(), first_use, "round {round}: interned in row order");
            assert!(
                want.iter().zip(codes).all(|(w, &c)| w.is_some() || c == 0),
                "round {round}: NULL rows hold code 0"
            );
        }
    }
}
