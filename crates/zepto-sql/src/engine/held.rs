//! The engine's side of a transaction ([`crate::txn`]): rows, deletions, updates, and tables
//! made and dropped, held instead of applied, and COMMIT storing them all as one logged
//! change (the steps it decides are in `held/steps.rs`).

mod steps;

use super::{check_tenant_rows, Engine};
use crate::dml::Edit;
use crate::error::{Pos, Result, SqlError};
use crate::interrupt::RunContext;
use crate::txn::{Item, Txn};
use std::sync::Arc;
use steps::decide;
use zepto_storage::{Column, StorageError, Table};

impl Engine {
    /// Hold `columns` for the table `snap` is a snapshot of in `txn` until COMMIT, checked
    /// first against the snapshot the statement shaped them for, as an append would check
    /// them (the tenant scope, the table's types; COMMIT checks again). Returns the rows held.
    pub(crate) fn hold(&self, txn: &Txn, snap: &zepto_storage::Table, columns: Vec<Column>) -> Result<usize> {
        if self.catalog().is_view(snap.name()) {
            // A materialized view's snapshot is readable, but no statement adds rows to it.
            return Err(SqlError::TableNotFound { name: snap.name().to_string(), pos: None });
        }
        check_tenant_rows(self.access(), snap, &columns)?;
        let n = snap.validate(&columns)?;
        txn.hold(snap.name(), columns);
        Ok(n)
    }

    /// Hold a DELETE or UPDATE in `txn`, decided first over the transaction's own copy of
    /// its table (the changes held before it applied): the rows it changes there.
    pub(crate) fn hold_edit(&self, run: &RunContext, txn: &Txn, edit: Edit, pos: Pos) -> Result<usize> {
        if self.catalog().is_view(edit.table()) {
            // A materialized view's snapshot is readable, but no statement changes its rows.
            return Err(SqlError::TableNotFound { name: edit.table().to_string(), pos: Some(pos) });
        }
        let view = txn.view(run, self.snapshot_at(edit.table(), pos)?)?;
        let n = edit.decide(run, &view)?.map_or(0, |d| d.rows());
        txn.hold_edit(std::sync::Arc::new(edit));
        Ok(n)
    }

    /// Hold `CREATE TABLE` of `table` (empty, its layout checked) in `txn`: made at COMMIT.
    /// `Ok(false)` when the session finds the name taken and `if_not_exists` (nothing held).
    pub(crate) fn hold_create(&self, txn: &Txn, table: Table, if_not_exists: bool) -> Result<bool> {
        if self.exists_here(table.name()) {
            return match if_not_exists && !self.catalog().is_view(table.name()) {
                true => Ok(false),
                false => Err(SqlError::TableExists(table.name().to_string())),
            };
        }
        txn.hold_create(table);
        Ok(true)
    }

    /// Hold `CREATE INDEX` of a table `txn` made: the index goes into the table as held, and is
    /// made with it at COMMIT (its graphs built then, from the rows committed with it).
    /// `Ok(false)` when the session finds an index of the name and `if_not_exists`.
    pub(crate) fn hold_index(&self, txn: &Txn, r: &crate::index::IndexRequest, if_not_exists: bool) -> Result<bool> {
        let indexes = self.catalog_context().indexes();
        if let Some((owner, _)) = indexes.iter().find(|(_, d)| d.name().eq_ignore_ascii_case(r.name)) {
            return match if_not_exists {
                true => Ok(false),
                false => {
                    Err(SqlError::plan(format!("index '{}' already exists (on table '{owner}')", r.name), Some(r.pos)))
                }
            };
        }
        let Some(Some(table)) = txn.defined(r.table) else {
            return Err(SqlError::Internal(format!("an index held for table '{}' it did not make", r.table)));
        };
        let def = crate::index::definition(&table, r)?;
        table.check_new_index(&def)?;
        txn.hold_index(table.name(), def);
        Ok(true)
    }

    /// Hold `DROP TABLE name` in the session's transaction, checked now as it is at COMMIT:
    /// a table the session finds (else `TableNotFound` at `pos`, or nothing with `if_exists`),
    /// no materialized view over it.
    pub(crate) fn hold_drop(&self, name: &str, if_exists: bool, pos: Pos) -> Result<()> {
        let Some(txn) = self.txn() else {
            return Err(SqlError::Internal("DROP TABLE held outside a transaction".into()));
        };
        if !self.exists_here(name) {
            return match if_exists {
                true => Ok(()),
                false => Err(SqlError::TableNotFound { name: name.to_string(), pos: Some(pos) }),
            };
        }
        if txn.defined(name).is_none() {
            self.catalog().check_no_views(name)?;
        }
        txn.hold_drop(name, if_exists);
        Ok(())
    }

