//! Parquet reading into typed columns and writing from them, through Arrow record batches.
//!
//! Reading matches file columns to a target schema by name (case-insensitive) and converts
//! each Arrow type to the schema's type: fixed-width values are copied a buffer at a time,
//! validity bitmaps are appended byte-wise (Arrow's layout is ours), and a `SYMBOL` target is
//! read as an Arrow dictionary so each distinct string is interned once, not once per row.
//!
//! Writing produces one zstd-compressed file, written to `<path>.tmp` and renamed into place.

use crate::IoError;
use ::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use ::parquet::arrow::{ArrowWriter, ProjectionMask};
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::properties::WriterProperties;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType,
    DurationSecondType, Int16Type, Int32Type, Int64Type, Int8Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, Int32Array, LargeStringArray, NullArray,
    PrimitiveArray, RecordBatch, StringArray,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType as ArrowType, Field, Schema, TimeUnit};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zepto_storage::{Bitmap, Column, ColumnData, ColumnDef, DataType, Dict, StrVec};

/// Rows per Arrow batch while reading. Small enough that the decoder's buffers stay in cache
/// and get reused instead of a second copy of the whole file being faulted in (1M-row batches
/// loaded the 1M-row benchmark file about 1.5-2x slower).
const BATCH_ROWS: usize = 1 << 16;

const NANOS_PER_DAY: i64 = 86_400_000_000_000;

fn file_err(path: &Path, e: impl std::fmt::Display) -> IoError {
    IoError::File { path: path.display().to_string(), message: e.to_string() }
}

/// Read a Parquet file into columns in `schema` order.
///
/// Columns are matched by name, case-insensitively; schema columns the file lacks read as
/// NULL, file columns the schema lacks are skipped (not even decoded). It is an error if the
/// file has none of the schema's columns, or a column whose type cannot become the schema's.
pub fn read_parquet(path: &Path, schema: &[ColumnDef]) -> Result<Vec<Column>, IoError> {
    read_batched(path, schema, BATCH_ROWS)
}

fn read_batched(path: &Path, schema: &[ColumnDef], batch_rows: usize) -> Result<Vec<Column>, IoError> {
    let file = File::open(path).map_err(|e| file_err(path, e))?;
    let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| file_err(path, e))?;
    let fields = meta.schema().fields().clone();

    // Which file column feeds each schema column (an exact-case match wins over others).
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
            "Parquet file has none of the columns {} (it has {})",
            want.join(", "),
            have.join(", ")
        )));
    }

    // Ask for dictionary arrays where a SYMBOL column reads a string column: Parquet string
    // columns are usually dictionary-encoded, and the reader then hands the dictionary over
    // as it is instead of expanding it to one string per row.
    let mut hinted: Vec<Field> = fields.iter().map(|f| f.as_ref().clone()).collect();
    let mut any_hint = false;
    for (c, s) in schema.iter().zip(&source) {
        if let (DataType::Symbol, Some(k)) = (c.data_type, *s) {
            let f = &mut hinted[k];
            let values = match f.data_type() {
                ArrowType::Utf8 | ArrowType::Utf8View => Some(ArrowType::Utf8),
                ArrowType::LargeUtf8 => Some(ArrowType::LargeUtf8),
                _ => None,
            };
            if let Some(values) = values {
                let dt = ArrowType::Dictionary(Box::new(ArrowType::Int32), Box::new(values));
                *f = f.clone().with_data_type(dt);
                any_hint = true;
            }
        }
    }
    let meta = if any_hint {
        let hint = Arc::new(Schema::new_with_metadata(hinted, meta.schema().metadata().clone()));
        // A hint the reader rejects only costs speed: fall back to plain strings.
        ArrowReaderMetadata::try_new(meta.metadata().clone(), ArrowReaderOptions::new().with_schema(hint))
            .unwrap_or(meta)
    } else {
        meta
    };

    // Validate every conversion before decoding anything.
    let mut accs: Vec<Acc> = schema.iter().map(|c| Acc::new(c, 0)).collect();
    for ((acc, c), s) in accs.iter_mut().zip(schema).zip(&source) {
        if let Some(k) = *s {
            let dt = meta.schema().field(k).data_type();
            acc.append(&arrow_array::new_empty_array(dt), 0).map_err(|e| e.into_io(c, dt))?;
        }
    }

    let total = usize::try_from(meta.metadata().file_metadata().num_rows()).unwrap_or(0);
    let mut roots: Vec<usize> = source.iter().flatten().copied().collect();
    roots.sort_unstable();
    roots.dedup();
    let mask = ProjectionMask::roots(meta.metadata().file_metadata().schema_descr(), roots.iter().copied());
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
        .with_projection(mask)
        .with_batch_size(batch_rows)
        .build()
        .map_err(|e| file_err(path, e))?;

    let mut accs: Vec<Acc> = schema.iter().map(|c| Acc::new(c, total)).collect();
    let mut rows = 0usize;
    for batch in reader {
        let batch = batch.map_err(|e| file_err(path, e))?;
        for ((acc, c), s) in accs.iter_mut().zip(schema).zip(&source) {
            if let Some(k) = *s {
                // Projected columns keep file order.
                let pos = roots.binary_search(&k).map_err(|_| IoError::Invalid("projection lost a column".into()))?;
                let arr = batch.column(pos);
                acc.append(arr.as_ref(), rows).map_err(|e| e.into_io(c, arr.data_type()))?;
            }
        }
        rows += batch.num_rows();
    }
    Ok(accs
        .into_iter()
        .zip(&source)
        .zip(schema)
        .map(|((acc, s), c)| if s.is_some() { acc.finish() } else { Column::nulls(c.data_type, rows) })
        .collect())
}

