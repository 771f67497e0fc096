//! Engine columns as Arrow arrays that share the column's memory, for consumers in the same
//! process (the Python package's Arrow C stream and DLPack views).
//!
//! A result column is an `Arc<Column>`; the values a shared column holds are never changed (a
//! table that appends to a partition column it shares writes past them, and any other change
//! copies it first: `zepto_storage::buf`), so an Arrow buffer may point straight into its
//! values as long as it keeps the `Arc` alive ([`Buffer::from_custom_allocation`]). Every
//! fixed-width type, validity bitmaps (Arrow's bit layout is ours), VARCHAR (offsets and bytes
//! are `LargeUtf8`'s layout) and SYMBOL codes (the keys of a `Dictionary(Int32, Utf8)`) are
//! shared; what is copied is BOOLEAN (one byte per value here, one bit in Arrow) and a SYMBOL
//! column's dictionary strings (one per distinct value, not per row).
//!
//! The types are [`crate::arrow::to_arrow`]'s (what the HTTP door sends): SYMBOL is
//! `Dictionary(Int32, Utf8)`, the keys being the `u32` codes' own buffer read as `i32` (the
//! same bits: a dictionary holds at most `i32::MAX` strings, so no code of a row is negative).

use arrow_array::types::{Date32Type, Float32Type, Float64Type, Int32Type, Int64Type, TimestampNanosecondType};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, LargeStringArray, NullArray, PrimitiveArray,
    StringArray,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use std::ptr::NonNull;
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, Dict};

/// A buffer over `v`, which lives inside `owner` (kept alive by the buffer).
fn share<T: ArrowNativeType>(owner: &Arc<Column>, v: &[T]) -> Buffer {
    let bytes = std::mem::size_of_val(v);
    let ptr = NonNull::from(v).cast::<u8>();
    // SAFETY: `v` borrows from `owner`'s heap data, which the buffer keeps alive by holding a
    // clone of the `Arc`, and which is never written while shared (see the module docs); the
    // pointer is non-null and aligned for `T` (a `Vec`'s, or a dangling aligned one when
    // empty), and `bytes` is exactly the slice's length in bytes.
    unsafe { Buffer::from_custom_allocation(ptr, bytes, owner.clone()) }
}

fn prim<T: ArrowPrimitiveType>(owner: &Arc<Column>, v: &[T::Native], nulls: Option<NullBuffer>) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::new(share(owner, v), 0, v.len()), nulls))
}

/// `c`'s validity as Arrow nulls, sharing the bitmap.
fn nulls(c: &Arc<Column>) -> Option<NullBuffer> {
    let v = c.validity()?;
    let bits = BooleanBuffer::new(share(c, v.as_bytes()), 0, v.len());
    Some(NullBuffer::new(bits))
}

/// Shares the columns of one result as Arrow arrays, building each SYMBOL dictionary's Arrow
/// values once for all the batches that use it (a table's partitions share one dictionary).
/// [`dict_values`] keeps only the newest version's values beside a dictionary; this per-answer
/// list also spares a batch holding an older, shorter version (partitions written before the
/// dictionary grew) from building its values again for every batch.
#[derive(Default)]
pub struct Exporter {
    dicts: Vec<(Arc<Dict>, ArrayRef)>,
}

