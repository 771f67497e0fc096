//! COMMIT's steps: each change a transaction held, decided over the tables as they are at
//! COMMIT (locked), logged in statement order as one record, then applied. A table the
//! transaction makes is built beside the stored ones and takes its place in the catalog
//! once the record is logged; one it drops is left as it was and leaves the catalog then.

use crate::engine::{check_tenant_rows, Engine};
use crate::error::{Result, SqlError};
use crate::interrupt::RunContext;
use crate::txn::{Decision, Item};
use zepto_storage::{dedup_names, Catalog, Change, Column, Logged, Redefined, StorageError, Table};

/// Where a step goes: a table stored before COMMIT (its place among the tables locked), or
/// one the transaction makes (its place among those made).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Stored(usize),
    Made(usize),
}

/// One held change as COMMIT decided it.
enum Step {
    /// Rows to append.
    Append(Vec<Column>),
    /// A DELETE's or UPDATE's rows.
    Edit(Box<dyn Decision>),
    /// The made table created (empty).
    Create,
    /// The table dropped.
    Drop,
    /// An index made on the made table (already in it: logged after every other step, as the
    /// names it takes may be freed by a drop held after it).
    Index(zepto_storage::IndexDef),
}

/// The held changes as steps over the locked tables, and what they do to the tables
/// themselves.
#[derive(Default)]
pub(super) struct Decided {
    steps: Vec<(Target, Step)>,
    /// The tables made, empty until [`Decided::apply`], with their deduplication keys' names.
    made: Vec<(Table, Vec<String>)>,
    /// Which of `made` a later step dropped again.
    unmade: Vec<bool>,
    /// The stored tables dropped, by place.
    dropped: Vec<usize>,
}

/// The held changes as steps over `found` (the tables of `names` that exist, locked), checked
/// and decided in order: rows as an append checks them; a DELETE or UPDATE over a copy of its
/// table that has taken the steps before it (the stored tables change only once every step
/// is logged); a creation where no table of the name is found (another session's table made
/// meanwhile fails it); a drop of what the steps before left (a table dropped by another
/// session meanwhile fails it, unless `IF EXISTS`).
pub(super) fn decide(
    run: &RunContext,
    engine: &Engine,
    found: &[Option<&Table>],
    names: &[&str],
    held: Vec<(String, Item)>,
) -> Result<Decided> {
    let which = |name: &str| {
        names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .ok_or_else(|| SqlError::Internal(format!("table '{name}' of a held change is not locked")))
    };
    // A copy of each table an edit reaches, following every step on it.
    let edited: Vec<bool> = names
        .iter()
        .map(|n| held.iter().any(|(t, i)| matches!(i, Item::Edit(_)) && t.eq_ignore_ascii_case(n)))
        .collect();
    let mut copies: Vec<Option<Table>> = found.iter().zip(&edited).map(|(t, e)| t.filter(|_| *e).cloned()).collect();
    let mut now: Vec<Option<Target>> = found.iter().enumerate().map(|(i, t)| t.map(|_| Target::Stored(i))).collect();
    let mut d = Decided::default();
    for (name, item) in held {
        let i = which(&name)?;
        let gone = || SqlError::from(StorageError::TableNotFound(name.clone()));
        match item {
            Item::Rows(cols) => {
                let t = now[i].ok_or_else(gone)?;
                let table = d.table(t, found)?;
                check_tenant_rows(engine.access(), table, &cols)?;
                table.validate(&cols)?;
                if let Some(c) = copies[i].as_mut() {
                    c.append(cols.clone())?;
                }
                d.steps.push((t, Step::Append(cols)));
            }
            Item::Edit(edit) => {
                let t = now[i].ok_or_else(gone)?;
                let c = copies[i].as_mut().ok_or_else(|| SqlError::Internal("an edited table has no copy".into()))?;
                if let Some(decision) = edit.decide_and_apply(run, c)? {
                    d.steps.push((t, Step::Edit(decision)));
                }
            }
            Item::Create(table) => {
                if now[i].is_some() || engine.catalog().is_view(&name) {
                    return Err(SqlError::TableExists(name));
                }
                let t = Target::Made(d.made.len());
                let table = std::sync::Arc::unwrap_or_clone(table);
                copies[i] = edited[i].then(|| table.clone());
                d.made.push((table, Vec::new()));
                d.unmade.push(false);
                now[i] = Some(t);
                d.steps.push((t, Step::Create));
            }
            Item::Index(def) => {
                let Some(t @ Target::Made(j)) = now[i] else {
                    return Err(SqlError::Internal(format!("an index held for '{name}', a table not made here")));
                };
                d.made[j].0.add_index(def.clone())?;
                d.steps.push((t, Step::Index(def)));
            }
            Item::Drop { if_exists } => {
                let Some(t) = now[i].take() else {
                    if if_exists {
                        continue;
                    }
                    return Err(gone());
                };
                match t {
                    Target::Stored(k) => {
                        // As the statement was checked: the table there now may be another.
                        let stored = d.table(t, found)?;
                        engine.access().refuse_scoped(&name, stored.schema(), "DROP TABLE")?;
                        engine.catalog().check_no_views(&name)?;
                        d.dropped.push(k);
                    }
                    Target::Made(j) => d.unmade[j] = true,
                }
                copies[i] = None;
                d.steps.push((t, Step::Drop));
            }
        }
    }
    for (t, keys) in &mut d.made {
        *keys = dedup_names(t);
    }
    check_index_names(&d, found)?;
    Ok(d)
}

