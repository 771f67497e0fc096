//! One table of a checkpoint as an Arrow IPC file: one record batch per partition, in the
//! table's partition order, rows in their stored (time-sorted) order.
//!
//! * Schema metadata: `zepto.table` (name), `zepto.key_col` / `zepto.ts_col` (column index or
//!   empty), `zepto.partitions` (each batch's partition key code, `-` for the NULL-key or the
//!   single partition).
//! * `zepto.indexes`: the table's index definitions, one per line (absent when none).
//! * `zepto.dedup`: the `DEDUP UPSERT KEYS` column positions, comma-separated (absent when none).
//! * Field metadata `zepto.type`: the engine type (so INTERVAL, stored as Int64, comes back as
//!   INTERVAL).
//! * SYMBOL columns are `Dictionary(UInt32, Utf8)` whose keys are the table's dictionary codes
//!   and whose values are the whole table dictionary in code order; every batch shares it, so
//!   the file carries it once per column and loading takes the codes as they are.
//!
//! Any Arrow reader opens these files (`pyarrow.ipc.open_file`), which helps when debugging;
//! the Parquet history, not the checkpoint, is the format meant for other tools.

use crate::DurableError;
use arrow_array::types::UInt32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, StringArray, UInt32Array};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType as ArrowType, Field, Schema as ArrowSchema};
use std::collections::HashMap;
use std::io::{Cursor, Write};
use std::sync::Arc;
use zepto_io::arrow::Acc;
use zepto_storage::{
    Column, ColumnData, ColumnDef, DataType, Dict, HistFile, History, IndexDef, Partition, Schema, Table,
};

const TABLE: &str = "zepto.table";
const KEY_COL: &str = "zepto.key_col";
const TS_COL: &str = "zepto.ts_col";
const PARTITIONS: &str = "zepto.partitions";
const TYPE: &str = "zepto.type";
/// History files, one per line: `path TAB rows TAB bytes TAB min_ts TAB max_ts`.
const HISTORY: &str = "zepto.history";
const HISTORY_SEQ: &str = "zepto.history_seq";
/// Retention in nanoseconds, empty for none.
const TTL: &str = "zepto.ttl";
/// The table's indexes, one `IndexDef::to_line` per line (absent when it has none, and in
/// checkpoints older than indexes).
const INDEXES: &str = "zepto.indexes";
/// The dedup key columns' schema positions, comma-separated (absent when none, and in checkpoints
/// older than deduplication).
const DEDUP: &str = "zepto.dedup";

fn history_meta(h: &History) -> [(String, String); 3] {
    let files: Vec<String> =
        h.files.iter().map(|f| format!("{}\t{}\t{}\t{}\t{}", f.path, f.rows, f.bytes, f.min_ts, f.max_ts)).collect();
    [
        (HISTORY.to_string(), files.join("\n")),
        (HISTORY_SEQ.to_string(), h.next_seq.to_string()),
        (TTL.to_string(), h.ttl_ns.map(|t| t.to_string()).unwrap_or_default()),
    ]
}

/// The history as [`history_meta`] wrote it (absent in checkpoints older than the history).
fn read_history<'a>(get: impl Fn(&str) -> Option<&'a String>) -> Result<History, String> {
    let mut h = History::default();
    if let Some(s) = get(HISTORY).filter(|s| !s.is_empty()) {
        for line in s.split('\n') {
            let f: Vec<&str> = line.split('\t').collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<i64>().ok()).ok_or(format!("history line '{line}'"));
            h.files.push(HistFile {
                path: f[0].to_string(),
                rows: num(1)? as u64,
                bytes: num(2)? as u64,
                min_ts: num(3)?,
                max_ts: num(4)?,
            });
        }
    }
    if let Some(s) = get(HISTORY_SEQ) {
        h.next_seq = s.parse().map_err(|_| format!("history sequence '{s}'"))?;
    }
    if let Some(s) = get(TTL).filter(|s| !s.is_empty()) {
        h.ttl_ns = Some(s.parse().map_err(|_| format!("TTL '{s}'"))?);
    }
    Ok(h)
}

fn arrow_err(e: arrow_schema::ArrowError) -> DurableError {
    DurableError::Format(e.to_string())
}