/// Why one array could not be appended.
#[derive(Debug)]
enum AppendError {
    /// The Arrow type cannot become the column's type.
    Type,
    /// A value does not fit; `row` is 0-based over the whole file.
    Value { row: usize, message: String },
}

impl AppendError {
    fn into_io(self, c: &ColumnDef, dt: &ArrowType) -> IoError {
        match self {
            AppendError::Type => IoError::Invalid(format!(
                "column '{}': cannot read Parquet type {dt} as {}",
                c.name,
                c.data_type.sql_name()
            )),
            AppendError::Value { row, message } => IoError::BadValue { row: row + 1, column: c.name.clone(), message },
        }
    }
}

/// One schema column being filled from successive record batches.
struct Acc {
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
    fn new(c: &ColumnDef, capacity: usize) -> Acc {
        let data = ColumnData::with_capacity(c.data_type, capacity);
        Acc { dt: c.data_type, data, validity: None, len: 0, dict: Dict::default(), remap: None }
    }

    /// Append all rows of `arr`; `row0` is the file row of its first element (for errors).
    fn append(&mut self, arr: &dyn Array, row0: usize) -> Result<(), AppendError> {
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
                ColumnData::Int32(v) => int32(arr, v, nulls, row0)?,
                ColumnData::Int64(v) => int64(arr, v, nulls, row0)?,
                ColumnData::Float32(v) => float32(arr, v)?,
                ColumnData::Float64(v) => float64(arr, v)?,
                ColumnData::Timestamp(v) => timestamp(arr, v, nulls, row0)?,
                ColumnData::Date(v) => match arr.data_type() {
                    ArrowType::Date32 => {
                        v.extend_from_slice(arr.as_primitive::<arrow_array::types::Date32Type>().values())
                    }
                    ArrowType::Date64 => {
                        let a = arr.as_primitive::<arrow_array::types::Date64Type>().values();
                        convert(a, v, nulls, row0, |ms| i32::try_from(ms.div_euclid(86_400_000)).ok())?
                    }
                    _ => return Err(AppendError::Type),
                },
                ColumnData::Interval(v) => interval(arr, v, nulls, row0)?,
                ColumnData::Varchar(s) => varchar(arr, s, nulls)?,
                ColumnData::Symbol { codes, .. } => symbol(arr, codes, nulls, &mut self.dict, &mut self.remap)?,
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
            ColumnData::Float32(v) => v.resize(v.len() + n, 0.0),
            ColumnData::Float64(v) => v.resize(v.len() + n, 0.0),
            ColumnData::Varchar(s) => (0..n).for_each(|_| s.push("")),
            ColumnData::Symbol { codes, .. } => codes.resize(codes.len() + n, 0),
            ColumnData::Null(k) => *k += n,
        }
    }

    fn finish(self) -> Column {
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
    fn z<T: Copy>(v: &mut [T], nulls: &NullBuffer, zero: T) {
        for (slot, valid) in v.iter_mut().zip(nulls.iter()) {
            if !valid {
                *slot = zero;
            }
        }
    }
    let Some(nulls) = nulls else { return };
    match data {
        ColumnData::Bool(v) => z(&mut v[start..], nulls, false),
        ColumnData::Int32(v) | ColumnData::Date(v) => z(&mut v[start..], nulls, 0),
        ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => z(&mut v[start..], nulls, 0),
        ColumnData::Float32(v) => z(&mut v[start..], nulls, 0.0),
        ColumnData::Float64(v) => z(&mut v[start..], nulls, 0.0),
        ColumnData::Symbol { codes, .. } => z(&mut codes[start..], nulls, 0),
        // Strings are pushed as "" for NULL rows already.
        ColumnData::Varchar(_) | ColumnData::Null(_) => {}
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

/// Multiply by `k` (a unit conversion to nanoseconds), copying outright when `k` is 1.
fn scale(src: &[i64], v: &mut Vec<i64>, k: i64, nulls: Option<&NullBuffer>, row0: usize) -> Result<(), AppendError> {
    if k == 1 {
        v.extend_from_slice(src);
        Ok(())
    } else {
        convert(src, v, nulls, row0, |x| x.checked_mul(k))
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
            convert(src, v, nulls, row0, |d| i64::from(d).checked_mul(NANOS_PER_DAY))
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
        // What `write_parquet` writes for INTERVAL: nanoseconds.
        ArrowType::Int64 => v.extend_from_slice(values::<Int64Type>(arr)),
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

/// Dictionary keys as `usize` (a negative key becomes `usize::MAX`, i.e. out of range).
fn dict_keys(arr: &dyn Array) -> Option<Vec<usize>> {
    fn k<K: ArrowDictionaryKeyType>(arr: &dyn Array) -> Vec<usize> {
        arr.as_dictionary::<K>().keys().values().iter().map(|x| x.as_usize()).collect()
    }
    fn signed<K: ArrowDictionaryKeyType>(arr: &dyn Array) -> Vec<usize>
    where
        K::Native: Into<i64>,
    {
        let keys = arr.as_dictionary::<K>().keys().values();
        keys.iter().map(|&x| usize::try_from(x.into()).unwrap_or(usize::MAX)).collect()
    }
    Some(match arr.data_type() {
        ArrowType::Dictionary(key, _) => match key.as_ref() {
            ArrowType::Int8 => signed::<Int8Type>(arr),
            ArrowType::Int16 => signed::<Int16Type>(arr),
            ArrowType::Int32 => signed::<Int32Type>(arr),
            ArrowType::Int64 => signed::<Int64Type>(arr),
            ArrowType::UInt8 => k::<UInt8Type>(arr),
            ArrowType::UInt16 => k::<UInt16Type>(arr),
            ArrowType::UInt32 => k::<UInt32Type>(arr),
            ArrowType::UInt64 => k::<UInt64Type>(arr),
            _ => return None,
        },
        _ => return None,
    })
}

fn is_string(dt: &ArrowType) -> bool {
    matches!(dt, ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View)
}

fn varchar(arr: &dyn Array, s: &mut StrVec, nulls: Option<&NullBuffer>) -> Result<(), AppendError> {
    let valid = |i: usize| nulls.is_none_or(|b| b.is_valid(i));
    if let ArrowType::Dictionary(_, vt) = arr.data_type() {
        if !is_string(vt) {
            return Err(AppendError::Type);
        }
        let d = arr.as_any_dictionary();
        let mut strs: Vec<&str> = Vec::with_capacity(d.values().len());
        for_each_str(d.values().as_ref(), |_, x| strs.push(x));
        let keys = dict_keys(arr).ok_or(AppendError::Type)?;
        for (i, k) in keys.into_iter().enumerate() {
            s.push(if valid(i) { strs.get(k).copied().unwrap_or("") } else { "" });
        }
        return Ok(());
    }
    if for_each_str(arr, |i, x| s.push(if valid(i) { x } else { "" })) {
        Ok(())
    } else {
        Err(AppendError::Type)
    }
}

fn symbol(
    arr: &dyn Array,
    codes: &mut Vec<u32>,
    nulls: Option<&NullBuffer>,
    dict: &mut Dict,
    remap: &mut Option<(ArrayRef, Vec<u32>)>,
) -> Result<(), AppendError> {
    if let ArrowType::Dictionary(_, vt) = arr.data_type() {
        if !is_string(vt) {
            return Err(AppendError::Type);
        }
        let values = arr.as_any_dictionary().values();
        // Intern each dictionary value once; batches of one column chunk share the dictionary.
        let same = remap.as_ref().is_some_and(|(v, _)| std::ptr::addr_eq(Arc::as_ptr(v), Arc::as_ptr(values)));
        if !same {
            let mut map = Vec::with_capacity(values.len());
            for_each_str(values.as_ref(), |_, x| map.push(dict.intern(x)));
            *remap = Some((values.clone(), map));
        }
        let map = remap.as_ref().map(|(_, m)| m.as_slice()).unwrap_or_default();
        let keys = dict_keys(arr).ok_or(AppendError::Type)?;
        // NULL keys may hold anything: out-of-range ones read as code 0 (zeroed later anyway).
        codes.extend(keys.into_iter().map(|k| map.get(k).copied().unwrap_or(0)));
        return Ok(());
    }
    let valid = |i: usize| nulls.is_none_or(|b| b.is_valid(i));
    if for_each_str(arr, |i, x| codes.push(if valid(i) { dict.intern(x) } else { 0 })) {
        Ok(())
    } else {
        Err(AppendError::Type)
    }
}

/// Write `rows` rows of `cols` (named `names`) as one zstd-compressed Parquet file.
///
/// Types: TIMESTAMP → `Timestamp(Nanosecond)` (no time zone), DATE → `Date32`, SYMBOL →
/// `Dictionary(Int32, Utf8)` (plain strings to readers without Arrow metadata, e.g. DuckDB),
/// VARCHAR → `LargeUtf8`, INTERVAL → `Int64` nanoseconds (Parquet has no duration type, so it
/// reads back as a BIGINT elsewhere), untyped NULL → Arrow `Null`.
/// The file is written to `<path>.tmp` and renamed over `path` only when complete.
pub fn write_parquet(path: &Path, names: &[String], cols: &[&Column], rows: usize) -> Result<(), IoError> {
    let props = WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::default())).build();
    write_with(path, names, cols, rows, props)
}

fn write_with(
    path: &Path,
    names: &[String],
    cols: &[&Column],
    rows: usize,
    props: WriterProperties,
) -> Result<(), IoError> {
    if names.len() != cols.len() {
        return Err(IoError::Invalid(format!("{} column names for {} columns", names.len(), cols.len())));
    }
    if cols.is_empty() {
        return Err(IoError::Invalid("cannot write a Parquet file with no columns".into()));
    }
    let mut fields = Vec::with_capacity(cols.len());
    let mut arrays = Vec::with_capacity(cols.len());
    for (name, c) in names.iter().zip(cols) {
        if c.data_type() != DataType::Null && c.len() != rows {
            return Err(IoError::Invalid(format!("column '{name}' has {} rows, expected {rows}", c.len())));
        }
        let a = to_arrow(c, rows).map_err(|e| IoError::Invalid(format!("column '{name}': {e}")))?;
        fields.push(Field::new(name.clone(), a.data_type().clone(), true));
        arrays.push(a);
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(|e| IoError::Invalid(e.to_string()))?;

    let tmp = tmp_path(path);
    let write = || -> Result<(), String> {
        let file = File::create(&tmp).map_err(|e| e.to_string())?;
        let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| e.to_string())?;
        w.write(&batch).map_err(|e| e.to_string())?;
        let file = w.into_inner().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, path).map_err(|e| e.to_string())
    };
    write().map_err(|message| {
        let _ = std::fs::remove_file(&tmp);
        file_err(path, message)
    })
}

fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

fn null_buffer(c: &Column) -> Option<NullBuffer> {
    let v = c.validity.as_ref()?;
    let bits = BooleanBuffer::new(Buffer::from_slice_ref(v.as_bytes()), 0, v.len());
    Some(NullBuffer::new(bits))
}

fn to_arrow(c: &Column, rows: usize) -> Result<ArrayRef, String> {
    let nulls = null_buffer(c);
    let e = |e: arrow_schema::ArrowError| e.to_string();
    fn prim<T: ArrowPrimitiveType>(v: &[T::Native], nulls: Option<NullBuffer>) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v.to_vec()), nulls))
    }
    Ok(match &c.data {
        ColumnData::Bool(v) => Arc::new(BooleanArray::new(BooleanBuffer::from(v.as_slice()), nulls)),
        ColumnData::Int32(v) => prim::<Int32Type>(v, nulls),
        ColumnData::Int64(v) => prim::<Int64Type>(v, nulls),
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
            if i32::try_from(dict.len()).is_err() {
                return Err(format!("symbol dictionary of {} strings is too large", dict.len()));
            }
            // Codes below dict.len() <= i32::MAX, so the casts are exact.
            let keys = Int32Array::new(codes.iter().map(|&k| k as i32).collect(), nulls);
            let values: StringArray = dict.iter().map(Some).collect();
            Arc::new(DictionaryArray::try_new(keys, Arc::new(values)).map_err(e)?)
        }
        ColumnData::Null(_) => Arc::new(NullArray::new(rows)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{ColumnBuilder, Value};

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("zepto-io-{}-{name}.parquet", std::process::id()))
    }

    fn def(name: &str, dt: DataType) -> ColumnDef {
        ColumnDef { name: name.into(), data_type: dt }
    }

    fn col(dt: DataType, vals: &[Value]) -> Column {
        let mut b = ColumnBuilder::new(dt, vals.len());
        vals.iter().for_each(|v| b.push_value(v));
        b.finish()
    }

    fn assert_same(a: &[Column], b: &[Column], rows: usize) {
        assert_eq!(a.len(), b.len());
        for (j, (x, y)) in a.iter().zip(b).enumerate() {
            assert_eq!(x.len(), rows, "column {j}");
            assert_eq!(y.len(), rows, "column {j}");
            assert_eq!(x.data_type(), y.data_type(), "column {j}");
            for i in 0..rows {
                assert_eq!(x.get(i), y.get(i), "column {j}, row {i}");
            }
        }
    }

    fn every_type() -> (Vec<ColumnDef>, Vec<Column>) {
        use Value::*;
        let long = "x".repeat(100_000);
        let defs = vec![
            def("b", DataType::Bool),
            def("i", DataType::Int32),
            def("l", DataType::Int64),
            def("f", DataType::Float32),
            def("d", DataType::Float64),
            def("ts", DataType::Timestamp),
            def("dt", DataType::Date),
            def("iv", DataType::Interval),
            def("v", DataType::Varchar),
            def("sym", DataType::Symbol),
        ];
        let s = |x: &str| Str(x.into());
        let cols = vec![
            col(DataType::Bool, &[Bool(true), Null, Bool(false), Bool(true), Null]),
            col(DataType::Int32, &[Int32(i32::MIN), Null, Int32(0), Int32(i32::MAX), Int32(-7)]),
            col(DataType::Int64, &[Int64(i64::MIN), Int64(1), Null, Int64(i64::MAX), Null]),
            col(DataType::Float32, &[Float32(1.5), Float32(-0.0), Null, Float32(f32::MAX), Float32(f32::INFINITY)]),
            col(DataType::Float64, &[Float64(0.1), Null, Float64(-1e300), Float64(f64::MIN_POSITIVE), Float64(2.0)]),
            // 1704187800123456789 = 2024-01-02 09:30:00.123456789 (ns precision must survive).
            col(
                DataType::Timestamp,
                &[Timestamp(1_704_187_800_123_456_789), Null, Timestamp(-1), Timestamp(0), Timestamp(1)],
            ),
            col(DataType::Date, &[Date(19_724), Date(-719_162), Null, Date(0), Date(2_932_896)]),
            col(
                DataType::Interval,
                &[Interval(86_400_000_000_000), Null, Interval(-1), Interval(0), Interval(i64::MAX)],
            ),
            col(DataType::Varchar, &[s(""), Null, s("héllo, wörld — 日本語 🚀"), Str(long.clone()), s("\"quoted\"\n")]),
            col(DataType::Symbol, &[s("AAPL"), s("MSFT"), Null, s("AAPL"), s("")]),
        ];
        (defs, cols)
    }

    #[test]
    fn round_trips_every_type() {
        let (defs, cols) = every_type();
        let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        let p = tmp("every");
        write_parquet(&p, &names, &cols.iter().collect::<Vec<_>>(), 5).expect("writes");
        assert!(!tmp_path(&p).exists(), "temporary file renamed away");
        let back = read_parquet(&p, &defs).expect("reads");
        assert_same(&cols, &back, 5);
        // Symbols come back dictionary-encoded with one code per distinct string.
        if let ColumnData::Symbol { dict, codes } = &back[9].data {
            assert_eq!(dict.len(), 3);
            assert_eq!(codes[0], codes[3]);
            assert_eq!(codes[2], 0, "NULL slot holds code 0");
        } else {
            panic!("symbol column expected");
        }
        // NULL slots hold zero values.
        assert_eq!(back[2].as_i64_slice().map(|v| v[2]), Some(0));
        // Swapping VARCHAR and SYMBOL targets converts too.
        let mut swapped = defs.clone();
        swapped[8].data_type = DataType::Symbol;
        swapped[9].data_type = DataType::Varchar;
        let back = read_parquet(&p, &swapped).expect("reads swapped");
        for i in 0..5 {
            assert_eq!(back[8].get(i), cols[8].get(i));
            assert_eq!(back[9].get(i), cols[9].get(i));
        }
        std::fs::remove_file(&p).expect("cleanup");
    }

    #[test]
    fn many_rows_across_row_groups_and_batches() {
        // Small row groups (each with its own string dictionary) read in batches that do not
        // line up with them or with bytes of the validity bitmap.
        let n = 70_001;
        let mut ts = ColumnBuilder::new(DataType::Timestamp, n);
        let mut sym = ColumnBuilder::new(DataType::Symbol, n);
        let mut px = ColumnBuilder::new(DataType::Float64, n);
        let mut name = ColumnBuilder::new(DataType::Varchar, n);
        for i in 0..n {
            ts.push_value(&Value::Timestamp(i as i64 * 1_000));
            if i % 7 == 3 {
                sym.push_null();
            } else {
                // Later row groups meet new symbols.
                sym.push_str(&format!("S{:03}", i % (50 + i / 1000)));
            }
            if i % 13 == 0 || (20_000..30_000).contains(&i) {
                px.push_null();
            } else {
                px.push_value(&Value::Float64(i as f64 / 4.0));
            }
            // NULLs only from row 40000 on: validity starts mid-read.
            if i >= 40_000 && i % 5 == 0 {
                name.push_null();
            } else {
                name.push_str(&format!("n{i}"));
            }
        }
        let cols = vec![ts.finish(), sym.finish(), px.finish(), name.finish()];
        let names: Vec<String> = ["ts", "sym", "px", "name"].map(String::from).to_vec();
        let p = tmp("many");
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(9_999))
            .build();
        write_with(&p, &names, &cols.iter().collect::<Vec<_>>(), n, props).expect("writes");
        let defs = vec![
            def("TS", DataType::Timestamp),
            def("Sym", DataType::Symbol),
            def("px", DataType::Float64),
            def("name", DataType::Varchar),
        ];
        for batch in [1_237, 4_096, BATCH_ROWS] {
            let back = read_batched(&p, &defs, batch).expect("reads");
            assert_same(&cols, &back, n);
            assert_eq!(back[2].null_count(), cols[2].null_count());
        }
        write_parquet(&p, &names, &cols.iter().collect::<Vec<_>>(), n).expect("writes zstd");
        assert_same(&cols, &read_parquet(&p, &defs).expect("reads"), n);
        std::fs::remove_file(&p).expect("cleanup");
    }

    #[test]
    fn matches_by_name_and_fills_missing() {
        let (defs, cols) = every_type();
        let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        let p = tmp("match");
        write_parquet(&p, &names, &cols.iter().collect::<Vec<_>>(), 5).expect("writes");
        let want = vec![def("SYM", DataType::Symbol), def("missing", DataType::Int64), def("L", DataType::Int64)];
        let back = read_parquet(&p, &want).expect("reads");
        assert_eq!(back[1].null_count(), 5);
        assert_eq!(back[1].data_type(), DataType::Int64);
        for i in 0..5 {
            assert_eq!(back[0].get(i), cols[9].get(i));
            assert_eq!(back[2].get(i), cols[2].get(i));
        }
        let e = read_parquet(&p, &[def("nope", DataType::Int64)]).expect_err("no columns match");
        assert!(e.to_string().contains("none of the columns"), "{e}");
        let e = read_parquet(&p, &[def("v", DataType::Float64)]).expect_err("string into DOUBLE");
        assert_eq!(e.to_string(), "column 'v': cannot read Parquet type LargeUtf8 as DOUBLE");
        let e = read_parquet(&p, &[def("l", DataType::Int32)]).expect_err("i64::MIN into INTEGER");
        assert_eq!(e.row(), Some(1), "{e}");
        std::fs::remove_file(&p).expect("cleanup");
        let e = read_parquet(&p, &want).expect_err("file is gone");
        assert!(matches!(e, IoError::File { .. }), "{e:?}");
    }

    #[test]
    fn converts_arrow_types() {
        use arrow_array::types::TimestampMillisecondType;
        use arrow_array::{Float32Array, Int16Array, Int8Array, StringViewArray, UInt32Array, UInt64Array};
        let ms = PrimitiveArray::<TimestampMillisecondType>::from(vec![Some(1_704_187_800_123), None])
            .with_timezone("America/New_York");
        let dict: DictionaryArray<Int8Type> = vec![Some("b"), None, Some("a")].into_iter().collect();
        let dict = dict.slice(1, 2);
        let cols: Vec<(&str, ArrayRef)> = vec![
            ("ms", Arc::new(ms)),
            ("i8", Arc::new(Int8Array::from(vec![Some(-3), None]))),
            ("i16", Arc::new(Int16Array::from(vec![7, 8]))),
            ("u32", Arc::new(UInt32Array::from(vec![u32::MAX, 0]))),
            ("u64", Arc::new(UInt64Array::from(vec![u64::MAX, 1]))),
            ("view", Arc::new(StringViewArray::from(vec![Some("a view string longer than twelve"), None]))),
            ("dict", Arc::new(dict)),
            ("nothing", Arc::new(NullArray::new(2))),
            ("f32", Arc::new(Float32Array::from(vec![0.5, -2.0]))),
        ];
        let schema = Arc::new(Schema::new(
            cols.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), true)).collect::<Vec<_>>(),
        ));
        let batch = RecordBatch::try_new(schema.clone(), cols.into_iter().map(|(_, a)| a).collect()).expect("batch");
        let p = tmp("arrow");
        let mut w = ArrowWriter::try_new(File::create(&p).expect("create"), schema, None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");

        let defs = vec![
            def("ms", DataType::Timestamp),
            def("i8", DataType::Int64),
            def("i16", DataType::Int32),
            def("u32", DataType::Int64),
            def("u64", DataType::Float64),
            def("view", DataType::Symbol),
            def("dict", DataType::Varchar),
            def("nothing", DataType::Date),
            def("f32", DataType::Float64),
            def("dict", DataType::Symbol),
        ];
        let c = read_parquet(&p, &defs).expect("reads");
        let row = |i: usize| c.iter().map(|c| c.get(i)).collect::<Vec<_>>();
        use Value::*;
        assert_eq!(
            row(0),
            vec![
                Timestamp(1_704_187_800_123_000_000),
                Int64(-3),
                Int32(7),
                Int64(u32::MAX as i64),
                Float64(u64::MAX as f64),
                Str("a view string longer than twelve".into()),
                Null,
                Null,
                Float64(0.5),
                Null
            ]
        );
        assert_eq!(
            row(1),
            vec![
                Null,
                Null,
                Int32(8),
                Int64(0),
                Float64(1.0),
                Null,
                Str("a".into()),
                Null,
                Float64(-2.0),
                Str("a".into())
            ]
        );
        let e = read_parquet(&p, &[def("u64", DataType::Int64)]).expect_err("u64::MAX overflows BIGINT");
        assert!(matches!(e, IoError::BadValue { row: 1, .. }), "{e:?}");
        let e = read_parquet(&p, &[def("ms", DataType::Bool)]).expect_err("timestamp into BOOLEAN");
        assert!(e.to_string().contains("'ms'") && e.to_string().contains("BOOLEAN"), "{e}");
        std::fs::remove_file(&p).expect("cleanup");
    }

    #[test]
    fn plain_strings_into_symbols_and_offset_validity() {
        // Files normally hand SYMBOL columns over as dictionaries; plain (and sliced) string
        // arrays must work too.
        let a = StringArray::from(vec![Some("x"), Some("y"), None, Some("x"), Some("é"), None]);
        let a = a.slice(1, 5); // y, NULL, x, é, NULL
        let mut acc = Acc::new(&def("s", DataType::Symbol), 0);
        acc.append(&StringArray::from(vec!["x"]), 0).expect("appends");
        acc.append(&a, 1).expect("appends");
        let c = acc.finish();
        let got: Vec<Value> = (0..c.len()).map(|i| c.get(i)).collect();
        let s = |x: &str| Value::Str(x.into());
        assert_eq!(got, vec![s("x"), s("y"), Value::Null, s("x"), s("é"), Value::Null]);
        match &c.data {
            ColumnData::Symbol { dict, codes } => {
                assert_eq!(dict.len(), 3);
                assert_eq!((codes[0], codes[3]), (0, 0));
            }
            _ => panic!("symbol column expected"),
        }
    }

    #[test]
    fn writes_nulls_and_empty_results() {
        let names = vec!["n".to_string(), "x".to_string()];
        let cols = [Column::from_data(ColumnData::Null(3)), Column::nulls(DataType::Varchar, 3)];
        let p = tmp("nulls");
        write_parquet(&p, &names, &cols.iter().collect::<Vec<_>>(), 3).expect("writes");
        let back = read_parquet(&p, &[def("n", DataType::Int32), def("x", DataType::Varchar)]).expect("reads");
        assert_eq!((back[0].len(), back[0].null_count()), (3, 3));
        assert_eq!((back[1].len(), back[1].null_count()), (3, 3));
        let empty = [Column::from_data(ColumnData::empty(DataType::Symbol))];
        write_parquet(&p, &names[1..], &empty.iter().collect::<Vec<_>>(), 0).expect("writes empty");
        let back = read_parquet(&p, &[def("x", DataType::Symbol)]).expect("reads empty");
        assert_eq!(back[0].len(), 0);
        std::fs::remove_file(&p).expect("cleanup");
    }

    /// The benchmark's trades file, if generated (see /work/shared/bench/gen_data.py):
    /// `ZEPTO_TRADES_PARQUET=/tmp/zb/trades.parquet cargo test -p zepto-io`.
    #[test]
    fn reads_benchmark_trades_if_present() {
        let Some(p) = std::env::var_os("ZEPTO_TRADES_PARQUET") else {
            return;
        };
        let defs = vec![
            def("ts", DataType::Timestamp),
            def("sym", DataType::Symbol),
            def("price", DataType::Float64),
            def("size", DataType::Int64),
        ];
        let c = read_parquet(Path::new(&p), &defs).expect("reads trades");
        let n = c[0].len();
        assert!(n > 0 && c.iter().all(|c| c.len() == n && c.null_count() == 0));
        let ts = c[0].as_i64_slice().expect("timestamps");
        assert_eq!(ts[0], 1_704_187_800_000_000_000, "first trade at 2024-01-02 09:30:00");
        assert!(ts.windows(2).all(|w| w[0] < w[1]), "strictly increasing");
        assert!(ts[n - 1] < ts[0] + 23_400_000_000_000, "within the trading day");
        match &c[1].data {
            ColumnData::Symbol { dict, .. } => {
                assert!(dict.len() <= 100 && dict.iter().all(|s| s.starts_with('S')))
            }
            _ => panic!("symbols"),
        }
        for i in (0..n).step_by(997) {
            let (Value::Float64(px), Value::Int64(sz)) = (c[2].get(i), c[3].get(i)) else { panic!("types") };
            assert!(px > 0.0 && px < 10_000.0 && (1..=100_000).contains(&sz), "row {i}: {px} {sz}");
        }
    }
}