/// No two tables left by the change hold indexes of one name: each made table's against the
/// stored ones locked here that stay and the other made ones (`Catalog::write_redefining`
/// checked every other table).
fn check_index_names(d: &Decided, found: &[Option<&Table>]) -> Result<()> {
    let kept = found.iter().enumerate().filter(|(i, _)| !d.dropped.contains(i)).filter_map(|(_, t)| *t);
    let mut seen: Vec<(&str, &str)> =
        kept.flat_map(|t| t.indexes().iter().map(move |ix| (ix.name(), t.name()))).collect();
    let made = d.made.iter().zip(&d.unmade).filter(|(_, gone)| !**gone).map(|((t, _), _)| t);
    for t in made {
        for ix in t.indexes() {
            if let Some((_, owner)) = seen.iter().find(|(n, _)| n.eq_ignore_ascii_case(ix.name())) {
                let said = format!("index '{}' already exists (on table '{owner}')", ix.name());
                return Err(StorageError::Invalid(said).into());
            }
            seen.push((ix.name(), t.name()));
        }
    }
    Ok(())
}

impl Decided {
    /// The table `t` names, as the steps before have left its layout.
    fn table<'a>(&'a self, t: Target, found: &[Option<&'a Table>]) -> Result<&'a Table> {
        match t {
            Target::Stored(i) => found.get(i).copied().flatten(),
            Target::Made(j) => self.made.get(j).map(|(t, _)| t),
        }
        .ok_or_else(|| SqlError::Internal(format!("no table for a held change ({t:?})")))
    }

    /// Whether `t` is still there once every step is done (its steps are applied).
    fn stays(&self, t: Target) -> bool {
        match t {
            Target::Stored(i) => !self.dropped.contains(&i),
            Target::Made(j) => !self.unmade[j],
        }
    }

    /// Whether the stored table at `i` is written: it stays, and a step changes it.
    pub(super) fn writes(&self, i: usize) -> bool {
        let t = Target::Stored(i);
        self.stays(t) && self.steps.iter().any(|(s, _)| *s == t)
    }

    /// Log every step, in order, as one record (`found` names the stored tables); the indexes
    /// of the made tables that stay come last, where their names are free in the state COMMIT
    /// checked them against (one of a table dropped again is not logged).
    pub(super) fn log(&self, catalog: &Catalog, found: &[Option<&Table>]) -> std::result::Result<Logged, StorageError> {
        let mut changes: Vec<Change<'_>> = Vec::with_capacity(self.steps.len());
        let (indexes, steps): (Vec<_>, Vec<_>) = self.steps.iter().partition(|(_, s)| matches!(s, Step::Index(_)));
        let kept = indexes.into_iter().filter(|(t, _)| self.stays(*t));
        for (t, step) in steps.into_iter().chain(kept) {
            let (name, made) = match *t {
                Target::Stored(i) => (found.get(i).copied().flatten().map(Table::name), None),
                Target::Made(j) => (self.made.get(j).map(|(t, _)| t.name()), self.made.get(j)),
            };
            let name = name.ok_or_else(|| StorageError::Internal(format!("no table for a held change ({t:?})")))?;
            match (step, made) {
                (Step::Append(columns), _) => changes.push(Change::Append { table: name, columns }),
                (Step::Edit(d), _) => changes.extend(d.changes(name)),
                (Step::Create, Some((table, keys))) => changes.extend(Change::creation(table, keys)),
                (Step::Create, None) => return Err(StorageError::Internal("a stored table created again".into())),
                (Step::Drop, _) => changes.push(Change::DropTable { name }),
                (Step::Index(def), _) => changes.push(Change::CreateIndex { table: name, def }),
            }
        }
        catalog.log(&changes)
    }

    /// Apply the steps to the tables that stay: `stored` holds, for each place, the stored
    /// table when [`Decided::writes`] says it is written. Returns the rows appended, deleted
    /// and updated.
    pub(super) fn apply(&mut self, stored: &mut [Option<&mut Table>]) -> std::result::Result<usize, StorageError> {
        let mut n = 0;
        for (t, step) in std::mem::take(&mut self.steps) {
            if !self.stays(t) {
                continue;
            }
            let table = match t {
                Target::Stored(i) => stored.get_mut(i).and_then(Option::as_deref_mut),
                Target::Made(j) => self.made.get_mut(j).map(|(t, _)| t),
            }
            .ok_or_else(|| StorageError::Internal(format!("no table to apply a held change to ({t:?})")))?;
            n += match step {
                Step::Append(cols) => table.append(cols)?,
                Step::Edit(d) => d.apply(table)?,
                Step::Create | Step::Drop | Step::Index(_) => 0,
            };
        }
        Ok(n)
    }

    /// What the change does to the tables themselves: the stored ones it drops, the ones it
    /// makes that stay (their rows in them).
    pub(super) fn redefined(self) -> Redefined {
        let created = self.made.into_iter().zip(self.unmade).filter(|(_, gone)| !gone).map(|((t, _), _)| t).collect();
        Redefined { dropped: self.dropped, created }
    }
}
