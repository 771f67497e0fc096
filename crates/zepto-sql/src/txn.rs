//! A transaction's changes held until COMMIT: the PostgreSQL door's `BEGIN ... COMMIT`.
//!
//! Inside a transaction (an engine made by `Engine::with_txn`), the rows of `INSERT` and
//! `COPY ... FROM` are checked as they would be stored (types, the tenant scope), and `DELETE`
//! and `UPDATE` are bound and decided over the transaction's own copy of their table (their
//! count); all of them are then held in the [`Txn`] instead of applied. `COMMIT`
//! (`Engine::commit`, in `engine/held.rs`) decides each again, in order, over the tables as
//! they are then, and stores them all as one logged change across their tables (all or
//! nothing, through a crash too); `ROLLBACK` drops them. `DROP TABLE` and `CREATE TABLE`
//! (`AS`) are held the same way, and so is `CREATE INDEX` of a table the transaction made (made
//! with the table at COMMIT): the transaction's statements find tables
//! as its held changes leave them ([`Txn::defined`]), and COMMIT drops and makes them in order
//! with the rows (`engine/held/steps.rs`). A statement that changes tables another way
//! (`ALTER`, views, other indexes, `CHECKPOINT`, `BACKUP`) runs at once, as outside a
//! transaction, while nothing is held, and is refused beside held changes
//! ([`refuse_beside_held`]: it would have to apply after them). The transaction's own reads
//! see its changes: a table it holds changes for is read as a private copy with them applied
//! ([`Txn::view`]), as PostgreSQL's transactions read their own writes; other sessions see them
//! only after COMMIT. A cluster's tables are written through its log at once, as outside a
//! transaction.
//!
//! Savepoints mark how many changes are held: `ROLLBACK TO` drops those held since. After an
//! error the transaction refuses statements until it ends, storing nothing, or rolls back to
//! a savepoint, as PostgreSQL's aborted transactions do.

use crate::error::{Result, SqlError};
use crate::interrupt::RunContext;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use zepto_storage::{Column, Table};

/// The changes a transaction holds, its savepoints, and whether an error ended its use.
#[derive(Default)]
pub struct Txn(Mutex<Held>);

impl std::fmt::Debug for Txn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let h = self.held();
        f.debug_struct("Txn").field("changes", &h.changes.len()).field("failed", &h.failed).finish()
    }
}

/// A table as the transaction reads it: the stored snapshot it was made from, how many of the
/// changes held for the table it has taken, and the result. It serves the next read while the
/// table's snapshot is the same one (any write to it makes a new one), taking only the
/// changes held since.
#[derive(Clone)]
struct View {
    base: Arc<Table>,
    taken: usize,
    table: Arc<Table>,
}

/// A DELETE or UPDATE held in a transaction: bound by `dml` (its `Edit`), replayed here over
/// the transaction's copies of its table and at COMMIT. A trait so that transactions need not
/// know how statements are bound.
pub trait HeldEdit: Send + Sync {
    /// The table it changes.
    fn table(&self) -> &str;
    /// Decide what it changes in `t` and apply that to `t`: the decision, to apply again to a
    /// table in the state `t` was in (`None`: it changes no row).
    fn decide_and_apply(&self, run: &RunContext, t: &mut Table) -> Result<Option<Box<dyn Decision>>>;
}

/// What a [`HeldEdit`] decided over one state of its table.
pub trait Decision: Send {
    /// The change as the log holds it.
    fn changes<'a>(&'a self, table: &'a str) -> Vec<zepto_storage::Change<'a>>;
    /// Apply it to a table in the state it was decided over: the rows changed.
    fn apply(self: Box<Self>, t: &mut Table) -> std::result::Result<usize, zepto_storage::StorageError>;
}

/// One held statement's change to its table.
#[derive(Clone)]
pub(crate) enum Item {
    /// Rows to append (the table's columns, in schema order when they were held).
    Rows(Vec<Column>),
    /// A DELETE or UPDATE, decided again at COMMIT.
    Edit(Arc<dyn HeldEdit>),
    /// `CREATE TABLE`: the new table, empty (the changes after it reach it).
    Create(Arc<Table>),
    /// `DROP TABLE` (`if_exists`: COMMIT finds no table of the name and goes on).
    Drop { if_exists: bool },
    /// `CREATE INDEX` of the table the last `Create` before it made (checked against it).
    Index(zepto_storage::IndexDef),
}

