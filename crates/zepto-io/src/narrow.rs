//! Engine columns as the narrowest Arrow arrays that hold them exactly, for bytes that are
//! written once and read back rarely: the write-ahead log's batches.
//!
//! Why: a wide ILP row (10 tags, 10 integer fields) is 128 bytes as [`crate::arrow::to_arrow`]
//! writes it (every integer 8 bytes, every symbol code 4) and about 30 narrowed (fields of
//! 0..100 in one byte, the codes of a batch's small dictionaries in one or two). Every byte of
//! the log is copied into the stream, into the record, into the page cache and onto the disk
//! at each fsync, and the log's size sets how often a checkpoint runs: narrowing costs one
//! pass over each integer column, which the plain conversion made anyway (it copies).
//!
//! What narrows: `INTEGER` and `BIGINT` values to the smallest of `Int8`/`Int16`/`Int32` that
//! holds every slot (NULL slots included, so nothing is read through the validity bitmap), and
//! SYMBOL codes to the smallest key type that indexes the column's dictionary. Everything else
//! is [`crate::arrow::to_arrow`]'s. A reader gives the column its declared type back:
//! [`crate::arrow::Acc`] widens every signed integer width into an INTEGER, BIGINT, HUGEINT or
//! INTERVAL column, and takes dictionary keys of every width, so a stream read with the
//! table's schema ([`crate::ipc::read_ipc_stream`]) yields the columns that were written.

use crate::arrow::{null_buffer, to_arrow};
use crate::export::dict_values;
use arrow_array::types::{ArrowDictionaryKeyType, Int16Type, Int32Type, Int8Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, DictionaryArray, PrimitiveArray};
use arrow_buffer::ScalarBuffer;
use std::sync::Arc;
use zepto_storage::{Column, ColumnData, Dict};

/// The narrowest integer type holding every value of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Width {
    I8,
    I16,
    I32,
    Full,
}

impl Width {
    fn of(min: i64, max: i64) -> Width {
        let fits = |lo: i64, hi: i64| lo <= min && max <= hi;
        if fits(i8::MIN.into(), i8::MAX.into()) {
            Width::I8
        } else if fits(i16::MIN.into(), i16::MAX.into()) {
            Width::I16
        } else if fits(i32::MIN.into(), i32::MAX.into()) {
            Width::I32
        } else {
            Width::Full
        }
    }
}

/// `c` as an Arrow array of the narrowest type that holds it exactly (module docs).
pub fn to_arrow_narrow(c: &Column, rows: usize) -> Result<ArrayRef, String> {
    let narrowed = match c.data() {
        ColumnData::Int64(v) => narrow_ints(v, c, Width::Full, |&x| x),
        ColumnData::Int32(v) => narrow_ints(v, c, Width::I32, |&x| i64::from(x)),
        ColumnData::Symbol { codes, dict } => symbol_keys(codes, dict, c)?,
        _ => None,
    };
    narrowed.map_or_else(|| to_arrow(c, rows), Ok)
}

