//! Typed columns. Values live in plain vectors (Arrow-compatible buffers), NULLs in an optional
//! validity bitmap (`None` = no NULLs). A NULL slot holds the type's zero value so vectorized
//! kernels can run over it without branching and mask the result afterwards.
//!
//! Here: the column types and what reads or changes one column in place. Rows gathered from
//! columns into a new one (take, concat, gather) are in `gather.rs`; building a column a value
//! or a run at a time in `builder.rs`.

use crate::bitmap::Bitmap;
use crate::dict::Dict;
use crate::error::StorageError;
use crate::strings::StrVec;
use crate::types::DataType;
use crate::value::Value;
use std::sync::Arc;

/// Index meaning "no row" in [`Column::take_opt`] (outer-join padding).
pub const NULL_INDEX: u32 = u32::MAX;

/// A column's values, one vector per type (a NULL slot holds the type's zero value).
#[derive(Debug, Clone)]
pub enum ColumnData {
    /// BOOLEAN values.
    Bool(crate::buf::Buf<bool>),
    /// INTEGER values.
    Int32(crate::buf::Buf<i32>),
    /// BIGINT values.
    Int64(crate::buf::Buf<i64>),
    /// HUGEINT values.
    Int128(crate::buf::Buf<i128>),
    /// REAL values.
    Float32(crate::buf::Buf<f32>),
    /// DOUBLE values.
    Float64(crate::buf::Buf<f64>),
    /// TIMESTAMP values: nanoseconds since the Unix epoch, UTC.
    Timestamp(crate::buf::Buf<i64>),
    /// DATE values: days since the Unix epoch.
    Date(crate::buf::Buf<i32>),
    /// INTERVAL values: durations in nanoseconds.
    Interval(crate::buf::Buf<i64>),
    /// VARCHAR values in Arrow `LargeUtf8` layout.
    Varchar(StrVec),
    /// SYMBOL values: dictionary codes.
    Symbol {
        /// One code per row, each below `dict.len()` (0 in a NULL slot).
        codes: crate::buf::Buf<u32>,
        /// The dictionary the codes index (shared; append-only, so it may be a later version).
        dict: Arc<Dict>,
    },
    /// `FLOAT[dim]` values: row `i` is `values[i * dim..(i + 1) * dim]` (zeros in a NULL row),
    /// the layout of Arrow's `FixedSizeList<Float32, dim>` child.
    Vector {
        /// Elements per row (1..=65535).
        dim: u16,
        /// `len * dim` elements, row after row.
        values: crate::buf::Buf<f32>,
    },
    /// An untyped all-NULL column of the given length.
    Null(usize),
}

/// A typed column: values plus an optional validity bitmap (`None` = no NULLs); both of one length.
#[derive(Debug, Clone)]
pub struct Column {
    /// The values (NULL slots hold the type's zero value).
    data: ColumnData,
    /// Which rows are valid; `None` when none is NULL. Same length as `data` when present.
    validity: Option<Bitmap>,
}

macro_rules! map_vec {
    ($data:expr, $v:ident => $e:expr, $s:ident => $se:expr, $c:ident, $d:ident => $sym:expr, $vd:ident, $vv:ident => $vec:expr, $n:ident => $nul:expr) => {
        match $data {
            ColumnData::Vector { dim: $vd, values: $vv } => $vec,
            ColumnData::Bool($v) => ColumnData::Bool($e),
            ColumnData::Int32($v) => ColumnData::Int32($e),
            ColumnData::Int64($v) => ColumnData::Int64($e),
            ColumnData::Int128($v) => ColumnData::Int128($e),
            ColumnData::Float32($v) => ColumnData::Float32($e),
            ColumnData::Float64($v) => ColumnData::Float64($e),
            ColumnData::Timestamp($v) => ColumnData::Timestamp($e),
            ColumnData::Date($v) => ColumnData::Date($e),
            ColumnData::Interval($v) => ColumnData::Interval($e),
            ColumnData::Varchar($s) => ColumnData::Varchar($se),
            ColumnData::Symbol { codes: $c, dict: $d } => $sym,
            ColumnData::Null($n) => ColumnData::Null($nul),
        }
    };
}