impl Item {
    /// Whether it makes or drops its table (the changes before it no longer reach what
    /// comes after).
    pub(crate) fn defines(&self) -> bool {
        matches!(self, Item::Create(_) | Item::Drop { .. })
    }
}

#[derive(Default)]
struct Held {
    /// Each held statement's table and change, in statement order.
    changes: Vec<(String, Item)>,
    /// Where in `changes` the held creations and drops are, in order (a statement's lookup
    /// of a table reads these, not every held change: a transaction of 100k INSERTs after a
    /// DROP and a CREATE looks up its table in constant time).
    defining: Vec<usize>,
    /// Bytes of the rows in `changes` (a door reads it after every statement).
    bytes: usize,
    /// The last view made of each table ([`Txn::view`]), kept for the next statement.
    views: Vec<View>,
    /// Where in `changes` the held `CREATE INDEX`es are, in order (a lookup reads these, not
    /// every change held after the table's creation).
    index_at: Vec<usize>,
    /// Made tables with the indexes held for them ([`Txn::defined`]): where the creation is
    /// held, how many indexes were added, and the table, kept so that [`Txn::view`] finds the
    /// same table (and its view) again.
    indexed: Vec<(usize, usize, Arc<Table>)>,
    /// Savepoints in order: name, and how many entries of `changes` were held when it was set.
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
        self.held().bytes
    }

    fn bytes_of(changes: &[(String, Item)]) -> usize {
        changes.iter().flat_map(|(_, item)| Self::rows_of(item)).map(Column::data_bytes).sum()
    }

    /// Rows held to append.
    pub fn held_rows(&self) -> usize {
        self.held().changes.iter().map(|(_, item)| Self::rows_of(item).first().map_or(0, Column::len)).sum()
    }

    /// Changes held: statements (INSERT, COPY, DELETE, UPDATE, DROP TABLE, CREATE TABLE)
    /// whose changes wait for COMMIT.
    pub fn held_changes(&self) -> usize {
        self.held().changes.len()
    }

    fn rows_of(item: &Item) -> &[Column] {
        match item {
            Item::Rows(cols) => cols,
            _ => &[],
        }
    }

    /// The table the transaction's own statements find by `name`, when it holds a `CREATE
    /// TABLE` or `DROP TABLE` of the name: `Some(None)` after a drop, `Some(Some(t))` after a
    /// creation (`t` empty, with the indexes held for it since: [`Txn::view`] adds the rows
    /// and edits); `None` when it holds neither (the stored table is the one).
    pub fn defined(&self, name: &str) -> Option<Option<Arc<Table>>> {
        let mut h = self.held();
        let k = Self::last_defined(&h, name)?;
        let Item::Create(made) = &h.changes[k].1 else { return Some(None) };
        let made = made.clone();
        let of_table = |&p: &usize| match &h.changes[p] {
            (t, Item::Index(def)) if p > k && t.eq_ignore_ascii_case(name) => Some(def.clone()),
            _ => None,
        };
        let defs: Vec<zepto_storage::IndexDef> = h.index_at.iter().filter_map(of_table).collect();
        if defs.is_empty() {
            return Some(Some(made));
        }
        if let Some((_, _, t)) = h.indexed.iter().find(|(at, n, _)| (*at, *n) == (k, defs.len())) {
            return Some(Some(t.clone()));
        }
        let mut t = (*made).clone();
        for def in defs.iter().cloned() {
            // Checked as it was held, against the table as this gives it.
            debug_assert!(t.check_new_index(&def).is_ok(), "a held index that does not fit its table");
            let _ = t.add_index(def);
        }
        let (n, t) = (defs.len(), Arc::new(t));
        h.indexed.retain(|(at, _, _)| *at != k);
        h.indexed.push((k, n, t.clone()));
        Some(Some(t))
    }

    /// Whether the transaction made table `name` (and has not dropped it since).
    pub fn made(&self, name: &str) -> bool {
        matches!(self.defined(name), Some(Some(_)))
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
        let at = h.changes.len();
        h.savepoints.push((name.to_ascii_lowercase(), at));
    }

    /// `ROLLBACK TO SAVEPOINT name`: the rows held since it are dropped (the savepoint stays),
    /// and a failed transaction goes on.
    pub fn rollback_to(&self, name: &str) -> Result<()> {
        let mut h = self.held();
        let k = savepoint_index(&h, name)?;
        let at = h.savepoints[k].1;
        h.savepoints.truncate(k + 1);
        h.changes.truncate(at);
        h.bytes = Self::bytes_of(&h.changes);
        h.defining.retain(|&k| k < at);
        h.index_at.retain(|&k| k < at);
        h.views.clear();
        h.indexed.clear();
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

    /// `table` as the transaction's own statements read it: the stored snapshot itself when
    /// the transaction holds no change for it, else a private copy with the held changes
    /// applied in order (only the partitions they reach are copied). The copy is kept for the
    /// next read of the same snapshot, which applies only the changes held since.
    pub fn view(&self, run: &RunContext, table: Arc<Table>) -> Result<Arc<Table>> {
        // Under the lock: how many changes the table has held, the last view of this snapshot,
        // and copies of only the changes that view has not taken.
        let (count, last, rest) = {
            let h = self.held();
            let last = h.views.iter().find(|v| Arc::ptr_eq(&v.base, &table)).cloned();
            // The changes since the table was last made or dropped here reach it.
            let of_table = |(t, _): &&(String, Item)| t.eq_ignore_ascii_case(table.name());
            let since = Self::last_defined(&h, table.name()).map_or(0, |k| k + 1);
            let mine = || h.changes[since..].iter().filter(of_table);
            let count = mine().count();
            // A view past the changes held (none: ROLLBACK TO clears them) is not built on.
            let last = last.filter(|v| v.taken <= count);
            let taken = last.as_ref().map_or(0, |v| v.taken);
            (count, last, mine().skip(taken).map(|(_, i)| i.clone()).collect::<Vec<Item>>())
        };
        if count == 0 {
            return Ok(table);
        }
        let mut own = match last {
            Some(v) if v.taken == count => return Ok(v.table),
            Some(v) => (*v.table).clone(),
            None => (*table).clone(),
        };
        for item in &rest {
            apply_held(run, &mut own, item)?;
        }
        let view = Arc::new(own);
        let mut h = self.held();
        h.views.retain(|v| !v.base.name().eq_ignore_ascii_case(table.name()));
        h.views.push(View { base: table, taken: count, table: view.clone() });
        Ok(view)
    }

    pub(crate) fn hold(&self, table: &str, columns: Vec<Column>) {
        if columns.first().is_some_and(|c| !c.is_empty()) {
            let mut h = self.held();
            h.bytes += columns.iter().map(Column::data_bytes).sum::<usize>();
            h.changes.push((table.to_string(), Item::Rows(columns)));
        }
    }

    /// Hold `CREATE TABLE` of `table` (empty, checked: its name free in the transaction's
    /// view).
    pub(crate) fn hold_create(&self, table: Table) {
        let name = table.name().to_string();
        let mut h = self.held();
        let at = h.changes.len();
        h.defining.push(at);
        h.changes.push((name, Item::Create(Arc::new(table))));
    }

    /// Hold `DROP TABLE name`.
    pub(crate) fn hold_drop(&self, name: &str, if_exists: bool) {
        let mut h = self.held();
        let at = h.changes.len();
        h.defining.push(at);
        h.changes.push((name.to_string(), Item::Drop { if_exists }));
    }

    /// Hold `CREATE INDEX` of table `name`, which the transaction made (checked against it).
    pub(crate) fn hold_index(&self, name: &str, def: zepto_storage::IndexDef) {
        let mut h = self.held();
        let at = h.changes.len();
        h.index_at.push(at);
        h.changes.push((name.to_string(), Item::Index(def)));
    }

    pub(crate) fn hold_edit(&self, edit: Arc<dyn HeldEdit>) {
        let table = edit.table().to_string();
        self.held().changes.push((table, Item::Edit(edit)));
    }

    pub(crate) fn take(&self) -> Vec<(String, Item)> {
        let mut h = self.held();
        h.views.clear();
        h.indexed.clear();
        h.index_at.clear();
        h.defining.clear();
        h.bytes = 0;
        std::mem::take(&mut h.changes)
    }

    /// The names of the tables the transaction holds a creation or a drop of.
    pub fn defined_names(&self) -> Vec<String> {
        let h = self.held();
        let mut names: Vec<String> = h.defining.iter().map(|&k| h.changes[k].0.clone()).collect();
        names.sort_by_key(|n| n.to_ascii_lowercase());
        names.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
        names
    }

    /// Whether the transaction holds any change for table `name`.
    pub fn holds_for(&self, name: &str) -> bool {
        self.held().changes.iter().any(|(t, _)| t.eq_ignore_ascii_case(name))
    }

    /// Where the last creation or drop of `name` is held (`None`: neither is).
    fn last_defined(h: &Held, name: &str) -> Option<usize> {
        h.defining.iter().rev().copied().find(|&k| h.changes[k].0.eq_ignore_ascii_case(name))
    }
}

