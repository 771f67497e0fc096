//! Typed columns. Values live in plain vectors (Arrow-compatible buffers), NULLs in an optional
//! validity bitmap (`None` = no NULLs). A NULL slot holds the type's zero value so vectorized
//! kernels can run over it without branching and mask the result afterwards.

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

    /// Gather rows by index.
    pub fn take(&self, idx: &[u32]) -> Column {
        fn g<T: Copy>(v: &[T], idx: &[u32]) -> Vec<T> {
            idx.iter().map(|&i| v[i as usize]).collect()
        }
        let data = map_vec!(&self.data,
            v => g(v, idx).into(),
            s => s.take(idx),
            codes, dict => ColumnData::Symbol { codes: g(codes, idx).into(), dict: dict.clone() },
            dim, values => ColumnData::Vector { dim: *dim, values: take_rows(values, *dim as usize, idx).into() },
            _n => idx.len());
        let validity = self.validity.as_ref().map(|b| Bitmap::from_bools(idx.iter().map(|&i| b.get(i as usize))));
        Column::new(data, validity)
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

    /// Gather rows by index where [`NULL_INDEX`] yields a NULL row.
    pub fn take_opt(&self, idx: &[u32]) -> Column {
        if !idx.contains(&NULL_INDEX) {
            return self.take(idx);
        }
        let safe: Vec<u32> = idx.iter().map(|&i| if i == NULL_INDEX { 0 } else { i }).collect();
        let dt = self.data_type();
        if self.is_empty() {
            return Column::nulls(dt, idx.len());
        }
        let mut c = self.take(&safe);
        if dt == DataType::Null {
            return c;
        }
        let validity = match &c.validity {
            None => Bitmap::from_bools(idx.iter().map(|&i| i != NULL_INDEX)),
            Some(v) => Bitmap::from_bools(idx.iter().enumerate().map(|(k, &i)| i != NULL_INDEX && v.get(k))),
        };
        c.validity = Some(validity).filter(|v| !v.all_set());
        c
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

    /// Rows of `cols` one after another. All columns must share a type (`Null` columns adapt).
    pub fn concat(cols: &[&Column]) -> Column {
        let dt = cols.iter().map(|c| c.data_type()).find(|t| *t != DataType::Null).unwrap_or(DataType::Null);
        if dt == DataType::Symbol {
            if let Some(c) = Self::concat_same_lineage(cols) {
                return c;
            }
        }
        let total: usize = cols.iter().map(|c| c.len()).sum();
        let mut b = ColumnBuilder::new(dt, total);
        for c in cols {
            b.extend_from(c);
        }
        b.finish()
    }

    /// The rows `rows` of each column one after another (all of one type; `Null` columns
    /// adapt): one copy into exact-size buffers, with no slice of each column made first.
    /// Symbols keep their codes under the largest of their dictionaries when those are versions
    /// of one dictionary, and are re-coded otherwise. Errs (naming the span) when a range lies
    /// outside its column or the types differ.
    pub fn concat_ranges(spans: &[(&Column, std::ops::Range<usize>)]) -> Result<Column, String> {
        let dt = spans.iter().map(|(c, _)| c.data_type()).find(|t| *t != DataType::Null).unwrap_or(DataType::Null);
        let dict = match dt {
            DataType::Symbol => match Self::common_dict(spans.iter().map(|(c, _)| *c)) {
                Some(d) => Some(d.clone()),
                None => {
                    if let Some((c, r)) = spans.iter().find(|(c, r)| r.start > r.end || r.end > c.len()) {
                        return Err(format!("span {r:?} out of a column of {} rows", c.len()));
                    }
                    let parts: Vec<Column> = spans.iter().map(|(c, r)| c.slice(r.start, r.len())).collect();
                    return Ok(Self::concat(&parts.iter().collect::<Vec<_>>()));
                }
            },
            _ => None,
        };
        let spans: Vec<Span> = spans.iter().map(|(c, r)| Span { col: c, rows: r.clone(), remap: None }).collect();
        Self::concat_spans(dt, dict.as_ref(), &spans)
    }

    /// The largest of the columns' dictionaries when every column is a SYMBOL column (or an
    /// untyped NULL one) and their dictionaries are versions of one dictionary.
    fn common_dict<'c>(cols: impl Iterator<Item = &'c Column>) -> Option<&'c Arc<Dict>> {
        let mut best: Option<&Arc<Dict>> = None;
        for c in cols {
            match &c.data {
                ColumnData::Symbol { dict, .. } => match best {
                    Some(b) if b.lineage() != dict.lineage() => return None,
                    Some(b) if b.len() >= dict.len() => {}
                    _ => best = Some(dict),
                },
                ColumnData::Null(_) => {}
                _ => return None,
            }
        }
        best
    }

    /// Symbols whose dictionaries are versions of one dictionary concatenate their codes as they
    /// are, under the largest version.
    fn concat_same_lineage(cols: &[&Column]) -> Option<Column> {
        if cols.iter().any(|c| !matches!(c.data, ColumnData::Symbol { .. })) {
            return None;
        }
        let best = Self::common_dict(cols.iter().copied());
        let dict = best?.clone();
        let total: usize = cols.iter().map(|c| c.len()).sum();
        let mut codes = Vec::with_capacity(total);
        let any_null = cols.iter().any(|c| c.validity.is_some());
        let mut validity = Bitmap::default();
        for c in cols {
            if let ColumnData::Symbol { codes: k, .. } = &c.data {
                codes.extend_from_slice(k);
            }
            if any_null {
                match &c.validity {
                    Some(v) => v.iter().for_each(|b| validity.push(b)),
                    None => validity.extend_set(c.len()),
                }
            }
        }
        Some(Column::new(ColumnData::Symbol { codes: codes.into(), dict }, any_null.then_some(validity)))
    }

    /// The rows of `spans` one after another, as one column of type `dt` (every span's column
    /// has that type, or is an untyped NULL column). SYMBOL results are coded against `dict`:
    /// a span's codes are translated through its `remap` when it has one, else kept (they must
    /// already belong to `dict`'s lineage). One copy of the data, into exact-size buffers.
    pub fn concat_spans(dt: DataType, dict: Option<&Arc<Dict>>, spans: &[Span<'_>]) -> Result<Column, String> {
        let total: usize = spans.iter().map(|s| s.rows.len()).sum();
        for s in spans {
            if s.rows.start > s.rows.end || s.rows.end > s.col.len() {
                return Err(format!("span {:?} out of a column of {} rows", s.rows, s.col.len()));
            }
            if !matches!(s.col.data_type(), DataType::Null) && s.col.data_type() != dt {
                return Err(format!("span of type {} in a {dt} column", s.col.data_type()));
            }
        }
        macro_rules! prim {
            ($variant:ident, $zero:expr) => {{
                let mut v = Vec::with_capacity(total);
                for s in spans {
                    match &s.col.data {
                        ColumnData::$variant(src) => v.extend_from_slice(&src[s.rows.clone()]),
                        _ => v.resize(v.len() + s.rows.len(), $zero),
                    }
                }
                ColumnData::$variant(v.into())
            }};
        }
        let data = fixed_width_match!(dt, prim, {
            DataType::Varchar => {
                let bytes = spans
                    .iter()
                    .map(|s| match &s.col.data {
                        ColumnData::Varchar(v) => (v.offsets()[s.rows.end] - v.offsets()[s.rows.start]) as usize,
                        _ => 0,
                    })
                    .sum();
                let mut out = StrVec::with_capacity(total, bytes);
                for s in spans {
                    match &s.col.data {
                        ColumnData::Varchar(v) => out.extend_range(v, s.rows.clone()),
                        _ => s.rows.clone().for_each(|_| out.push("")),
                    }
                }
                ColumnData::Varchar(out)
            }
            DataType::Symbol => {
                let dict = dict.ok_or("a SYMBOL column needs a dictionary")?.clone();
                let mut codes = Vec::with_capacity(total);
                for s in spans {
                    match (&s.col.data, s.remap) {
                        (ColumnData::Symbol { codes: src, .. }, None) => codes.extend_from_slice(&src[s.rows.clone()]),
                        (ColumnData::Symbol { codes: src, .. }, Some(remap)) => {
                            for (i, &c) in src[s.rows.clone()].iter().enumerate() {
                                // NULL rows hold code 0, which may not be in `remap`.
                                let valid = s.col.is_valid(s.rows.start + i);
                                codes.push(if valid {
                                    *remap.get(c as usize).ok_or("symbol code outside its remap")?
                                } else {
                                    0
                                });
                            }
                        }
                        _ => codes.resize(codes.len() + s.rows.len(), 0),
                    }
                }
                ColumnData::Symbol { codes: codes.into(), dict }
            }
            DataType::Vector(dim) => {
                let d = dim as usize;
                let mut values = Vec::with_capacity(total * d);
                for s in spans {
                    match &s.col.data {
                        ColumnData::Vector { values: src, .. } => {
                            values.extend_from_slice(&src[s.rows.start * d..s.rows.end * d])
                        }
                        _ => values.resize(values.len() + s.rows.len() * d, 0.0),
                    }
                }
                ColumnData::Vector { dim, values: values.into() }
            }
            DataType::Null => ColumnData::Null(total),
        });
        let validity =
            spans.iter().any(|s| s.col.validity.is_some() || s.col.data_type() == DataType::Null).then(|| {
                let mut v = Bitmap::default();
                for s in spans {
                    match (&s.col.validity, &s.col.data) {
                        (_, ColumnData::Null(_)) => (0..s.rows.len()).for_each(|_| v.push(false)),
                        (Some(b), _) => v.append_bits(b.as_bytes(), s.rows.start, s.rows.len()),
                        (None, _) => v.extend_set(s.rows.len()),
                    }
                }
                v
            });
        Ok(Column::new(data, validity))
    }

    /// Rows gathered from several columns into one: `idx` rows of each part's column in turn,
    /// [`NULL_INDEX`] giving a NULL row (its slot holds the zero value). Every part's column has
    /// type `dt` (or is untyped NULL); non-empty SYMBOL parts share one dictionary lineage, whose largest
    /// version codes the result. One pass, one exact-size buffer: what `take_opt` per part
    /// followed by `concat` does in two.
    pub fn gather(dt: DataType, parts: &[(&Column, &[u32])]) -> Result<Column, String> {
        let total: usize = parts.iter().map(|(_, idx)| idx.len()).sum();
        for (c, _) in parts {
            if c.data_type() != DataType::Null && c.data_type() != dt {
                return Err(format!("gathering {} rows into a {dt} column", c.data_type()));
            }
        }
        // Per part: whether it picked NULL rows. Bounds are checked in the copy loop itself:
        // an index past the source reads as a NULL row (no second pass over the indices), and
        // one that is not NULL_INDEX is an error.
        let mut picks_null = vec![false; parts.len()];
        let mut bad: Option<(u32, usize)> = None;
        macro_rules! prim {
            ($variant:ident, $zero:expr) => {{
                let mut v = Vec::with_capacity(total);
                for ((c, idx), nulls) in parts.iter().zip(&mut picks_null) {
                    match &c.data {
                        ColumnData::$variant(src) => *nulls = gather_pick(src, idx, $zero, &mut v, &mut bad),
                        _ => v.resize(v.len() + idx.len(), $zero),
                    }
                }
                ColumnData::$variant(v.into())
            }};
        }
        let data = fixed_width_match!(dt, prim, {
            DataType::Varchar => gather_varchar(parts, total, &mut picks_null, &mut bad),
            DataType::Symbol => gather_symbol(parts, total, &mut picks_null, &mut bad)?,
            DataType::Vector(dim) => gather_vector(dim, parts, total, &mut picks_null, &mut bad),
            DataType::Null => ColumnData::Null(total),
        });
        if let Some((i, len)) = bad {
            return Err(format!("row {i} out of a column of {len} rows"));
        }
        // An untyped NULL part picks NULL rows only, whatever its indices.
        for ((c, idx), nulls) in parts.iter().zip(&mut picks_null) {
            if let ColumnData::Null(n) = c.data {
                if let Some(&i) = idx.iter().find(|&&i| i != NULL_INDEX && i as usize >= n) {
                    return Err(format!("row {i} out of a column of {n} rows"));
                }
                *nulls |= !idx.is_empty();
            }
        }
        Ok(Column::new(data, gather_validity(parts, &picks_null)))
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

/// One bit per index (LSB first), eight at a time.
fn pack_bits(idx: &[u32], valid: impl Fn(u32) -> bool) -> Vec<u8> {
    idx.chunks(8).map(|ch| ch.iter().enumerate().fold(0u8, |b, (k, &i)| b | ((valid(i) as u8) << k))).collect()
}

/// [`pack_bits`] of "not [`NULL_INDEX`]" (a gather's rows that found one): with AVX2, a
/// compare and a mask move per eight indices (the compiler's vectorization of the portable
/// loop transposed its lanes, 7% of an ASOF join that gathers two columns).
fn pack_found(idx: &[u32]) -> Vec<u8> {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { found_avx2::pack(idx) };
    }
    pack_bits(idx, |i| i != NULL_INDEX)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod found_avx2 {
    use super::{pack_bits, NULL_INDEX};
    use std::arch::x86_64::*;

    /// [`super::pack_found`] eight indices at a time.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn pack(idx: &[u32]) -> Vec<u8> {
        let none = _mm256_set1_epi32(NULL_INDEX as i32);
        let mut bytes = idx.chunks_exact(8);
        let mut out: Vec<u8> = bytes
            .by_ref()
            .map(|ch| {
                // SAFETY: `ch` holds eight u32s (32 bytes); the load is unaligned.
                let x = unsafe { _mm256_loadu_si256(ch.as_ptr().cast()) };
                let missing = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, none)));
                !(missing as u8)
            })
            .collect();
        if !bytes.remainder().is_empty() {
            out.extend(pack_bits(bytes.remainder(), |i| i != NULL_INDEX));
        }
        out
    }
}

