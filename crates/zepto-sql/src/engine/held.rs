//! The engine's side of a transaction ([`crate::txn`]): rows held instead of stored, and
//! COMMIT storing them all as one logged change.

use super::{check_tenant_rows, Engine};
use crate::error::{Result, SqlError};
use crate::interrupt::RunContext;
use crate::txn::Txn;
use zepto_storage::{Change, Column, StorageError};

impl Engine {
    /// Hold `columns` for the table `snap` is a snapshot of in `txn` until COMMIT, checked
    /// first against the snapshot the statement shaped them for, as an append would check
    /// them (the tenant scope, the table's types; COMMIT checks again). Returns the rows held.
    pub(crate) fn hold(&self, txn: &Txn, snap: &zepto_storage::Table, columns: Vec<Column>) -> Result<usize> {
        check_tenant_rows(self.access(), snap, &columns)?;
        let n = snap.validate(&columns)?;
        txn.hold(snap.name(), columns);
        Ok(n)
    }

    /// Store every row the transaction holds, as one logged change across their tables
    /// (checked again first: a table dropped or changed since fails it whole, storing
    /// nothing). The rows held are gone either way. Returns the rows stored.
    pub fn commit(&self) -> Result<usize> {
        self.commit_in(&RunContext::unlimited())
    }

    /// [`Engine::commit`] as part of `run`: a run cancelled before the rows are logged
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
        let stored = self.catalog().write_many(&names, |tables| {
            // Each held batch's table, found by name among the locked tables.
            let which: Vec<usize> = held
                .iter()
                .map(|(t, _)| tables.iter().position(|x| x.name().eq_ignore_ascii_case(t)).unwrap_or(usize::MAX))
                .collect();
            for ((_, cols), &i) in held.iter().zip(&which) {
                let t = tables.get(i).ok_or_else(|| StorageError::Internal("a held table not locked".into()))?;
                check_tenant_rows(access, t, cols).map_err(|e| StorageError::Invalid(e.to_string()))?;
                t.validate(cols)?;
            }
            let changes: Vec<Change<'_>> = held
                .iter()
                .zip(&which)
                .map(|((_, columns), &i)| Change::Append { table: tables[i].name(), columns })
                .collect();
            let logged = self.catalog().log(&changes)?;
            drop(changes);
            logged.apply(|| {
                let mut n = 0;
                for ((_, cols), &i) in held.into_iter().zip(&which) {
                    n += tables[i].append(cols)?;
                }
                Ok::<_, StorageError>(n)
            })
        })?;
        Ok(stored)
    }
}
