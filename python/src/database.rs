//! A database in this process: an engine over a catalog kept in memory, or durable in a data
//! directory opened exactly as `zeptodb serve --data-dir` opens it (write-ahead log,
//! checkpoints, Parquet history). Statements and inserts release the GIL while the engine
//! works, so Python threads run them at once. Each database also holds the agent-memory layer
//! over its engine (`db.memory`, `db.cache`: see [`crate::memory`]).

use crate::errors::{ingest_error, memory_error, open_error, sql_error, storage_error};
use crate::interrupt::OnMain;
use crate::result::NativeResult;
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchReader};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyFloat, PyInt, PyString};
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;
use zepto_durable::{DataDir, DirOptions};
use zepto_memory::tables::{CACHE, MEMORIES};
use zepto_memory::{AgentMemory, Config};
use zepto_sql::interrupt::{QueryControl, RunContext};
use zepto_sql::{Engine, ParamValue};
use zepto_storage::{Catalog, ColumnDef, DataType, Schema, Table, TableOptions};

const STREAM: &CStr = c"arrow_array_stream";

/// One database: its engine, and its data directory when durable; `None` once closed.
#[pyclass(frozen, module = "zeptodb._native")]
pub struct Database {
    open: Mutex<Option<Arc<Open>>>,
}

/// An open database. Statements running when it is closed keep it until they end; the
/// directory's lock goes with the last of them. Fields drop in order: the memory layer and the
/// engine (and with them the catalog and its change log) before the directory.
struct Open {
    memory: AgentMemory,
    engine: Engine,
    dir: Option<DataDir>,
    limits: Limits,
    /// Whether the sweeper of expired memories was started (see [`Open::start_sweeper`]).
    sweeper: Once,
}

/// Per-statement limits, as `serve --query-timeout --query-memory-mb` sets them.
#[derive(Debug, Clone, Copy, Default)]
struct Limits {
    timeout: Option<Duration>,
    memory: Option<usize>,
}

impl Open {
    fn new(engine: Engine, dir: Option<DataDir>, limits: Limits) -> Open {
        let memory = AgentMemory::new(engine.clone(), Config::default());
        Open { memory, engine, dir, limits, sweeper: Once::new() }
    }

    /// Run `f` under a fresh control with this database's limits, the GIL released. `main`:
    /// the caller is Python's main thread with the wakeup fd pointed at the interrupt watcher,
    /// so Ctrl-C cancels the statement (and raises KeyboardInterrupt here, the outer error;
    /// `f`'s own error is the inner one).
    fn control<T: Send, E: Send>(
        &self,
        py: Python<'_>,
        main: bool,
        f: impl FnOnce(&Open, &RunContext) -> Result<T, E> + Send,
    ) -> PyResult<Result<T, E>> {
        let ctl = QueryControl::new(self.limits.timeout, self.limits.memory);
        let on_main = main.then(|| OnMain::register(&ctl));
        // The context is made on the thread that runs the statement: its memory counts from here.
        let r = py.detach(|| f(self, &RunContext::new(Some(ctl.clone()))));
        drop(on_main);
        if main {
            // A Ctrl-C that arrived meanwhile: its KeyboardInterrupt wins over the CANCELLED.
            py.check_signals()?;
        }
        Ok(r)
    }

    /// A statement (see [`Open::control`]).
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        main: bool,
        f: impl FnOnce(&Engine, &RunContext) -> zepto_sql::Result<T> + Send,
    ) -> PyResult<T> {
        self.control(py, main, |o, run| f(&o.engine, run))?.map_err(|e| sql_error(py, e))
    }

    /// Delete expired memories and cache entries every [`Config::sweep_every`], as the server
    /// does, from the first agent-memory call on (or from the open of a directory that holds
    /// the layer's tables). Not `AgentMemory::start_sweeper`: that thread keeps only the layer
    /// alive during a sweep, and a sweep of a closed durable database would then log changes
    /// after the directory's lock was let go; this one holds the whole database, directory
    /// included, as a running statement does. It ends at the first wake after the close.
    fn start_sweeper(self: &Arc<Open>) {
        self.sweeper.call_once(|| {
            let weak: Weak<Open> = Arc::downgrade(self);
            let every = self.memory.config().sweep_every;
            let spawned = std::thread::Builder::new().name("zepto-ai-sweep".into()).spawn(move || loop {
                std::thread::sleep(every);
                let Some(open) = weak.upgrade() else { return };
                if let Err(e) = open.memory.sweep(&RunContext::unlimited()) {
                    log_line(&format!("sweeping expired agent memories failed: {e}"));
                }
            });
            if let Err(e) = spawned {
                // Reads skip expired records and puts evict them first: only memory is lost.
                log_line(&format!("could not start the agent-memory sweeper: {e}"));
            }
        });
    }
}

