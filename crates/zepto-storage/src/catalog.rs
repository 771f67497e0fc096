//! The catalog: named tables with snapshot reads, and the one place tables change.
//!
//! Every change goes through a typed method ([`Catalog::create`], [`Catalog::drop_table`],
//! [`Catalog::append`], [`Catalog::add_column`], or [`Catalog::write_many`] whose closure logs
//! with [`Catalog::log`]) that checks it, hands it to the [`ChangeLog`] (the write-ahead log,
//! when the database is durable), and only then applies it, under the table's lock, so the log
//! order is the apply order.
//!
//! Each table sits behind its own `RwLock<Arc<Table>>`. A reader holds the read lock only long
//! enough to clone the `Arc` (its snapshot). A writer takes the write lock and mutates through
//! `Arc::make_mut`: in place when no snapshot is alive, copy-on-write of the touched table header
//! and partitions when one is. Writers prepare and validate their batch before taking the lock.
//!
//! What a change is and where it is logged: `catalog/change.rs`; tiering, shards and retention:
//! `catalog/tiering.rs`.

use crate::column::Column;
use crate::dict::Dict;
use crate::error::StorageError;
use crate::history::day_floor;
use crate::index::IndexDef;
use crate::logged::Logged;
use crate::table::HistoryReader;
use crate::table::{ColumnDef, Schema, Table};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

mod change;
mod redefine;
mod stamp;
mod tiering;
mod views;

pub use change::{dedup_names, Change, ChangeLog};
pub use redefine::Redefined;

pub use stamp::Stamp;

/// A table as a consistent cut found it, with the [`Stamp`] of that content.
pub type StampedTable = (Arc<Table>, Stamp);

/// A table's place in the catalog. `dropped` is set by DROP TABLE under the table's write
/// lock, so a writer that found the slot before the drop but locks it after sees the flag and
/// fails instead of writing into a table that no longer exists.
struct SlotCell {
    table: RwLock<Arc<Table>>,
    dropped: std::sync::atomic::AtomicBool,
    /// The layout as last read ([`Catalog::layout`]), for a reader that finds a writer
    /// holding the table.
    layout: std::sync::Mutex<Option<Layout>>,
    /// The table's content as of its last change ([`Stamp`]).
    stamp: stamp::StampCell,
}

impl SlotCell {
    /// The table locked for a change: its stamp moves on. Every writer locks through here
    /// (folding deferred rows in, which changes no row, locks the table directly).
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Arc<Table>> {
        let guard = self.table.write().unwrap_or_else(|e| e.into_inner());
        self.stamp.bump();
        guard
    }
}

type Slot = Arc<SlotCell>;

/// A table's shape without its rows ([`Catalog::layout`]).
#[derive(Debug, Clone)]
pub struct Layout {
    /// Its columns, in order.
    pub schema: Schema,
    /// Index of the partition-key column.
    pub key_col: Option<usize>,
    /// Index of the designated timestamp column.
    pub ts_col: Option<usize>,
    /// The version of its symbol dictionary it had: a batch coded against it (or a later
    /// version of the same lineage) is appended without re-encoding its SYMBOL columns.
    pub dict: Dict,
    /// The rows it held then (a hint for how to write a batch: writers may have added since).
    pub rows: usize,
}

fn new_slot(t: Table) -> Slot {
    stamped_slot(t, Stamp::next())
}

fn stamped_slot(t: Table, stamp: Stamp) -> Slot {
    Arc::new(SlotCell {
        table: RwLock::new(Arc::new(t)),
        dropped: Default::default(),
        layout: Default::default(),
        stamp: stamp::StampCell::new(stamp),
    })
}

