//! The exception hierarchy: `zeptodb.Error` and one subclass per kind of engine error, each
//! carrying the engine's stable `code` (SPEC §2) and, where the input has them, `line` and
//! `column` (SQL) or `row` (ingest). Agent-memory errors ([`memory_error`]) get the classes and
//! codes the server's `/api/ai/*` answers with, so `db.memory` raises the same in process and
//! over HTTP.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::{create_exception, PyErr};
use zepto_memory::MemoryError as AiError;
use zepto_sql::SqlError as EngineError;
use zepto_storage::StorageError as StoreError;

create_exception!(zeptodb, Error, pyo3::exceptions::PyException, "Every error ZeptoDB raises.");
create_exception!(zeptodb, SqlError, Error, "A statement that does not parse, plan or run.");
create_exception!(zeptodb, IngestError, Error, "Data that cannot be inserted; nothing of it was stored.");
create_exception!(zeptodb, ResourcesExhausted, Error, "A memory, size or depth limit was hit.");
create_exception!(zeptodb, Timeout, Error, "The statement ran past its time limit.");
create_exception!(zeptodb, Cancelled, Error, "The statement was cancelled.");
create_exception!(zeptodb, StorageError, Error, "The data directory could not be read or written.");
create_exception!(zeptodb, PermissionDenied, Error, "The caller may not do this.");
create_exception!(zeptodb, InternalError, Error, "A bug in ZeptoDB: please report it.");
create_exception!(zeptodb, NotFound, Error, "No such record (an agent memory) in the caller's tenant.");
create_exception!(
    zeptodb,
    QuotaExceeded,
    ResourcesExhausted,
    "The tenant is at its quota of agent memories and nothing can be evicted (all pinned)."
);

/// `zeptodb.BadRequest(Error, ValueError)`: a malformed agent-memory request (a missing or
/// badly typed field, a wrong embedding dimension, a tenant given two ways). Made with
/// `type(...)` at import, since `create_exception!` takes one base and this has two.
static BAD_REQUEST: PyOnceLock<Py<PyType>> = PyOnceLock::new();

const BAD_REQUEST_DOC: &str = "A malformed agent-memory request (a missing or badly typed field, a wrong embedding \
dimension, a tenant given two different ways); nothing of it was stored. Also a ValueError.";

fn bad_request_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let ty = BAD_REQUEST.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let bases = PyTuple::new(py, [py.get_type::<Error>(), py.get_type::<pyo3::exceptions::PyValueError>()])?;
        let dict = PyDict::new(py);
        dict.set_item("__module__", "zeptodb")?;
        dict.set_item("__doc__", BAD_REQUEST_DOC)?;
        let made = py.get_type::<PyType>().call1(("BadRequest", bases, dict))?;
        Ok(made.cast_into::<PyType>()?.unbind())
    })?;
    Ok(ty.bind(py))
}

/// Where an error is in its input.
#[derive(Debug, Default, Clone, Copy)]
pub struct Place {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub row: Option<usize>,
}

/// A Python exception of class `E` with `code` and the place attributes set (None when unknown).
fn raise<E: pyo3::PyTypeInfo>(py: Python<'_>, msg: String, code: &str, at: Place) -> PyErr {
    with_attrs(py, PyErr::new::<E, _>(msg), code, at)
}

fn with_attrs(py: Python<'_>, err: PyErr, code: &str, at: Place) -> PyErr {
    let v = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail but for memory; the
    // exception is raised either way.
    let _ = v.setattr("code", code);
    let _ = v.setattr("line", at.line);
    let _ = v.setattr("column", at.column);
    let _ = v.setattr("row", at.row);
    err
}