/// [`Column::gather`]'s copy of one part's fixed-width values: `idx` rows of `src` appended to
/// `out`, an index past `src` giving `zero` (a NULL row). Whether any row missed; an index
/// past `src` that is not [`NULL_INDEX`] is recorded in `bad`.
fn gather_pick<T: Copy>(src: &[T], idx: &[u32], zero: T, out: &mut Vec<T>, bad: &mut Option<(u32, usize)>) -> bool {
    // The first wrong index is noted as the copy meets it: a LEFT join's few unmatched rows
    // (NULL_INDEX) cost no second pass over the indices.
    let (mut miss, mut wrong) = (false, None);
    out.extend(idx.iter().map(|&i| match src.get(i as usize) {
        Some(&v) => v,
        None => {
            miss = true;
            if i != NULL_INDEX && wrong.is_none() {
                wrong = Some(i);
            }
            zero
        }
    }));
    if let Some(i) = wrong {
        *bad = Some((i, src.len()));
    }
    miss
}

/// [`Column::gather`] of VARCHAR parts (an untyped NULL part gives empty strings).
fn gather_varchar(
    parts: &[(&Column, &[u32])],
    total: usize,
    picks_null: &mut [bool],
    bad: &mut Option<(u32, usize)>,
) -> ColumnData {
    let mut out = StrVec::with_capacity(total, 0);
    for ((c, idx), nulls) in parts.iter().zip(picks_null) {
        for &i in *idx {
            if (i as usize) < c.len() {
                out.push(c.str_at(i as usize).unwrap_or(""));
            } else {
                *nulls = true;
                if i != NULL_INDEX {
                    *bad = Some((i, c.len()));
                }
                out.push("");
            }
        }
    }
    ColumnData::Varchar(out)
}

