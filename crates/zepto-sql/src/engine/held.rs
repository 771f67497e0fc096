//! The engine's side of a transaction ([`crate::txn`]): rows, deletions and updates held
//! instead of applied, and COMMIT storing them all as one logged change.

use super::{check_tenant_rows, Engine};
use crate::access::TableAccess;
use crate::dml::Edit;
use crate::error::{Pos, Result, SqlError};
use crate::interrupt::RunContext;
use crate::txn::{Decision, HeldEdit, Item, Txn};
use zepto_storage::{Change, Column, StorageError, Table};

/// One held change as COMMIT decided it over the locked tables: rows to append, or a DELETE's
/// or UPDATE's rows.
enum Step {
    Append(Vec<Column>),
    Edit(Box<dyn Decision>),
}

impl Step {
    fn changes<'a>(&'a self, table: &'a str) -> Vec<Change<'a>> {
        match self {
            Step::Append(columns) => vec![Change::Append { table, columns }],
            Step::Edit(d) => d.changes(table),
        }
    }

    /// Apply it: the rows appended, deleted or updated.
    fn apply(self, t: &mut Table) -> std::result::Result<usize, StorageError> {
        match self {
            Step::Append(cols) => t.append(cols),
            Step::Edit(d) => d.apply(t),
        }
    }
}

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

    /// Store every change the transaction holds, as one logged change across their tables,
    /// each decided again over the tables as they are then (a table dropped since, or made
    /// again with other columns, fails it whole, storing nothing). The changes held are gone
    /// either way. Returns the rows appended, deleted and updated.
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
        let access = self.access();
        // A held edit's own error (a cancel, a limit, a table changed under it) is kept as it
        // is, not as the storage error `write_many` carries.
        let mut refused = None;
        let stored = self.catalog().write_many(&names, |tables| {
            let steps = decide(run, access, tables, held).map_err(|e| {
                let said = StorageError::Invalid(e.to_string());
                refused = Some(e);
                said
            })?;
            let changes: Vec<Change<'_>> = steps.iter().flat_map(|(i, s)| s.changes(tables[*i].name())).collect();
            let logged = self.catalog().log(&changes)?;
            drop(changes);
            logged.apply(|| {
                let mut n = 0;
                for (i, step) in steps {
                    n += step.apply(tables[i])?;
                }
                Ok::<_, StorageError>(n)
            })
        });
        match (stored, refused) {
            (_, Some(e)) => Err(e),
            (r, None) => Ok(r?),
        }
    }
}

/// The held changes as steps over the locked `tables` (each held change's table found by
/// name), checked and decided in order: rows are checked as an append checks them; a DELETE
/// or UPDATE is decided over a copy of its table that has taken the steps before it (the
/// stored tables change only once every step is logged).
fn decide(
    run: &RunContext,
    access: &TableAccess,
    tables: &[&mut Table],
    held: Vec<(String, Item)>,
) -> Result<Vec<(usize, Step)>> {
    let which = |name: &str| {
        tables
            .iter()
            .position(|x| x.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| SqlError::Internal(format!("table '{name}' of a held change is not locked")))
    };
    // A copy of each table an edit reaches, following every step on it.
    let mut copies: Vec<Option<Table>> = tables.iter().map(|_| None).collect();
    for (name, item) in &held {
        if matches!(item, Item::Edit(_)) {
            let i = which(name)?;
            copies[i].get_or_insert_with(|| (*tables[i]).clone());
        }
    }
    let mut steps = Vec::with_capacity(held.len());
    for (name, item) in held {
        let i = which(&name)?;
        let step = match item {
            Item::Rows(cols) => rows_step(access, tables[i], copies[i].as_mut(), cols)?,
            Item::Edit(edit) => {
                let c = copies[i].as_mut().ok_or_else(|| SqlError::Internal("an edited table has no copy".into()))?;
                edit_step(run, c, edit.as_ref())?
            }
        };
        steps.extend(step.map(|s| (i, s)));
    }
    Ok(steps)
}

/// Held rows checked as an append checks them (against the stored table `t`: its schema is
/// the copy's), and appended to the copy `copy` when an edit follows on the table.
fn rows_step(access: &TableAccess, t: &Table, copy: Option<&mut Table>, cols: Vec<Column>) -> Result<Option<Step>> {
    check_tenant_rows(access, t, &cols)?;
    t.validate(&cols)?;
    if let Some(c) = copy {
        c.append(cols.clone())?;
    }
    Ok(Some(Step::Append(cols)))
}

/// A held DELETE or UPDATE decided over `copy` (the table after the steps before it), and
/// applied to it: `None` when it changes no row.
fn edit_step(run: &RunContext, copy: &mut Table, edit: &dyn HeldEdit) -> Result<Option<Step>> {
    Ok(edit.decide_and_apply(run, copy)?.map(Step::Edit))
}
