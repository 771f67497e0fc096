//! Parquet reading into typed columns and writing from them, through Arrow record batches.
//!
//! Reading matches file columns to a target schema by name (case-insensitive) and converts
//! each Arrow type to the schema's type: fixed-width values are copied a buffer at a time,
//! validity bitmaps are appended byte-wise (Arrow's layout is ours), and a `SYMBOL` target is
//! read as an Arrow dictionary so each distinct string is interned once, not once per row.
//!
//! Writing (on every core) is `parquet_writer.rs`, re-exported here.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::arrow::{append_batch, finish_columns, match_columns, Acc};
pub use crate::parquet_writer::write_parquet;
#[cfg(test)]
use crate::parquet_writer::{tmp_path, write_failure};
use crate::{Check, IoError};
use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder,
};
use ::parquet::arrow::ProjectionMask;
use ::parquet::file::metadata::ParquetMetaData;
use ::parquet::file::reader::ChunkReader;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use zepto_storage::{Column, ColumnDef, DataType};

/// Rows per Arrow batch while reading. Small enough that the decoder's buffers stay in cache
/// and get reused instead of a second copy of the whole file being faulted in (1M-row batches
/// loaded the 1M-row benchmark file about 1.5-2x slower; decoding 10M rows of four columns
/// took 80-110 ms in 8-16Ki-row batches against 95-175 ms in 64Ki and 160-280 ms in 128Ki).
const BATCH_ROWS: usize = 1 << 14;

pub(crate) fn file_err(path: &Path, e: impl std::fmt::Display) -> IoError {
    IoError::File { path: path.display().to_string(), message: e.to_string() }
}

/// Read a Parquet file into columns in `schema` order.
///
/// Columns are matched by name, case-insensitively; schema columns the file lacks read as
/// NULL, file columns the schema lacks are skipped (not even decoded). It is an error if the
/// file has none of the schema's columns, or a column whose type cannot become the schema's.
pub fn read_parquet(path: &Path, schema: &[ColumnDef]) -> Result<Vec<Column>, IoError> {
    read_batched(path, schema, Sizes::DEFAULT, &crate::unchecked)
}

/// [`read_parquet`], asking `check` after every decoded batch whether to go on: a small file
/// can decode to any size (a long run of one repeated value), so its length on disk bounds
/// nothing.
pub fn read_parquet_checked(path: &Path, schema: &[ColumnDef], check: Check) -> Result<Vec<Column>, IoError> {
    read_batched(path, schema, Sizes::DEFAULT, check)
}

/// The most rows a read allocates for before it has decoded them (16M: 128 MiB per 8-byte
/// column); past it, columns grow as batches arrive.
const MAX_PREALLOC_ROWS: usize = 1 << 24;

/// Rows per decoded batch, and the most rows made room for before any is decoded.
#[derive(Clone, Copy)]
pub(crate) struct Sizes {
    pub(crate) batch_rows: usize,
    prealloc_rows: usize,
}

impl Sizes {
    pub(crate) const DEFAULT: Sizes = Sizes { batch_rows: BATCH_ROWS, prealloc_rows: MAX_PREALLOC_ROWS };
}

fn read_batched(path: &Path, schema: &[ColumnDef], sizes: Sizes, check: Check) -> Result<Vec<Column>, IoError> {
    let file = File::open(path).map_err(|e| file_err(path, e))?;
    let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| file_err(path, e))?;
    let fail = |e: ReadFail| e.in_file(path);
    let source = match_columns(meta.schema().fields(), schema, "Parquet file")?;
    let read: Vec<usize> = (0..schema.len()).filter(|&i| source.get(i).is_some_and(Option::is_some)).collect();
    if read.len() < 2 {
        return read_with(file, meta, schema, None, sizes, check).map_err(fail);
    }
    // A column at a time, on every core: each decodes every row group of its own column
    // chunks through a reader of its own, into its own column, so nothing is merged after.
    drop(file);
    let lost = || IoError::Invalid("a column read returned no column".into());
    let one = |&i: &usize| -> Result<Column, IoError> {
        let file = File::open(path).map_err(|e| file_err(path, e))?;
        let def = std::slice::from_ref(schema.get(i).ok_or_else(lost)?);
        let mut cols = read_with(file, meta.clone(), def, None, sizes, check).map_err(fail)?;
        cols.pop().ok_or_else(lost)
    };
    let decoded = zepto_storage::par::try_map(&read, one)?;
    let rows = decoded.first().map_or(0, Column::len);
    if let Some(c) = decoded.iter().find(|c| c.len() != rows) {
        return Err(file_err(path, format!("columns of {rows} and {} rows", c.len())));
    }
    let mut slots: Vec<Option<Column>> = schema.iter().map(|_| None).collect();
    for (i, c) in read.into_iter().zip(decoded) {
        *slots.get_mut(i).ok_or_else(lost)? = Some(c);
    }
    // Schema columns the file lacks read as NULL.
    Ok(slots.into_iter().zip(schema).map(|(c, d)| c.unwrap_or_else(|| Column::nulls(d.data_type, rows))).collect())
}