/// `match dt` with one arm per fixed-width type, each `$each!(Variant, zero value)`, then the
/// arms in `{ ... }` for the others: the per-type dispatch of the kernels that build a column.
macro_rules! fixed_width_match {
    ($dt:expr, $each:ident, { $($rest:tt)* }) => {
        match $dt {
            DataType::Bool => $each!(Bool, false),
            DataType::Int32 => $each!(Int32, 0),
            DataType::Int64 => $each!(Int64, 0),
            DataType::Int128 => $each!(Int128, 0),
            DataType::Float32 => $each!(Float32, 0.0),
            DataType::Float64 => $each!(Float64, 0.0),
            DataType::Timestamp => $each!(Timestamp, 0),
            DataType::Date => $each!(Date, 0),
            DataType::Interval => $each!(Interval, 0),
            $($rest)*
        }
    };
}

mod builder;
mod gather;
pub use builder::{ColumnBuilder, ValidRun};
use gather::take_rows;
pub use gather::Span;

impl ColumnData {
    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            ColumnData::Bool(v) => v.len(),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.len(),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.len(),
            ColumnData::Int128(v) => v.len(),
            ColumnData::Float32(v) => v.len(),
            ColumnData::Float64(v) => v.len(),
            ColumnData::Varchar(s) => s.len(),
            ColumnData::Symbol { codes, .. } => codes.len(),
            ColumnData::Vector { dim, values } => values.len() / (*dim).max(1) as usize,
            ColumnData::Null(n) => *n,
        }
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The SQL type the values have.
    pub fn data_type(&self) -> DataType {
        match self {
            ColumnData::Bool(_) => DataType::Bool,
            ColumnData::Int32(_) => DataType::Int32,
            ColumnData::Int64(_) => DataType::Int64,
            ColumnData::Int128(_) => DataType::Int128,
            ColumnData::Float32(_) => DataType::Float32,
            ColumnData::Float64(_) => DataType::Float64,
            ColumnData::Timestamp(_) => DataType::Timestamp,
            ColumnData::Date(_) => DataType::Date,
            ColumnData::Interval(_) => DataType::Interval,
            ColumnData::Varchar(_) => DataType::Varchar,
            ColumnData::Symbol { .. } => DataType::Symbol,
            ColumnData::Vector { dim, .. } => DataType::Vector(*dim),
            ColumnData::Null(_) => DataType::Null,
        }
    }

    /// An empty vector of the given type with room for `capacity` values.
    pub fn with_capacity(dt: DataType, capacity: usize) -> ColumnData {
        match dt {
            DataType::Bool => ColumnData::Bool(Vec::with_capacity(capacity).into()),
            DataType::Int32 => ColumnData::Int32(Vec::with_capacity(capacity).into()),
            DataType::Int64 => ColumnData::Int64(Vec::with_capacity(capacity).into()),
            DataType::Int128 => ColumnData::Int128(Vec::with_capacity(capacity).into()),
            DataType::Float32 => ColumnData::Float32(Vec::with_capacity(capacity).into()),
            DataType::Float64 => ColumnData::Float64(Vec::with_capacity(capacity).into()),
            DataType::Timestamp => ColumnData::Timestamp(Vec::with_capacity(capacity).into()),
            DataType::Date => ColumnData::Date(Vec::with_capacity(capacity).into()),
            DataType::Interval => ColumnData::Interval(Vec::with_capacity(capacity).into()),
            DataType::Varchar => ColumnData::Varchar(StrVec::with_capacity(capacity, capacity * 8)),
            DataType::Symbol => {
                ColumnData::Symbol { codes: Vec::with_capacity(capacity).into(), dict: Arc::new(Dict::default()) }
            }
            DataType::Vector(dim) => {
                ColumnData::Vector { dim, values: Vec::with_capacity(capacity.saturating_mul(dim as usize)).into() }
            }
            DataType::Null => ColumnData::Null(0),
        }
    }

    /// Forget every value, keeping the room they took (a buffer reused batch after batch).
    pub fn clear(&mut self) {
        match self {
            ColumnData::Bool(v) => v.clear(),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.clear(),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.clear(),
            ColumnData::Int128(v) => v.clear(),
            ColumnData::Float32(v) => v.clear(),
            ColumnData::Float64(v) => v.clear(),
            ColumnData::Varchar(s) => s.clear(),
            ColumnData::Symbol { codes, .. } => codes.clear(),
            ColumnData::Vector { values, .. } => values.clear(),
            ColumnData::Null(n) => *n = 0,
        }
    }

    /// Room for `rows` more rows of fixed width (symbol codes, vector values), asked of the
    /// allocator without aborting: `false` when it refused, and nothing changed. VARCHAR text
    /// and NULL columns have no fixed width and are left alone (`true`).
    pub fn try_reserve_rows(&mut self, rows: usize) -> bool {
        fn r<T>(v: &mut Vec<T>, n: usize) -> bool {
            v.try_reserve_exact(n).is_ok()
        }
        match self {
            ColumnData::Bool(v) => r(v.vec_mut(0), rows),
            ColumnData::Int32(v) | ColumnData::Date(v) => r(v.vec_mut(0), rows),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => r(v.vec_mut(0), rows),
            ColumnData::Int128(v) => r(v.vec_mut(0), rows),
            ColumnData::Float32(v) => r(v.vec_mut(0), rows),
            ColumnData::Float64(v) => r(v.vec_mut(0), rows),
            ColumnData::Symbol { codes, .. } => r(codes.vec_mut(0), rows),
            ColumnData::Vector { dim, values } => r(values.vec_mut(0), rows.saturating_mul(*dim as usize)),
            ColumnData::Varchar(_) | ColumnData::Null(_) => true,
        }
    }

    /// An empty vector of the given type (symbols get an empty dictionary).
    pub fn empty(dt: DataType) -> ColumnData {
        ColumnData::zeros(dt, 0)
    }

    /// `n` zero values of the given type.
    pub fn zeros(dt: DataType, n: usize) -> ColumnData {
        match dt {
            DataType::Bool => ColumnData::Bool(vec![false; n].into()),
            DataType::Int32 => ColumnData::Int32(vec![0; n].into()),
            DataType::Int64 => ColumnData::Int64(vec![0; n].into()),
            DataType::Int128 => ColumnData::Int128(vec![0; n].into()),
            DataType::Float32 => ColumnData::Float32(vec![0.0; n].into()),
            DataType::Float64 => ColumnData::Float64(vec![0.0; n].into()),
            DataType::Timestamp => ColumnData::Timestamp(vec![0; n].into()),
            DataType::Date => ColumnData::Date(vec![0; n].into()),
            DataType::Interval => ColumnData::Interval(vec![0; n].into()),
            DataType::Varchar => ColumnData::Varchar((0..n).map(|_| "").collect()),
            DataType::Symbol => ColumnData::Symbol { codes: vec![0; n].into(), dict: Arc::new(Dict::default()) },
            DataType::Vector(dim) => ColumnData::Vector { dim, values: vec![0.0; n * dim as usize].into() },
            DataType::Null => ColumnData::Null(n),
        }
    }
}