fn arrow_type(dt: DataType) -> ArrowType {
    match dt {
        DataType::Symbol => ArrowType::Dictionary(Box::new(ArrowType::UInt32), Box::new(ArrowType::Utf8)),
        DataType::Bool => ArrowType::Boolean,
        DataType::Int32 => ArrowType::Int32,
        DataType::Int64 | DataType::Interval => ArrowType::Int64,
        DataType::Int128 => ArrowType::Decimal128(38, 0),
        DataType::Float32 => ArrowType::Float32,
        DataType::Float64 => ArrowType::Float64,
        DataType::Timestamp => ArrowType::Timestamp(arrow_schema::TimeUnit::Nanosecond, None),
        DataType::Date => ArrowType::Date32,
        DataType::Varchar => ArrowType::LargeUtf8,
        DataType::Vector(d) => zepto_io::arrow_vector::arrow_type(d),
        DataType::Null => ArrowType::Null,
    }
}

fn opt_index(i: Option<usize>) -> String {
    i.map(|i| i.to_string()).unwrap_or_default()
}

/// A snapshot's partitions as a checkpoint writes them. While a writer may still share the
/// snapshot, each is read from it; once a writer has copied the table for its next change (the
/// snapshot is then this holder's alone), the partitions are taken out and each is let go
/// when written. A partition the snapshot still shares has its columns copied by the next
/// append to it: during a large load that was every partition of the table, for the whole of
/// the checkpoint.
struct Source {
    shared: Option<Arc<Table>>,
    owned: std::vec::IntoIter<Arc<Partition>>,
}

impl Source {
    /// Partition `i`, asked for in order from 0.
    fn partition(&mut self, i: usize) -> Option<Arc<Partition>> {
        if let Some(t) = self.shared.take() {
            match Arc::try_unwrap(t) {
                Ok(t) => {
                    let mut rest = t.into_partitions().into_iter();
                    // The ones written already go now.
                    if i > 0 {
                        rest.nth(i - 1);
                    }
                    self.owned = rest;
                }
                Err(t) => {
                    let p = t.partitions().get(i).cloned();
                    self.shared = Some(t);
                    return p;
                }
            }
        }
        self.owned.next()
    }
}

/// Write `table` to `out` as an Arrow IPC file.
pub fn write_table<W: Write>(table: Arc<Table>, out: W) -> Result<W, DurableError> {
    let fields: Vec<Field> = table
        .schema()
        .columns
        .iter()
        .map(|c| {
            Field::new(&c.name, arrow_type(c.data_type), true)
                .with_metadata(HashMap::from([(TYPE.to_string(), c.data_type.sql_name().to_string())]))
        })
        .collect();
    let keys: Vec<String> =
        table.partitions().iter().map(|p| p.key().map_or_else(|| "-".to_string(), |k| k.to_string())).collect();
    let mut meta = HashMap::from([
        (TABLE.to_string(), table.name().to_string()),
        (KEY_COL.to_string(), opt_index(table.key_col())),
        (TS_COL.to_string(), opt_index(table.ts_col())),
        (PARTITIONS.to_string(), keys.join(",")),
    ]);
    meta.extend(history_meta(table.history()));
    if !table.indexes().is_empty() {
        let lines: Vec<String> = table.indexes().iter().map(IndexDef::to_line).collect();
        meta.insert(INDEXES.to_string(), lines.join("\n"));
    }
    if !table.dedup_keys().is_empty() {
        let keys: Vec<String> = table.dedup_keys().iter().map(usize::to_string).collect();
        meta.insert(DEDUP.to_string(), keys.join(","));
    }
    let schema = Arc::new(ArrowSchema::new(fields).with_metadata(meta));
    let values: ArrayRef = Arc::new(table.dict().iter().map(Some).collect::<StringArray>());
    let mut w = FileWriter::try_new(out, &schema).map_err(arrow_err)?;
    let count = table.partitions().len();
    let mut source = Source { shared: Some(table), owned: Vec::new().into_iter() };
    for i in 0..count {
        let p = source.partition(i).ok_or_else(|| DurableError::Format(format!("partition {i} of {count} lost")))?;
        let n = p.len();
        let cols = p.columns();
        let arrays =
            cols.iter().map(|c| column_array(c, n, &values)).collect::<Result<Vec<ArrayRef>, DurableError>>()?;
        let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(arrow_err)?;
        w.write(&batch).map_err(arrow_err)?;
    }
    w.finish().map_err(arrow_err)?;
    w.into_inner().map_err(arrow_err)
}