/// Rows `idx` of a flat vector buffer of `dim` elements per row ([`NULL_INDEX`] or an index past
/// the end gives a row of zeros).
fn take_rows(values: &[f32], dim: usize, idx: &[u32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(idx.len() * dim);
    for &i in idx {
        let start = i as usize * dim;
        match values.get(start..start + dim) {
            Some(row) => out.extend_from_slice(row),
            None => out.resize(out.len() + dim, 0.0),
        }
    }
    out
}

/// [`Column::gather`] of `FLOAT[dim]` parts (an untyped NULL part gives rows of zeros).
fn gather_vector(
    dim: u16,
    parts: &[(&Column, &[u32])],
    total: usize,
    picks_null: &mut [bool],
    bad: &mut Option<(u32, usize)>,
) -> ColumnData {
    let d = dim as usize;
    let mut values = Vec::with_capacity(total * d);
    for ((c, idx), nulls) in parts.iter().zip(picks_null) {
        match &c.data {
            ColumnData::Vector { values: src, .. } => {
                let n = c.len();
                if idx.iter().any(|&i| i as usize >= n) {
                    *nulls = true;
                    if let Some(&b) = idx.iter().find(|&&i| i != NULL_INDEX && i as usize >= n) {
                        *bad = Some((b, n));
                    }
                }
                values.extend_from_slice(&take_rows(src, d, idx));
            }
            _ => values.resize(values.len() + idx.len() * d, 0.0),
        }
    }
    ColumnData::Vector { dim, values: values.into() }
}

/// [`Column::gather`] of SYMBOL parts: coded by the largest dictionary of their one lineage.
fn gather_symbol(
    parts: &[(&Column, &[u32])],
    total: usize,
    picks_null: &mut [bool],
    bad: &mut Option<(u32, usize)>,
) -> Result<ColumnData, String> {
    let mut dict: Option<&Arc<Dict>> = None;
    // An empty part contributes no codes (only NULL rows): its dictionary is moot.
    for (c, _) in parts.iter().filter(|(c, _)| !c.is_empty()) {
        if let ColumnData::Symbol { dict: d, .. } = &c.data {
            match dict {
                Some(b) if b.lineage() != d.lineage() => return Err("symbols of two dictionaries".into()),
                Some(b) if b.len() >= d.len() => {}
                _ => dict = Some(d),
            }
        }
    }
    let dict = dict.cloned().unwrap_or_default();
    let mut codes = Vec::with_capacity(total);
    for ((c, idx), nulls) in parts.iter().zip(picks_null) {
        match &c.data {
            ColumnData::Symbol { codes: src, .. } => *nulls = gather_pick(src, idx, 0, &mut codes, bad),
            _ => codes.resize(codes.len() + idx.len(), 0),
        }
    }
    Ok(ColumnData::Symbol { codes: codes.into(), dict })
}

/// [`Column::gather`]'s validity: none when no part has NULL rows or picked any.
fn gather_validity(parts: &[(&Column, &[u32])], picks_null: &[bool]) -> Option<Bitmap> {
    let any_null = parts.iter().zip(picks_null).any(|((c, _), &n)| n || c.validity.is_some());
    any_null.then(|| {
        let mut v = Bitmap::default();
        for ((c, idx), &nulls) in parts.iter().zip(picks_null) {
            match (&c.validity, nulls, c.data_type() == DataType::Null) {
                (_, _, true) => v.append_bits(&vec![0u8; idx.len().div_ceil(8)], 0, idx.len()),
                (None, false, _) => v.extend_set(idx.len()),
                (None, true, _) => v.append_bits(&pack_found(idx), 0, idx.len()),
                (Some(b), _, _) => {
                    v.append_bits(&pack_bits(idx, |i| i != NULL_INDEX && b.get(i as usize)), 0, idx.len())
                }
            }
        }
        v
    })
}

/// Rows `rows` of `col`, symbol codes translated through `remap` (old code → new) if given:
/// one input of [`Column::concat_spans`].
#[derive(Debug, Clone)]
pub struct Span<'a> {
    /// The column read.
    pub col: &'a Column,
    /// Its rows taken, in order.
    pub rows: std::ops::Range<usize>,
    /// Old symbol code → new code, for symbol columns joined into another dictionary; `None` keeps
    /// codes.
    pub remap: Option<&'a [u32]>,
}