impl Column {
    /// Put the zero value in every NULL slot of a fixed-width column (the invariant kernels
    /// and the time order rely on; computed columns may hold anything there). Strings are
    /// left as they are.
    pub fn zero_nulls(&mut self) {
        fn z<T: Copy>(v: &mut [T], valid: &Bitmap, zero: T) {
            for (i, x) in v.iter_mut().enumerate() {
                if !valid.get(i) {
                    *x = zero;
                }
            }
        }
        let Some(valid) = &self.validity else { return };
        match &mut self.data {
            ColumnData::Bool(v) => z(v, valid, false),
            ColumnData::Int32(v) | ColumnData::Date(v) => z(v, valid, 0),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => z(v, valid, 0),
            ColumnData::Int128(v) => z(v, valid, 0),
            ColumnData::Float32(v) => z(v, valid, 0.0),
            ColumnData::Float64(v) => z(v, valid, 0.0),
            ColumnData::Symbol { codes, .. } => z(codes, valid, 0),
            ColumnData::Vector { dim, values } => {
                for (i, row) in values.chunks_exact_mut((*dim).max(1) as usize).enumerate() {
                    if !valid.get(i) {
                        row.fill(0.0);
                    }
                }
            }
            ColumnData::Varchar(_) | ColumnData::Null(_) => {}
        }
    }