/// Apply one held change to `own`, a transaction's copy of its table. A DELETE's or UPDATE's
/// own errors (a cancel, a limit) pass as they are; a change that no longer fits the table
/// says so.
fn apply_held(run: &RunContext, own: &mut Table, item: &Item) -> Result<()> {
    let name = own.name().to_string();
    let stale = |e: zepto_storage::StorageError| {
        SqlError::Execution(format!(
            "the changes this transaction holds for table '{name}' no longer fit it (it changed since they were \
             held; COMMIT will fail too): {e}"
        ))
    };
    match item {
        Item::Rows(cols) => {
            let n = own.append(cols.clone()).map_err(stale)?;
            debug_assert!(n > 0, "empty batches are not held");
        }
        Item::Edit(edit) => {
            edit.decide_and_apply(run, own)?;
        }
        // The table the view is built on has it already (`Txn::defined`).
        Item::Index(_) => {}
        Item::Create(_) | Item::Drop { .. } => {
            return Err(SqlError::Internal("a view took a change from before its table was made".into()))
        }
    }
    Ok(())
}

/// The newest savepoint named `name` (3B001 in PostgreSQL's words when there is none).
fn savepoint_index(h: &Held, name: &str) -> Result<usize> {
    let name = name.to_ascii_lowercase();
    h.savepoints
        .iter()
        .rposition(|(n, _)| *n == name)
        .ok_or_else(|| SqlError::plan(format!("savepoint \"{name}\" does not exist"), None))
}