impl Exporter {
    /// `c` (of `rows` rows) as an Arrow array sharing its memory; see the module docs for the
    /// types and for what is copied. Errors only for a SYMBOL dictionary too large for Arrow.
    pub fn column(&mut self, c: &Arc<Column>, rows: usize) -> Result<ArrayRef, String> {
        let n = nulls(c);
        Ok(match &c.data() {
            ColumnData::Bool(v) => Arc::new(BooleanArray::new(BooleanBuffer::from(v.as_slice()), n)),
            ColumnData::Int32(v) => prim::<Int32Type>(c, v, n),
            ColumnData::Int64(v) | ColumnData::Interval(v) => prim::<Int64Type>(c, v, n),
            ColumnData::Int128(v) => Arc::new(
                PrimitiveArray::<arrow_array::types::Decimal128Type>::new(
                    ScalarBuffer::new(share(c, v), 0, v.len()),
                    n,
                )
                .with_precision_and_scale(38, 0)
                .map_err(|e| e.to_string())?,
            ),
            ColumnData::Float32(v) => prim::<Float32Type>(c, v, n),
            ColumnData::Float64(v) => prim::<Float64Type>(c, v, n),
            ColumnData::Timestamp(v) => prim::<TimestampNanosecondType>(c, v, n),
            ColumnData::Date(v) => prim::<Date32Type>(c, v, n),
            ColumnData::Varchar(s) => {
                let offsets = OffsetBuffer::new(ScalarBuffer::new(share(c, s.offsets()), 0, s.offsets().len()));
                let bytes = share(c, s.bytes());
                debug_assert!(LargeStringArray::try_new(offsets.clone(), bytes.clone(), n.clone()).is_ok());
                // SAFETY: a StrVec's offsets start at 0, never decrease and end at its byte
                // length, and its bytes are UTF-8 at every offset (it is built from `&str`s).
                Arc::new(unsafe { LargeStringArray::new_unchecked(offsets, bytes, n) })
            }
            ColumnData::Symbol { codes, dict } => {
                let values = self.values(dict)?;
                // The codes' bytes as i32 keys: every code of a row is below the dictionary's
                // length, which `values` checked fits in i32.
                let keys = PrimitiveArray::<Int32Type>::new(ScalarBuffer::new(share(c, codes), 0, codes.len()), n);
                debug_assert!(DictionaryArray::try_new(keys.clone(), values.clone()).is_ok());
                // SAFETY: the code of every non-NULL row indexes its dictionary (a column
                // invariant, checked when one is built from outside data); NULL rows' codes are
                // never read.
                Arc::new(unsafe { DictionaryArray::new_unchecked(keys, values) })
            }
            ColumnData::Vector { dim, values } => {
                let child = prim::<Float32Type>(c, values, None);
                let field = Arc::new(arrow_schema::Field::new("item", arrow_schema::DataType::Float32, true));
                Arc::new(
                    arrow_array::FixedSizeListArray::try_new(field, i32::from(*dim), child, n)
                        .map_err(|e| e.to_string())?,
                )
            }
            ColumnData::Null(_) => Arc::new(NullArray::new(rows)),
        })
    }

    /// `dict`'s strings as an Arrow array, made on first use.
    fn values(&mut self, dict: &Arc<Dict>) -> Result<ArrayRef, String> {
        if let Some((_, v)) = self.dicts.iter().find(|(d, _)| Arc::ptr_eq(d, dict)) {
            return Ok(v.clone());
        }
        let values = dict_values(dict)?;
        self.dicts.push((dict.clone(), values.clone()));
        Ok(values)
    }
}

/// `dict`'s strings as Arrow `Utf8` values (code `i` is value `i`): made once per dictionary
/// length and kept beside the dictionary ([`Dict::derived`]), so answers over the same table
/// share them until it grows. Errors for a dictionary too large for Arrow's `Utf8`.
pub fn dict_values(dict: &Dict) -> Result<ArrayRef, String> {
    let values = dict.derived(|d| -> Result<ArrayRef, String> {
        if i32::try_from(d.len()).is_err() {
            return Err(format!("symbol dictionary of {} strings is too large", d.len()));
        }
        let bytes: usize = d.iter().map(str::len).sum();
        if i32::try_from(bytes).is_err() {
            return Err(format!("symbol dictionary of {bytes} bytes is too large for Arrow's Utf8"));
        }
        Ok(Arc::new(StringArray::from_iter_values(d.iter())))
    });
    values.as_ref().clone()
}