impl Database {
    fn open(&self, py: Python<'_>) -> PyResult<Arc<Open>> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.clone().ok_or_else(|| sql_error(py, zepto_sql::SqlError::exec("the database is closed")))
    }
}

fn log_line(m: &str) {
    eprintln!("zeptodb: {m}");
}

#[pymethods]
impl Database {
    /// In memory (`path` None), or durable in the directory `path` (created if missing). `sync`
    /// is when the log is flushed to disk: `always` (the default: nothing acknowledged is ever
    /// lost), `interval=<ms>` or `none`.
    ///
    /// `query_timeout` (seconds) and `query_memory_mb` limit each statement, as the server's
    /// `--query-timeout` and `--query-memory-mb` do.
    #[new]
    #[pyo3(signature = (path = None, sync = None, query_timeout = None, query_memory_mb = None))]
    fn new(
        py: Python<'_>,
        path: Option<PathBuf>,
        sync: Option<String>,
        query_timeout: Option<f64>,
        query_memory_mb: Option<usize>,
    ) -> PyResult<Database> {
        let timeout = match query_timeout {
            None => None,
            Some(s) if s.is_finite() && s > 0.0 => Some(Duration::from_secs_f64(s)),
            Some(s) => return Err(PyValueError::new_err(format!("query_timeout must be positive seconds, not {s}"))),
        };
        let limits = Limits { timeout, memory: query_memory_mb.map(|m| m.saturating_mul(1 << 20)) };
        let engine = Engine::new();
        let Some(path) = path else {
            return Ok(Database { open: Mutex::new(Some(Arc::new(Open::new(engine, None, limits)))) });
        };
        let opts = DirOptions { sync, ..DirOptions::default() };
        let catalog = engine.catalog().clone();
        let dir =
            py.detach(|| DataDir::open(&catalog, &path, &opts, Arc::new(log_line))).map_err(|e| open_error(py, e))?;
        // COPY never reads or writes the data directory's own files.
        let files = zepto_sql::FilePolicy::new(None, &[path.as_path()]).map_err(|e| open_error(py, e))?;
        // The recovered tables' vector indexes (the memory layer's among them) are built again.
        engine.start_index_maintainer();
        let open = Arc::new(Open::new(engine.with_files(files), Some(dir), limits));
        if catalog.exists(MEMORIES.name) || catalog.exists(CACHE.name) {
            open.start_sweeper();
        }
        Ok(Database { open: Mutex::new(Some(open)) })
    }

    /// Run one statement (or a `;`-separated script: the last statement's result). `params`
    /// fill `?` / `$n` placeholders: None, bool, int, float, str or [`TimestampParam`].
    /// `main`: called on the main thread with the wakeup fd set (see [`crate::interrupt`]).
    #[pyo3(signature = (query, params = None, main = false))]
    fn sql(
        &self,
        py: Python<'_>,
        query: &str,
        params: Option<Vec<Bound<'_, PyAny>>>,
        main: bool,
    ) -> PyResult<NativeResult> {
        let params = params.unwrap_or_default().iter().map(param).collect::<PyResult<Vec<_>>>()?;
        let open = self.open(py)?;
        let r = open.run(py, main, |engine, run| engine.execute_with_params_in(run, query, &params))?;
        NativeResult::new(&r).map_err(PyValueError::new_err)
    }

    /// Subscribe to `query` (one table, row by row): its answer over each write committed to
    /// the table from now, or after event `from_id` (see `crate::subscriber`).
    #[pyo3(signature = (query, from_id = None))]
    fn subscribe(
        &self,
        py: Python<'_>,
        query: &str,
        from_id: Option<&str>,
    ) -> PyResult<crate::subscriber::NativeSubscriber> {
        let open = self.open(py)?;
        crate::subscriber::NativeSubscriber::start(&open.engine, query, from_id).map_err(|e| sql_error(py, e))
    }

    /// Append the Arrow C stream of `data` (any object with `__arrow_c_stream__`) to `table`,
    /// all or nothing; with `create`, a missing table is made from the stream's schema (its
    /// first timestamp column designated). Returns the rows written. The stream is read with
    /// the GIL held; converting it to engine columns and appending run without it.
    #[pyo3(signature = (table, data, create = false))]
    fn insert(&self, py: Python<'_>, table: &str, data: &Bound<'_, PyAny>, create: bool) -> PyResult<usize> {
        let open = self.open(py)?;
        let reader = import_stream(data)?;
        let catalog = open.engine.catalog();
        let fields = reader.schema().fields().clone();
        let created = if catalog.exists(table) {
            false
        } else if create {
            let defs = zepto_io::ipc::engine_defs(&fields).map_err(|e| ingest_error(py, e.to_string(), None))?;
            create_table(catalog, table, defs).map_err(|e| storage_error(py, e))?
        } else {
            return Err(sql_error(py, zepto_sql::SqlError::TableNotFound { name: table.into(), pos: None }));
        };
        let r = write(py, catalog, table, &fields, reader);
        if r.is_err() && created && catalog.snapshot(table).is_ok_and(|t| t.row_count() == 0) {
            // Take back the table this insert made, unless someone wrote to it meanwhile.
            let _ = catalog.drop_table(table, true);
        }
        r
    }