pub(crate) enum ReadFail {
    Io(String),
    Other(IoError),
}

impl From<IoError> for ReadFail {
    fn from(e: IoError) -> Self {
        ReadFail::Other(e)
    }
}

impl ReadFail {
    /// The error, a reader's own naming the file at `path`.
    pub(crate) fn in_file(self, path: &Path) -> IoError {
        match self {
            ReadFail::Io(m) => file_err(path, m),
            ReadFail::Other(e) => e,
        }
    }
}

/// Read `schema`'s columns of a Parquet file whose footer is already parsed (`meta`), only the
/// row groups listed (all when `None`). The historical store calls this with cached footers
/// and the row groups its pruning kept.
pub fn read_parquet_parts<R: ChunkReader + 'static>(
    reader: R,
    meta: Arc<ParquetMetaData>,
    schema: &[ColumnDef],
    row_groups: Option<Vec<usize>>,
    what: &str,
) -> Result<Vec<Column>, IoError> {
    let meta = ArrowReaderMetadata::try_new(meta, ArrowReaderOptions::new())
        .map_err(|e| IoError::File { path: what.to_string(), message: e.to_string() })?;
    read_with(reader, meta, schema, row_groups, Sizes::DEFAULT, &crate::unchecked).map_err(|e| match e {
        ReadFail::Io(message) => IoError::File { path: what.to_string(), message },
        ReadFail::Other(e) => e,
    })
}

pub(crate) fn read_with<R: ChunkReader + 'static>(
    file: R,
    meta: ArrowReaderMetadata,
    schema: &[ColumnDef],
    row_groups: Option<Vec<usize>>,
    sizes: Sizes,
    check: Check,
) -> Result<Vec<Column>, ReadFail> {
    let Opened { reader, source, roots, total } = open_reader(file, meta, schema, row_groups, sizes)?;
    // The footer's row count sizes the columns up front, up to a bound: it is the file's word,
    // and a crafted footer must not make one allocation the machine cannot serve.
    let capacity = total.min(sizes.prealloc_rows);
    let mut accs: Vec<Acc> = schema.iter().map(|c| Acc::new(c, capacity)).collect();
    let mut rows = 0usize;
    let mut trusted = false;
    for batch in reader {
        let batch = batch.map_err(|e| ReadFail::Io(e.to_string()))?;
        if !trusted && rows + batch.num_rows() > capacity && total > capacity {
            // As many rows as first made room for are real: take the footer's word for the
            // rest at once (the allocator may refuse; then columns grow as batches come).
            trusted = true;
            for a in accs.iter_mut() {
                a.try_reserve_rows(total.saturating_sub(rows));
            }
        }
        append_batch(&mut accs, schema, &source, rows, |k| projected(&roots, &batch, k))?;
        rows += batch.num_rows();
        drop(batch);
        check().map_err(|m| ReadFail::Other(IoError::Stopped(m)))?;
    }
    Ok(finish_columns(accs, schema, &source, rows))
}

/// A reader of a file's batches, and where each schema column comes from.
pub(crate) struct Opened {
    pub(crate) reader: ParquetRecordBatchReader,
    /// The file column of each schema column.
    pub(crate) source: Vec<Option<usize>>,
    /// The file columns read, in file order (as the batches hold them).
    pub(crate) roots: Vec<usize>,
    /// Rows the footer says the row groups read hold.
    pub(crate) total: usize,
}