    /// A column from values and validity. Panics if their lengths differ; an all-valid bitmap is
    /// dropped (stored as `None`).
    pub fn new(data: ColumnData, validity: Option<Bitmap>) -> Column {
        if let Some(v) = &validity {
            assert_eq!(v.len(), data.len(), "validity length must match data length");
        }
        let validity = validity.filter(|v| !v.all_set());
        Column { data, validity }
    }

    /// The values (NULL slots hold the type's zero value).
    pub fn data(&self) -> &ColumnData {
        &self.data
    }

    /// Which rows are valid; `None` when none is NULL. Same length as the values when present.
    pub fn validity(&self) -> Option<&Bitmap> {
        self.validity.as_ref()
    }

    /// Ask for the cache lines the next `n` appended values of a fixed-width column (every type
    /// but VARCHAR, vectors and the untyped NULL) go to ([`Buf::prefetch_room`](crate::buf::Buf::prefetch_room)).
    pub(crate) fn prefetch_room(&self, n: usize) {
        match &self.data {
            ColumnData::Bool(v) => v.prefetch_room(n),
            ColumnData::Int128(v) => v.prefetch_room(n),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.prefetch_room(n),
            ColumnData::Float64(v) => v.prefetch_room(n),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.prefetch_room(n),
            ColumnData::Float32(v) => v.prefetch_room(n),
            ColumnData::Symbol { codes, .. } => codes.prefetch_room(n),
            _ => {}
        }
    }

    /// The values, to change in place: for the storage layer's own appends, which keep the
    /// validity's length in step.
    pub(crate) fn data_mut(&mut self) -> &mut ColumnData {
        &mut self.data
    }

    /// The validity, to change in place (the storage layer's own appends).
    pub(crate) fn validity_mut(&mut self) -> &mut Option<Bitmap> {
        &mut self.validity
    }

    /// The values and the validity, taken apart (put back together with [`Column::new`]).
    pub fn into_parts(self) -> (ColumnData, Option<Bitmap>) {
        (self.data, self.validity)
    }

    /// A column with no NULLs.
    pub fn from_data(data: ColumnData) -> Column {
        Column { data, validity: None }
    }

    /// This SYMBOL column with a dictionary of only the strings its rows use (in order of
    /// first use), when its own holds many more: a batch coded against a large table's
    /// dictionary, written out on its own (a log record), would otherwise carry every string
    /// of the table. `None` when the column is not SYMBOL or its dictionary is small.
    pub fn compact_symbols(&self) -> Option<Column> {
        let ColumnData::Symbol { codes, dict } = &self.data else { return None };
        if dict.len() <= 2 * codes.len() + 64 {
            return None;
        }
        let mut own = Dict::default();
        let mut remap: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        let codes = codes
            .iter()
            .enumerate()
            .map(|(i, &k)| match self.is_valid(i) {
                true => *remap.entry(k).or_insert_with(|| own.intern(dict.get(k))),
                false => 0,
            })
            .collect();
        Some(Column::new(ColumnData::Symbol { codes, dict: Arc::new(own) }, self.validity.clone()))
    }

    /// `n` NULLs of the given type.
    pub fn nulls(dt: DataType, n: usize) -> Column {
        let data = ColumnData::zeros(dt, n);
        let validity = if dt == DataType::Null { None } else { Some(Bitmap::new_unset(n)) };
        Column { data, validity }
    }