/// The database's tables by name (case-insensitive), with snapshot reads and logged writes (see the
/// module docs).
#[derive(Default)]
pub struct Catalog {
    tables: RwLock<BTreeMap<String, Slot>>,
    changes: OnceLock<Arc<dyn ChangeLog>>,
    /// Held shared by every change from its log to its apply, exclusively by
    /// [`Catalog::consistent_cut`]: a cut sees no change logged but not yet applied.
    gate: RwLock<()>,
    /// Reads the Parquet history for queries (set by a durable database).
    history: OnceLock<Arc<dyn HistoryReader>>,
    /// Every committed write, for subscribers.
    feed: Arc<crate::feed::ChangeFeed>,
    /// Materialized views by name (see [`crate::view`]), and how many (read without a lock
    /// on every write).
    views: RwLock<BTreeMap<String, crate::view::ViewSlot>>,
    view_count: std::sync::atomic::AtomicUsize,
    /// Compiles views from their definitions (set by the SQL engine).
    compiler: OnceLock<Arc<dyn crate::view::ViewCompiler>>,
    /// Series the ingest doors have seen, with their tables' codes (see [`crate::series_memo`]).
    series: crate::series_memo::SeriesMemo,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("tables", &self.table_names())
            .field("logged", &self.changes.get().is_some())
            .finish()
    }
}

fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

impl Catalog {
    /// An empty, in-memory catalog (no change log, no history reader).
    pub fn new() -> Catalog {
        Catalog::default()
    }

    /// What the ingest doors learned about series (see [`crate::series_memo`]).
    pub fn series_memo(&self) -> &crate::series_memo::SeriesMemo {
        &self.series
    }

    fn slot(&self, name: &str) -> Result<Slot, StorageError> {
        let map = self.tables.read().unwrap_or_else(|e| e.into_inner());
        map.get(&key(name)).cloned().ok_or_else(|| StorageError::TableNotFound(name.to_string()))
    }

    /// A consistent snapshot of one table (its deferred rows folded in first: see
    /// [`Catalog::write_many_deferred`]).
    pub fn snapshot(&self, name: &str) -> Result<Arc<Table>, StorageError> {
        match self.slot(name) {
            Ok(slot) => Ok(folded(&slot)),
            Err(e) => self.view_snapshot(name).unwrap_or(Err(e)),
        }
    }

    /// A table's columns, partition key and designated timestamp, without its rows: what a
    /// writer checks a batch against. Unlike [`Catalog::snapshot`] it leaves deferred rows
    /// where they are (`table/defer.rs`), so an ingest door reading it per batch does not
    /// fold the previous batch in.
    ///
    /// It does not wait for a writer either: while one holds the table, the layout as last
    /// read is returned (an ingest door decodes its next batch while the previous one is
    /// applied; waiting there made two clients' batches take turns). A writer checks a batch
    /// against the schema as it is under the lock, so a layout the change in progress makes
    /// stale is the same race as a change between a batch's decode and its apply, which the
    /// doors always had.
    pub fn layout(&self, name: &str) -> Result<Layout, StorageError> {
        let slot = self.slot(name)?;
        let last = || slot.layout.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let t = match slot.table.try_read() {
            Ok(t) => t,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => match last() {
                Some(l) => return Ok(l),
                None => slot.table.read().unwrap_or_else(|e| e.into_inner()),
            },
        };
        Ok(keep_layout(&slot, &t))
    }

    /// [`Catalog::layout`] as the table is now, waiting for a writer that holds it: for a
    /// caller whose own change (an `ALTER TABLE` just before) must show. Deferred rows stay
    /// where they are, as with [`Catalog::layout`].
    pub fn current_layout(&self, name: &str) -> Result<Layout, StorageError> {
        let slot = self.slot(name)?;
        let t = slot.table.read().unwrap_or_else(|e| e.into_inner());
        Ok(keep_layout(&slot, &t))
    }