    /// Store every change the transaction holds, as one logged change across their tables,
    /// each decided again over the tables as they are then (a table dropped since, made
    /// again with other columns, or made by another session under a name this one creates,
    /// fails it whole, storing nothing). The changes held are gone either way. Returns the
    /// rows appended, deleted and updated in the tables that remain.
    pub fn commit(&self) -> Result<usize> {
        self.commit_in(&RunContext::unlimited())
    }

    /// [`Engine::commit`] as part of `run`: a run cancelled before the changes are logged
    /// stores nothing.
    pub fn commit_in(&self, run: &RunContext) -> Result<usize> {
        let Some(txn) = self.txn() else { return Ok(0) };
        let held = txn.take();
        if txn.failed() {
            return Err(SqlError::Execution("the transaction failed: nothing was stored".into()));
        }
        if held.is_empty() {
            return Ok(0);
        }
        run.check()?;
        let mut names: Vec<String> = Vec::new();
        for (t, _) in &held {
            if !names.iter().any(|n| n.eq_ignore_ascii_case(t)) {
                names.push(t.clone());
            }
        }
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        // A held change's own error (a cancel, a limit, a table changed under it) is kept as
        // it is, not as the storage error the catalog carries.
        let mut refused = None;
        let mut keep = |e: SqlError| {
            let said = StorageError::Invalid(e.to_string());
            refused = Some(e);
            said
        };
        let claims = claims(&held);
        let stored = match held.iter().any(|(_, item)| item.defines()) {
            // Tables made or dropped: the catalog's map is locked for the whole change.
            true => self.catalog().write_redefining(&names, &claims, |tables| {
                let found: Vec<Option<&Table>> = tables.iter().map(|t| t.as_deref().map(|a| &**a)).collect();
                let mut d = decide(run, self, &found, &names, held).map_err(&mut keep)?;
                let logged = d.log(self.catalog(), &found)?;
                let mut tables: Vec<Option<&mut Table>> = tables
                    .iter_mut()
                    .enumerate()
                    .map(|(i, t)| t.as_deref_mut().filter(|_| d.writes(i)).map(Arc::make_mut))
                    .collect();
                let n = logged.apply(|| d.apply(&mut tables))?;
                Ok((n, d.redefined()))
            }),
            false => self.catalog().write_many(&names, |tables| {
                let found: Vec<Option<&Table>> = tables.iter().map(|t| Some(&**t)).collect();
                let mut d = decide(run, self, &found, &names, held).map_err(&mut keep)?;
                let logged = d.log(self.catalog(), &found)?;
                let mut tables: Vec<Option<&mut Table>> = tables.iter_mut().map(|t| Some(&mut **t)).collect();
                logged.apply(|| d.apply(&mut tables))
            }),
        };
        let n = match (stored, refused) {
            (_, Some(e)) => return Err(e),
            (r, None) => r?,
        };
        if !claims.is_empty() {
            // Build the graphs of the indexes made, as CREATE INDEX does before it answers. The
            // change is stored: a failure here leaves the graphs to the maintainer (searches
            // scan exactly meanwhile), it does not fail the COMMIT.
            if let Err(e) = crate::index::refresh(&self.indexes, self.catalog()) {
                eprintln!("zeptodb: WARNING the vector indexes committed are not built yet: {e}");
            }
            crate::index::start_maintainer(&self.indexes, self.catalog());
        }
        Ok(n)
    }
}

/// The names of the indexes the held changes make on tables that stay (an index of a table
/// the transaction drops again takes no name): no other table may hold them at COMMIT.
fn claims(held: &[(String, Item)]) -> Vec<String> {
    let dropped_after = |k: usize, name: &str| {
        held[k + 1..].iter().any(|(t, item)| matches!(item, Item::Drop { .. }) && t.eq_ignore_ascii_case(name))
    };
    let index = |(k, (t, item)): (usize, &(String, Item))| match item {
        Item::Index(def) if !dropped_after(k, t) => Some(def.name().to_string()),
        _ => None,
    };
    held.iter().enumerate().filter_map(index).collect()
}