/// File column `k`'s array in `batch`, a batch of the file columns `roots`.
pub(crate) fn projected(roots: &[usize], batch: &RecordBatch, k: usize) -> Result<ArrayRef, IoError> {
    let pos = roots.binary_search(&k).map_err(|_| IoError::Invalid("projection lost a column".into()))?;
    Ok(batch.column(pos).clone())
}

/// A reader of `schema`'s columns of a file whose footer is parsed (`meta`), every conversion
/// checked before anything is decoded.
pub(crate) fn open_reader<R: ChunkReader + 'static>(
    file: R,
    meta: ArrowReaderMetadata,
    schema: &[ColumnDef],
    row_groups: Option<Vec<usize>>,
    sizes: Sizes,
) -> Result<Opened, ReadFail> {
    let source = match_columns(meta.schema().fields(), schema, "Parquet file")?;
    let meta = with_dictionary_hints(meta, schema, &source);
    // Validate every conversion before decoding anything.
    for (c, s) in schema.iter().zip(&source) {
        if let Some(k) = *s {
            let dt = meta.schema().field(k).data_type();
            Acc::new(c, 0).append(&arrow_array::new_empty_array(dt), 0).map_err(|e| e.into_io(c, dt))?;
        }
    }
    let md = meta.metadata().clone();
    let total = match &row_groups {
        None => usize::try_from(md.file_metadata().num_rows()).unwrap_or(0),
        Some(rg) => rg.iter().filter_map(|&i| md.row_groups().get(i)).map(|g| g.num_rows().max(0) as usize).sum(),
    };
    let mut roots: Vec<usize> = source.iter().flatten().copied().collect();
    roots.sort_unstable();
    roots.dedup();
    let mask = ProjectionMask::roots(md.file_metadata().schema_descr(), roots.iter().copied());
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
        .with_projection(mask)
        .with_batch_size(sizes.batch_rows);
    if let Some(rg) = row_groups {
        builder = builder.with_row_groups(rg);
    }
    let reader = builder.build().map_err(|e| ReadFail::Io(e.to_string()))?;
    Ok(Opened { reader, source, roots, total })
}

