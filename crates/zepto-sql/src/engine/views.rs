//! The statements: `CREATE MATERIALIZED VIEW`, `REFRESH MATERIALIZED VIEW`, `DROP
//! MATERIALIZED VIEW`.

use crate::engine::{Engine, QueryResult};
use crate::error::{Pos, Result, SqlError};
use crate::interrupt::RunContext;
use crate::parser::ast::{Query, Statement};

use std::sync::Arc;
use zepto_storage::{StorageError, ViewDef};

/// Run a view statement (and `DROP TABLE` of a view, refused with what to write instead).
pub(crate) fn statement(engine: &Engine, run: &RunContext, s: &Statement) -> Result<QueryResult> {
    match s {
        Statement::CreateMaterializedView { name, if_not_exists, query, sql, pos } => {
            create(engine, run, name, *if_not_exists, query, sql, *pos)
        }
        Statement::RefreshMaterializedView { name, pos } => refresh(engine, name, *pos),
        Statement::DropMaterializedView { name, if_exists, pos } => drop(engine, name, *if_exists, *pos),
        Statement::DropTable { name, pos, .. } => {
            Err(SqlError::plan(format!("'{name}' is a materialized view: DROP MATERIALIZED VIEW {name}"), Some(*pos)))
        }
        _ => Err(SqlError::Internal("not a view statement".into())),
    }
}

/// `CREATE MATERIALIZED VIEW [IF NOT EXISTS] name AS query` (`sql` the query as written):
/// checked as the session's query (grants, tenant scope), compiled, recorded and built.
fn create(
    engine: &Engine,
    run: &RunContext,
    name: &str,
    if_not_exists: bool,
    query: &Query,
    sql: &str,
    pos: Pos,
) -> Result<QueryResult> {
    let done = || Ok(QueryResult::status("CREATE MATERIALIZED VIEW".into()));
    if let Some(tenant) = engine.access().tenant() {
        return Err(SqlError::PermissionDenied(format!(
            "CREATE MATERIALIZED VIEW is not allowed for a session scoped to tenant '{tenant}' (a view is kept over every row of its table)"
        )));
    }
    let catalog = engine.catalog();
    if catalog.exists(name) {
        return match if_not_exists && catalog.is_view(name) {
            true => done(),
            false => Err(SqlError::TableExists(name.to_string())),
        };
    }
    // Binding as the session checks its grants on the tables read.
    engine.prepare_in(run, query)?;
    refuse_now(query, pos)?;
    let view = crate::view::compile(catalog, name, sql).map_err(|e| at(e, pos))?;
    let def = ViewDef::new(name, view.base(), sql)?;
    if !catalog.create_view(def, Some(Arc::new(view)), if_not_exists)? {
        return done();
    }
    // Built now, so that its first reader does not wait; a query that fails over the rows
    // already there leaves no view behind.
    if let Some(Err(e)) = catalog.view_snapshot(name) {
        catalog.drop_view(name, true)?;
        return Err(e.into());
    }
    done()
}

/// `REFRESH MATERIALIZED VIEW name`: rebuilt from its table now.
fn refresh(engine: &Engine, name: &str, pos: Pos) -> Result<QueryResult> {
    engine.catalog().refresh_view(name).map_err(|e| not_found(e, name, pos))?;
    Ok(QueryResult::status("REFRESH MATERIALIZED VIEW".into()))
}

/// `DROP MATERIALIZED VIEW [IF EXISTS] name`.
fn drop(engine: &Engine, name: &str, if_exists: bool, pos: Pos) -> Result<QueryResult> {
    if !engine.catalog().is_view(name) && engine.catalog().exists(name) {
        return Err(SqlError::plan(
            format!("'{name}' is a table, not a materialized view: DROP TABLE {name}"),
            Some(pos),
        ));
    }
    engine.catalog().drop_view(name, if_exists).map_err(|e| not_found(e, name, pos))?;
    Ok(QueryResult::status("DROP MATERIALIZED VIEW".into()))
}

/// `now()` is fixed when a statement is bound: in a view it would keep the time the view was
/// made (and another after a restart), so it is refused.
fn refuse_now(query: &Query, pos: Pos) -> Result<()> {
    match crate::view::calls_now(query) {
        true => Err(SqlError::plan(
            "a materialized view cannot keep this query incrementally: now() would keep the time the view was made \
             (filter by time when you read the view)"
                .to_string(),
            Some(pos),
        )),
        false => Ok(()),
    }
}

fn not_found(e: StorageError, name: &str, pos: Pos) -> SqlError {
    match e {
        StorageError::TableNotFound(_) => {
            SqlError::plan(format!("materialized view '{name}' does not exist"), Some(pos))
        }
        e => e.into(),
    }
}

/// `e` placed at `pos` when it has no place of its own.
fn at(e: SqlError, pos: Pos) -> SqlError {
    match e {
        SqlError::Plan { message, pos: None } => SqlError::Plan { message, pos: Some(pos) },
        e => e,
    }
}
