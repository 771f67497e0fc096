//! The exception hierarchy: `zeptodb.Error` and one subclass per kind of engine error, each
//! carrying the engine's stable `code` (SPEC §2) and, where the input has them, `line` and
//! `column` (SQL) or `row` (ingest).

use pyo3::prelude::*;
use pyo3::{create_exception, PyErr};
use zepto_sql::SqlError as EngineError;

create_exception!(zeptodb, Error, pyo3::exceptions::PyException, "Every error ZeptoDB raises.");
create_exception!(zeptodb, SqlError, Error, "A statement that does not parse, plan or run.");
create_exception!(zeptodb, IngestError, Error, "Data that cannot be inserted; nothing of it was stored.");
create_exception!(zeptodb, ResourcesExhausted, Error, "A memory, size or depth limit was hit.");
create_exception!(zeptodb, Timeout, Error, "The statement ran past its time limit.");
create_exception!(zeptodb, Cancelled, Error, "The statement was cancelled.");
create_exception!(zeptodb, StorageError, Error, "The data directory could not be read or written.");
create_exception!(zeptodb, PermissionDenied, Error, "The caller may not do this.");
create_exception!(zeptodb, InternalError, Error, "A bug in ZeptoDB: please report it.");

/// Where an error is in its input.
#[derive(Debug, Default, Clone, Copy)]
pub struct Place {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub row: Option<usize>,
}

/// A Python exception of class `E` with `code` and the place attributes set (None when unknown).
fn raise<E: pyo3::PyTypeInfo>(py: Python<'_>, msg: String, code: &str, at: Place) -> PyErr {
    let err = PyErr::new::<E, _>(msg);
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
        EngineError::Io(_) | EngineError::DiskFull(_) | EngineError::File { .. } => {
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
    Ok(())
}
