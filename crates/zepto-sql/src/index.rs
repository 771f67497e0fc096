//! `CREATE INDEX` and `DROP INDEX`: checks a definition against its table and the index
//! method, records it in the catalog (logged), and builds its structure before answering.
//!
//! The only method is HNSW over a `FLOAT[n]` column (`zepto_ann`): the definition is checked
//! by [`zepto_ann::IndexSpec::from_def`] so a bad metric or parameter is refused here, not
//! found by the maintainer thread later. `CREATE INDEX` builds the graphs of the rows already
//! in the table before it returns, as DuckDB does; rows appended later are added by the
//! registry's maintainer thread, and queries scan exactly whatever a graph does not hold yet.

use crate::error::{Pos, Result, SqlError};
use std::sync::Arc;
use zepto_ann::{IndexSpec, Registry};
use zepto_storage::{Catalog, IndexDef, StorageError, Table};

/// A parsed `CREATE INDEX`.
pub(crate) struct IndexRequest<'a> {
    pub name: &'a str,
    pub table: &'a str,
    pub column: &'a str,
    pub method: &'a Option<String>,
    pub options: &'a [(String, String)],
    pub pos: Pos,
}

/// Start `registry`'s maintainer thread over `catalog` (once); a failure to start a thread is
/// said on stderr and leaves searches exact for rows appended later.
pub(crate) fn start_maintainer(registry: &Arc<Registry>, catalog: &Arc<Catalog>) {
    if let Err(e) = registry.start(catalog) {
        eprintln!("zeptodb: WARNING the vector index maintainer did not start: {e}");
    }
}

/// Catch every index's graphs up with the tables; the rows added.
pub(crate) fn refresh(registry: &Registry, catalog: &Catalog) -> Result<usize> {
    let done = registry
        .refresh(catalog, zepto_storage::par::threads())
        .map_err(|e| SqlError::Internal(format!("vector index: {e}")))?;
    Ok(done.rows)
}

/// `CREATE INDEX`: check, record, build. `Ok(false)` when it existed and `if_not_exists`.
pub(crate) fn create_index(
    registry: &Arc<Registry>,
    catalog: &Arc<Catalog>,
    r: &IndexRequest,
    if_not_exists: bool,
) -> Result<bool> {
    let t = catalog
        .snapshot(r.table)
        .map_err(|_| SqlError::TableNotFound { name: r.table.to_string(), pos: Some(r.pos) })?;
    let def = definition(&t, r)?;
    drop(t);
    let created = catalog.create_index(r.table, def, if_not_exists).map_err(|e| match e {
        StorageError::Invalid(m) => SqlError::plan(m, Some(r.pos)),
        e => e.into(),
    })?;
    if created {
        refresh(registry, catalog)?;
        start_maintainer(registry, catalog);
    }
    Ok(created)
}

/// The index `r` asks for on table `t`, checked against its column and method.
pub(crate) fn definition(t: &Table, r: &IndexRequest) -> Result<IndexDef> {
    let col = t.schema().index_of(r.column).ok_or_else(|| SqlError::ColumnNotFound {
        message: format!("column '{}' does not exist in table '{}'", r.column, t.name()),
        pos: Some(r.pos),
        table: None,
        name: r.column.to_string(),
    })?;
    let method = r.method.as_deref().unwrap_or("hnsw");
    let def = IndexDef::new(r.name, &t.schema().columns[col].name, method, r.options.to_vec())
        .map_err(|e| SqlError::plan(e.to_string(), Some(r.pos)))?;
    IndexSpec::from_def(&def, t.schema().columns[col].data_type)
        .map_err(|e| SqlError::plan(e.to_string(), Some(r.pos)))?;
    Ok(def)
}

/// `DROP INDEX`: forget the definition and free its graphs. `Ok(false)` when there was none
/// and `if_exists`.
pub(crate) fn drop_index(
    registry: &Registry,
    catalog: &Catalog,
    name: &str,
    if_exists: bool,
    pos: Pos,
) -> Result<bool> {
    let dropped = catalog.drop_index(name, if_exists).map_err(|e| match e {
        StorageError::Invalid(m) => SqlError::plan(m, Some(pos)),
        e => e.into(),
    })?;
    refresh(registry, catalog)?;
    Ok(dropped)
}