/// An integer column (of width `own`) narrowed, or `None` when no narrower type than its own
/// holds it.
fn narrow_ints<V: Copy>(v: &[V], c: &Column, own: Width, wide: impl Fn(&V) -> i64) -> Option<ArrayRef> {
    let (min, max) = v.iter().map(&wide).fold((0i64, 0i64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let width = Width::of(min, max);
    if width >= own {
        return None;
    }
    // Each cast is exact: `Width::of` checked the range.
    Some(match width {
        Width::I8 => prim::<Int8Type, _>(v, c, |x| wide(x) as i8),
        Width::I16 => prim::<Int16Type, _>(v, c, |x| wide(x) as i16),
        Width::I32 => prim::<Int32Type, _>(v, c, |x| wide(x) as i32),
        Width::Full => return None,
    })
}

/// `v` converted by `f` with `c`'s NULLs.
fn prim<T: ArrowPrimitiveType, V>(v: &[V], c: &Column, f: impl Fn(&V) -> T::Native) -> ArrayRef {
    let values: ScalarBuffer<T::Native> = v.iter().map(f).collect();
    Arc::new(PrimitiveArray::<T>::new(values, null_buffer(c)))
}

/// A SYMBOL column's codes as 8- or 16-bit keys when its dictionary is that small; `None`
/// otherwise (then the plain 32-bit keys).
fn symbol_keys(codes: &[u32], dict: &Dict, c: &Column) -> Result<Option<ArrayRef>, String> {
    fn keyed<K: ArrowDictionaryKeyType>(
        codes: &[u32],
        dict: &Dict,
        c: &Column,
        f: impl Fn(u32) -> K::Native,
    ) -> Result<ArrayRef, String> {
        let keys = PrimitiveArray::<K>::new(codes.iter().map(|&x| f(x)).collect(), null_buffer(c));
        let values = dict_values(dict)?;
        Ok(Arc::new(DictionaryArray::<K>::try_new(keys, values).map_err(|e| e.to_string())?))
    }
    // Codes index the dictionary, so each cast is exact for a valid row; a NULL row's code is
    // never read.
    let n = dict.len();
    Ok(Some(if n <= 1 << 7 {
        keyed::<Int8Type>(codes, dict, c, |x| x as i8)?
    } else if n <= 1 << 15 {
        keyed::<Int16Type>(codes, dict, c, |x| x as i16)?
    } else {
        return Ok(None);
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::{read_ipc_stream, IpcResultWriter};
    use arrow_schema::DataType as A;
    use zepto_storage::rng::XorShift;
    use zepto_storage::{ColumnBuilder, ColumnDef, DataType, Value};

    /// The stream `IpcResultWriter::narrow` writes, read back with the columns' own types.
    fn round_trip(cols: &[Column]) -> Vec<Column> {
        let names: Vec<String> = (0..cols.len()).map(|i| format!("c{i}")).collect();
        let refs: Vec<&Column> = cols.iter().collect();
        let rows = cols.first().map_or(0, Column::len);
        let mut w = IpcResultWriter::narrow(&names, &refs, rows).expect("writer");
        let mut bytes = Vec::new();
        while let Some(chunk) = w.next_chunk().expect("chunk") {
            bytes.extend_from_slice(&chunk);
        }
        let defs: Vec<ColumnDef> =
            cols.iter().zip(&names).map(|(c, n)| ColumnDef { name: n.clone(), data_type: c.data_type() }).collect();
        read_ipc_stream(&bytes, &defs).expect("read back")
    }

    fn same(a: &Column, b: &Column) -> bool {
        a.len() == b.len() && (0..a.len()).all(|i| a.get(i) == b.get(i))
    }

    /// A column of `n` values drawn from `lo..=hi` (`dt` INTEGER or BIGINT), every `nulls`-th NULL.
    fn ints(rng: &mut XorShift, dt: DataType, n: usize, lo: i64, hi: i64, nulls: usize) -> Column {
        let mut b = ColumnBuilder::new(dt, n);
        let span = (hi as i128 - lo as i128 + 1) as u128;
        for i in 0..n {
            if nulls > 0 && i % nulls == 0 {
                b.push_null();
                continue;
            }
            let v = (lo as i128 + (rng.next_u64() as u128 % span) as i128) as i64;
            // The range's ends, so every width is tried at its limits.
            let v = [lo, hi].get(i % 7).copied().unwrap_or(v);
            let v = if dt == DataType::Int32 { Value::Int32(v as i32) } else { Value::Int64(v) };
            b.push_value(&v).expect("push");
        }
        b.finish()
    }

    #[test]
    fn integers_read_back_exactly_at_every_width() {
        let mut rng = XorShift::new(7);
        let ranges = [
            (0, 100),
            (-128, 127),
            (-129, 127),
            (-32_768, 32_767),
            (0, 32_768),
            (i32::MIN as i64, i32::MAX as i64),
            (0, i32::MAX as i64 + 1),
            (i64::MIN, i64::MAX),
            (5, 5),
        ];
        for (lo, hi) in ranges {
            for dt in [DataType::Int64, DataType::Int32] {
                if dt == DataType::Int32 && (lo < i32::MIN as i64 || hi > i32::MAX as i64) {
                    continue;
                }
                for nulls in [0, 3] {
                    let col = ints(&mut rng, dt, 1000, lo, hi, nulls);
                    let back = round_trip(std::slice::from_ref(&col));
                    assert_eq!(back[0].data_type(), dt);
                    assert!(same(&col, &back[0]), "{dt:?} in {lo}..={hi}, nulls every {nulls}");
                }
            }
        }
    }

    /// A narrowed stream read where the table's column is now HUGEINT or INTERVAL (a
    /// subscriber reading old records of a table made again): the values as written.
    #[test]
    fn narrow_integers_read_into_wider_types() {
        let mut rng = XorShift::new(5);
        let col = ints(&mut rng, DataType::Int64, 100, -100, 100, 4);
        let names = vec!["c0".to_string()];
        let mut w = IpcResultWriter::narrow(&names, &[&col], 100).expect("writer");
        let mut bytes = Vec::new();
        while let Some(chunk) = w.next_chunk().expect("chunk") {
            bytes.extend_from_slice(&chunk);
        }
        for dt in [DataType::Int128, DataType::Interval] {
            let back = read_ipc_stream(&bytes, &[ColumnDef { name: "c0".into(), data_type: dt }]).expect("read");
            for i in 0..100 {
                let want = match col.get(i) {
                    Value::Int64(v) if dt == DataType::Int128 => Value::Int128(v.into()),
                    Value::Int64(v) => Value::Interval(v),
                    other => other,
                };
                assert_eq!(back[0].get(i), want, "{dt:?} row {i}");
            }
        }
    }

    #[test]
    fn integers_take_the_narrowest_type() {
        let mut rng = XorShift::new(11);
        let mut width = |lo, hi, dt| {
            let c = ints(&mut rng, dt, 100, lo, hi, 0);
            to_arrow_narrow(&c, 100).expect("array").data_type().clone()
        };
        assert_eq!(width(0, 100, DataType::Int64), A::Int8);
        assert_eq!(width(-200, 100, DataType::Int64), A::Int16);
        assert_eq!(width(0, 1 << 20, DataType::Int64), A::Int32);
        assert_eq!(width(0, 1 << 40, DataType::Int64), A::Int64);
        assert_eq!(width(0, 1 << 20, DataType::Int32), A::Int32);
    }

    #[test]
    fn symbols_read_back_exactly_with_narrow_keys() {
        let mut rng = XorShift::new(3);
        for (distinct, key) in [(1, A::Int8), (128, A::Int8), (129, A::Int16), (32_768, A::Int16), (32_769, A::Int32)] {
            let n = distinct * 2 + 10;
            let mut b = ColumnBuilder::new(DataType::Symbol, n);
            for i in 0..n {
                if i >= distinct && i % 11 == 5 {
                    b.push_null();
                } else {
                    // Every string at least once, then random ones.
                    let k = if i < distinct { i } else { rng.index(distinct) };
                    b.push_symbol(&format!("s{k}")).expect("push");
                }
            }
            let col = b.finish();
            let a = to_arrow_narrow(&col, n).expect("array");
            assert_eq!(a.data_type(), &A::Dictionary(Box::new(key), Box::new(A::Utf8)), "{distinct} strings");
            let back = round_trip(std::slice::from_ref(&col));
            assert!(same(&col, &back[0]), "{distinct} strings");
        }
    }
}