    /// Number of rows.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Bytes of values and validity (what the memory budget counts).
    pub fn data_bytes(&self) -> usize {
        let v = match &self.data {
            ColumnData::Bool(v) => v.len(),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.len() * 4,
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.len() * 8,
            ColumnData::Int128(v) => v.len() * 16,
            ColumnData::Float32(v) => v.len() * 4,
            ColumnData::Float64(v) => v.len() * 8,
            ColumnData::Varchar(s) => s.bytes().len() + s.offsets().len() * 8,
            ColumnData::Symbol { codes, .. } => codes.len() * 4,
            ColumnData::Vector { values, .. } => values.len() * 4,
            ColumnData::Null(_) => 0,
        };
        v + self.validity.as_ref().map_or(0, |b| b.as_bytes().len())
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The column's SQL type.
    pub fn data_type(&self) -> DataType {
        self.data.data_type()
    }

    /// True if row `i` is not NULL (always false for an untyped NULL column).
    #[inline]
    pub fn is_valid(&self, i: usize) -> bool {
        match (&self.data, &self.validity) {
            (ColumnData::Null(_), _) => false,
            (_, Some(v)) => v.get(i),
            (_, None) => true,
        }
    }

    /// Number of NULL rows.
    pub fn null_count(&self) -> usize {
        match (&self.data, &self.validity) {
            (ColumnData::Null(n), _) => *n,
            (_, Some(v)) => v.len() - v.count_set(),
            (_, None) => 0,
        }
    }

    /// The value at row `i` (allocates for strings: not for hot loops).
    pub fn get(&self, i: usize) -> Value {
        if !self.is_valid(i) {
            return Value::Null;
        }
        match &self.data {
            ColumnData::Bool(v) => Value::Bool(v[i]),
            ColumnData::Int32(v) => Value::Int32(v[i]),
            ColumnData::Int64(v) => Value::Int64(v[i]),
            ColumnData::Int128(v) => Value::Int128(v[i]),
            ColumnData::Float32(v) => Value::Float32(v[i]),
            ColumnData::Float64(v) => Value::Float64(v[i]),
            ColumnData::Timestamp(v) => Value::Timestamp(v[i]),
            ColumnData::Date(v) => Value::Date(v[i]),
            ColumnData::Interval(v) => Value::Interval(v[i]),
            ColumnData::Varchar(s) => Value::Str(s.get(i).to_string()),
            ColumnData::Symbol { codes, dict } => Value::Str(dict.get(codes[i]).to_string()),
            ColumnData::Vector { .. } => self.vector_at(i).map_or(Value::Null, |v| Value::Vector(v.to_vec())),
            ColumnData::Null(_) => Value::Null,
        }
    }

    /// The string at row `i` of a VARCHAR or SYMBOL column (`None` if NULL or not a string).
    #[inline]
    pub fn str_at(&self, i: usize) -> Option<&str> {
        if !self.is_valid(i) {
            return None;
        }
        match &self.data {
            ColumnData::Varchar(s) => Some(s.get(i)),
            ColumnData::Symbol { codes, dict } => Some(dict.get(codes[i])),
            _ => None,
        }
    }

    /// The elements of row `i` of a `FLOAT[n]` column (`None` if NULL, out of range or not a
    /// vector column).
    #[inline]
    pub fn vector_at(&self, i: usize) -> Option<&[f32]> {
        if !self.is_valid(i) {
            return None;
        }
        match &self.data {
            ColumnData::Vector { dim, values } => {
                let d = *dim as usize;
                values.get(i * d..(i + 1) * d)
            }
            _ => None,
        }
    }

    /// Rows `from..` put in the order `order` gives (row `from + k` becomes the row
    /// `order[k]` was; `order` holds each of `from..len` once), in place: the rows before
    /// `from` are not copied. What a partition's late rows cost to sort in.
    pub fn reorder_tail(&mut self, from: usize, order: &[u32]) {
        assert_eq!(from + order.len(), self.len(), "reorder_tail: {} rows from {from} of {}", order.len(), self.len());
        debug_assert!(order.iter().all(|&i| (i as usize) >= from && (i as usize) < self.len()));
        fn fix<T: Copy>(v: &mut [T], from: usize, order: &[u32]) {
            let tail: Vec<T> = order.iter().map(|&i| v[i as usize]).collect();
            v[from..].copy_from_slice(&tail);
        }
        match &mut self.data {
            ColumnData::Bool(v) => fix(v, from, order),
            ColumnData::Int32(v) | ColumnData::Date(v) => fix(v, from, order),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => fix(v, from, order),
            ColumnData::Int128(v) => fix(v, from, order),
            ColumnData::Float32(v) => fix(v, from, order),
            ColumnData::Float64(v) => fix(v, from, order),
            ColumnData::Symbol { codes, .. } => fix(codes, from, order),
            ColumnData::Null(_) => {}
            ColumnData::Vector { dim, values } => {
                let d = *dim as usize;
                let tail = take_rows(values, d, order);
                values[from * d..].copy_from_slice(&tail);
            }
            ColumnData::Varchar(_) => {
                let head = self.slice(0, from);
                let tail = self.take(order);
                *self = Column::concat(&[&head, &tail]);
                return;
            }
        }
        if let Some(b) = &mut self.validity {
            let bits: Vec<bool> = order.iter().map(|&i| b.get(i as usize)).collect();
            bits.into_iter().enumerate().for_each(|(k, v)| b.set(from + k, v));
        }
    }

    /// Row `at[k]` set to `src`'s row `k` for every `k`, then `src`'s rows past `at.len()`
    /// appended: a few rows changed and some added without building the column again. In
    /// place when `src` has this column's type (a SYMBOL column: a dictionary of the same
    /// lineage); otherwise one copy of both. Every `at[k]` is a row of this column, and
    /// `at.len() <= src.len()`.
    pub fn patch(&mut self, at: &[u32], src: &Column) {
        assert!(at.len() <= src.len(), "patch: {} rows set from {}", at.len(), src.len());
        debug_assert!(at.iter().all(|&r| (r as usize) < self.len()));
        let n = self.len();
        if !self.patch_in_place(at, src) {
            let mut index: Vec<u32> = (0..n as u32).collect();
            for (k, &r) in at.iter().enumerate() {
                index[r as usize] = (n + k) as u32;
            }
            index.extend((n + at.len()) as u32..(n + src.len()) as u32);
            *self = Column::concat(&[self, src]).take(&index);
            return;
        }
        if self.validity.is_none() && src.validity.is_none() {
            return;
        }
        let mut valid = self.validity.take().unwrap_or_else(|| Bitmap::new_set(n));
        for (k, &r) in at.iter().enumerate() {
            valid.set(r as usize, src.is_valid(k));
        }
        (at.len()..src.len()).for_each(|k| valid.push(src.is_valid(k)));
        self.validity = Some(valid);
    }

    /// [`Column::patch`]'s values when both columns have one fixed-width type (or SYMBOL codes
    /// of one lineage); `false`, nothing changed, otherwise.
    fn patch_in_place(&mut self, at: &[u32], src: &Column) -> bool {
        fn set<T: Copy>(v: &mut Vec<T>, at: &[u32], s: &[T]) {
            for (&r, &x) in at.iter().zip(s) {
                v[r as usize] = x;
            }
            v.extend_from_slice(&s[at.len()..]);
        }
        let dict = match (&self.data, &src.data) {
            (ColumnData::Symbol { .. }, ColumnData::Symbol { .. }) => {
                match Self::common_dict([&*self, src].into_iter()) {
                    Some(d) => Some(d.clone()),
                    None => return false,
                }
            }
            _ => None,
        };
        match (&mut self.data, &src.data) {
            (ColumnData::Bool(v), ColumnData::Bool(s)) => set(v.vec_mut(0), at, s),
            (ColumnData::Int32(v), ColumnData::Int32(s)) | (ColumnData::Date(v), ColumnData::Date(s)) => {
                set(v.vec_mut(0), at, s)
            }
            (ColumnData::Int64(v), ColumnData::Int64(s))
            | (ColumnData::Timestamp(v), ColumnData::Timestamp(s))
            | (ColumnData::Interval(v), ColumnData::Interval(s)) => set(v.vec_mut(0), at, s),
            (ColumnData::Int128(v), ColumnData::Int128(s)) => set(v.vec_mut(0), at, s),
            (ColumnData::Float32(v), ColumnData::Float32(s)) => set(v.vec_mut(0), at, s),
            (ColumnData::Float64(v), ColumnData::Float64(s)) => set(v.vec_mut(0), at, s),
            (ColumnData::Symbol { codes, dict: d }, ColumnData::Symbol { codes: s, .. }) => {
                set(codes.vec_mut(0), at, s);
                if let Some(best) = dict {
                    *d = best;
                }
            }
            _ => return false,
        }
        true
    }

    /// Share the values' allocations (every type but the untyped NULL; module docs of `buf`): clones then read it without copying, and appends past a clone's rows go in
    /// place while it is held.
    pub fn share(&mut self) {
        match &mut self.data {
            ColumnData::Bool(v) => v.share(),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.share(),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.share(),
            ColumnData::Int128(v) => v.share(),
            ColumnData::Float32(v) => v.share(),
            ColumnData::Float64(v) => v.share(),
            ColumnData::Symbol { codes, .. } => codes.share(),
            ColumnData::Vector { values, .. } => values.share(),
            ColumnData::Varchar(s) => s.share(),
            ColumnData::Null(_) => {}
        }
    }

    /// Whether the values' allocation is shared ([`Column::share`]).
    pub(crate) fn is_shared(&self) -> bool {
        match &self.data {
            ColumnData::Bool(v) => v.is_shared(),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.is_shared(),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.is_shared(),
            ColumnData::Int128(v) => v.is_shared(),
            ColumnData::Float32(v) => v.is_shared(),
            ColumnData::Float64(v) => v.is_shared(),
            ColumnData::Symbol { codes, .. } => codes.is_shared(),
            ColumnData::Vector { values, .. } => values.is_shared(),
            ColumnData::Varchar(s) => s.is_shared(),
            ColumnData::Null(_) => false,
        }
    }

    /// A copy with room for `extra` more rows without growing (VARCHAR: as long as its strings
    /// are on average; vector columns are copied as they are): what a writer changes in place
    /// of a column a reader still holds, so the append right after does not copy it again to
    /// grow it.
    pub fn copy_with_room(&self, extra: usize) -> Column {
        fn room<T: Copy>(v: &[T], extra: usize) -> Vec<T> {
            let mut out = Vec::with_capacity(v.len() + extra);
            out.extend_from_slice(v);
            out
        }
        let data = map_vec!(&self.data,
            v => room(v, extra).into(),
            s => s.copy_with_room(extra),
            codes, dict => ColumnData::Symbol { codes: room(codes, extra).into(), dict: dict.clone() },
            dim, values => ColumnData::Vector { dim: *dim, values: values.clone() },
            n => *n);
        Column { data, validity: self.validity.clone() }
    }

    /// Rows `start..start + len`: a view of the same values where they are shared (a
    /// partition's column: no copy, [`crate::buf::Buf::view`]), copied otherwise (and VARCHARs
    /// always).
    pub fn slice(&self, start: usize, len: usize) -> Column {
        assert!(start + len <= self.len(), "slice {start}+{len} out of {}", self.len());
        let end = start + len;
        let data = map_vec!(&self.data,
            v => v.view(start, len),
            s => (start..end).map(|i| s.get(i)).collect(),
            codes, dict => ColumnData::Symbol { codes: codes.view(start, len), dict: dict.clone() },
            dim, values => ColumnData::Vector { dim: *dim, values: values.view(start * *dim as usize, len * *dim as usize) },
            _n => len);
        let validity = self.validity.as_ref().map(|b| {
            let mut out = Bitmap::default();
            out.append_bits(b.as_bytes(), start, len);
            out
        });
        Column::new(data, validity)
    }

    /// Repeat one value `n` times (a value of another type than `dt` is refused).
    pub fn repeat(v: &Value, dt: DataType, n: usize) -> Result<Column, StorageError> {
        let mut b = ColumnBuilder::new(dt, n);
        for _ in 0..n {
            b.push_value(v)?;
        }
        Ok(b.finish())
    }

    /// The dictionary a SYMBOL column's codes index; `None` for other types.
    pub fn symbol_dict(&self) -> Option<&Arc<Dict>> {
        match &self.data {
            ColumnData::Symbol { dict, .. } => Some(dict),
            _ => None,
        }
    }

    /// The values as `i64`s for BIGINT, TIMESTAMP and INTERVAL (nanoseconds) columns; `None` for
    /// other types. NULL slots read 0.
    pub fn as_i64_slice(&self) -> Option<&[i64]> {
        match &self.data {
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => Some(v),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
