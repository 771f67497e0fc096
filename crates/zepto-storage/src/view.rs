//! Materialized views as the catalog holds them: each one's definition (name, base table, the
//! query's text) and its upkeep, which the SQL engine compiles from the text (zepto-sql's
//! `view` module) and registers here through a [`ViewCompiler`].
//!
//! The catalog keeps a view exact by calling its [`Upkeep`] on the write path of its base
//! table, whatever door the write came through:
//! - an append is first *prepared* ([`Upkeep::prepare`]: the batch's contribution to the
//!   view, computed from the validated columns when the change is logged, before any lock of
//!   the view), then *committed* into the view's state once the append applied, still under
//!   the base table's write lock ([`Upkeep::commit`]): views see appends in the table's
//!   commit order;
//! - any other change to the base table's rows (DELETE, UPDATE, retention, a shard moved, and
//!   appends to a table with `DEDUP UPSERT KEYS`, which may replace rows) *invalidates* the view: its next read rebuilds it from the base table, under that
//!   table's write lock, so no commit slips between the rebuild and the next append.
//!
//! Lock order: a base table's write lock, then a view's own state lock; never the other way
//! (a stale view's read releases its state before taking the table's lock).
//!
//! Definitions are logged ([`crate::Change::CreateView`], [`crate::Change::DropView`]) and
//! checkpointed with the tables, with each view's partial states when it has them (a cut
//! holds every writer, so the states match the tables). Recovery restores a view from its
//! states when a compiler is registered before the log is replayed (the replayed appends then
//! fold in as they did); otherwise the view is compiled when first read and rebuilt.

use crate::column::Column;
use crate::error::StorageError;
use crate::table::Table;
use std::any::Any;
use std::sync::Arc;

/// A materialized view's definition: what is logged and checkpointed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewDef {
    name: String,
    base: String,
    sql: String,
}

impl ViewDef {
    /// A view `name` over table `base`, defined by the query text `sql`.
    pub fn new(name: &str, base: &str, sql: &str) -> Result<ViewDef, StorageError> {
        if name.is_empty() || base.is_empty() || sql.trim().is_empty() {
            return Err(StorageError::Invalid("a materialized view needs a name, a base table and a query".into()));
        }
        Ok(ViewDef { name: name.to_string(), base: base.to_string(), sql: sql.trim().to_string() })
    }

    /// The view's name, as created.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table it aggregates.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Its query, as written.
    pub fn sql(&self) -> &str {
        &self.sql
    }
}

/// What an append adds to a view, made by [`Upkeep::prepare`] for its [`Upkeep::commit`].
pub type Delta = Box<dyn Any + Send>;

/// How a compiled view follows its base table (see the module docs for when each is called).
pub trait Upkeep: Send + Sync {
    /// The contribution of `columns` (a validated batch about to be appended to the base
    /// table, in its schema order). Must not fail: a batch the view cannot take (an error
    /// evaluating its query) makes a delta whose commit invalidates the view, so the next
    /// read runs the query and reports that error.
    fn prepare(&self, columns: &[Column]) -> Delta;
    /// Fold a prepared delta in: its append applied (called under the base table's write
    /// lock, in commit order).
    fn commit(&self, delta: Delta);
    /// The base table's rows changed otherwise than by an append: rebuild before the next read.
    fn invalidate(&self);
    /// The view's rows, as a table. A stale view rebuilds first, over its base table under
    /// [`crate::Catalog::with_table_locked`].
    fn read(&self, catalog: &crate::Catalog) -> Result<Arc<Table>, StorageError>;
    /// Its counters, for metrics.
    fn stats(&self) -> ViewStats;
    /// How it is kept and read, as EXPLAIN prints plans; a scan of a table `hide_totals`
    /// names is printed without the table's totals (for a tenant-bound session).
    fn explain(&self, catalog: &crate::Catalog, hide_totals: &dyn Fn(&Table) -> bool) -> Result<String, StorageError>;
    /// Whether each of its rows comes from one tenant's rows: its `tenant_id` column, if it
    /// has one over a base table with one, is the base table's `tenant_id` as a group key,
    /// passed to its rows unchanged, with nothing above the groups that mixes them (a window
    /// function). A session scoped to a tenant reads a view by its `tenant_id` only then.
    fn keeps_tenants_apart(&self) -> bool;
    /// Its groups' partial states as a table (the keys, then each aggregate's state columns),
    /// for a checkpoint; `None` when it is stale or its states cannot be stored.
    fn state(&self) -> Option<Table>;
    /// Start from `state` (a checkpoint's, as [`Upkeep::state`] made it) instead of a
    /// rebuild; `false` (and still stale) when it does not fit this view.
    fn restore(&self, state: &Arc<Table>) -> bool;
}

/// A view as a checkpoint cuts it: its definition, and its groups' states when it has them.
pub struct ViewCut {
    /// The definition.
    pub def: ViewDef,
    /// The partial states ([`Upkeep::state`]).
    pub state: Option<Table>,
}

/// A view's counters since it was compiled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ViewStats {
    /// Groups (rows before any HAVING or projection) it holds.
    pub groups: u64,
    /// Appends folded in.
    pub commits: u64,
    /// Full rebuilds (the first build, REFRESH, and reads after a delete, update or retention).
    pub rebuilds: u64,
    /// Time spent preparing and committing appends, in nanoseconds.
    pub upkeep_ns: u64,
    /// Reads that finished its rows after a change.
    pub finishes: u64,
    /// Of those, reads that computed only the rows of the groups changed since the read
    /// before and patched them into the rows kept.
    pub patched: u64,
    /// Its next read rebuilds it.
    pub stale: bool,
}

/// Compiles a view's definition into its upkeep (the SQL engine registers one).
pub trait ViewCompiler: Send + Sync {
    /// The upkeep of `def`, or why its query cannot be kept (unknown table or column, an
    /// aggregate that does not merge, ...). It starts stale: the first read builds it.
    fn compile(&self, def: &ViewDef) -> Result<Arc<dyn Upkeep>, StorageError>;
}

/// A view in the catalog: its definition and, once compiled, its upkeep.
pub(crate) struct ViewSlot {
    pub def: ViewDef,
    pub upkeep: Option<Arc<dyn Upkeep>>,
    /// The base table deduplicates (`DEDUP UPSERT KEYS`): an append may replace rows, which
    /// partial states cannot take back, so its appends rebuild the view instead.
    pub base_dedups: std::sync::atomic::AtomicBool,
}

/// What one logged change asks of a view once applied: fold in an append's delta, or
/// rebuild before the next read.
pub(crate) enum ViewWork {
    Commit(Arc<dyn Upkeep>, Delta),
    Invalidate(Arc<dyn Upkeep>),
}

impl ViewWork {
    /// Do it (the change applied).
    pub(crate) fn run(self) {
        match self {
            ViewWork::Commit(u, d) => u.commit(d),
            ViewWork::Invalidate(u) => u.invalidate(),
        }
    }
}