/// An engine error as the matching Python exception.
pub fn sql_error(py: Python<'_>, e: EngineError) -> PyErr {
    let at = Place { line: e.pos().map(|p| p.line as usize), column: e.pos().map(|p| p.column as usize), row: None };
    let (code, msg) = (e.code(), e.to_string());
    match e {
        EngineError::ResourcesExhausted(_) | EngineError::LimitExceeded(_) => {
            raise::<ResourcesExhausted>(py, msg, code, at)
        }
        EngineError::Timeout(_) => raise::<Timeout>(py, msg, code, at),
        EngineError::Cancelled => raise::<Cancelled>(py, msg, code, at),
        EngineError::Io(_) | EngineError::DiskFull(_) | EngineError::File { .. } | EngineError::Unavailable(_) => {
            raise::<StorageError>(py, msg, code, at)
        }
        EngineError::PermissionDenied(_) => raise::<PermissionDenied>(py, msg, code, at),
        EngineError::Internal(_) => raise::<InternalError>(py, msg, code, at),
        _ => raise::<SqlError>(py, msg, code, at),
    }
}

/// Bad data given to `insert`.
pub fn ingest_error(py: Python<'_>, msg: String, row: Option<usize>) -> PyErr {
    raise::<IngestError>(py, msg, "INGEST", Place { row, ..Place::default() })
}

/// A storage error while inserting (the table is gone, the disk is full, ...).
pub fn storage_error(py: Python<'_>, e: zepto_storage::StorageError) -> PyErr {
    sql_error(py, EngineError::from(e))
}

/// A data directory that cannot be opened.
pub fn open_error(py: Python<'_>, msg: String) -> PyErr {
    raise::<StorageError>(py, msg, "IO", Place::default())
}

/// An agent-memory error as the class and code the server's `/api/ai/*` gives it
/// (crates/zepto-server/src/error.rs): BAD_REQUEST, PERMISSION_DENIED, NOT_FOUND,
/// QUOTA_EXCEEDED, an engine error's own, a storage error as `/write` reports it.
pub fn memory_error(py: Python<'_>, e: AiError) -> PyErr {
    let none = Place::default();
    match e {
        AiError::BadRequest { .. } => match bad_request_type(py) {
            Ok(ty) => with_attrs(py, PyErr::from_type(ty.clone(), e.to_string()), "BAD_REQUEST", none),
            Err(made) => made,
        },
        AiError::Forbidden(m) => raise::<PermissionDenied>(py, m, "PERMISSION_DENIED", none),
        AiError::NotFound(m) => raise::<NotFound>(py, m, "NOT_FOUND", none),
        AiError::Quota(m) => raise::<QuotaExceeded>(py, m, "QUOTA_EXCEEDED", none),
        AiError::Sql(e) => sql_error(py, e),
        AiError::Internal(m) => sql_error(py, EngineError::Internal(m)),
        AiError::Storage(e) => match e {
            StoreError::TableNotFound(n) => {
                raise::<SqlError>(py, format!("table '{n}' does not exist"), "TABLE_NOT_FOUND", none)
            }
            StoreError::Conflict(_) => {
                raise::<IngestError>(py, format!("{e} (the table changed; retry)"), "INGEST", none)
            }
            StoreError::DiskFull(_) => raise::<StorageError>(py, e.to_string(), "DISK_FULL", none),
            StoreError::Durability(_) => {
                raise::<StorageError>(py, format!("{e}: the batch was not applied"), "NOT_DURABLE", none)
            }
            e => raise::<IngestError>(py, e.to_string(), "INGEST", none),
        },
    }
}

/// Register the exception classes on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("SqlError", py.get_type::<SqlError>())?;
    m.add("IngestError", py.get_type::<IngestError>())?;
    m.add("ResourcesExhausted", py.get_type::<ResourcesExhausted>())?;
    m.add("Timeout", py.get_type::<Timeout>())?;
    m.add("Cancelled", py.get_type::<Cancelled>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("PermissionDenied", py.get_type::<PermissionDenied>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("NotFound", py.get_type::<NotFound>())?;
    m.add("QuotaExceeded", py.get_type::<QuotaExceeded>())?;
    m.add("BadRequest", bad_request_type(py)?)?;
    Ok(())
}