/// `c` as the file stores it: SYMBOL codes against the table's whole dictionary, anything
/// else as an array sharing the column's memory (the writer copies it once, into the file).
fn column_array(c: &Arc<Column>, rows: usize, values: &ArrayRef) -> Result<ArrayRef, DurableError> {
    match &c.data() {
        ColumnData::Symbol { codes, .. } => {
            let nulls = c
                .validity()
                .as_ref()
                .map(|v| NullBuffer::new(BooleanBuffer::new(Buffer::from_slice_ref(v.as_bytes()), 0, v.len())));
            let keys = UInt32Array::new(ScalarBuffer::from(codes.to_vec()), nulls);
            Ok(Arc::new(DictionaryArray::<UInt32Type>::try_new(keys, values.clone()).map_err(arrow_err)?))
        }
        _ => zepto_io::export::share_column(c, rows).map_err(DurableError::Format),
    }
}

/// Read a table written by [`write_table`].
pub fn read_table(bytes: Vec<u8>) -> Result<Table, DurableError> {
    zepto_io::ipc_check::check_file(&bytes)?;
    let reader =
        zepto_io::ipc_check::guard("file", || FileReader::try_new(Cursor::new(bytes), None).map_err(arrow_err))?;
    let schema = reader.schema();
    let meta = schema.metadata();
    let get = |k: &str| meta.get(k).ok_or_else(|| DurableError::Format(format!("checkpoint file lacks {k}")));
    let name = get(TABLE)?.clone();
    let bad = |m: String| DurableError::Format(format!("table '{name}': {m}"));
    let index = |k: &str| -> Result<Option<usize>, DurableError> {
        let s = get(k)?;
        if s.is_empty() {
            return Ok(None);
        }
        s.parse().map(Some).map_err(|_| bad(format!("{k} is '{s}'")))
    };
    let (key_col, ts_col) = (index(KEY_COL)?, index(TS_COL)?);
    let part_keys: Vec<Option<u32>> = match get(PARTITIONS)?.as_str() {
        "" => Vec::new(),
        s => s
            .split(',')
            .map(|k| if k == "-" { Ok(None) } else { k.parse().map(Some).map_err(|_| bad(format!("partition '{k}'"))) })
            .collect::<Result<_, _>>()?,
    };
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            let t = f.metadata().get(TYPE).ok_or_else(|| bad(format!("column '{}' has no type", f.name())))?;
            let data_type = DataType::from_sql(t).ok_or_else(|| bad(format!("unknown type {t}")))?;
            Ok(ColumnDef { name: f.name().clone(), data_type })
        })
        .collect::<Result<Vec<_>, DurableError>>()?;
    let mut dict: Option<Arc<Dict>> = None;
    let mut parts = Vec::with_capacity(part_keys.len());
    for (i, batch) in zepto_io::ipc_check::Guarded(reader).enumerate() {
        let batch = batch.map_err(arrow_err)?;
        let key = *part_keys.get(i).ok_or_else(|| bad("more partitions than listed".into()))?;
        let cols = batch
            .columns()
            .iter()
            .zip(&columns)
            .map(|(arr, def)| read_column(arr.as_ref(), def, &mut dict).map(Arc::new))
            .collect::<Result<Vec<_>, DurableError>>()
            .map_err(|e| bad(e.to_string()))?;
        parts.push((key, cols));
    }
    if parts.len() != part_keys.len() {
        return Err(bad(format!("{} partitions listed, {} stored", part_keys.len(), parts.len())));
    }
    let dict = dict.unwrap_or_default();
    let history = read_history(|k| meta.get(k)).map_err(bad)?;
    let mut t = Table::from_parts(&name, Schema { columns }, key_col, ts_col, dict, parts)?;
    t.set_history(history);
    for line in meta.get(INDEXES).map(String::as_str).unwrap_or("").lines() {
        t.add_index(IndexDef::from_line(line)?)?;
    }
    let mut dedup = Vec::new();
    for k in meta.get(DEDUP).map(String::as_str).unwrap_or("").split(',').filter(|k| !k.is_empty()) {
        let def = k.parse::<usize>().ok().and_then(|i| t.schema().columns.get(i));
        dedup.push(def.ok_or_else(|| bad(format!("dedup key column '{k}'")))?.name.clone());
    }
    t.set_dedup(&dedup)?;
    Ok(t)
}

