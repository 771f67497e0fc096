//! The Arrow IPC stream format: reading an ingest body into typed columns; writing query
//! results as a stream of record batches (the HTTP server's `format=arrow`) is
//! [`IpcResultWriter`]'s (`ipc_writer.rs`).
//!
//! Reading converts each batch through [`crate::arrow::Acc`], so every Arrow type the Parquet
//! reader accepts is accepted here too (any integer width, any timestamp unit, dictionary or
//! plain strings, ...). Written streams are record batches of at most [`BATCH_ROWS`] rows,
//! their buffers compressed with LZ4 or ZSTD when the reader asked for it ([`IpcCodec`];
//! pyarrow, arrow-rs, Polars and DuckDB decode both).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::arrow::{append_batch, finish_columns, match_columns, Acc};
use crate::grouped::{heaviest_first, into_groups, split_columns, Splitter};
use crate::ipc_check::{check_stream, guard, Guarded};
pub use crate::ipc_writer::{record_batch, IpcCodec, IpcResultWriter, BATCH_ROWS};
use crate::IoError;
use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_schema::{ArrowError, Fields};
use std::io::Cursor;
use zepto_storage::{Column, ColumnDef, DataType, Dict, KeyGroups};

fn bad(e: impl std::fmt::Display) -> IoError {
    IoError::Invalid(format!("bad Arrow IPC stream: {e}"))
}

/// Rows in an Arrow IPC stream, without converting them (`None` if it does not decode).
pub fn count_ipc_rows(data: &[u8]) -> Option<u64> {
    check_stream(data).ok()?;
    guard("stream", || {
        let reader = StreamReader::try_new(Cursor::new(data), None).map_err(bad)?;
        reader.map(|b| b.map(|b| b.num_rows() as u64)).sum::<Result<u64, ArrowError>>().map_err(bad)
    })
    .ok()
}

/// Read a whole Arrow IPC stream into columns in `schema` order. Columns are matched by name
/// (case-insensitively); schema columns the stream lacks read as NULL, and a stream column the
/// schema lacks is an error (data would otherwise be dropped silently).
pub fn read_ipc_stream(data: &[u8], schema: &[ColumnDef]) -> Result<Vec<Column>, IoError> {
    read_ipc_stream_in(data, schema, None)
}

/// [`read_ipc_stream`], with SYMBOL columns coded against `dict` as [`read_batches_in`] does.
pub fn read_ipc_stream_in(data: &[u8], schema: &[ColumnDef], dict: Option<&Dict>) -> Result<Vec<Column>, IoError> {
    check_stream(data)?;
    let reader = guard("stream", || StreamReader::try_new(Cursor::new(data), None).map_err(bad))?;
    let fields = reader.schema().fields().clone();
    read_batches_in(&fields, Guarded(reader), schema, dict)
}

/// Record batches of `fields` (from an IPC stream, or an Arrow C stream in process) into
/// columns in `schema` order, by the rules of [`read_ipc_stream`].
pub fn read_batches(
    fields: &Fields,
    batches: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    schema: &[ColumnDef],
) -> Result<Vec<Column>, IoError> {
    read_batches_in(fields, batches, schema, None)
}

/// [`read_batches`], with SYMBOL columns coded against `dict` (a version of the target table's
/// dictionary) when given: the table then takes the codes as they are, instead of looking
/// every string up a second time in its own dictionary. Only strings that valid rows hold are
/// added (never a dictionary-encoded input's unused values), and they stay in its store even
/// if the rows are later refused (as the ILP doors' do).
pub fn read_batches_in(
    fields: &Fields,
    batches: impl Iterator<Item = Result<RecordBatch, ArrowError>>,
    schema: &[ColumnDef],
    dict: Option<&Dict>,
) -> Result<Vec<Column>, IoError> {
    let source = stream_columns(fields, schema)?;
    let mut accs: Vec<Acc> = schema.iter().map(|c| Acc::new_in(c, 0, dict)).collect();
    let mut rows = 0usize;
    for batch in batches {
        let batch = batch.map_err(bad)?;
        append_batch(&mut accs, schema, &source, rows, |k| Ok(batch.column(k).clone()))?;
        rows += batch.num_rows();
    }
    Ok(finish_columns(accs, schema, &source, rows))
}

/// Which stream column feeds each schema column; an error for a stream column the table lacks.
fn stream_columns(fields: &Fields, schema: &[ColumnDef]) -> Result<Vec<Option<usize>>, IoError> {
    for f in fields.iter() {
        if !schema.iter().any(|c| c.name.eq_ignore_ascii_case(f.name())) {
            return Err(IoError::Invalid(format!("stream column '{}' is not a column of the table", f.name())));
        }
    }
    match_columns(fields, schema, "Arrow stream")
}