    /// One agent-memory operation, as the server's `/api/ai/*` does it, with the same JSON
    /// bodies: `op` is `put`, `get`, `delete`, `search`, `context`, `cache_store`,
    /// `cache_lookup` or `stats`; `tenant` is what the `X-Zepto-Tenant-Id` header would say;
    /// `body` the request body (operations with one), `id` the record (get, delete),
    /// `include_embedding` the get's query parameter. Returns the answer as JSON text. Runs
    /// without the GIL under the database's statement limits; `main` as for [`Database::sql`].
    #[pyo3(signature = (op, tenant = None, body = None, id = None, include_embedding = false, main = false))]
    // The parts of the HTTP request it stands for (route, tenant header, body, id, query flag),
    // and `main` as for `sql`.
    #[allow(clippy::too_many_arguments)]
    fn ai(
        &self,
        py: Python<'_>,
        op: &str,
        tenant: Option<&str>,
        body: Option<&str>,
        id: Option<&str>,
        include_embedding: bool,
        main: bool,
    ) -> PyResult<String> {
        let op = zepto_memory::Op::parse(op)
            .ok_or_else(|| PyValueError::new_err(format!("no agent-memory operation '{op}'")))?;
        let open = self.open(py)?;
        open.start_sweeper();
        // In process there is no API key: the tenant comes as the header would.
        let tenant = zepto_memory::TenantSources { key: None, header: tenant };
        let call = zepto_memory::Call { op, tenant, body: body.map(str::as_bytes), id, include_embedding };
        open.control(py, main, |o, run| o.memory.call(run, &call))?.map_err(|e| memory_error(py, e))
    }

    /// Names of the tables, sorted.
    fn tables(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let mut names = self.open(py)?.engine.catalog().table_names();
        names.sort();
        Ok(names)
    }

    /// Whether the tables are kept in a data directory.
    #[getter]
    fn durable(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.open(py)?.dir.is_some())
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).is_none()
    }

    /// Checkpoint a durable database and close it: later calls raise, and the directory is
    /// free for another process once statements still running end. Closing twice does nothing.
    fn close(&self, py: Python<'_>) {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(o) = open {
            if let Some(d) = &o.dir {
                py.detach(|| d.close(o.engine.catalog(), &log_line));
            }
        }
    }
}

/// A TIMESTAMP statement parameter: nanoseconds since the epoch, UTC. `zeptodb` makes one of
/// every `datetime`, `numpy.datetime64` and pandas `Timestamp`, so that it binds as a
/// TIMESTAMP (not as text) with its nanoseconds.
#[pyclass(frozen, module = "zeptodb._native")]
pub struct TimestampParam {
    /// Nanoseconds since 1970-01-01 00:00:00 UTC.
    #[pyo3(get)]
    ns: i64,
}

#[pymethods]
impl TimestampParam {
    /// The timestamp `ns` nanoseconds after the epoch (UTC).
    #[new]
    fn new(ns: i64) -> TimestampParam {
        TimestampParam { ns }
    }

    fn __repr__(&self) -> String {
        format!("TimestampParam({})", self.ns)
    }
}

/// A Python value as a statement parameter.
fn param(v: &Bound<'_, PyAny>) -> PyResult<ParamValue> {
    if let Ok(t) = v.cast::<TimestampParam>() {
        Ok(ParamValue::Timestamp(t.get().ns))
    } else if v.is_none() {
        Ok(ParamValue::Null)
    } else if v.is_instance_of::<PyBool>() {
        Ok(ParamValue::Bool(v.extract()?))
    } else if v.is_instance_of::<PyInt>() {
        Ok(ParamValue::Int(v.extract()?))
    } else if v.is_instance_of::<PyFloat>() {
        Ok(ParamValue::Float(v.extract()?))
    } else if v.is_instance_of::<PyString>() {
        Ok(ParamValue::Str(v.extract()?))
    } else {
        Err(PyTypeError::new_err(format!(
            "a parameter must be None, bool, int, float, str or TimestampParam, not {}",
            v.get_type()
        )))
    }
}

/// Take the Arrow C stream out of `data`'s `__arrow_c_stream__` capsule.
fn import_stream(data: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    if !data.hasattr("__arrow_c_stream__")? {
        return Err(PyTypeError::new_err(format!("{} has no __arrow_c_stream__", data.get_type())));
    }
    let capsule = data.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let ptr = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: a capsule named "arrow_array_stream" holds an FFI_ArrowArrayStream (the Arrow
    // PyCapsule interface); `from_raw` moves it out and leaves a released stream behind, which
    // the capsule's destructor then leaves alone.
    unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr().cast::<FFI_ArrowArrayStream>()) }
        .map_err(|e| PyValueError::new_err(format!("reading the Arrow stream: {e}")))
}