fn read_column(arr: &dyn Array, def: &ColumnDef, dict: &mut Option<Arc<Dict>>) -> Result<Column, DurableError> {
    if def.data_type != DataType::Symbol {
        let mut acc = Acc::new(def, arr.len());
        acc.append(arr, 0)
            .map_err(|e| e.into_io(def, arr.data_type()))
            .map_err(|e| DurableError::Format(e.to_string()))?;
        return Ok(acc.finish());
    }
    let d = arr
        .as_any()
        .downcast_ref::<DictionaryArray<UInt32Type>>()
        .ok_or_else(|| DurableError::Format(format!("SYMBOL column '{}' is {}", def.name, arr.data_type())))?;
    let table_dict = match dict {
        Some(t) => t.clone(),
        None => {
            let values = d
                .values()
                .as_any()
                .downcast_ref::<StringArray>()
                .ok_or_else(|| DurableError::Format("symbol dictionary values are not strings".into()))?;
            let mut t = Dict::default();
            for s in values.iter() {
                t.intern(s.unwrap_or(""));
            }
            if t.len() != values.len() {
                return Err(DurableError::Format("the symbol dictionary repeats a string".into()));
            }
            let t = Arc::new(t);
            *dict = Some(t.clone());
            t
        }
    };
    if d.values().len() != table_dict.len() {
        return Err(DurableError::Format(format!("SYMBOL column '{}' has another dictionary", def.name)));
    }
    let validity = d.nulls().filter(|n| n.null_count() > 0).map(|n| zepto_storage::Bitmap::from_bools(n.iter()));
    let mut codes = d.keys().values().to_vec();
    if let Some(v) = &validity {
        // The engine keeps the zero value in NULL slots.
        for (i, c) in codes.iter_mut().enumerate() {
            if !v.get(i) {
                *c = 0;
            }
        }
    }
    Ok(Column::new(ColumnData::Symbol { codes: codes.into(), dict: table_dict }, validity))
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_storage::{ColumnBuilder, TableOptions, Value};

    /// Partitions are read from a snapshot a writer still shares, and once the snapshot is the
    /// checkpoint's alone, taken from it and released as they are written; the file holds the
    /// snapshot's rows either way.
    #[test]
    fn written_partitions_are_let_go_once_the_snapshot_is_ours() {
        let columns = vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "k".into(), data_type: DataType::Symbol },
        ];
        let mut t = Table::new("t", Schema { columns }, &TableOptions::default()).expect("table");
        let mut ts = ColumnBuilder::new(DataType::Timestamp, 4);
        let mut k = ColumnBuilder::new(DataType::Varchar, 4);
        for (i, key) in ["a", "b", "c", "d"].iter().enumerate() {
            ts.push_value(&Value::Timestamp(i as i64)).expect("ts");
            k.push_value(&Value::Str(key.to_string())).expect("k");
        }
        t.append(vec![ts.finish(), k.finish()]).expect("append");
        let live = Arc::new(t);
        let parts: Vec<Arc<Partition>> = live.partitions().to_vec();
        let mut source = Source { shared: Some(live.clone()), owned: Vec::new().into_iter() };
        let first = source.partition(0).expect("p0");
        assert!(Arc::ptr_eq(&first, &parts[0]) && source.shared.is_some(), "read while shared");
        drop(first);
        drop(live); // the writer copied the table for its next change
        let second = source.partition(1).expect("p1");
        assert!(source.shared.is_none(), "taken once ours alone");
        assert_eq!(Arc::strong_count(&parts[0]), 1, "the written partition is let go");
        assert_eq!(Arc::strong_count(&parts[2]), 2, "the ones to write are still held");
        assert!(Arc::ptr_eq(&second, &parts[1]));
        let rest: Vec<Arc<Partition>> = (2..4).filter_map(|i| source.partition(i)).collect();
        assert!(rest.iter().zip(&parts[2..]).all(|(a, b)| Arc::ptr_eq(a, b)));
        assert!(source.partition(4).is_none());
    }
}