/// `meta` asking for dictionary arrays where a SYMBOL column reads a string column: Parquet
/// string columns are usually dictionary-encoded, and the reader then hands the dictionary
/// over as it is instead of expanding it to one string per row.
fn with_dictionary_hints(
    meta: ArrowReaderMetadata,
    schema: &[ColumnDef],
    source: &[Option<usize>],
) -> ArrowReaderMetadata {
    let mut hinted: Vec<Field> = meta.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut any_hint = false;
    for (c, s) in schema.iter().zip(source) {
        if let (DataType::Symbol, Some(f)) = (c.data_type, s.and_then(|k| hinted.get_mut(k))) {
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
    if !any_hint {
        return meta;
    }
    let hint = Arc::new(Schema::new_with_metadata(hinted, meta.schema().metadata().clone()));
    // A hint the reader rejects only costs speed: fall back to plain strings.
    ArrowReaderMetadata::try_new(meta.metadata().clone(), ArrowReaderOptions::new().with_schema(hint)).unwrap_or(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parquet_grouped::read_parquet_grouped;
    use ::parquet::arrow::ArrowWriter;
    use arrow_array::types::Int8Type;
    use arrow_array::RecordBatch;
    use arrow_array::{ArrayRef, DictionaryArray, NullArray, PrimitiveArray, StringArray};
    use zepto_storage::{ColumnBuilder, Value};
    use zepto_storage::{ColumnData, KeyGroups};

    /// `cols` as a result of one chunk of `rows` rows.
    fn one(cols: &[Column], rows: usize) -> Vec<crate::chunks::Chunk> {
        vec![(cols.iter().cloned().map(Arc::new).collect(), rows)]
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("zepto-io-{}-{name}.parquet", std::process::id()))
    }

    fn def(name: &str, dt: DataType) -> ColumnDef {
        ColumnDef { name: name.into(), data_type: dt }
    }

    fn col(dt: DataType, vals: &[Value]) -> Column {
        let mut b = ColumnBuilder::new(dt, vals.len());
        for v in vals {
            b.push_value(v).expect("a value of the column type");
        }
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
        write_parquet(&p, &names, one(&cols, 5)).expect("writes");
        assert!(!tmp_path(&p).exists(), "temporary file renamed away");
        let back = read_parquet(&p, &defs).expect("reads");
        assert_same(&cols, &back, 5);
        // Symbols come back dictionary-encoded with one code per distinct string.
        if let ColumnData::Symbol { dict, codes } = &back[9].data() {
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
            ts.push_value(&Value::Timestamp(i as i64 * 1_000)).expect("push");
            if i % 7 == 3 {
                sym.push_null();
            } else {
                // Later row groups meet new symbols.
                sym.push_str(&format!("S{:03}", i % (50 + i / 1000))).expect("push");
            }
            if i % 13 == 0 || (20_000..30_000).contains(&i) {
                px.push_null();
            } else {
                px.push_value(&Value::Float64(i as f64 / 4.0)).expect("push");
            }
            // NULLs only from row 40000 on: validity starts mid-read.
            if i >= 40_000 && i % 5 == 0 {
                name.push_null();
            } else {
                name.push_str(&format!("n{i}")).expect("push");
            }
        }
        let cols = vec![ts.finish(), sym.finish(), px.finish(), name.finish()];
        let names: Vec<String> = ["ts", "sym", "px", "name"].map(String::from).to_vec();
        let p = tmp("many");
        // Row groups of 9,999 rows.
        crate::parquet_writer::write_groups(&p, &names, one(&cols, n), 9_999).expect("writes");
        let defs = vec![
            def("TS", DataType::Timestamp),
            def("Sym", DataType::Symbol),
            def("px", DataType::Float64),
            def("name", DataType::Varchar),
        ];
        grouped_equals_whole_split(&p, &defs, 1);
        // Room made for fewer rows than the file has, too: the rest is reserved on the way.
        for (batch_rows, prealloc_rows) in [(1_237, 1 << 24), (4_096, 10_000), (BATCH_ROWS, 1 << 24), (BATCH_ROWS, 1)] {
            let back = read_batched(&p, &defs, Sizes { batch_rows, prealloc_rows }, &crate::unchecked).expect("reads");
            assert_same(&cols, &back, n);
            assert_eq!(back[2].null_count(), cols[2].null_count());
        }
        write_parquet(&p, &names, one(&cols, n)).expect("writes zstd");
        assert_same(&cols, &read_parquet(&p, &defs).expect("reads"), n);
        grouped_equals_whole_split(&p, &defs, 1);
        std::fs::remove_file(&p).expect("cleanup");
    }

    /// [`read_parquet_grouped`] by `schema[key]` (plus a column the file lacks) gives the
    /// whole read split by that key: same groups, same rows in each.
    fn grouped_equals_whole_split(p: &Path, schema: &[ColumnDef], key: usize) {
        let mut schema = schema.to_vec();
        schema.push(def("missing", DataType::Int32));
        let whole = read_parquet(p, &schema).expect("reads");
        let groups = KeyGroups::of(whole[key].clone()).expect("a SYMBOL key");
        let got = read_parquet_grouped(p, &schema, key, &crate::unchecked).expect("reads").expect("has the key");
        same_groups(&whole, &groups, &got);
        // The key's dictionary in the order one read interns it (the key column is read in
        // runs of row groups on every core, then joined).
        let strings =
            |c: &Column| c.symbol_dict().map(|d| (0..d.len() as u32).map(|i| d.get(i).to_string()).collect::<Vec<_>>());
        if let Some(g) = got.first() {
            assert_eq!(strings(&g[key]), strings(&whole[key]), "the key's dictionary");
        }
        let no_key = [def("nope", DataType::Symbol), def("ts", DataType::Timestamp)];
        assert!(read_parquet_grouped(p, &no_key, 0, &crate::unchecked).expect("reads").is_none());
    }

    /// `got` holds the rows of `whole` split by `groups`: same groups, same rows and NULLs.
    fn same_groups(whole: &[Column], groups: &KeyGroups, got: &[Vec<Column>]) {
        assert_eq!(got.len(), groups.sizes().len());
        for (c, w) in whole.iter().enumerate() {
            for (g, (want, part)) in groups.split(w).iter().zip(got).enumerate() {
                let part = &part[c];
                assert_eq!(part.len(), want.len(), "column {c}, group {g}");
                assert_eq!(part.data_type(), want.data_type(), "column {c}, group {g}");
                assert_eq!(part.null_count(), want.null_count(), "column {c}, group {g}");
                assert!((0..want.len()).all(|i| part.get(i) == want.get(i)), "column {c}, group {g}");
            }
        }
    }

    #[test]
    fn every_type_grouped_across_row_groups() {
        let (defs, cols) = every_type();
        let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        let p = tmp("grouped-rg");
        // Five rows in row groups of two, each with its own dictionaries.
        crate::parquet_writer::write_groups(&p, &names, one(&cols, 5), 2).expect("writes");
        grouped_equals_whole_split(&p, &defs, 9);
        std::fs::remove_file(&p).expect("cleanup");
    }

    /// Many rows over a few dozen keys, NULLs in some row groups only: chunks split straight
    /// from the decoded arrays (no NULLs, the stored width) and chunks converted first, mixed
    /// within one column, give the whole read's rows.
    #[test]
    fn a_grouped_read_of_many_rows_mixes_plain_and_converted_chunks() {
        use Value::*;
        let mut r = zepto_storage::rng::XorShift::new(0x3c6e_f372_fe94_f82b);
        let n = 60_000;
        let types = [
            DataType::Int64,
            DataType::Float64,
            DataType::Timestamp,
            DataType::Int32,
            DataType::Float32,
            DataType::Date,
        ];
        let mut defs = vec![def("sym", DataType::Symbol)];
        defs.extend(["l", "d", "ts", "i", "f", "dt"].iter().zip(types).map(|(name, dt)| def(name, dt)));
        let syms: Vec<Value> = (0..n).map(|_| Str(format!("S{}", r.below(37)))).collect();
        let mut cols = vec![col(DataType::Symbol, &syms)];
        for dt in types {
            let vals: Vec<Value> = (0..n)
                .map(|i| {
                    // NULLs only in the second of every three row groups of 7,000 rows.
                    if (i / 7_000) % 3 == 1 && r.below(5) == 0 {
                        return Null;
                    }
                    let x = r.below(1 << 40) as i64 - (1 << 39);
                    match dt {
                        DataType::Int64 => Int64(x),
                        DataType::Float64 => Float64(x as f64 / 7.0),
                        DataType::Timestamp => Timestamp(x),
                        DataType::Int32 => Int32(x as i32),
                        DataType::Float32 => Float32(x as f32),
                        _ => Date((x % 1_000_000) as i32),
                    }
                })
                .collect();
            cols.push(col(dt, &vals));
        }
        let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        let p = tmp("grouped-many");
        crate::parquet_writer::write_groups(&p, &names, one(&cols, n), 7_000).expect("writes");
        grouped_equals_whole_split(&p, &defs, 0);
        std::fs::remove_file(&p).expect("cleanup");
    }

    /// A key column whose NULLs fall in some row groups only, one row group all NULL, and keys
    /// first seen in later row groups: read in runs of row groups (one per core in a grouped
    /// read; here also one to eight runs, so that a run may hold only NULLs, its dictionary no
    /// string), it gives the whole read's rows, NULLs and dictionary order.
    #[test]
    fn a_key_column_with_nulls_in_some_runs_only() {
        use Value::*;
        let mut r = zepto_storage::rng::XorShift::new(0x510e_527f_ade6_82d1);
        let n = 40_000;
        let key = |i: usize, r: &mut zepto_storage::rng::XorShift| match i / 5_000 {
            0..=3 => Str(format!("A{}", r.below(9))),
            5 => Null,
            _ if r.below(4) == 0 => Null,
            _ => Str(format!("B{}", r.below(30))),
        };
        let syms: Vec<Value> = (0..n).map(|i| key(i, &mut r)).collect();
        let ts: Vec<Value> = (0..n).map(|i| Timestamp(i as i64)).collect();
        let cols = vec![col(DataType::Symbol, &syms), col(DataType::Timestamp, &ts)];
        let defs = vec![def("sym", DataType::Symbol), def("ts", DataType::Timestamp)];
        let p = tmp("grouped-null-keys");
        crate::parquet_writer::write_groups(&p, &["sym".into(), "ts".into()], one(&cols, n), 5_000).expect("writes");
        grouped_equals_whole_split(&p, &defs, 0);
        let whole = read_parquet(&p, &defs[..1]).expect("reads").remove(0);
        let strings = |c: &Column| c.symbol_dict().map(|d| d.iter().map(str::to_string).collect::<Vec<_>>());
        for runs in 1..=8 {
            let got = crate::parquet_grouped::key_column_in_runs(&p, &defs[0], runs).expect("reads");
            assert_eq!(got.len(), n, "{runs} runs");
            assert!((0..n).all(|i| got.get(i) == whole.get(i)), "{runs} runs: the rows");
            assert_eq!(strings(&got), strings(&whole), "{runs} runs: the dictionary's order");
        }
        std::fs::remove_file(&p).expect("cleanup");
    }

    #[test]
    fn a_grouped_read_reports_a_bad_value_at_its_file_row() {
        use Value::*;
        let syms: Vec<Value> = ["a", "b", "a", "c", "b", "a"].iter().map(|s| Str(s.to_string())).collect();
        let ls: Vec<Value> = [0, 1, 2, 3, 1 << 40, 5].into_iter().map(Int64).collect();
        let cols = vec![col(DataType::Symbol, &syms), col(DataType::Int64, &ls)];
        let p = tmp("grouped-err");
        crate::parquet_writer::write_groups(&p, &["sym".into(), "l".into()], one(&cols, 6), 2).expect("writes");
        let narrow = vec![def("sym", DataType::Symbol), def("l", DataType::Int32)];
        let e = read_parquet_grouped(&p, &narrow, 0, &crate::unchecked).expect_err("2^40 is no INTEGER");
        assert_eq!(e.row(), Some(5), "{e}"); // rows count from 1
        std::fs::remove_file(&p).expect("cleanup");
    }

    #[test]
    fn matches_by_name_and_fills_missing() {
        let (defs, cols) = every_type();
        let names: Vec<String> = defs.iter().map(|d| d.name.clone()).collect();
        let p = tmp("match");
        write_parquet(&p, &names, one(&cols, 5)).expect("writes");
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
        assert_eq!(e.to_string(), "column 'v': cannot read Arrow type LargeUtf8 as DOUBLE");
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
        match &c.data() {
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
        write_parquet(&p, &names, one(&cols, 3)).expect("writes");
        let back = read_parquet(&p, &[def("n", DataType::Int32), def("x", DataType::Varchar)]).expect("reads");
        assert_eq!((back[0].len(), back[0].null_count()), (3, 3));
        assert_eq!((back[1].len(), back[1].null_count()), (3, 3));
        let empty = [Column::from_data(ColumnData::empty(DataType::Symbol))];
        write_parquet(&p, &names[1..], one(&empty, 0)).expect("writes empty");
        let back = read_parquet(&p, &[def("x", DataType::Symbol)]).expect("reads empty");
        assert_eq!(back[0].len(), 0);
        std::fs::remove_file(&p).expect("cleanup");
    }

    /// The benchmark's trades file, if generated (see bench/harness/gen_data.py):
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
        match &c[1].data() {
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

    #[test]
    fn a_full_disk_wrapped_by_the_parquet_writer_is_disk_full() {
        let wrapped = parquet::errors::ParquetError::External(Box::new(std::io::Error::from_raw_os_error(28)));
        let e = write_failure(Path::new("/t/x.parquet"), &wrapped);
        assert!(matches!(&e, IoError::DiskFull { path, .. } if path == "/t/x.parquet"), "{e:?}");
        let other = parquet::errors::ParquetError::General("bad".into());
        assert!(matches!(write_failure(Path::new("x"), &other), IoError::File { .. }));
    }
}