/// A run of valid values of one fixed-width type, in the representation a column stores, for
/// [`ColumnBuilder::extend_valid`] and a load's splits (`ColumnSplit::push_plain`).
#[derive(Debug, Clone, Copy)]
pub enum ValidRun<'a> {
    /// For a BIGINT or TIMESTAMP (nanoseconds since 1970-01-01) column.
    I64(&'a [i64]),
    /// For an INTEGER or DATE (days since 1970-01-01) column.
    I32(&'a [i32]),
    /// For a REAL column.
    F32(&'a [f32]),
    /// For a DOUBLE column.
    F64(&'a [f64]),
    /// Codes of a SYMBOL column's dictionary lineage.
    Codes(&'a [u32]),
}

impl ValidRun<'_> {
    /// Values held.
    pub fn len(&self) -> usize {
        match self {
            ValidRun::I64(v) => v.len(),
            ValidRun::I32(v) => v.len(),
            ValidRun::F32(v) => v.len(),
            ValidRun::F64(v) => v.len(),
            ValidRun::Codes(v) => v.len(),
        }
    }

    /// Whether it holds no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn kind(&self) -> &'static str {
        match self {
            ValidRun::I64(_) => "64-bit integer",
            ValidRun::I32(_) => "32-bit integer",
            ValidRun::F32(_) => "real",
            ValidRun::F64(_) => "double",
            ValidRun::Codes(_) => "symbol code",
        }
    }
}

/// Append values one at a time or column at a time; `finish` yields the column.
#[derive(Debug)]
pub struct ColumnBuilder {
    data: ColumnData,
    /// Created at the first NULL (all earlier rows valid); `None` while there are no NULLs.
    validity: Option<Bitmap>,
    len: usize,
    dict: Option<Dict>,
}

impl ColumnBuilder {
    /// An empty builder of type `dt` with room for `capacity` rows (a SYMBOL builder starts its own
    /// dictionary).
    pub fn new(dt: DataType, capacity: usize) -> ColumnBuilder {
        let data = ColumnData::with_capacity(dt, capacity);
        let dict = (dt == DataType::Symbol).then(Dict::default);
        ColumnBuilder { data, validity: None, len: 0, dict }
    }

    /// An empty SYMBOL builder coding into `dict`, a version of a table's dictionary: its
    /// column needs no re-encoding when appended to that table, and a string the table has is
    /// looked up, not added again. Strings it adds join the dictionary's lineage for good,
    /// whether or not its rows are ever stored (no row refers to them then).
    pub fn symbols_in(dict: Dict, capacity: usize) -> ColumnBuilder {
        let data = ColumnData::with_capacity(DataType::Symbol, capacity);
        ColumnBuilder { data, validity: None, len: 0, dict: Some(dict) }
    }

    /// Rows pushed so far.
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn push_valid(&mut self, valid: bool) {
        match &mut self.validity {
            Some(v) => v.push(valid),
            None if valid => {}
            None => {
                let mut v = Bitmap::new_set(self.len);
                v.push(false);
                self.validity = Some(v);
            }
        }
        self.len += 1;
    }

    /// True when nothing has been pushed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append a NULL (the type's zero value, marked invalid).
    pub fn push_null(&mut self) {
        match &mut self.data {
            ColumnData::Bool(v) => v.push(false),
            ColumnData::Int32(v) | ColumnData::Date(v) => v.push(0),
            ColumnData::Int64(v) | ColumnData::Timestamp(v) | ColumnData::Interval(v) => v.push(0),
            ColumnData::Int128(v) => v.push(0),
            ColumnData::Float32(v) => v.push(0.0),
            ColumnData::Float64(v) => v.push(0.0),
            ColumnData::Varchar(s) => s.push(""),
            ColumnData::Symbol { codes, .. } => codes.push(0),
            ColumnData::Vector { dim, values } => values.resize(values.len() + *dim as usize, 0.0),
            ColumnData::Null(n) => *n += 1,
        }
        self.push_valid(false);
    }

    /// Push a value that already has this builder's type (or NULL). Strings go to VARCHAR or
    /// SYMBOL. Any other type is refused (nothing is pushed): callers convert first, so a
    /// mismatch is a bug, and writing it as NULL would lose data silently.
    pub fn push_value(&mut self, v: &Value) -> Result<(), StorageError> {
        let ok = match (&mut self.data, v) {
            (_, Value::Null) => false,
            (ColumnData::Bool(d), Value::Bool(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Int32(d), Value::Int32(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Int64(d), Value::Int64(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Int128(d), Value::Int128(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Float32(d), Value::Float32(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Float64(d), Value::Float64(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Timestamp(d), Value::Timestamp(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Date(d), Value::Date(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Interval(d), Value::Interval(x)) => {
                d.push(*x);
                true
            }
            (ColumnData::Varchar(d), Value::Str(s)) => {
                d.push(s);
                true
            }
            (ColumnData::Symbol { codes, .. }, Value::Str(s)) => {
                let dict = self.dict.get_or_insert_with(Dict::default);
                codes.push(dict.intern(s));
                true
            }
            (ColumnData::Vector { dim, values }, Value::Vector(x)) if x.len() == *dim as usize => {
                values.extend_from_slice(x);
                true
            }
            (d, other) => {
                return Err(StorageError::Internal(format!(
                    "a {} value pushed into a {} column",
                    other.data_type(),
                    d.data_type()
                )))
            }
        };
        if ok {
            self.push_valid(true);
        } else {
            self.push_null();
        }
        Ok(())
    }

    /// Push a string into a VARCHAR or SYMBOL column; refused (nothing pushed) for any other.
    pub fn push_str(&mut self, s: &str) -> Result<(), StorageError> {
        match &mut self.data {
            ColumnData::Varchar(d) => d.push(s),
            ColumnData::Symbol { .. } => return self.push_symbol(s).map(|_| ()),
            d => return Err(StorageError::Internal(format!("a string pushed into a {} column", d.data_type()))),
        }
        self.push_valid(true);
        Ok(())
    }

    /// Push a string into a SYMBOL column and return its code in the builder's dictionary
    /// (for [`ColumnBuilder::push_code`] of the same string later); refused for any other type.
    pub fn push_symbol(&mut self, s: &str) -> Result<u32, StorageError> {
        let ColumnData::Symbol { codes, .. } = &mut self.data else {
            let t = self.data.data_type();
            return Err(StorageError::Internal(format!("a symbol pushed into a {t} column")));
        };
        let code = self.dict.get_or_insert_with(Dict::default).intern(s);
        codes.push(code);
        self.push_valid(true);
        Ok(code)
    }

    /// Push again a string of a SYMBOL column by its code: one [`ColumnBuilder::push_symbol`]
    /// gave, or one another version of the builder's dictionary lineage handed out (see
    /// [`ColumnBuilder::symbols_in`]); refused for a code the lineage has not handed out, or
    /// another type.
    pub fn push_code(&mut self, code: u32) -> Result<(), StorageError> {
        let known = self.dict.as_mut().is_some_and(|d| d.reach(code));
        match &mut self.data {
            ColumnData::Symbol { codes, .. } if known => codes.push(code),
            d => {
                let t = d.data_type();
                let n = self.dict.as_ref().map_or(0, Dict::len);
                return Err(StorageError::Internal(format!("symbol code {code} pushed into a {t} column of {n}")));
            }
        }
        self.push_valid(true);
        Ok(())
    }

    /// Append `n` NULLs.
    pub fn push_nulls(&mut self, n: usize) {
        (0..n).for_each(|_| self.push_null());
    }

    /// Append valid values of the builder's own fixed-width type at once (a run of rows a
    /// reader typed into plain vectors); refused, nothing pushed, for another type, or for a
    /// symbol code the builder's dictionary lineage has not handed out.
    pub fn extend_valid(&mut self, values: ValidRun<'_>) -> Result<(), StorageError> {
        let n = match (&mut self.data, values) {
            (ColumnData::Int64(d) | ColumnData::Timestamp(d), ValidRun::I64(v)) => Self::extend(d.vec_mut(0), v),
            (ColumnData::Int32(d) | ColumnData::Date(d), ValidRun::I32(v)) => Self::extend(d.vec_mut(0), v),
            (ColumnData::Float32(d), ValidRun::F32(v)) => Self::extend(d.vec_mut(0), v),
            (ColumnData::Float64(d), ValidRun::F64(v)) => Self::extend(d.vec_mut(0), v),
            (ColumnData::Symbol { codes, .. }, ValidRun::Codes(v)) => {
                let top = v.iter().copied().max();
                let known = top.is_none_or(|top| self.dict.as_mut().is_some_and(|d| d.reach(top)));
                if !known {
                    return Err(StorageError::Internal(format!("symbol code {top:?} past the builder's dictionary")));
                }
                Self::extend(codes.vec_mut(0), v)
            }
            (d, v) => {
                let t = d.data_type();
                return Err(StorageError::Internal(format!("{} values extended into a {t} column", v.kind())));
            }
        };
        if let Some(bits) = &mut self.validity {
            bits.extend_set(n);
        }
        self.len += n;
        Ok(())
    }

    fn extend<T: Copy>(d: &mut Vec<T>, v: &[T]) -> usize {
        d.extend_from_slice(v);
        v.len()
    }

    /// Append all rows of `c` (same type, or an untyped NULL column).
    pub fn extend_from(&mut self, c: &Column) {
        if let ColumnData::Null(n) = c.data {
            for _ in 0..n {
                self.push_null();
            }
            return;
        }
        match (&mut self.data, &c.data) {
            (ColumnData::Bool(a), ColumnData::Bool(b)) => a.extend_from_slice(b),
            (ColumnData::Int32(a), ColumnData::Int32(b)) | (ColumnData::Date(a), ColumnData::Date(b)) => {
                a.extend_from_slice(b)
            }
            (ColumnData::Int64(a), ColumnData::Int64(b))
            | (ColumnData::Timestamp(a), ColumnData::Timestamp(b))
            | (ColumnData::Interval(a), ColumnData::Interval(b)) => a.extend_from_slice(b),
            (ColumnData::Int128(a), ColumnData::Int128(b)) => a.extend_from_slice(b),
            (ColumnData::Float32(a), ColumnData::Float32(b)) => a.extend_from_slice(b),
            (ColumnData::Float64(a), ColumnData::Float64(b)) => a.extend_from_slice(b),
            (ColumnData::Vector { dim: da, values: a }, ColumnData::Vector { dim: db, values: b }) if da == db => {
                a.extend_from_slice(b)
            }
            (ColumnData::Varchar(a), ColumnData::Varchar(b)) => a.extend(b),
            (ColumnData::Varchar(a), ColumnData::Symbol { codes, dict }) => {
                for (i, &k) in codes.iter().enumerate() {
                    a.push(if c.is_valid(i) { dict.get(k) } else { "" });
                }
            }
            (ColumnData::Symbol { codes: a, .. }, ColumnData::Symbol { codes: b, dict }) => {
                let own = self.dict.get_or_insert_with(Dict::default);
                // Remap through our dictionary: codes from different dictionaries differ.
                let mut remap: Vec<u32> = vec![u32::MAX; dict.len()];
                for (i, &k) in b.iter().enumerate() {
                    if !c.is_valid(i) {
                        a.push(0);
                        continue;
                    }
                    let r = &mut remap[k as usize];
                    if *r == u32::MAX {
                        *r = own.intern(dict.get(k));
                    }
                    a.push(*r);
                }
            }
            (ColumnData::Symbol { codes: a, .. }, ColumnData::Varchar(b)) => {
                let own = self.dict.get_or_insert_with(Dict::default);
                for s in b.iter() {
                    a.push(own.intern(s));
                }
            }
            (a, b) => {
                debug_assert!(false, "extend_from: {:?} into {:?}", b.data_type(), a.data_type());
                for _ in 0..c.len() {
                    self.push_null();
                }
                return;
            }
        }
        match (&c.validity, &mut self.validity) {
            (None, None) => {}
            (None, Some(mine)) => mine.extend_set(c.len()),
            (Some(v), mine) => {
                let mine = mine.get_or_insert_with(|| Bitmap::new_set(self.len));
                mine.append_bits(v.as_bytes(), 0, v.len());
            }
        }
        self.len += c.len();
    }

    /// The built column (its dictionary frozen for SYMBOL; the bitmap dropped if no NULL was
    /// pushed).
    pub fn finish(self) -> Column {
        let mut data = self.data;
        if let (ColumnData::Symbol { dict, .. }, Some(d)) = (&mut data, self.dict) {
            *dict = Arc::new(d);
        }
        let validity = if data.data_type() == DataType::Null { None } else { self.validity };
        Column::new(data, validity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_of_another_type_is_refused_not_written_as_null() {
        let mut b = ColumnBuilder::new(DataType::Float64, 2);
        b.push_value(&Value::Float64(1.5)).expect("same type");
        let err = b.push_value(&Value::Int64(2)).expect_err("BIGINT into DOUBLE");
        assert!(err.to_string().contains("BIGINT"), "{err}");
        assert!(b.push_str("x").is_err());
        b.push_value(&Value::Null).expect("NULL fits any type");
        let c = b.finish();
        assert_eq!(c.len(), 2, "the refused values pushed nothing");
        assert_eq!((c.get(0), c.get(1)), (Value::Float64(1.5), Value::Null));
        assert!(Column::repeat(&Value::Bool(true), DataType::Int32, 3).is_err());
    }

    /// A random column of `n` rows of `dt`, about a fifth of them NULL.
    fn random_column(rng: &mut crate::rng::XorShift, dt: DataType, n: usize) -> Column {
        let mut b = ColumnBuilder::new(dt, n);
        for _ in 0..n {
            let x = rng.below(1000) as i64;
            let v = match dt {
                _ if rng.below(5) == 0 => Value::Null,
                DataType::Float64 => Value::Float64(x as f64 / 8.0),
                DataType::Timestamp => Value::Timestamp(x),
                DataType::Symbol | DataType::Varchar => Value::Str(format!("s{}", x % 30)),
                _ => Value::Int64(x),
            };
            b.push_value(&v).expect("a value of the column's type");
        }
        b.finish()
    }

    /// `patch` reads as setting the rows one by one and appending the rest: in place (one
    /// type, one dictionary lineage) or not (VARCHAR, another dictionary, an untyped column).
    #[test]
    fn patch_sets_rows_then_appends() {
        let mut rng = crate::rng::XorShift::new(0x9A7C);
        let types = [DataType::Int64, DataType::Float64, DataType::Timestamp, DataType::Symbol, DataType::Varchar];
        for case in 0..200 {
            let dt = types[case % types.len()];
            let (n, m) = (1 + rng.index(40), 1 + rng.index(20));
            let all = random_column(&mut rng, dt, n + m);
            let mut col = all.slice(0, n);
            let src = match case % 7 {
                // Another dictionary (a builder of its own), or an untyped NULL column.
                0 => random_column(&mut rng, dt, m),
                1 => Column::nulls(DataType::Null, m),
                _ => all.slice(n, m),
            };
            let set = rng.index(m.min(n) + 1);
            let mut at: Vec<u32> = (0..n as u32).collect();
            (0..n).for_each(|i| at.swap(i, rng.index(n)));
            at.truncate(set);
            let mut want: Vec<Value> = (0..n).map(|i| col.get(i)).collect();
            for (k, &r) in at.iter().enumerate() {
                want[r as usize] = src.get(k);
            }
            want.extend((set..m).map(|k| src.get(k)));
            col.patch(&at, &src);
            let got: Vec<Value> = (0..col.len()).map(|i| col.get(i)).collect();
            assert_eq!(got, want, "case {case}: {dt:?}, rows {at:?} of {n}, {m} from");
            assert_eq!(col.data_type(), dt, "case {case}");
        }
    }

    /// A copy with room holds the same values (NULLs too) and takes `extra` rows without
    /// moving its buffer.
    #[test]
    fn a_copy_with_room_grows_in_place() {
        let mut b = ColumnBuilder::new(DataType::Int64, 3);
        for v in [Value::Int64(4), Value::Null, Value::Int64(6)] {
            b.push_value(&v).expect("push");
        }
        let c = b.finish();
        let mut copy = c.copy_with_room(100);
        assert_eq!((0..3).map(|i| copy.get(i)).collect::<Vec<_>>(), (0..3).map(|i| c.get(i)).collect::<Vec<_>>());
        let ColumnData::Int64(v) = copy.data_mut() else { panic!("an Int64 column") };
        let at = v.as_ptr();
        v.extend(std::iter::repeat_n(1, 100));
        assert_eq!(at, v.as_ptr(), "the room was there");
        let s = Column::from_data(ColumnData::Varchar(["ab", "cde", ""].into_iter().collect()));
        let mut copy = s.copy_with_room(100);
        let ColumnData::Varchar(v) = copy.data_mut() else { panic!("a VARCHAR column") };
        let at = v.bytes().as_ptr();
        (0..100).for_each(|_| v.push("xy"));
        assert_eq!((at, v.len(), v.get(1)), (v.bytes().as_ptr(), 103, "cde"), "the room was there");
    }

    #[test]
    fn builder_take_concat() {
        let mut b = ColumnBuilder::new(DataType::Int64, 4);
        b.push_value(&Value::Int64(1)).expect("push");
        b.push_null();
        b.push_value(&Value::Int64(3)).expect("push");
        let c = b.finish();
        assert_eq!(c.len(), 3);
        assert_eq!(c.null_count(), 1);
        let t = c.take_opt(&[2, NULL_INDEX, 0]);
        assert_eq!(t.get(0), Value::Int64(3));
        assert_eq!(t.get(1), Value::Null);
        assert_eq!(t.get(2), Value::Int64(1));
        let cc = Column::concat(&[&c, &t]);
        assert_eq!(cc.len(), 6);
        assert_eq!(cc.null_count(), 2);
    }

    #[test]
    fn symbols_remap_across_dicts() {
        let mut a = ColumnBuilder::new(DataType::Symbol, 2);
        a.push_str("x").expect("push");
        a.push_str("y").expect("push");
        let mut b = ColumnBuilder::new(DataType::Symbol, 2);
        b.push_str("y").expect("push");
        b.push_str("z").expect("push");
        let c = Column::concat(&[&a.finish(), &b.finish()]);
        let got: Vec<_> = (0..4).map(|i| c.get(i)).collect();
        assert_eq!(got, ["x", "y", "y", "z"].map(|s| Value::Str(s.into())));
    }

    /// `concat_spans` against the reference: slices concatenated, compared value by value, for
    /// every type, random NULLs, random (also empty and unaligned) spans and an untyped NULL
    /// span; symbols from two dictionaries translated into a third.
    /// Runs of valid values go into the columns that store them as they are, after a NULL as
    /// well; a run of another width is refused and changes nothing.
    #[test]
    fn extend_valid_takes_each_width_into_its_columns() {
        let mut d = ColumnBuilder::new(DataType::Date, 4);
        d.push_null();
        d.extend_valid(ValidRun::I32(&[19_724, -1])).expect("days into a DATE column");
        let d = d.finish();
        assert_eq!((d.len(), d.get(0), d.get(2)), (3, Value::Null, Value::Date(-1)));
        let mut f = ColumnBuilder::new(DataType::Float32, 2);
        f.extend_valid(ValidRun::F32(&[1.5, -0.0])).expect("reals into a REAL column");
        assert!(f.extend_valid(ValidRun::F64(&[2.0])).is_err(), "a double run into a REAL column");
        let f = f.finish();
        assert_eq!((f.len(), f.get(1)), (2, Value::Float32(-0.0)));
        assert_eq!(ValidRun::Codes(&[1, 2, 3]).len(), 3);
        assert!(ValidRun::F64(&[]).is_empty());
    }

    #[test]
    fn concat_spans_matches_slices() {
        let mut rng = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut rnd = move |n: u64| rng.below(n);
        let value = |dt: DataType, r: u64| match dt {
            DataType::Bool => Value::Bool(r.is_multiple_of(2)),
            DataType::Int32 => Value::Int32(r as i32 - 50),
            DataType::Int64 => Value::Int64(r as i64 * 1_000_003),
            DataType::Float32 => Value::Float32(r as f32 / 3.0),
            DataType::Float64 => Value::Float64(r as f64 / 7.0),
            DataType::Timestamp => Value::Timestamp(r as i64),
            DataType::Date => Value::Date(r as i32),
            DataType::Interval => Value::Interval(r as i64),
            _ => Value::Str(format!("s{}", r % 13).repeat(1 + (r % 3) as usize)),
        };
        let types = [
            DataType::Bool,
            DataType::Int32,
            DataType::Int64,
            DataType::Float32,
            DataType::Float64,
            DataType::Timestamp,
            DataType::Date,
            DataType::Interval,
            DataType::Varchar,
            DataType::Symbol,
        ];
        for dt in types {
            for _round in 0..20 {
                let cols: Vec<Column> = (0..3)
                    .map(|_| {
                        let n = rnd(40) as usize;
                        let mut b = ColumnBuilder::new(dt, n);
                        for _ in 0..n {
                            let r = rnd(100);
                            if r < 15 {
                                b.push_null();
                            } else {
                                b.push_value(&value(dt, r)).expect("push");
                            }
                        }
                        b.finish()
                    })
                    .chain(std::iter::once(Column::nulls(DataType::Null, 5)))
                    .collect();
                let mut target = Dict::default();
                target.intern("unrelated");
                let remaps: Vec<Option<Vec<u32>>> = cols
                    .iter()
                    .map(|c| match &c.data {
                        ColumnData::Symbol { dict, .. } => Some(dict.iter().map(|s| target.intern(s)).collect()),
                        _ => None,
                    })
                    .collect();
                let target = Arc::new(target);
                let spans: Vec<Span> = (0..6)
                    .map(|_| {
                        let k = rnd(cols.len() as u64) as usize;
                        let a = rnd(cols[k].len() as u64 + 1) as usize;
                        let b = a + rnd((cols[k].len() - a) as u64 + 1) as usize;
                        Span { col: &cols[k], rows: a..b, remap: remaps[k].as_deref() }
                    })
                    .collect();
                let got = Column::concat_spans(dt, Some(&target), &spans).expect("spans of the right type");
                let want: Vec<Value> = spans.iter().flat_map(|s| s.rows.clone().map(move |i| s.col.get(i))).collect();
                assert_eq!(got.len(), want.len());
                assert_eq!(got.data_type(), dt);
                for (i, w) in want.iter().enumerate() {
                    assert_eq!(&got.get(i), w, "{dt} row {i}");
                }
                if let ColumnData::Symbol { dict, .. } = &got.data {
                    assert!(Arc::ptr_eq(dict, &target));
                }
            }
        }
        let ints = Column::from_data(ColumnData::Int64(vec![1, 2].into()));
        let bad = [Span { col: &ints, rows: 0..1, remap: None }];
        assert!(Column::concat_spans(DataType::Float64, None, &bad).is_err());
        let out_of_range = [Span { col: &ints, rows: 1..3, remap: None }];
        assert!(Column::concat_spans(DataType::Int64, None, &out_of_range).is_err());
    }

    /// The found-row bits with AVX2 (where the CPU has it) are the portable ones, every length
    /// around a byte; a NULL-free source gives its values where an index found one and NULL
    /// elsewhere; an index past the source (not NULL_INDEX) is an error naming the first.
    #[test]
    fn gather_marks_rows_that_found_none_and_refuses_wrong_indices() {
        let mut rng = crate::rng::XorShift::new(0x9e37_79b9_7f4a_7c15);
        let src = Column::from_data(ColumnData::Float64((0..50).map(f64::from).collect()));
        for n in 0..80 {
            let idx: Vec<u32> =
                (0..n).map(|_| if rng.below(3) == 0 { NULL_INDEX } else { rng.below(50) as u32 }).collect();
            assert_eq!(pack_found(&idx), pack_bits(&idx, |i| i != NULL_INDEX), "{idx:?}");
            let got = Column::gather(DataType::Float64, &[(&src, &idx)]).expect("indices in range");
            for (k, &i) in idx.iter().enumerate() {
                let want = if i == NULL_INDEX { Value::Null } else { Value::Float64(f64::from(i)) };
                assert_eq!(got.get(k), want, "row {k} of {idx:?}");
            }
        }
        let wrong = [1, NULL_INDEX, 52, 3, 70];
        let err = Column::gather(DataType::Float64, &[(&src, &wrong)]).expect_err("row 52 of 50");
        assert_eq!(err, "row 52 out of a column of 50 rows");
    }

    /// `gather` against `take_opt` per part then `concat`, for every type, with NULL rows in the
    /// sources, NULL_INDEX picks and an untyped NULL part.
    #[test]
    fn gather_matches_take_opt_then_concat() {
        let mut rng = crate::rng::XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut rnd = move |n: u64| rng.below(n);
        for dt in [
            DataType::Bool,
            DataType::Int32,
            DataType::Int64,
            DataType::Float64,
            DataType::Timestamp,
            DataType::Varchar,
            DataType::Symbol,
        ] {
            // One dictionary lineage for the symbol parts, as one table's partitions have.
            let mut dict = Dict::default();
            for s in ["a", "b", "c", "d"] {
                dict.intern(s);
            }
            let dict = Arc::new(dict);
            for _round in 0..20 {
                let cols: Vec<Column> = (0..3)
                    .map(|_| {
                        let n = 1 + rnd(30) as usize;
                        let mut b = ColumnBuilder::new(dt, n);
                        for _ in 0..n {
                            let r = rnd(100);
                            match (r < 15, dt) {
                                (true, _) => b.push_null(),
                                (_, DataType::Bool) => b.push_value(&Value::Bool(r % 2 == 1)).expect("push"),
                                (_, DataType::Int32) => b.push_value(&Value::Int32(r as i32)).expect("push"),
                                (_, DataType::Int64) => b.push_value(&Value::Int64(r as i64 - 40)).expect("push"),
                                (_, DataType::Float64) => b.push_value(&Value::Float64(r as f64 / 3.0)).expect("push"),
                                (_, DataType::Timestamp) => {
                                    b.push_value(&Value::Timestamp(r as i64 * 1000)).expect("push")
                                }
                                (_, _) => b.push_str(["a", "b", "c", "d"][(r % 4) as usize]).expect("push"),
                            }
                        }
                        let mut c = b.finish();
                        if let ColumnData::Symbol { codes, .. } = &c.data {
                            // Re-code against the shared dictionary.
                            let strs: Vec<Option<String>> = (0..codes.len())
                                .map(|i| c.str_at(i).map(str::to_string).filter(|_| c.is_valid(i)))
                                .collect();
                            let codes =
                                strs.iter().map(|s| s.as_deref().and_then(|s| dict.code(s)).unwrap_or(0)).collect();
                            c.data = ColumnData::Symbol { codes, dict: dict.clone() };
                        }
                        c
                    })
                    .chain(std::iter::once(Column::nulls(DataType::Null, 4)))
                    .collect();
                let idx: Vec<Vec<u32>> = cols
                    .iter()
                    .map(|c| {
                        (0..rnd(25))
                            .map(|_| if rnd(6) == 0 { NULL_INDEX } else { rnd(c.len() as u64) as u32 })
                            .collect()
                    })
                    .collect();
                let parts: Vec<(&Column, &[u32])> = cols.iter().zip(&idx).map(|(c, i)| (c, i.as_slice())).collect();
                let got = Column::gather(dt, &parts).expect("parts of the right type");
                let want: Vec<Value> = parts
                    .iter()
                    .flat_map(|(c, idx)| {
                        idx.iter().map(move |&i| if i == NULL_INDEX { Value::Null } else { c.get(i as usize) })
                    })
                    .collect();
                assert_eq!(got.len(), want.len());
                for (i, w) in want.iter().enumerate() {
                    assert_eq!(&got.get(i), w, "{dt} row {i}");
                }
            }
        }
        let ints = Column::from_data(ColumnData::Int64(vec![1, 2].into()));
        assert!(Column::gather(DataType::Int64, &[(&ints, &[2])]).is_err());
        assert!(Column::gather(DataType::Int64, &[(&ints, &[0, NULL_INDEX, 7])]).is_err());
        assert!(Column::gather(DataType::Float64, &[(&ints, &[0])]).is_err());
        let strs = Column::from_data(ColumnData::Varchar(StrVec::from_iter(["x"])));
        assert!(Column::gather(DataType::Varchar, &[(&strs, &[0, 1])]).is_err());
        let nulls = Column::nulls(DataType::Null, 2);
        assert!(Column::gather(DataType::Int64, &[(&ints, &[1]), (&nulls, &[2])]).is_err());
        let ok = Column::gather(DataType::Int64, &[(&ints, &[1]), (&nulls, &[1, NULL_INDEX])]).expect("in range");
        assert_eq!((ok.get(0), ok.get(1), ok.get(2)), (Value::Int64(2), Value::Null, Value::Null));
    }
}
