//! One change that drops and creates tables beside its appends and edits: a transaction's
//! COMMIT holding `DROP TABLE` and `CREATE TABLE` ([`Catalog::write_redefining`]). The table
//! map stays locked for the whole change, so a reader sees the tables before it or after it,
//! never a table dropped and its successor not yet there.

use super::{key, new_slot, Catalog, Slot};
use crate::error::StorageError;
use crate::table::Table;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLockWriteGuard};

/// What a change made through [`Catalog::write_redefining`] does to the tables themselves,
/// done once it has logged everything and applied its rows.
#[derive(Default)]
pub struct Redefined {
    /// The tables it drops, by their place in the names it was given (each found there).
    pub dropped: Vec<usize>,
    /// The tables it makes, their rows in them: each takes its name's place in the catalog
    /// (no table of that name may be left there once `dropped` are gone).
    pub created: Vec<Table>,
}

impl Catalog {
    /// [`Catalog::write_many`] for a change that also drops and makes tables. `f` gets, for
    /// each of `names` (distinct), its table locked for writing, or `None` where there is no
    /// table of that name. It must check everything, log all its changes as one call to
    /// [`Catalog::log`] (the drops and creations among them, in order), and apply those to
    /// the tables it got; the tables it drops and makes take effect when it returns `Ok`.
    /// A table is handed over as its `Arc`: `f` copies one (`Arc::make_mut`) only to change
    /// it, so a table a reader holds and the change only drops is not copied. `claims` are the
    /// names of the indexes the tables it makes hold: refused when a table other than those
    /// of `names` holds one (`f` checks those it keeps).
    pub fn write_redefining<R>(
        &self,
        names: &[&str],
        claims: &[String],
        f: impl FnOnce(&mut [Option<&mut Arc<Table>>]) -> Result<(R, Redefined), StorageError>,
    ) -> Result<R, StorageError> {
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by_key(|&i| key(names[i]));
        if order.windows(2).any(|w| key(names[w[0]]) == key(names[w[1]])) {
            return Err(StorageError::Internal("write_redefining: a table is named twice".into()));
        }
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        // The map first, then the tables in name order, as `drop_table` and `replace` lock.
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        for claim in claims {
            match super::index_owner(&map, claim) {
                Some(owner) if !names.iter().any(|n| key(n) == key(&owner)) => {
                    return Err(StorageError::Invalid(format!("index '{claim}' already exists (on table '{owner}')")));
                }
                _ => {}
            }
        }
        let slots: Vec<Option<Slot>> = names.iter().map(|n| map.get(&key(n)).cloned()).collect();
        let mut guards: Vec<Option<RwLockWriteGuard<'_, Arc<Table>>>> = names.iter().map(|_| None).collect();
        for &i in &order {
            guards[i] = slots[i].as_ref().map(|s| s.write());
        }
        for g in guards.iter_mut().flatten() {
            if g.has_deferred() {
                Arc::make_mut(&mut **g).fold();
            }
        }
        let mut tables: Vec<Option<&mut Arc<Table>>> = guards.iter_mut().map(|g| g.as_deref_mut()).collect();
        let (r, redefined) = f(&mut tables)?;
        drop(tables);
        for &i in &redefined.dropped {
            let slot = slots.get(i).and_then(Option::as_ref);
            debug_assert!(slot.is_some(), "a dropped table was locked");
            if let Some(slot) = slot {
                slot.dropped.store(true, Ordering::Release);
                map.remove(&key(names[i]));
            }
        }
        for t in redefined.created {
            let k = key(t.name());
            debug_assert!(!map.contains_key(&k), "a table made in the place of one not dropped");
            map.insert(k, new_slot(t));
        }
        Ok(r)
    }
}
