//! The catalog's materialized views: their definitions, compiled upkeep, and the work a
//! logged change hands them (see [`crate::view`] for the protocol).

use super::{key, Catalog, Change};
use crate::error::StorageError;
use crate::table::Table;
use crate::view::{Upkeep, ViewCompiler, ViewCut, ViewDef, ViewSlot, ViewStats, ViewWork};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Catalog {
    /// From now on, compile views with `c` (the SQL engine registers itself; the first
    /// registration stays).
    pub fn set_view_compiler(&self, c: Arc<dyn ViewCompiler>) {
        let _ = self.compiler.set(c);
    }

    /// Add materialized view `def` (logged), with its compiled `upkeep`, or, when `None` (a
    /// definition replayed from the log), compiled now if a compiler is registered, else on
    /// first read. `Ok(false)` if a view of that name exists and `if_not_exists`.
    pub fn create_view(
        &self,
        def: ViewDef,
        upkeep: Option<Arc<dyn Upkeep>>,
        if_not_exists: bool,
    ) -> Result<bool, StorageError> {
        // Compiled before any lock: compiling binds the query, which reads the catalog.
        let upkeep = upkeep.or_else(|| self.compiler.get().and_then(|c| c.compile(&def).ok()));
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner());
        // The base table's lock before the views': a writer holds its table's lock while it
        // reads the views' (`view_work`), so the other order could leave each waiting for the
        // other. Held to the end, so that no change of its dedup keys slips in between.
        let base = tables.get(&key(def.base())).map(|slot| slot.table.read().unwrap_or_else(|e| e.into_inner()));
        let mut views = self.views.write().unwrap_or_else(|e| e.into_inner());
        let k = key(def.name());
        if views.contains_key(&k) {
            return if if_not_exists { Ok(false) } else { Err(StorageError::TableExists(def.name().to_string())) };
        }
        if tables.contains_key(&k) {
            return Err(StorageError::TableExists(def.name().to_string()));
        }
        let Some(base) = base else {
            return Err(StorageError::TableNotFound(def.base().to_string()));
        };
        let dedups = !base.dedup_keys().is_empty();
        // A view starts stale: appends before its first build are in the base table it reads.
        self.log(&[Change::CreateView { def: &def }])?.apply(|| {
            views.insert(k, ViewSlot { def, upkeep, base_dedups: dedups.into() });
            self.view_count.fetch_add(1, Ordering::Relaxed);
            Ok::<_, StorageError>(true)
        })
    }

    /// Put back view `def` as a checkpoint held it (before the log is replayed, without
    /// logging): from its `state` when a compiler is registered and the state fits, else
    /// stale (built when first read).
    pub fn restore_view(&self, def: ViewDef, state: Option<Table>) -> Result<(), StorageError> {
        if self.changes.get().is_some() {
            return Err(StorageError::Internal("restore_view() after the change log is set".into()));
        }
        let upkeep = self.compiler.get().and_then(|c| c.compile(&def).ok());
        if let (Some(u), Some(state)) = (&upkeep, state) {
            u.restore(&Arc::new(state));
        }
        self.create_view(def, upkeep, false).map(|_| ())
    }

    /// Every view's definition and, when it has them, its states: a checkpoint's (called
    /// while the cut holds every writer).
    pub(crate) fn view_cuts(&self) -> Vec<ViewCut> {
        let views = self.views.read().unwrap_or_else(|e| e.into_inner());
        views
            .values()
            .map(|v| ViewCut { def: v.def.clone(), state: v.upkeep.as_ref().and_then(|u| u.state()) })
            .collect()
    }

    /// Drop materialized view `name` (logged). `Ok(false)` if there is none and `if_exists`.
    pub fn drop_view(&self, name: &str, if_exists: bool) -> Result<bool, StorageError> {
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut views = self.views.write().unwrap_or_else(|e| e.into_inner());
        let k = key(name);
        if !views.contains_key(&k) {
            return if if_exists { Ok(false) } else { Err(StorageError::TableNotFound(name.to_string())) };
        }
        self.log(&[Change::DropView { name }])?.apply(|| {
            views.remove(&k);
            self.view_count.fetch_sub(1, Ordering::Relaxed);
            Ok::<_, StorageError>(true)
        })
    }

    /// Whether `name` is a materialized view.
    pub fn is_view(&self, name: &str) -> bool {
        self.view_count.load(Ordering::Relaxed) > 0
            && self.views.read().unwrap_or_else(|e| e.into_inner()).contains_key(&key(name))
    }

    /// Whether view `name` keeps tenants apart ([`Upkeep::keeps_tenants_apart`]); `false` when
    /// it is no view or cannot be compiled.
    pub fn view_keeps_tenants_apart(&self, name: &str) -> bool {
        self.upkeep(name).and_then(Result::ok).is_some_and(|u| u.keeps_tenants_apart())
    }

    /// Every view's definition, in name order.
    pub fn view_defs(&self) -> Vec<ViewDef> {
        self.views.read().unwrap_or_else(|e| e.into_inner()).values().map(|v| v.def.clone()).collect()
    }

    /// The views over table `base`, by name.
    pub fn views_of(&self, base: &str) -> Vec<String> {
        let views = self.views.read().unwrap_or_else(|e| e.into_inner());
        views.values().filter(|v| v.def.base().eq_ignore_ascii_case(base)).map(|v| v.def.name().to_string()).collect()
    }

    /// Every compiled view's counters, by name.
    pub fn view_stats(&self) -> Vec<(String, ViewStats)> {
        let views = self.views.read().unwrap_or_else(|e| e.into_inner());
        views.values().filter_map(|v| Some((v.def.name().to_string(), v.upkeep.as_ref()?.stats()))).collect()
    }

    /// The compiled upkeep of view `name`: `None` if there is no such view, an error if it
    /// does not compile (its base table changed under it, say).
    fn upkeep(&self, name: &str) -> Option<Result<Arc<dyn Upkeep>, StorageError>> {
        let def = {
            let views = self.views.read().unwrap_or_else(|e| e.into_inner());
            let slot = views.get(&key(name))?;
            if let Some(u) = &slot.upkeep {
                return Some(Ok(u.clone()));
            }
            slot.def.clone()
        };
        let Some(c) = self.compiler.get() else {
            return Some(Err(StorageError::Invalid(format!(
                "materialized view '{name}' is not compiled: no SQL engine is attached to this catalog"
            ))));
        };
        // Compiled without a lock held (it reads the catalog); the first to finish is kept.
        let compiled = match c.compile(&def) {
            Ok(u) => u,
            Err(e) => return Some(Err(e)),
        };
        let mut views = self.views.write().unwrap_or_else(|e| e.into_inner());
        let slot = views.get_mut(&key(name))?;
        Some(Ok(slot.upkeep.get_or_insert(compiled).clone()))
    }

    /// The rows of view `name` as a table (rebuilt first when stale); `None` if there is no
    /// such view.
    pub fn view_snapshot(&self, name: &str) -> Option<Result<Arc<Table>, StorageError>> {
        if self.view_count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        Some(self.upkeep(name)?.and_then(|u| u.read(self)))
    }

    /// How view `name` is kept and read (EXPLAIN); `None` if there is no such view.
    pub fn explain_view(
        &self,
        name: &str,
        hide_totals: &dyn Fn(&Table) -> bool,
    ) -> Option<Result<String, StorageError>> {
        if self.view_count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        Some(self.upkeep(name)?.and_then(|u| u.explain(self, hide_totals)))
    }

    /// Rebuild view `name` from its base table now (`REFRESH MATERIALIZED VIEW`).
    pub fn refresh_view(&self, name: &str) -> Result<Arc<Table>, StorageError> {
        let u = self.upkeep(name).ok_or_else(|| StorageError::TableNotFound(name.to_string()))??;
        u.invalidate();
        u.read(self)
    }

    /// Run `f` over table `name` under its write lock (deferred rows folded in first): no
    /// change applies meanwhile. For a view's rebuild (see [`crate::view`] on lock order).
    pub fn with_table_locked<R>(&self, name: &str, f: impl FnOnce(&Arc<Table>) -> R) -> Result<R, StorageError> {
        let slot = self.slot(name)?;
        let mut guard = slot.table.write().unwrap_or_else(|e| e.into_inner());
        if slot.dropped.load(Ordering::Acquire) {
            return Err(StorageError::TableNotFound(name.to_string()));
        }
        if guard.has_deferred() {
            Arc::make_mut(&mut guard).fold();
        }
        Ok(f(&guard))
    }

    /// Refuse to drop or replace table `name` while views read it.
    pub fn check_no_views(&self, name: &str) -> Result<(), StorageError> {
        if self.view_count.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let views = self.views_of(name);
        if views.is_empty() {
            return Ok(());
        }
        Err(StorageError::Invalid(format!(
            "table '{name}' has materialized views ({}): drop them first",
            views.join(", ")
        )))
    }

    /// What `changes` ask of the compiled views of the tables they change: a delta prepared
    /// for every append, a rebuild for any other change of rows.
    pub(crate) fn view_work(&self, changes: &[Change<'_>]) -> Vec<ViewWork> {
        let rowful = |c: &Change<'_>| {
            matches!(
                c,
                Change::Append { .. }
                    | Change::Delete { .. }
                    | Change::Update { .. }
                    | Change::Retain { .. }
                    | Change::TierShard { .. }
                    | Change::AdoptShard { .. }
                    | Change::SetDedup { .. }
            )
        };
        // (CREATE and DROP VIEW log under the views' lock: they never reach it here.)
        if self.view_count.load(Ordering::Relaxed) == 0 || !changes.iter().any(rowful) {
            return Vec::new();
        }
        let views = self.views.read().unwrap_or_else(|e| e.into_inner());
        let of =
            |t: &str| -> Vec<&ViewSlot> { views.values().filter(|v| v.def.base().eq_ignore_ascii_case(t)).collect() };
        let mut work = Vec::new();
        for c in changes {
            match c {
                Change::Append { table, columns } => work.extend(of(table).into_iter().filter_map(|v| {
                    let u = v.upkeep.clone()?;
                    Some(match v.base_dedups.load(Ordering::Relaxed) {
                        true => ViewWork::Invalidate(u),
                        false => ViewWork::Commit(u.clone(), u.prepare(columns)),
                    })
                })),
                Change::SetDedup { table, keys } => {
                    of(table).into_iter().for_each(|v| v.base_dedups.store(!keys.is_empty(), Ordering::Relaxed));
                    work.extend(of(table).into_iter().filter_map(|v| v.upkeep.clone()).map(ViewWork::Invalidate));
                }
                Change::Delete { table, .. }
                | Change::Update { table, .. }
                | Change::Retain { table, .. }
                | Change::TierShard { table, .. }
                | Change::AdoptShard { table, .. } => {
                    work.extend(of(table).into_iter().filter_map(|v| v.upkeep.clone()).map(ViewWork::Invalidate))
                }
                _ => {}
            }
        }
        work
    }
}