/// [`read_batches_in`] of batches in hand, with the rows grouped by the value of column
/// `schema[key]` (a SYMBOL column, the table's partition key): the key column is converted
/// first, then each other column is split among the groups batch by batch as it is converted,
/// on every core (`grouped.rs`), ready for `Table::append_groups`. `Ok(None)` when the stream
/// has no such column.
pub fn read_batches_grouped(
    fields: &Fields,
    batches: &[RecordBatch],
    schema: &[ColumnDef],
    dict: Option<&Dict>,
    key: usize,
) -> Result<Option<Vec<Vec<Column>>>, IoError> {
    let source = stream_columns(fields, schema)?;
    let Some(key_def) = schema.get(key).filter(|d| d.data_type == DataType::Symbol) else { return Ok(None) };
    let Some(k) = source.get(key).copied().flatten() else { return Ok(None) };
    let array = |b: &RecordBatch, k: usize| {
        b.columns().get(k).cloned().ok_or_else(|| IoError::Invalid("a batch lacks a column of the stream".into()))
    };
    let mut keys = Acc::new_in(key_def, batches.iter().map(RecordBatch::num_rows).sum(), dict);
    let mut rows = 0;
    for b in batches {
        let arr = array(b, k)?;
        keys.append(arr.as_ref(), rows).map_err(|e| e.into_io(key_def, arr.data_type()))?;
        rows += b.num_rows();
    }
    let Some(groups) = KeyGroups::of(keys.finish()) else { return Ok(None) };
    let columns: Vec<usize> = (0..schema.len()).filter(|&i| source.get(i).is_some_and(Option::is_some)).collect();
    let bytes = |i: usize| match source.get(i).copied().flatten() {
        Some(k) => batches.iter().filter_map(|b| b.columns().get(k)).map(|a| a.get_array_memory_size()).sum(),
        None => 0,
    };
    let columns = heaviest_first(columns, bytes);
    let split = |i: usize| -> Result<Vec<Column>, IoError> {
        let (def, k) = (schema.get(i), source.get(i).copied().flatten());
        let (Some(def), Some(k)) = (def, k) else { return Err(IoError::Invalid("a column lost its source".into())) };
        let mut split = Splitter::new(def, &groups, dict, 0);
        for b in batches {
            split.push(array(b, k)?.as_ref())?;
        }
        split.finish()
    };
    let by_column = split_columns(schema.len(), &columns, key, &groups, split)?;
    Ok(Some(into_groups(schema, &groups, by_column)))
}

/// The engine type an Arrow type reads as, if any (for streams read without a target table).
pub fn engine_type(dt: &arrow_schema::DataType) -> Option<DataType> {
    use arrow_schema::DataType as A;
    Some(match dt {
        A::Boolean => DataType::Bool,
        A::Int8 | A::Int16 | A::Int32 | A::UInt8 | A::UInt16 => DataType::Int32,
        A::Int64 | A::UInt32 | A::UInt64 => DataType::Int64,
        A::Decimal128(_, 0) => DataType::Int128,
        A::Float16 | A::Float32 => DataType::Float32,
        A::Float64 => DataType::Float64,
        A::Timestamp(..) => DataType::Timestamp,
        A::Date32 | A::Date64 => DataType::Date,
        A::Duration(_) => DataType::Interval,
        A::Utf8 | A::LargeUtf8 | A::Utf8View => DataType::Varchar,
        A::Dictionary(_, v) if matches!(**v, A::Utf8 | A::LargeUtf8 | A::Utf8View) => DataType::Symbol,
        A::FixedSizeList(f, n) if matches!(f.data_type(), A::Float32 | A::Float64) => {
            DataType::vector(usize::try_from(*n).ok()?)?
        }
        A::Null => DataType::Null,
        _ => return None,
    })
}

/// Read a whole stream with the types it declares (mapped by [`engine_type`]): the column
/// definitions, the columns and the row count.
pub fn read_ipc_stream_any(data: &[u8]) -> Result<(Vec<ColumnDef>, Vec<Column>, usize), IoError> {
    // Only the schema message is read here; read_ipc_stream checks the batches once.
    let schema = guard("stream", || StreamReader::try_new(Cursor::new(data), None).map(|r| r.schema()).map_err(bad))?;
    let defs = engine_defs(schema.fields())?;
    let cols = read_ipc_stream(data, &defs)?;
    let rows = match cols.first() {
        Some(c) => c.len(),
        // Batches without columns still say how many rows they have.
        None => count_ipc_rows(data).and_then(|n| usize::try_from(n).ok()).unwrap_or(0),
    };
    Ok((defs, cols, rows))
}

