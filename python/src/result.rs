//! A query's result on the Python side: its batches as Arrow record batches over the engine's
//! own column memory ([`zepto_io::export::share_column`]), handed out through the Arrow
//! PyCapsule interface (`__arrow_c_stream__`, `__arrow_c_schema__`), so that `pyarrow.table`,
//! `polars.from_arrow` and DuckDB read it without a copy. The batches stay as the engine made
//! them (a result of whole partitions is one batch per partition), but for runs of small ones
//! the query made, joined into one ([`SMALL_BATCH_ROWS`]). The record batches hold the
//! engine's columns alive: a view outlives the result, the connection and the table, and later
//! writes never change it (a shared column is copied before it is written).

use crate::dlpack::Tensor;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator, RecordBatchOptions};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{Field, Schema, SchemaRef};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::CStr;
use std::sync::Arc;
use zepto_io::export::Exporter;
use zepto_sql::exec::Batch;
use zepto_sql::QueryResult;

const STREAM: &CStr = c"arrow_array_stream";
const SCHEMA: &CStr = c"arrow_schema";

/// The rows of one statement, as Arrow record batches sharing the engine's memory, or the
/// status line of a statement that returns none.
#[pyclass(frozen, module = "zeptodb._native")]
pub struct NativeResult {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    status: Option<String>,
}

/// A batch the query made (no table shares its columns) under this many rows is joined with
/// its small neighbours before it is shared, into batches of at most [`JOINED_ROWS`]: every
/// Arrow batch costs its reader some microseconds (pyarrow's import of the stream, a chunk in
/// Polars), which for 1-minute bars of 100 symbols (100 per-partition batches of ~400 rows)
/// was a third of the query. A batch of a table's own columns (a scan's) is never copied. The
/// engine joins a GROUP BY's small per-partition results itself, on the cores that made them,
/// into a few batches per core (`exec/partitioned.rs`): most of those pass as they are, for a
/// copy here is one thread reading memory the others wrote (2.3 MB of 1-minute bars over 1M
/// rows: 200 us), while a batch costs pyarrow about 8 us (its import and its release).
const SMALL_BATCH_ROWS: usize = 2 << 10;

/// The most rows small batches are joined into.
const JOINED_ROWS: usize = 64 << 10;

/// `chunks` with runs of small batches joined (see [`SMALL_BATCH_ROWS`]).
fn joined(chunks: &[Batch]) -> Vec<Batch> {
    let mut out = Vec::with_capacity(chunks.len());
    let mut run: Vec<Batch> = Vec::new();
    let mut run_rows = 0;
    let flush = |run: &mut Vec<Batch>, out: &mut Vec<Batch>| {
        if !run.is_empty() {
            out.push(zepto_sql::exec::concat_chunks(std::mem::take(run)));
        }
    };
    // Only this result holds the columns: the query made them (a column it gives twice, as
    // `SELECT count(*) AS a, count(*) AS b` does, is held once per place).
    let own = |b: &Batch, c: &Arc<_>| {
        Arc::strong_count(c) == 1 || Arc::strong_count(c) == b.columns.iter().filter(|d| Arc::ptr_eq(c, d)).count()
    };
    let small = |b: &Batch| b.rows < SMALL_BATCH_ROWS && b.columns.iter().all(|c| own(b, c));
    for b in chunks {
        let join = small(b);
        if !join || run_rows + b.rows > JOINED_ROWS {
            flush(&mut run, &mut out);
            run_rows = 0;
        }
        if !join {
            out.push(b.clone());
        } else {
            run_rows += b.rows;
            run.push(b.clone());
        }
    }
    flush(&mut run, &mut out);
    out
}

impl NativeResult {
    /// Share `r`'s columns as Arrow arrays (no copy but BOOLEAN bits, symbol dictionaries and
    /// small batches joined).
    pub fn new(r: &QueryResult) -> Result<NativeResult, String> {
        let chunks = joined(r.chunks());
        let mut export = Exporter::default();
        let first: Vec<ArrayRef> = match chunks.first() {
            Some(b) => arrays(&mut export, b)?,
            None => Vec::new(),
        };
        let fields: Vec<Field> =
            r.fields.iter().zip(&first).map(|(f, a)| Field::new(f.name.clone(), a.data_type().clone(), true)).collect();
        let schema = Arc::new(Schema::new(fields));
        let mut batches = Vec::with_capacity(chunks.len());
        for (k, b) in chunks.iter().enumerate() {
            let cols = if k == 0 { first.clone() } else { arrays(&mut export, b)? };
            let opts = RecordBatchOptions::new().with_row_count(Some(b.rows));
            let rb = RecordBatch::try_new_with_options(schema.clone(), cols, &opts).map_err(|e| e.to_string())?;
            batches.push(rb);
        }
        Ok(NativeResult { schema, batches, status: r.status.clone() })
    }
}

impl NativeResult {
    /// Column `i` of batch `batch`.
    fn column(&self, batch: usize, i: usize) -> PyResult<&ArrayRef> {
        let b = self.batches.get(batch).ok_or_else(|| PyValueError::new_err(format!("no batch {batch}")))?;
        b.columns().get(i).ok_or_else(|| PyValueError::new_err(format!("no column {i}")))
    }
}

fn arrays(export: &mut Exporter, b: &Batch) -> Result<Vec<ArrayRef>, String> {
    b.columns.iter().map(|c| export.column(c, b.rows)).collect()
}

#[pymethods]
impl NativeResult {
    /// The Arrow C stream of the result's batches (the Arrow PyCapsule interface). A requested
    /// schema is not honoured (the interface allows that): the types are the engine's.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(self.batches.clone().into_iter().map(Ok), self.schema.clone());
        // The capsule owns the stream; a consumer that takes it leaves a released shell, which
        // dropping does not release twice.
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(Box::new(reader)), STREAM)
    }

    /// The result's Arrow schema (the Arrow PyCapsule interface).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let s = FFI_ArrowSchema::try_from(self.schema.as_ref()).map_err(|e| PyValueError::new_err(e.to_string()))?;
        PyCapsule::new_with_value(py, s, SCHEMA)
    }

    /// Column names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.schema.fields().iter().map(|f| f.name().clone()).collect()
    }

    /// Rows in all batches.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Batches (chunks) the rows come in.
    #[getter]
    fn num_batches(&self) -> usize {
        self.batches.len()
    }

    /// What a statement without rows did (`CREATE TABLE`, `INSERT 3`, ...), else None.
    #[getter]
    fn status(&self) -> Option<String> {
        self.status.clone()
    }

    /// Column `i` of batch `batch` as a DLPack tensor over the engine's memory (numbers,
    /// timestamps as int64 ns, dates as int32 days, SYMBOL codes; no NULLs).
    fn tensor(&self, batch: usize, i: usize) -> PyResult<Tensor> {
        Tensor::of(self.column(batch, i)?)
    }

    /// The address of column `i`'s values in batch `batch` (to check that views share memory).
    fn buffer_address(&self, batch: usize, i: usize) -> PyResult<usize> {
        Ok(self.column(batch, i)?.to_data().buffers().first().map_or(0, |b| b.as_ptr() as usize))
    }
}
