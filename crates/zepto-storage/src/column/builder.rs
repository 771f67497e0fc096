//! Columns built a value, a run or a column at a time ([`ColumnBuilder`]), and the runs of
//! valid fixed-width values a builder or a load's split takes whole ([`ValidRun`]).

use super::{Column, ColumnData};
use crate::bitmap::Bitmap;
use crate::dict::Dict;
use crate::error::StorageError;
use crate::types::DataType;
use crate::value::Value;
use std::sync::Arc;

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