/// The column definitions `fields` read as (types by [`engine_type`]).
pub fn engine_defs(fields: &Fields) -> Result<Vec<ColumnDef>, IoError> {
    fields
        .iter()
        .map(|f| {
            let data_type = engine_type(f.data_type()).ok_or_else(|| {
                IoError::Invalid(format!("column '{}': Arrow type {} has no engine type", f.name(), f.data_type()))
            })?;
            Ok(ColumnDef { name: f.name().clone(), data_type })
        })
        .collect()
}

/// Record batches of one schema (`fields`) as engine columns with the types they declare
/// ([`engine_type`]) and the row count (which batches without columns carry too).
pub fn from_record_batches(fields: &Fields, batches: Vec<RecordBatch>) -> Result<(Vec<Column>, usize), IoError> {
    let defs = engine_defs(fields)?;
    let rows = batches.iter().map(RecordBatch::num_rows).sum();
    let cols = read_batches(fields, batches.into_iter().map(Ok), &defs)?;
    Ok((cols, rows))
}

/// The columns `cols` (named `names`, `rows` rows each) as one whole IPC stream.
pub fn write_ipc_stream(names: &[String], cols: &[&Column], rows: usize) -> Result<Vec<u8>, IoError> {
    let mut w = IpcResultWriter::new(names, cols, rows)?;
    let mut out = Vec::new();
    while let Some(piece) = w.next_chunk()? {
        out.extend(piece);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{ColumnBuilder, Value};

    #[test]
    fn round_trip_in_chunks() {
        let n = BATCH_ROWS + 10;
        let mut ts = ColumnBuilder::new(DataType::Timestamp, n);
        let mut sym = ColumnBuilder::new(DataType::Symbol, n);
        let mut px = ColumnBuilder::new(DataType::Float64, n);
        for i in 0..n {
            ts.push_value(&Value::Timestamp(i as i64 * 1000)).expect("push");
            sym.push_value(&Value::Str(["a", "b", "c"][i % 3].into())).expect("push");
            if i % 7 == 0 {
                px.push_null();
            } else {
                px.push_value(&Value::Float64(i as f64 / 4.0)).expect("push");
            }
        }
        let cols = [ts.finish(), sym.finish(), px.finish()];
        let names: Vec<String> = ["ts", "sym", "px"].iter().map(|s| s.to_string()).collect();
        let refs: Vec<&Column> = cols.iter().collect();
        let mut w = IpcResultWriter::new(&names, &refs, n).expect("writer");
        let mut bytes = Vec::new();
        let mut chunks = 0;
        while let Some(c) = w.next_chunk().expect("chunk") {
            bytes.extend(c);
            chunks += 1;
        }
        assert_eq!(chunks, 3, "two batches and the end marker");
        let defs = vec![
            ColumnDef { name: "TS".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "sym".into(), data_type: DataType::Symbol },
            ColumnDef { name: "px".into(), data_type: DataType::Float64 },
            ColumnDef { name: "extra".into(), data_type: DataType::Int64 },
        ];
        let back = read_ipc_stream(&bytes, &defs).expect("reads");
        for i in [0, 1, 7, BATCH_ROWS, n - 1] {
            for j in 0..3 {
                assert_eq!(back[j].get(i), cols[j].get(i), "row {i} column {j}");
            }
            assert_eq!(back[3].get(i), Value::Null);
        }
        let (any_defs, any_cols, any_rows) = read_ipc_stream_any(&bytes).expect("reads with its own types");
        assert_eq!(any_rows, n);
        let types: Vec<DataType> = any_defs.iter().map(|d| d.data_type).collect();
        assert_eq!(types, [DataType::Timestamp, DataType::Symbol, DataType::Float64]);
        assert_eq!(any_cols[1].get(4), cols[1].get(4));
        let err = read_ipc_stream(&bytes, &defs[..2]).expect_err("px is not in the table");
        assert!(err.to_string().contains("'px'"), "{err}");
        assert!(read_ipc_stream(b"not arrow", &defs).is_err());
    }

    /// Batches of any size, read grouped by key (cut where the groups' ordered chunks end):
    /// each group holds its rows in order, NULLs and text included.
    #[test]
    fn grouped_batches_of_any_size_keep_each_groups_rows_in_order() {
        use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
        use arrow_schema::{DataType as A, Field, Schema};
        use std::sync::Arc;
        let n = 70_000usize;
        let key = |i: usize| format!("k{}", (i * 7919) % 31);
        let px = |i: usize| (!i.is_multiple_of(5)).then(|| i as f64 / 8.0);
        let fields = Fields::from(vec![
            Field::new("sym", A::Utf8, false),
            Field::new("px", A::Float64, true),
            Field::new("size", A::Int64, false),
            Field::new("venue", A::Utf8, true),
        ]);
        let schema = Arc::new(Schema::new(fields.clone()));
        let mut batches = Vec::new();
        let mut at = 0;
        for len in [5_000usize, 20_000, 1, 33_000, 11_999].into_iter().cycle() {
            let len = len.min(n - at);
            let rows = at..at + len;
            let cols: Vec<arrow_array::ArrayRef> = vec![
                Arc::new(StringArray::from_iter_values(rows.clone().map(key))),
                Arc::new(rows.clone().map(px).collect::<Float64Array>()),
                Arc::new(rows.clone().map(|i| i as i64).collect::<Int64Array>()),
                Arc::new(
                    rows.clone().map(|i| i.is_multiple_of(3).then(|| format!("v{}", i % 4))).collect::<StringArray>(),
                ),
            ];
            batches.push(RecordBatch::try_new(schema.clone(), cols).expect("batch"));
            at += len;
            if at == n {
                break;
            }
        }
        let defs = vec![
            ColumnDef { name: "sym".into(), data_type: DataType::Symbol },
            ColumnDef { name: "px".into(), data_type: DataType::Float64 },
            ColumnDef { name: "size".into(), data_type: DataType::Int64 },
            ColumnDef { name: "venue".into(), data_type: DataType::Varchar },
        ];
        let groups = read_batches_grouped(&fields, &batches, &defs, None, 0).expect("reads").expect("a key");
        assert_eq!(groups.len(), 31);
        for g in &groups {
            let want: Vec<usize> = (0..n).filter(|&i| Value::Str(key(i)) == g[0].get(0)).collect();
            assert_eq!(g[2].len(), want.len());
            for (r, &i) in want.iter().enumerate() {
                assert_eq!(g[2].get(r), Value::Int64(i as i64), "size of row {i}");
                assert_eq!(g[1].get(r), px(i).map_or(Value::Null, Value::Float64), "px of row {i}");
                let venue = i.is_multiple_of(3).then(|| Value::Str(format!("v{}", i % 4)));
                assert_eq!(g[3].get(r), venue.unwrap_or(Value::Null), "venue of row {i}");
            }
        }
    }

    #[test]
    fn dictionaries_of_any_string_layout_are_symbols() {
        use arrow_schema::DataType as A;
        // Polars sends its categoricals as Dictionary(UInt32, Utf8View).
        for (k, v) in [(A::Int32, A::Utf8), (A::Int8, A::LargeUtf8), (A::UInt32, A::Utf8View)] {
            assert_eq!(engine_type(&A::Dictionary(Box::new(k), Box::new(v))), Some(DataType::Symbol));
        }
        assert_eq!(engine_type(&A::Dictionary(Box::new(A::Int32), Box::new(A::Int64))), None);
    }

    #[test]
    fn rows_without_columns_keep_their_count() {
        let bytes = write_ipc_stream(&[], &[], 70_000).expect("written");
        let (defs, cols, rows) = read_ipc_stream_any(&bytes).expect("read");
        assert!(defs.is_empty() && cols.is_empty());
        assert_eq!(rows, 70_000);
    }

    #[test]
    fn empty_result_is_a_valid_stream() {
        let names = vec!["x".to_string()];
        let c = Column::nulls(DataType::Int64, 0);
        let mut w = IpcResultWriter::new(&names, &[&c], 0).expect("writer");
        let mut bytes = Vec::new();
        while let Some(c) = w.next_chunk().expect("chunk") {
            bytes.extend(c);
        }
        let back = read_ipc_stream(&bytes, &[ColumnDef { name: "x".into(), data_type: DataType::Int64 }]).expect("ok");
        assert_eq!(back[0].len(), 0);
    }

    #[test]
    fn hugeint_travels_as_decimal128_and_reads_back_exactly() {
        use zepto_storage::{ColumnBuilder, Value};
        let mut b = ColumnBuilder::new(DataType::Int128, 4);
        for v in [Value::Int128(i128::MAX), Value::Null, Value::Int128(-(1i128 << 100)), Value::Int128(0)] {
            b.push_value(&v).expect("push");
        }
        let c = b.finish();
        let bytes = write_ipc_stream(&["s".to_string()], &[&c], 4).expect("written");
        let (defs, cols, rows) = read_ipc_stream_any(&bytes).expect("read");
        assert_eq!((defs[0].data_type, rows), (DataType::Int128, 4));
        assert_eq!((0..4).map(|i| cols[0].get(i)).collect::<Vec<_>>(), (0..4).map(|i| c.get(i)).collect::<Vec<_>>());
    }
}