/// A new empty table of `defs`, its first TIMESTAMP column designated. False if it was made
/// meanwhile by someone else.
fn create_table(catalog: &Catalog, name: &str, defs: Vec<ColumnDef>) -> Result<bool, zepto_storage::StorageError> {
    let timestamp = defs.iter().find(|d| d.data_type == DataType::Timestamp).map(|d| d.name.clone());
    let table = Table::new(name, Schema { columns: defs }, &TableOptions { timestamp, ..Default::default() })?;
    catalog.create(table, true)
}

/// Why [`write`] failed, kept until the GIL is back to raise it.
enum WriteError {
    Io(zepto_io::IoError),
    Storage(zepto_storage::StorageError),
}

/// Inserts of fewer rows are converted whole and appended (the table splits them among its
/// partitions on the caller's thread); grouping them as they are converted pays for its work
/// on every core only from this many. Inserts over 100 symbols, rows/s grouped against whole
/// (spread on the caller): 10k rows 14-19M against 27-32M, 32Ki 23-28M against 35M, 64Ki
/// 25-33M against 37M (whole from there spreads on helper threads: 14M), 1M 34-50M against 37M.
const GROUPED_MIN_ROWS: usize = 64 << 10;

/// Into a table that holds rows already, grouping is a copy more than a spread (only an empty
/// partition takes its group as it is), and pays only from this many rows. 1M rows over 100
/// symbols into a table, in inserts of 100k rows: 16.1 ms grouped, 12.8 whole (spread a chunk
/// at a time); 150k: 13.6 and 12.6; 200k: 13.4 and 13.3; 250k: 12.3 and 13.4 (in process).
const GROUPED_MIN_ROWS_FILLED: usize = 192 << 10;

/// Read the whole stream (with the GIL: its producer may be Python code), then convert it to
/// the table's columns and append them with the GIL released: into a table with a partition
/// key and from [`GROUPED_MIN_ROWS`] rows ([`GROUPED_MIN_ROWS_FILLED`] into one that holds
/// rows), grouped by it (one logged record of an append per
/// group), else as one append (deferred when it is spread thin over a wide table:
/// [`Catalog::append_deferring`]). The batches are Arrow memory owned on the Rust side by then (a
/// producer's buffers are released, taking the GIL themselves if they need it, when the
/// batches are dropped).
fn write(
    py: Python<'_>,
    catalog: &Arc<Catalog>,
    table: &str,
    fields: &arrow_schema::Fields,
    reader: RecordBatchStreamReader,
) -> PyResult<usize> {
    let batches = reader
        .collect::<Result<Vec<RecordBatch>, _>>()
        .map_err(|e| ingest_error(py, format!("reading the Arrow stream: {e}"), None))?;
    // The layout, not a snapshot: a snapshot folds in the rows earlier inserts deferred.
    // As the table is now (this caller's `ALTER TABLE` just before shows), not as last read.
    let layout = catalog.current_layout(table).map_err(|e| storage_error(py, e))?;
    let schema = layout.schema.columns;
    // Symbols coded against the table's dictionary: the append takes the codes as they are.
    let dict = layout.dict;
    let (key, filled) = (layout.key_col, layout.rows);
    let r = py.detach(|| {
        // Into a table partitioned by a key, from GROUPED_MIN_ROWS rows, the rows are grouped by
        // it as they are converted, each group then moved into its partition: no column is held
        // whole.
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let grouped = match key {
            Some(k) if rows >= GROUPED_MIN_ROWS && (filled == 0 || rows >= GROUPED_MIN_ROWS_FILLED) => {
                zepto_io::ipc::read_batches_grouped(fields, &batches, &schema, Some(&dict), k)
                    .map_err(WriteError::Io)?
            }
            _ => None,
        };
        if let Some(groups) = grouped {
            return catalog.append_groups(table, groups).map_err(WriteError::Storage);
        }
        let cols = zepto_io::ipc::read_batches_in(fields, batches.into_iter().map(Ok), &schema, Some(&dict))
            .map_err(WriteError::Io)?;
        catalog.append_deferring(table, cols).map_err(WriteError::Storage)
    });
    r.map_err(|e| match e {
        WriteError::Io(e) => {
            let row = match &e {
                zepto_io::IoError::BadValue { row, .. } | zepto_io::IoError::BadRow { row, .. } => Some(*row),
                _ => None,
            };
            ingest_error(py, e.to_string(), row)
        }
        WriteError::Storage(e) => storage_error(py, e),
    })
}
