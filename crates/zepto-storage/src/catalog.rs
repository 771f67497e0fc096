//! The catalog: named tables with snapshot reads.
//!
//! Each table sits behind its own `RwLock<Arc<Table>>`. A reader holds the read lock only long
//! enough to clone the `Arc` (its snapshot). A writer takes the write lock and mutates through
//! `Arc::make_mut`: in place when no snapshot is alive, copy-on-write of the touched table header
//! and partitions when one is. Writers prepare and validate their batch before taking the lock.

use crate::error::StorageError;
use crate::table::Table;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

type Slot = Arc<RwLock<Arc<Table>>>;

#[derive(Debug, Default)]
pub struct Catalog {
    tables: RwLock<BTreeMap<String, Slot>>,
}

fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

impl Catalog {
    pub fn new() -> Catalog {
        Catalog::default()
    }

    fn slot(&self, name: &str) -> Result<Slot, StorageError> {
        let map = self.tables.read().unwrap_or_else(|e| e.into_inner());
        map.get(&key(name)).cloned().ok_or_else(|| StorageError::TableNotFound(name.to_string()))
    }

    /// A consistent snapshot of one table.
    pub fn snapshot(&self, name: &str) -> Result<Arc<Table>, StorageError> {
        let slot = self.slot(name)?;
        let t = slot.read().unwrap_or_else(|e| e.into_inner());
        Ok(t.clone())
    }

    pub fn exists(&self, name: &str) -> bool {
        self.tables.read().unwrap_or_else(|e| e.into_inner()).contains_key(&key(name))
    }

    pub fn create(&self, table: Table, if_not_exists: bool) -> Result<bool, StorageError> {
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let k = key(&table.name);
        if map.contains_key(&k) {
            return if if_not_exists { Ok(false) } else { Err(StorageError::TableExists(table.name)) };
        }
        map.insert(k, Arc::new(RwLock::new(Arc::new(table))));
        Ok(true)
    }

    pub fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool, StorageError> {
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        match map.remove(&key(name)) {
            Some(_) => Ok(true),
            None if if_exists => Ok(false),
            None => Err(StorageError::TableNotFound(name.to_string())),
        }
    }

    /// Run `f` with exclusive access to the table. `f` must leave the table unchanged when it
    /// returns an error (validate first, then mutate infallibly).
    pub fn write<R>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Table) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        let slot = self.slot(name)?;
        let mut guard = slot.write().unwrap_or_else(|e| e.into_inner());
        f(Arc::make_mut(&mut guard))
    }

    /// Run `f` with exclusive access to several tables at once (`names` distinct; `f` gets them
    /// in that order). Locks are taken in name order, so concurrent multi-table writers cannot
    /// deadlock. Like [`Catalog::write`], `f` must check everything before changing anything.
    pub fn write_many<R>(
        &self,
        names: &[&str],
        f: impl FnOnce(&mut [&mut Table]) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        let slots: Vec<Slot> = names.iter().map(|n| self.slot(n)).collect::<Result<_, _>>()?;
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by_key(|&i| key(names[i]));
        if order.windows(2).any(|w| key(names[w[0]]) == key(names[w[1]])) {
            return Err(StorageError::Internal("write_many: a table is named twice".into()));
        }
        let mut guards: Vec<Option<std::sync::RwLockWriteGuard<'_, Arc<Table>>>> = names.iter().map(|_| None).collect();
        for &i in &order {
            guards[i] = Some(slots[i].write().unwrap_or_else(|e| e.into_inner()));
        }
        let mut tables: Vec<&mut Table> = guards.iter_mut().flatten().map(|g| Arc::make_mut(&mut **g)).collect();
        debug_assert_eq!(tables.len(), names.len());
        f(&mut tables)
    }

    /// Table names in sorted order (as created).
    pub fn table_names(&self) -> Vec<String> {
        let map = self.tables.read().unwrap_or_else(|e| e.into_inner());
        map.values().map(|s| s.read().unwrap_or_else(|e| e.into_inner()).name.clone()).collect()
    }
}