/// Whether `s` changes tables in a way a transaction does not hold: every statement the
/// roles count as more than a read ([`crate::Access`]) but the ones whose changes are held
/// (INSERT, COPY FROM, DELETE, UPDATE, DROP TABLE, CREATE TABLE) and
/// COPY TO a file (it reads). Other DDL, views, indexes, retention, `BACKUP` and `CHECKPOINT`
/// apply at once.
pub fn applies_at_once(s: &crate::parser::ast::Statement) -> bool {
    use crate::parser::ast::Statement as S;
    s.access() != crate::Access::Read
        && !matches!(
            s,
            S::Insert { .. }
                | S::CopyFrom { .. }
                | S::CopyTo { .. }
                | S::Delete { .. }
                | S::Update { .. }
                | S::DropTable { .. }
                | S::CreateTable(_)
                | S::CreateTableAs { .. }
        )
}

/// `Ok` unless `txn` holds changes and `s` would apply at once ([`applies_at_once`]; with
/// `spread`, a statement a cluster's log takes, CREATE TABLE does too): such a statement
/// cannot run after the changes it should follow (they are not stored yet), nor store them
/// first (it might then fail, and a ROLLBACK would no longer drop them). Refused as
/// unsupported: COMMIT first. An `ALTER TABLE` or `CREATE INDEX` of a table the transaction
/// holds no change for follows none of them, and runs.
pub fn refuse_beside_held(txn: &Txn, s: &crate::parser::ast::Statement, spread: bool) -> Result<()> {
    use crate::parser::ast::Statement as S;
    let at_once = applies_at_once(s) || (spread && matches!(s, S::CreateTable(_)));
    if txn.held_changes() == 0 || !at_once {
        return Ok(());
    }
    // A change to one table the transaction holds nothing for follows nothing held: it runs
    // at once (a migration's ALTER or index after a held DROP TABLE of another table).
    let one_table =
        matches!(s, S::AlterAddColumn { .. } | S::CreateIndex { .. } | S::AlterSetTtl { .. } | S::AlterDedup { .. });
    if one_table && !spread && s.target().is_some_and(|(t, _)| !txn.holds_for(t)) {
        return Ok(());
    }
    // An index of a table the transaction made is held with it.
    if let (S::CreateIndex { table, .. }, false) = (s, spread) {
        if txn.made(table) {
            return Ok(());
        }
    }
    Err(SqlError::NotSupported(
        "this statement cannot follow changes this transaction holds until COMMIT (INSERT, COPY, \
         DELETE, UPDATE, CREATE TABLE and DROP TABLE in it are applied at COMMIT, and this would have \
         to apply after them): COMMIT first, or run it before them"
            .into(),
    ))
}