    /// [`Catalog::snapshot`] without waiting for a writer of the table: `None` while one holds
    /// it, or if there is no such table (a table being created or dropped may still be
    /// waited for). For observers that must never sleep on the lock, such as a
    /// latency probe (waking a sleeping reader costs more than the write it waited for).
    pub fn try_snapshot(&self, name: &str) -> Option<Arc<Table>> {
        let slot = self.slot(name).ok()?;
        let t = match slot.table.try_read() {
            Ok(t) => t,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if !t.has_deferred() {
            return Some(t.clone());
        }
        drop(t);
        let mut t = match slot.table.try_write() {
            Ok(t) => t,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        if t.has_deferred() {
            Arc::make_mut(&mut t).fold();
        }
        Some(t.clone())
    }

    /// True if a table of this name (case-insensitive) exists.
    pub fn exists(&self, name: &str) -> bool {
        self.tables.read().unwrap_or_else(|e| e.into_inner()).contains_key(&key(name)) || self.is_view(name)
    }

    /// From now on, log every change to `log` before applying it (set once, after recovery).
    pub fn set_log(&self, log: Arc<dyn ChangeLog>) -> Result<(), StorageError> {
        self.changes.set(log).map_err(|_| StorageError::Internal("the change log is already set".into()))
    }

    /// Log `changes` (no-op for an in-memory database). Callers apply them only on success,
    /// under [`Logged::apply`] (the write path's panic policy: `crate::logged`).
    pub fn log(&self, changes: &[Change<'_>]) -> Result<Logged, StorageError> {
        let (logged, lsn) = match self.changes.get() {
            Some(l) => {
                let lsn = l.log(changes)?;
                self.feed.logged(lsn);
                (Logged::durable(), lsn)
            }
            None => (Logged::in_memory(), self.feed.number()),
        };
        Ok(logged.publishing(self.published(changes, lsn)).with_views(self.view_work(changes)))
    }

    /// The change log, once a durable database set one.
    pub(crate) fn change_log(&self) -> Option<&Arc<dyn ChangeLog>> {
        self.changes.get()
    }

    /// The change feed: every committed append, delete, update and drop, numbered.
    pub fn feed(&self) -> &Arc<crate::feed::ChangeFeed> {
        &self.feed
    }

    /// What `changes` (logged as record `lsn`) publish to the feed once applied: their events
    /// (copies of the appended batches, only while the feed captures) and count; `None` for
    /// changes of no row.
    fn published(&self, changes: &[Change<'_>], lsn: u64) -> Option<crate::logged::Published> {
        use crate::feed::FeedChange;
        let count = |rows: &[(u32, Vec<u32>)]| rows.iter().map(|(_, r)| r.len()).sum::<usize>();
        let event = |c: &Change<'_>| -> Option<(String, FeedChange)> {
            Some(match c {
                Change::Append { table, columns } => (table.to_string(), FeedChange::Append(columns.to_vec())),
                Change::Delete { table, rows } => (table.to_string(), FeedChange::Delete(count(rows))),
                Change::Update { table, rows, .. } => (table.to_string(), FeedChange::Update(count(rows))),
                Change::DropTable { name } => (name.to_string(), FeedChange::Drop),
                _ => return None,
            })
        };
        let rowful = |c: &&Change<'_>| {
            matches!(
                c,
                Change::Append { .. } | Change::Delete { .. } | Change::Update { .. } | Change::DropTable { .. }
            )
        };
        let n = changes.iter().filter(rowful).count();
        if n == 0 {
            return None;
        }
        let events = if self.feed.capture(lsn) { changes.iter().filter_map(event).collect() } else { Vec::new() };
        Some(crate::logged::Published { feed: self.feed.clone(), lsn, changes: events, count: n })
    }

    /// Write a checkpoint through the change log (the `CHECKPOINT` statement).
    pub fn checkpoint(&self) -> Result<String, StorageError> {
        match self.changes.get() {
            Some(l) => l.checkpoint(self),
            None => {
                Err(StorageError::Durability("this database is in memory only: there is nothing to checkpoint".into()))
            }
        }
    }

    /// Back the database up into `dest` (a directory, or `s3://...`) through the change log
    /// (the `BACKUP TO` statement).
    pub fn backup(&self, dest: &str) -> Result<String, StorageError> {
        match self.changes.get() {
            Some(l) => l.backup(self, dest),
            None => Err(StorageError::Durability(
                "this database is in memory only: there is nothing durable to back up (serve with --data-dir)".into(),
            )),
        }
    }

    /// Install the reader of history files (once, by a durable database).
    pub fn set_history_reader(&self, r: Arc<dyn HistoryReader>) -> Result<(), StorageError> {
        self.history.set(r).map_err(|_| StorageError::Internal("the history reader is already set".into()))
    }

    /// The reader of Parquet history files, if a durable database installed one.
    pub fn history_reader(&self) -> Option<&Arc<dyn HistoryReader>> {
        self.history.get()
    }

    /// Set (or with `None` clear) `name`'s retention.
    pub fn set_ttl(&self, name: &str, ttl_ns: Option<i64>) -> Result<(), StorageError> {
        if ttl_ns.is_some_and(|t| t <= 0) {
            return Err(StorageError::Invalid("a TTL must be positive".into()));
        }
        self.write(name, |t| {
            if t.ts_col().is_none() && ttl_ns.is_some() {
                return Err(StorageError::Invalid(format!(
                    "table '{}' has no designated timestamp for a TTL",
                    t.name()
                )));
            }
            self.log(&[Change::SetTtl { table: t.name(), ttl_ns }])?.apply(|| {
                t.set_ttl(ttl_ns);
                Ok(())
            })
        })
    }

    /// Set (with `[]` clear) `name`'s dedup keys (logged; checked as [`Table::check_dedup`]).
    pub fn set_dedup(&self, name: &str, keys: &[String]) -> Result<(), StorageError> {
        self.write(name, |t| {
            t.check_dedup(keys)?;
            self.log(&[Change::SetDedup { table: t.name(), keys }])?.apply(|| t.set_dedup(keys))
        })
    }

    /// Every table as of one instant between changes, each with its [`Stamp`], the materialized
    /// views' definitions of the same cut, and `at()`'s result taken at that same instant (the
    /// checkpoint passes the WAL's rotation, so the snapshots hold exactly the records up to the
    /// LSN it returns). Writers wait only for the `Arc` clones and `at()`.
    pub fn consistent_cut<R>(&self, at: impl FnOnce() -> R) -> (Vec<StampedTable>, Vec<crate::view::ViewCut>, R) {
        let _gate = self.gate.write().unwrap_or_else(|e| e.into_inner());
        let map = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let tables = map.values().map(|s| folded_stamped(s)).collect();
        drop(map);
        let views = self.view_cuts();
        (tables, views, at())
    }

    /// Put a table back as recovery found it (rows included), without logging. Only before a
    /// change log is set.
    pub fn restore(&self, table: Table) -> Result<(), StorageError> {
        self.restore_stamped(table, Stamp::next())
    }

    /// [`Catalog::restore`] of a table whose content is exactly what `stamp` named when it was
    /// checkpointed (see [`Stamp`]).
    pub fn restore_stamped(&self, mut table: Table, stamp: Stamp) -> Result<(), StorageError> {
        table.set_history_reader(self.history.get().cloned());
        if self.changes.get().is_some() {
            return Err(StorageError::Internal("restore() after the change log is set".into()));
        }
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let k = key(table.name());
        if map.contains_key(&k) {
            return Err(StorageError::TableExists(table.name().to_string()));
        }
        map.insert(k, stamped_slot(table, stamp));
        Ok(())
    }

    /// Add an empty table.
    pub fn create(&self, table: Table, if_not_exists: bool) -> Result<bool, StorageError> {
        if table.row_count() > 0 {
            return Err(StorageError::Internal("tables are created empty, then appended to".into()));
        }
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let k = key(table.name());
        if map.contains_key(&k) {
            return if if_not_exists { Ok(false) } else { Err(StorageError::TableExists(table.name().to_string())) };
        }
        if self.is_view(table.name()) {
            return Err(StorageError::TableExists(table.name().to_string()));
        }
        let dedup = change::dedup_names(&table);
        let changes = Change::creation(&table, &dedup);
        self.log(&changes)?.apply(|| {
            map.insert(k, new_slot(table));
            Ok::<_, StorageError>(true)
        })
    }

    /// Add `table` (empty: the new layout) holding the rows `columns` (`CREATE TABLE AS`): one
    /// logged change, so a reader and a crash see no table or the table with every row, never
    /// an empty one. `Ok(None)` when the name is taken and `if_not_exists`; else the rows.
    ///
    /// The table is put in the catalog locked, and the catalog's map is let go before the rows
    /// are logged: other tables' readers and writers do not wait for a large table's log write;
    /// this one's wait for its rows. When the log refuses them, the table goes again.
    pub fn create_with(
        &self,
        table: Table,
        columns: Vec<Column>,
        if_not_exists: bool,
    ) -> Result<Option<usize>, StorageError> {
        if table.row_count() > 0 {
            return Err(StorageError::Internal("tables are created empty, then appended to".into()));
        }
        let rows = table.validate(&columns)?;
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let k = key(table.name());
        if map.contains_key(&k) || self.is_view(table.name()) {
            return match if_not_exists && map.contains_key(&k) {
                true => Ok(None),
                false => Err(StorageError::TableExists(table.name().to_string())),
            };
        }
        let slot = new_slot(table);
        let mut guard = slot.write();
        map.insert(k.clone(), slot.clone());
        drop(map);
        let t = Arc::make_mut(&mut *guard);
        let dedup = change::dedup_names(t);
        let mut changes = Change::creation(t, &dedup);
        if rows > 0 {
            changes.push(Change::Append { table: t.name(), columns: &columns });
        }
        let logged = self.log(&changes);
        drop(changes);
        let logged = match logged {
            Ok(l) => l,
            Err(e) => {
                slot.dropped.store(true, std::sync::atomic::Ordering::Release);
                drop(guard);
                let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
                if map.get(&k).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                    map.remove(&k);
                }
                return Err(e);
            }
        };
        logged.apply(|| {
            if rows > 0 {
                t.append(columns)?;
            }
            Ok::<_, StorageError>(Some(rows))
        })
    }

    /// Put `table` (empty: the new layout) holding the rows `columns` in place of the table of
    /// its name, if there is one: one logged change (drop, create, append), so a reader, a
    /// writer and a crash see the old table or the new one, never neither. Returns the rows.
    pub fn replace(&self, mut table: Table, columns: Vec<Column>) -> Result<usize, StorageError> {
        if table.row_count() > 0 || !table.dedup_keys().is_empty() {
            return Err(StorageError::Internal("a replacing table is created empty, without dedup keys".into()));
        }
        table.validate(&columns)?;
        self.check_no_views(table.name())?;
        if self.is_view(table.name()) {
            return Err(StorageError::TableExists(table.name().to_string()));
        }
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let k = key(table.name());
        let old = map.get(&k).cloned();
        // Wait for the old table's writers in flight: their records precede this one.
        let _writers = old.as_ref().map(|slot| slot.write());
        let name = table.name().to_string();
        let col_name = |i: Option<usize>| i.map(|i| table.schema().columns[i].name.as_str());
        let mut changes = Vec::with_capacity(3);
        if old.is_some() {
            changes.push(Change::DropTable { name: &name });
        }
        changes.push(Change::CreateTable {
            name: &name,
            schema: table.schema(),
            partition_key: col_name(table.key_col()),
            timestamp: col_name(table.ts_col()),
        });
        changes.push(Change::Append { table: &name, columns: &columns });
        let logged = self.log(&changes)?;
        drop(changes);
        logged.apply(|| {
            let rows = table.append(columns)?;
            if let Some(slot) = &old {
                slot.dropped.store(true, std::sync::atomic::Ordering::Release);
            }
            map.insert(k, new_slot(table));
            Ok::<_, StorageError>(rows)
        })
    }

    /// Drop a table (logged). `Ok(false)` if it does not exist and `if_exists`; `TableNotFound` if
    /// it does not exist otherwise.
    pub fn drop_table(&self, name: &str, if_exists: bool) -> Result<bool, StorageError> {
        let gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let k = key(name);
        if !map.contains_key(&k) {
            return if if_exists { Ok(false) } else { Err(StorageError::TableNotFound(name.to_string())) };
        }
        self.check_no_views(name)?;
        // Wait for the table's writers in flight: their records precede the drop's.
        if let Some(slot) = map.get(&k).cloned() {
            let t = slot.write();
            let freed = t.data_bytes();
            self.log(&[Change::DropTable { name }])?.apply(|| {
                slot.dropped.store(true, std::sync::atomic::Ordering::Release);
                map.remove(&k);
                Ok::<_, StorageError>(())
            })?;
            drop(t);
            drop((slot, map, gate));
            // The table's columns are freed now (unless a reader still holds them). A large
            // table's memory goes back to the kernel rather than stay for the next query; a
            // small one's stays, as a query's freed buffers do, for the next table or load to
            // take without faulting it in again (10k-row appends after a DROP of 1M rows:
            // 18-21M rows/s when handed back, 24-32M kept).
            if freed >= crate::mem::RETAINED_FREE_BYTES {
                crate::mem::release_freed_memory();
            }
        }
        Ok(true)
    }

    /// Append a batch (schema order; checked first, logged, then applied). Returns its rows.
    pub fn append(&self, name: &str, columns: Vec<Column>) -> Result<usize, StorageError> {
        self.write(name, |t| {
            t.validate(&columns)?;
            self.log(&[Change::Append { table: t.name(), columns: &columns }])?.apply(|| t.append(columns))
        })
    }

    /// [`Catalog::append`] for an ingest door that appends batch after batch: a batch spread
    /// thin over a wide table's partitions is kept with the rows deferred before it and split
    /// among the partitions with them later (`Table::append_deferred`, `table/defer.rs`);
    /// whoever reads the table next folds them in first, so the rows are as visible as after
    /// [`Catalog::append`]. Pair it with [`Catalog::layout`] or [`Catalog::current_layout`],
    /// not [`Catalog::snapshot`], to read the schema per batch (a snapshot folds the rows in).
    pub fn append_deferring(&self, name: &str, columns: Vec<Column>) -> Result<usize, StorageError> {
        self.write_many_deferred(&[name], |tables| {
            let [t] = tables else { return Err(StorageError::Internal("one table asked for, not one given".into())) };
            t.validate(&columns)?;
            self.log(&[Change::Append { table: t.name(), columns: &columns }])?.apply(|| t.append_deferred(columns))
        })
    }

    /// Append rows grouped by partition key ([`Table::append_groups`]): logged as one record
    /// of an append per group, checked whole first (no rows: nothing is logged).
    pub fn append_groups(&self, name: &str, groups: Vec<Vec<Column>>) -> Result<usize, StorageError> {
        self.write(name, |t| {
            if t.validate_groups(&groups)? == 0 {
                return Ok(0);
            }
            let changes: Vec<Change<'_>> =
                groups.iter().map(|columns| Change::Append { table: t.name(), columns }).collect();
            self.log(&changes)?.apply(|| t.append_groups(groups))
        })
    }

    /// Add a column (NULL in existing rows).
    pub fn add_column(&self, name: &str, def: ColumnDef) -> Result<(), StorageError> {
        self.write(name, |t| {
            t.check_new_column(&def)?;
            self.log(&[Change::AddColumn { table: t.name(), def: &def }])?.apply(|| t.add_column(def))
        })
    }

    /// Record index `def` on `table` (logged). Index names are unique in the catalog
    /// (ignoring ASCII case): `Ok(false)` if one of that name exists and `if_not_exists`.
    pub fn create_index(&self, table: &str, def: IndexDef, if_not_exists: bool) -> Result<bool, StorageError> {
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        // Held so no other index of the same name is created meanwhile.
        let map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        if let Some(owner) = index_owner(&map, def.name()) {
            return if if_not_exists {
                Ok(false)
            } else {
                Err(StorageError::Invalid(format!("index '{}' already exists (on table '{owner}')", def.name())))
            };
        }
        let slot = map.get(&key(table)).cloned().ok_or_else(|| StorageError::TableNotFound(table.to_string()))?;
        let mut guard = slot.write();
        let t = Arc::make_mut(&mut guard);
        t.check_new_index(&def)?;
        self.log(&[Change::CreateIndex { table: t.name(), def: &def }])?.apply(|| t.add_index(def))?;
        Ok(true)
    }

    /// Forget index `name` (logged), whichever table holds it. `Ok(false)` if there is none
    /// and `if_exists`.
    pub fn drop_index(&self, name: &str, if_exists: bool) -> Result<bool, StorageError> {
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let map = self.tables.write().unwrap_or_else(|e| e.into_inner());
        let Some(owner) = index_owner(&map, name) else {
            return if if_exists {
                Ok(false)
            } else {
                Err(StorageError::Invalid(format!("index '{name}' does not exist")))
            };
        };
        let slot = map.get(&key(&owner)).cloned().ok_or_else(|| StorageError::TableNotFound(owner.clone()))?;
        let mut guard = slot.write();
        let t = Arc::make_mut(&mut guard);
        self.log(&[Change::DropIndex { table: t.name(), name }])?
            .apply(|| Ok::<_, StorageError>(t.drop_index(name)))?;
        Ok(true)
    }

    /// Run `f` with exclusive access to the table (DELETE and UPDATE decide their rows under
    /// it). Like [`Catalog::write_many`], `f` must check everything, [`Catalog::log`] its
    /// changes as one call, then apply them, leaving the table unchanged on any error.
    pub fn modify<R, E: From<StorageError>>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Table) -> Result<R, E>,
    ) -> Result<R, E> {
        self.write(name, f)
    }

    /// Run `f` with exclusive access to the table. `f` must leave the table unchanged when it
    /// returns an error (validate first, then mutate infallibly).
    fn write<R, E: From<StorageError>>(&self, name: &str, f: impl FnOnce(&mut Table) -> Result<R, E>) -> Result<R, E> {
        let slot = self.slot(name)?;
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut guard = slot.write();
        if slot.dropped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StorageError::TableNotFound(name.to_string()).into());
        }
        let t = Arc::make_mut(&mut guard);
        t.fold();
        f(t)
    }

    /// Run `f` with exclusive access to several tables at once (`names` distinct; `f` gets them
    /// in that order). Locks are taken in name order, so concurrent multi-table writers cannot
    /// deadlock. `f` must check everything, then [`Catalog::log`] all its changes as one call,
    /// then apply them.
    pub fn write_many<R>(
        &self,
        names: &[&str],
        f: impl FnOnce(&mut [&mut Table]) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        self.write_many_with(names, true, f)
    }

    /// [`Catalog::write_many`] for the ingest doors: the tables are handed over with any
    /// rows deferred before (`Table::append_deferred`), which `f` may add to. `f` must read
    /// nothing of them but their schemas; whoever reads them next folds the rows in first
    /// (a snapshot, a consistent cut, any other change).
    pub fn write_many_deferred<R>(
        &self,
        names: &[&str],
        f: impl FnOnce(&mut [&mut Table]) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        self.write_many_with(names, false, f)
    }

    fn write_many_with<R>(
        &self,
        names: &[&str],
        fold: bool,
        f: impl FnOnce(&mut [&mut Table]) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        let slots: Vec<Slot> = names.iter().map(|n| self.slot(n)).collect::<Result<_, _>>()?;
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by_key(|&i| key(names[i]));
        if order.windows(2).any(|w| key(names[w[0]]) == key(names[w[1]])) {
            return Err(StorageError::Internal("write_many: a table is named twice".into()));
        }
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut guards: Vec<Option<std::sync::RwLockWriteGuard<'_, Arc<Table>>>> = names.iter().map(|_| None).collect();
        for &i in &order {
            guards[i] = Some(slots[i].write());
            if slots[i].dropped.load(std::sync::atomic::Ordering::Acquire) {
                return Err(StorageError::TableNotFound(names[i].to_string()));
            }
        }
        let mut tables: Vec<&mut Table> = guards.iter_mut().flatten().map(|g| Arc::make_mut(&mut **g)).collect();
        debug_assert_eq!(tables.len(), names.len());
        if fold {
            tables.iter_mut().for_each(|t| t.fold());
        }
        f(&mut tables)
    }

    /// Every index as (table name, definition), in table order.
    pub fn indexes(&self) -> Vec<(String, IndexDef)> {
        let map = self.tables.read().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for slot in map.values() {
            let t = slot.table.read().unwrap_or_else(|e| e.into_inner());
            out.extend(t.indexes().iter().map(|d| (t.name().to_string(), d.clone())));
        }
        out
    }

    /// Table names in sorted order (as created).
    pub fn table_names(&self) -> Vec<String> {
        let map = self.tables.read().unwrap_or_else(|e| e.into_inner());
        map.values().map(|s| s.table.read().unwrap_or_else(|e| e.into_inner()).name().to_string()).collect()
    }
}