/// One column alone as an Arrow array sharing its memory ([`Exporter::column`]).
pub fn share_column(c: &Arc<Column>, rows: usize) -> Result<ArrayRef, String> {
    Exporter::default().column(c, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Array;
    use zepto_storage::{Bitmap, Dict, StrVec};

    fn values_ptr(a: &ArrayRef, buffer: usize) -> usize {
        a.to_data().buffers()[buffer].as_ptr() as usize
    }

    #[test]
    fn fixed_width_columns_and_bitmaps_are_shared() {
        let mut valid = Bitmap::new_set(3);
        valid.set(1, false);
        let c = Arc::new(Column::new(ColumnData::Int64(vec![1, i64::MIN, 3].into()), Some(valid)));
        let a = share_column(&c, 3).expect("share");
        let ColumnData::Int64(v) = &c.data() else { unreachable!() };
        assert_eq!(values_ptr(&a, 0), v.as_ptr() as usize);
        assert_eq!(
            a.nulls().map(|b| b.buffer().as_ptr() as usize),
            c.validity().map(|b| b.as_bytes().as_ptr() as usize)
        );
        assert_eq!(a.null_count(), 1);
        assert_eq!(a.as_any().downcast_ref::<arrow_array::Int64Array>().map(|x| x.value(2)), Some(3));
        // The array outlives every other owner of the column.
        let weak = Arc::downgrade(&c);
        drop(c);
        assert!(weak.upgrade().is_some(), "the array keeps the column alive");
        assert_eq!(a.as_any().downcast_ref::<arrow_array::Int64Array>().map(|x| x.value(0)), Some(1));
        drop(a);
        assert!(weak.upgrade().is_none(), "dropping the array frees the column");
    }

    #[test]
    fn strings_and_symbol_codes_are_shared() {
        let mut s = StrVec::default();
        for x in ["", "é", "abc"] {
            s.push(x);
        }
        let c = Arc::new(Column::from_data(ColumnData::Varchar(s)));
        let a = share_column(&c, 3).expect("share");
        let ColumnData::Varchar(sv) = &c.data() else { unreachable!() };
        assert_eq!(values_ptr(&a, 1), sv.bytes().as_ptr() as usize);
        let got: Vec<_> = a.as_any().downcast_ref::<LargeStringArray>().expect("utf8").iter().collect();
        assert_eq!(got, vec![Some(""), Some("é"), Some("abc")]);

        let mut d = Dict::default();
        let codes = vec![d.intern("b"), d.intern("a"), d.intern("b")];
        let c = Arc::new(Column::from_data(ColumnData::Symbol { codes: codes.into(), dict: Arc::new(d) }));
        let a = share_column(&c, 3).expect("share");
        let ColumnData::Symbol { codes, .. } = &c.data() else { unreachable!() };
        let dict = a.as_any().downcast_ref::<DictionaryArray<Int32Type>>().expect("dictionary");
        assert_eq!(dict.keys().values().as_ptr() as usize, codes.as_ptr() as usize);
        let values = dict.values().as_any().downcast_ref::<StringArray>().expect("values");
        let got: Vec<_> = dict.keys().iter().map(|k| k.map(|k| values.value(k as usize))).collect();
        assert_eq!(got, vec![Some("b"), Some("a"), Some("b")]);
    }

    #[test]
    fn batches_of_one_dictionary_share_its_arrow_values() {
        let mut d = Dict::default();
        let (a, b) = (d.intern("a"), d.intern("b"));
        let dict = Arc::new(d);
        let part = |codes: Vec<u32>| {
            Arc::new(Column::from_data(ColumnData::Symbol { codes: codes.into(), dict: dict.clone() }))
        };
        let mut ex = Exporter::default();
        let x = ex.column(&part(vec![a, b]), 2).expect("x");
        let y = ex.column(&part(vec![b]), 1).expect("y");
        let values = |arr: &ArrayRef| {
            arr.as_any().downcast_ref::<DictionaryArray<Int32Type>>().expect("dictionary").values().clone()
        };
        assert!(Arc::ptr_eq(&values(&x), &values(&y)));
        // An all-NULL column over an empty dictionary is a valid array.
        let empty = Arc::new(Dict::default());
        let mut nulls = Bitmap::new_set(2);
        nulls.set(0, false);
        nulls.set(1, false);
        let c = Arc::new(Column::new(ColumnData::Symbol { codes: vec![0, 0].into(), dict: empty }, Some(nulls)));
        let arr = ex.column(&c, 2).expect("all NULL");
        assert_eq!(arr.null_count(), 2);
        arr.to_data().validate_full().expect("valid");
    }
}
