//! A transaction's rows held until COMMIT: the PostgreSQL door's `BEGIN ... COMMIT`.
//!
//! Inside a transaction (an engine made by `Engine::with_txn`), the rows of `INSERT` and
//! `COPY ... FROM` are checked as they would be stored (types, the tenant scope), then held in
//! the [`Txn`] instead of stored; `COMMIT` (`Engine::commit`, in `engine/held.rs`) stores all
//! of them as one logged change across their tables (all or nothing, through a crash too),
//! and `ROLLBACK` drops them. A statement that changes tables another way (DDL, `UPDATE`,
//! `DELETE`) runs at once, as outside a transaction, while no rows are held, and is refused
//! beside held rows ([`refuse_beside_held_rows`]: it would have to apply after them). The
//! transaction's own reads see its rows: a table it holds rows for is read as a private copy
//! with them appended (`Binder::in_txn`), as PostgreSQL's transactions read their own writes;
//! other sessions see them only after COMMIT. A cluster's tables are written through its log
//! at once, as outside a transaction.
//!
//! Savepoints mark how many rows are held: `ROLLBACK TO` drops those held since. After an
//! error the transaction refuses statements until it ends, storing nothing, or rolls back to
//! a savepoint, as PostgreSQL's aborted transactions do.

use crate::error::{Result, SqlError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use zepto_storage::Column;

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

    /// Copies of the batches held for `table` (its name ignoring ASCII case), in the order
    /// they were held: what the transaction's own reads add to the table's rows.
    pub fn held_for(&self, table: &str) -> Vec<Vec<Column>> {
        let h = self.held();
        h.rows.iter().filter(|(t, _)| t.eq_ignore_ascii_case(table)).map(|(_, cols)| cols.clone()).collect()
    }

    pub(crate) fn hold(&self, table: &str, columns: Vec<Column>) {
        self.held().rows.push((table.to_string(), columns));
    }

    pub(crate) fn take(&self) -> Vec<(String, Vec<Column>)> {
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

/// Whether `s` changes tables other than by adding rows (DDL, `UPDATE`, `DELETE`, views,
/// indexes, retention) or copies them out of the database (`BACKUP`, `CHECKPOINT`): every
/// statement the roles count as more than a read ([`crate::Access`]) but the ones that add
/// rows (held themselves) and COPY TO a file (it reads).
pub fn changes_beyond_rows(s: &crate::parser::ast::Statement) -> bool {
    use crate::parser::ast::Statement as S;
    s.access() != crate::Access::Read && !matches!(s, S::Insert { .. } | S::CopyFrom { .. } | S::CopyTo { .. })
}

/// `Ok` unless `txn` holds rows and `s` would change tables another way
/// ([`changes_beyond_rows`]): such a statement cannot run after the rows it should follow
/// (they are not stored yet), nor store them first (it might then fail, and a ROLLBACK would
/// no longer drop them). Refused as unsupported: COMMIT first.
pub fn refuse_beside_held_rows(txn: &Txn, s: &crate::parser::ast::Statement) -> Result<()> {
    if txn.held_rows() == 0 || !changes_beyond_rows(s) {
        return Ok(());
    }
    Err(SqlError::NotSupported(
        "this statement cannot follow rows this transaction holds until COMMIT (INSERT and COPY \
         in it are stored at COMMIT, and this would have to apply after them): COMMIT first, \
         or run it before the INSERTs"
            .into(),
    ))
}