/// The cut-off `t`'s retention drops rows and history files before as of `now`, if it has a
/// TTL and anything to drop.
fn retention_before(t: &Table, now: i64) -> Option<i64> {
    let before = day_floor(now.saturating_sub(t.history().ttl_ns?));
    let rows: usize = t.count_before(before).iter().sum();
    (rows > 0 || t.history().files.iter().any(|f| f.max_ts < before)).then_some(before)
}

/// `t`'s layout, kept as the slot's last ([`Catalog::layout`]) while `t`, the slot's table, is
/// still read: a later change cannot come in between, so the kept layout never goes back to an
/// older one.
fn keep_layout(slot: &SlotCell, t: &Arc<Table>) -> Layout {
    let l = Layout {
        schema: t.schema().clone(),
        key_col: t.key_col(),
        ts_col: t.ts_col(),
        dict: (**t.dict()).clone(),
        rows: t.row_count(),
    };
    *slot.layout.lock().unwrap_or_else(|e| e.into_inner()) = Some(l.clone());
    l
}

/// The slot's table with its deferred rows folded in (`table/defer.rs`): under the read lock
/// when there are none, the usual case, else under the write lock.
fn folded(slot: &SlotCell) -> Arc<Table> {
    folded_stamped(slot).0
}

/// [`folded`], with the stamp of the content it returns (read under the same lock).
fn folded_stamped(slot: &SlotCell) -> (Arc<Table>, Stamp) {
    {
        let t = slot.table.read().unwrap_or_else(|e| e.into_inner());
        if !t.has_deferred() {
            return (t.clone(), slot.stamp.get());
        }
    }
    let mut t = slot.table.write().unwrap_or_else(|e| e.into_inner());
    if t.has_deferred() {
        Arc::make_mut(&mut t).fold();
    }
    (t.clone(), slot.stamp.get())
}

/// The table holding index `name` (ignoring ASCII case), if any.
fn index_owner(map: &BTreeMap<String, Slot>, name: &str) -> Option<String> {
    map.values().find_map(|slot| {
        let t = slot.table.read().unwrap_or_else(|e| e.into_inner());
        t.indexes().iter().any(|i| i.name().eq_ignore_ascii_case(name)).then(|| t.name().to_string())
    })
}
