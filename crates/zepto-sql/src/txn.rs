//! A transaction's rows held until COMMIT: the PostgreSQL door's `BEGIN ... COMMIT`.
//!
//! Inside a transaction (an engine made by [`Engine::with_txn`]), the rows of `INSERT` and
//! `COPY ... FROM` are checked as they would be stored (types, the tenant scope), then held in
//! the [`Txn`] instead of stored; `COMMIT` ([`Engine::commit`]) stores all of them as one
//! logged change across their tables (all or nothing, through a crash too), and `ROLLBACK`
//! drops them. A statement that changes tables another way (DDL, `UPDATE`, `DELETE`) first
//! stores the rows held before it, so that statements apply in their order, then runs at once
//! as outside a transaction (MySQL commits a transaction before DDL the same way). Reads see
//! what is stored, not the rows held. A cluster's tables are written through its log at once,
//! as outside a transaction.
//!
//! Savepoints mark how many rows are held: `ROLLBACK TO` drops those held since. After an
//! error the transaction refuses statements until it ends, storing nothing, or rolls back to
//! a savepoint, as PostgreSQL's aborted transactions do.

use crate::engine::Engine;
use crate::error::{Result, SqlError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use zepto_storage::{Change, Column, StorageError};

/// The rows a transaction holds, its savepoints, and whether an error ended its use.
#[derive(Debug, Default)]
pub struct Txn(Mutex<Held>);

#[derive(Debug, Default)]
struct Held {
    /// Each held statement's table and rows (the table's columns, in schema order then).
    rows: Vec<(String, Vec<Column>)>,
    /// Savepoints in order: name, and how many entries of `rows` were held when it was set.
    savepoints: Vec<(String, usize)>,
    /// An error happened since BEGIN (or the last ROLLBACK TO).
    failed: bool,
}

impl Txn {
    /// A new transaction, holding nothing.
    pub fn new() -> Arc<Txn> {
        Arc::default()
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes of the rows held (what a door counts against its memory budget).
    pub fn held_bytes(&self) -> usize {
        self.held().rows.iter().flat_map(|(_, cols)| cols.iter().map(Column::data_bytes)).sum()
    }

    /// Rows held.
    pub fn held_rows(&self) -> usize {
        self.held().rows.iter().map(|(_, cols)| cols.first().map_or(0, Column::len)).sum()
    }

    /// Whether an error has made the transaction refuse statements until it ends.
    pub fn failed(&self) -> bool {
        self.held().failed
    }

    /// A statement failed: statements are refused until the transaction ends (storing
    /// nothing, whatever ends it) or rolls back to a savepoint (keeping the rows held before
    /// it).
    pub fn fail(&self) {
        self.held().failed = true;
    }

    /// `SAVEPOINT name` (a name set again moves it, as in PostgreSQL the newer one hides
    /// the older).
    pub fn savepoint(&self, name: &str) {
        let mut h = self.held();
        let at = h.rows.len();
        h.savepoints.push((name.to_ascii_lowercase(), at));
    }

    /// `ROLLBACK TO SAVEPOINT name`: the rows held since it are dropped (the savepoint stays),
    /// and a failed transaction goes on.
    pub fn rollback_to(&self, name: &str) -> Result<()> {
        let mut h = self.held();
        let k = savepoint_index(&h, name)?;
        let at = h.savepoints[k].1;
        h.savepoints.truncate(k + 1);
        h.rows.truncate(at);
        h.failed = false;
        Ok(())
    }

    /// `RELEASE SAVEPOINT name`: it and the savepoints after it are forgotten, their rows kept.
    pub fn release(&self, name: &str) -> Result<()> {
        let mut h = self.held();
        let k = savepoint_index(&h, name)?;
        h.savepoints.truncate(k);
        Ok(())
    }

    fn hold(&self, table: &str, columns: Vec<Column>) {
        self.held().rows.push((table.to_string(), columns));
    }

    fn take(&self) -> Vec<(String, Vec<Column>)> {
        std::mem::take(&mut self.held().rows)
    }
}

/// The newest savepoint named `name` (3B001 in PostgreSQL's words when there is none).
fn savepoint_index(h: &Held, name: &str) -> Result<usize> {
    let name = name.to_ascii_lowercase();
    h.savepoints
        .iter()
        .rposition(|(n, _)| *n == name)
        .ok_or_else(|| SqlError::plan(format!("savepoint \"{name}\" does not exist"), None))
}

impl Engine {
    /// Hold `columns` for `table` in `txn` until COMMIT, checked first as an append would
    /// check them (the tenant scope, the table's types). Returns the rows held.
    pub(crate) fn hold(&self, txn: &Txn, table: &str, columns: Vec<Column>) -> Result<usize> {
        let snap = self.catalog().snapshot(table)?;
        crate::engine::check_tenant_rows(self.access(), &snap, &columns)?;
        let n = snap.validate(&columns)?;
        txn.hold(table, columns);
        Ok(n)
    }

    /// Store every row the transaction holds, as one logged change across their tables
    /// (checked again first: a table dropped or changed since fails it whole, storing
    /// nothing). The rows held are gone either way. Returns the rows stored.
    pub fn commit(&self) -> Result<usize> {
        let Some(txn) = self.txn() else { return Ok(0) };
        let held = txn.take();
        if txn.failed() {
            return Err(SqlError::Execution("the transaction failed: nothing was stored".into()));
        }
        if held.is_empty() {
            return Ok(0);
        }
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
                crate::engine::check_tenant_rows(access, t, cols).map_err(|e| StorageError::Invalid(e.to_string()))?;
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

/// Whether `s`, run inside a transaction, first stores the rows held: it changes tables
/// other than by adding rows (DDL, `UPDATE`, `DELETE`, views, indexes, retention), or copies
/// them out of the database (`BACKUP`, `CHECKPOINT`), so it must come after the statements
/// before it. Reads, INSERT and COPY FROM (held themselves), and session statements do not.
pub fn stores_held_rows_first(s: &crate::parser::ast::Statement) -> bool {
    use crate::parser::ast::Statement as S;
    match s {
        S::Query(_)
        | S::Explain { .. }
        | S::Insert { .. }
        | S::CopyFrom { .. }
        | S::CopyTo { .. }
        | S::ShowTables
        | S::Describe { .. }
        | S::Set { .. } => false,
        S::CreateTable(_)
        | S::CreateTableAs { .. }
        | S::CreateIndex { .. }
        | S::DropIndex { .. }
        | S::CreateMaterializedView { .. }
        | S::RefreshMaterializedView { .. }
        | S::DropMaterializedView { .. }
        | S::DropTable { .. }
        | S::AlterAddColumn { .. }
        | S::AlterSetTtl { .. }
        | S::AlterDedup { .. }
        | S::AlterTier { .. }
        | S::Delete { .. }
        | S::Update { .. }
        | S::Checkpoint
        | S::Backup { .. } => true,
    }
}
