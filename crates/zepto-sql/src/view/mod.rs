//! Materialized views kept exact as rows arrive: `CREATE MATERIALIZED VIEW v AS <query>`.
//!
//! A view's query is one GROUP BY (or SAMPLE BY, or an aggregate without keys) over a
//! filtered scan of one table, with anything above it (projections, HAVING, ORDER BY, FILL).
//! It is compiled once ([`compile`]) and taken apart ([`split`]): the aggregate is kept as
//! the running partial states of every group, the accumulators of [`crate::exec::accum`]
//! folded through their `merge` ([`groups`]); the plan above runs over the finished groups
//! when the view is read, so a read answers exactly what the query would.
//!
//! The catalog drives the upkeep ([`zepto_storage::view`]): each append to the base table,
//! from any door, is aggregated into partial states when it is logged (`prepare`: its range
//! and filters applied, its rows grouped) and folded into the view once applied (`commit`),
//! so a row that arrives late or out of order only updates the groups it falls in. A
//! DELETE, UPDATE or retention on the base table makes the view stale: its next read
//! rebuilds it from the table (the same partial aggregate over every row). A read finishes
//! the groups into a table (kept until the next change) that queries scan like any other.
//!
//! What is refused, with the reason: queries without an aggregate, over more than one table
//! or a subquery, and aggregates whose partial results do not merge (DISTINCT, median,
//! percentiles, string lists).

pub(crate) mod appended;
mod groups;
mod rows;
mod split;

use appended::{typed, AppendedScan};

use crate::access::TableAccess;
use crate::error::{Result, SqlError};
use crate::eval::Batch;
use crate::exec::accum::Mode;
use crate::exec::aggregate::grouped;
use crate::exec::ExecContext;
use crate::interrupt::RunContext;
use crate::plan::binder::Binder;
use crate::plan::{optimizer, physical, Plan};
use groups::{Changed, Groups};
use rows::{Kept, RowWise};
use split::Split;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;
use zepto_storage::{
    Catalog, Column, ColumnDef, DataType, Delta, Schema, StorageError, Table, TableOptions, Upkeep, ViewCompiler,
    ViewDef, ViewStats,
};

/// Compiles the catalog's views (registered by every engine over it).
pub(crate) struct Compiler {
    catalog: Weak<Catalog>,
}

impl Compiler {
    /// A compiler over `catalog`, registered in it.
    pub(crate) fn register(catalog: &Arc<Catalog>) {
        catalog.set_view_compiler(Arc::new(Compiler { catalog: Arc::downgrade(catalog) }));
    }
}

impl ViewCompiler for Compiler {
    fn compile(&self, def: &ViewDef) -> std::result::Result<Arc<dyn Upkeep>, StorageError> {
        let catalog = self.catalog.upgrade().ok_or_else(|| StorageError::Internal("the catalog is gone".into()))?;
        let view = compile(&catalog, def.name(), def.sql()).map_err(|e| StorageError::Invalid(e.to_string()))?;
        Ok(Arc::new(view))
    }
}

/// Bind `sql` over `catalog` and take it apart as view `name`'s upkeep (stale: its first read
/// builds it), or say why it cannot be kept.
pub(crate) fn compile(catalog: &Arc<Catalog>, name: &str, sql: &str) -> Result<View> {
    let stmt = crate::parser::parse_statement(sql)?;
    let crate::parser::ast::Statement::Query(q) = stmt else {
        return Err(SqlError::plan("a materialized view is defined by a query".to_string(), None));
    };
    let run = RunContext::unlimited();
    let mut binder = Binder::new(catalog.clone(), TableAccess::all(), Arc::new(NoSubqueries), &run);
    let (plan, fields) = binder.bind_query(&q)?;
    let split = split::split(optimizer::optimize(plan).into_plan())?;
    if catalog.is_view(&split.base) {
        return Err(SqlError::plan(format!("'{}' is a materialized view: a view reads a table", split.base), None));
    }
    let base = catalog.snapshot(&split.base)?;
    let names = unique_names(fields.iter().map(|f| f.name.as_str()));
    let types = fields.iter().map(|f| f.data_type).collect();
    let groups = Groups::new(split.keys.len(), &split.aggs);
    let state = State { groups, stale: true, cached: None, kept: None };
    let rowwise = RowWise::of(&split.top, &split.groups);
    let tenants_apart = match (tenant_column_of(&names), crate::access::tenant_column(base.schema())) {
        (Some(out), Some(col)) => split.passes_key_through(out, col),
        _ => true,
    };
    Ok(View {
        tenants_apart,
        name: name.to_string(),
        rowwise,
        scan: AppendedScan::over(&base, split.columns.clone(), split.range.clone(), split.filters.clone()),
        split,
        names,
        types,
        state: Mutex::new(state),
        counters: Counters::default(),
    })
}

/// Whether `query` calls `now()`, which binding fixes: a plan kept for later batches (a
/// view's, a subscription's) would keep its time.
pub(crate) fn calls_now(query: &crate::parser::ast::Query) -> bool {
    let mut q = query.clone();
    let mut found = false;
    crate::parser::visit::rewrite_query(&mut q, &mut |e| {
        if let crate::parser::ast::Expr::Func(f) = e {
            found |= crate::expr::functions::scalar_by_name(&f.name) == Some(crate::expr::functions::ScalarFunc::Now);
        }
    });
    found
}

/// What EXPLAIN adds for the views `plan` reads: how each is kept and read, the scans of
/// tables `hide_totals` names without their totals (as [`Plan::explain_hiding`]). A view
/// whose own table `hide_totals` names shows no totals at all: its groups are every tenant's.
pub(crate) fn explain_views(
    catalog: &Catalog,
    plan: &Plan,
    hide_totals: &dyn Fn(&Table) -> bool,
) -> Result<Vec<String>> {
    let mut scans: Vec<&Table> = Vec::new();
    collect_scans(plan, &mut scans);
    let explain = |t: &&Table| {
        let hide_all = hide_totals(t);
        catalog.explain_view(t.name(), &|s: &Table| hide_all || hide_totals(s))
    };
    scans.iter().filter_map(explain).map(|r| r.map_err(SqlError::from)).collect()
}

fn collect_scans<'p>(p: &'p Plan, out: &mut Vec<&'p Table>) {
    if let Plan::Scan { table, .. } = p {
        if !out.iter().any(|t| t.name().eq_ignore_ascii_case(table.name())) {
            out.push(table);
        }
    }
    p.inputs().into_iter().for_each(|i| collect_scans(i, out));
}

/// The binder's executor for a view's query: an uncorrelated subquery would be run once, at
/// definition, and its answer kept while the table changes, so it is refused.
struct NoSubqueries;

impl crate::plan::binder::Execute for NoSubqueries {
    fn execute(&self, _: &RunContext, _: &crate::plan::PhysicalPlan) -> Result<Batch> {
        Err(SqlError::plan(
            "a materialized view cannot keep this query incrementally: it holds a subquery".to_string(),
            None,
        ))
    }
}

/// The position of the `tenant_id` column among a view's output `names`, as the tenant scope
/// finds it in a schema ([`crate::access::tenant_column`]).
fn tenant_column_of(names: &[String]) -> Option<usize> {
    let defs = names.iter().map(|n| ColumnDef { name: n.clone(), data_type: DataType::Varchar });
    crate::access::tenant_column(&Schema { columns: defs.collect() })
}

/// Output names, a repeated one suffixed (`count`, `count_2`) so the view's table takes them.
fn unique_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        let mut name = n.to_string();
        let mut k = 2;
        while out.iter().any(|o| o.eq_ignore_ascii_case(&name)) {
            name = format!("{n}_{k}");
            k += 1;
        }
        out.push(name);
    }
    out
}

/// A compiled view (see the module docs).
pub(crate) struct View {
    name: String,
    /// The base table's layout when the view was compiled.
    scan: AppendedScan,
    split: Split,
    /// The plan above the aggregate, when it makes one row of each group on its own.
    rowwise: Option<RowWise>,
    /// The view's columns.
    names: Vec<String>,
    types: Vec<DataType>,
    /// [`Upkeep::keeps_tenants_apart`], decided at compiling.
    tenants_apart: bool,
    state: Mutex<State>,
    counters: Counters,
}

struct State {
    groups: Groups,
    /// Must be rebuilt from the base table before it is read.
    stale: bool,
    /// The finished view, until the next change.
    cached: Option<Arc<Table>>,
    /// The view's rows at the last read, when its plan is row-wise (see [`rows`]).
    kept: Option<Kept>,
}

#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    rebuilds: AtomicU64,
    upkeep_ns: AtomicU64,
    groups: AtomicU64,
    finishes: AtomicU64,
    patched: AtomicU64,
}

/// What an append adds to a view: its partial states (`None`: no row of it is the view's), or
/// the error the query gives over it.
type Prepared = Result<Option<Batch>>;

impl View {
    /// The table it aggregates.
    pub(crate) fn base(&self) -> &str {
        &self.split.base
    }

    /// The partial aggregate of one appended batch (schema order).
    fn delta(&self, columns: &[Column]) -> Result<Option<Batch>> {
        let Some(b) = self.scan.rows(columns)? else { return Ok(None) };
        let ctx = ExecContext::new(&RunContext::unlimited());
        let g = grouped(&ctx, &b, &self.split.keys, &self.split.aggs, None, Mode::Partial)?;
        Ok(Some(g.into_batch()))
    }

    /// The partial aggregate of `base`'s rows (all of them, or an append's).
    fn partial_plan(&self, base: &Arc<Table>, run: &RunContext) -> Result<crate::plan::PhysicalPlan> {
        let scan =
            Plan::Scan { table: base.clone(), columns: self.split.columns.clone(), range: self.split.range.clone() };
        let input = self.split.filters.iter().fold(scan, |p, f| Plan::Filter { input: Box::new(p), pred: f.clone() });
        let keys = self.split.keys.clone();
        let partial = Plan::PartialAggregate { input: Box::new(input), keys, aggs: self.split.aggs.clone() };
        physical::plan(optimizer::optimize(partial), run)
    }

    /// Rebuild the groups from every row of `base`.
    fn rebuild(&self, st: &mut State, base: &Arc<Table>) -> Result<()> {
        let run = RunContext::unlimited();
        let states = crate::exec::execute(&run, &self.partial_plan(base, &run)?)?;
        let mut groups = Groups::new(self.split.keys.len(), &self.split.aggs);
        if states.rows > 0 {
            groups.fold(states)?;
        }
        st.groups = groups;
        st.stale = false;
        st.cached = None;
        st.kept = None;
        self.counters.rebuilds.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The view's rows from its groups: the plan above the aggregate over them.
    fn finish(&self, st: &mut State) -> Result<Arc<Table>> {
        let Some((aggregated, changed)) = st.groups.finish()? else {
            st.kept = None;
            return self.finish_all(self.over_no_rows()?);
        };
        self.counters.groups.store(aggregated.rows as u64, Ordering::Relaxed);
        self.counters.finishes.fetch_add(1, Ordering::Relaxed);
        if let Some(rw) = &self.rowwise {
            if let Some(rows) = self.finish_rows(rw, st, &aggregated, changed)? {
                let schema = self.schema(&rows);
                return match st.kept.as_ref().and_then(|k| k.table(&self.name, &schema)) {
                    Some(t) => Ok(Arc::new(t?)),
                    None => self.table(rows),
                };
            }
        }
        st.kept = None;
        self.finish_all(aggregated)
    }

    /// The view's rows made a group at a time: only the changed groups' when the rows kept
    /// allow, else every group's; `None` when a group makes no row (the general plan then).
    fn finish_rows(&self, rw: &RowWise, st: &mut State, groups: &Batch, changed: Changed) -> Result<Option<Batch>> {
        let ctx = ExecContext::new(&RunContext::unlimited());
        if let (Changed::Some(ids), Some(kept)) = (&changed, st.kept.as_mut()) {
            if let Some(part) = rw.rows(&ctx, &groups.take(ids))? {
                if kept.patch(ids, part) {
                    self.counters.patched.fetch_add(1, Ordering::Relaxed);
                    return Ok(Some(kept.batch()));
                }
            }
        }
        let Some(rows) = rw.rows(&ctx, groups)? else {
            st.kept = None;
            return Ok(None);
        };
        let ts = self.schema(&rows).columns.iter().position(|c| c.data_type == DataType::Timestamp);
        let kept = Kept::new(rows, ts);
        let b = kept.batch();
        st.kept = Some(kept);
        Ok(Some(b))
    }

    /// The view's rows from `aggregated` (every group) through the whole plan above it.
    fn finish_all(&self, aggregated: Batch) -> Result<Arc<Table>> {
        let rows = Arc::new(table_of(self.split.groups.name(), self.split.groups.schema().clone(), aggregated)?);
        let plan = split::reading(self.split.top.clone(), &self.split.groups, &rows);
        let run = RunContext::unlimited();
        let out = crate::exec::execute(&run, &physical::plan(optimizer::optimize(plan), &run)?)?;
        self.table(out)
    }

    /// The view's table of rows `out`.
    fn table(&self, out: Batch) -> Result<Arc<Table>> {
        Ok(Arc::new(table_of(&self.name, self.schema(&out), out)?))
    }

    /// The view's schema, for its rows `out` (an untyped column takes their type).
    fn schema(&self, out: &Batch) -> Schema {
        let columns = self
            .names
            .iter()
            .zip(&self.types)
            .zip(&out.columns)
            .map(|((n, &t), c)| ColumnDef { name: n.clone(), data_type: stored_type(t, c.data_type()) })
            .collect();
        Schema { columns }
    }

    /// Groups from a checkpoint's states, if they have the layout this view's partial
    /// aggregate makes (the same keys and state columns, by type).
    fn restored(&self, state: &Arc<Table>) -> Result<Groups> {
        let ctx = ExecContext::new(&RunContext::unlimited());
        let empty = Batch::new(
            self.split.columns.iter().map(|&c| Column::nulls(self.scan.schema.columns[c].data_type, 0)).collect(),
            0,
        );
        let want: Vec<DataType> = grouped(&ctx, &empty, &self.split.keys, &self.split.aggs, None, Mode::Partial)?
            .into_batch()
            .columns
            .iter()
            .map(|c| c.data_type())
            .collect();
        let have: Vec<DataType> = state.schema().columns.iter().map(|c| c.data_type).collect();
        if want != have {
            return Err(SqlError::Execution(format!("view {}: checkpointed states of another layout", self.name)));
        }
        let run = RunContext::unlimited();
        let scan = Plan::Scan { table: state.clone(), columns: (0..have.len()).collect(), range: Default::default() };
        let b = crate::exec::execute(&run, &physical::plan(optimizer::optimize(scan), &run)?)?;
        let mut groups = Groups::new(self.split.keys.len(), &self.split.aggs);
        if b.rows > 0 {
            groups.fold(b)?;
        }
        Ok(groups)
    }

    /// The aggregate over no rows (one row without keys, none with).
    fn over_no_rows(&self) -> Result<Batch> {
        let cols: Vec<Column> =
            self.split.columns.iter().map(|&c| Column::nulls(self.scan.schema.columns[c].data_type, 0)).collect();
        let ctx = ExecContext::new(&RunContext::unlimited());
        crate::exec::aggregate::aggregate(&ctx, &Batch::new(cols, 0), &self.split.keys, &self.split.aggs)
    }

    fn read_fresh(&self, st: &mut State) -> Result<Arc<Table>> {
        if let Some(t) = &st.cached {
            return Ok(t.clone());
        }
        // A fold that failed surfaces here: the next read rebuilds from the table (and reports
        // what the query itself says of its rows).
        let t = self.finish(st).inspect_err(|_| st.stale = true)?;
        st.cached = Some(t.clone());
        Ok(t)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The type a view column is stored as: the query's, as CREATE TABLE AS stores it (an
/// untyped NULL column as VARCHAR, an INTERVAL as its nanoseconds).
fn stored_type(declared: DataType, data: DataType) -> DataType {
    match (declared, data) {
        (DataType::Null, DataType::Null) => DataType::Varchar,
        (DataType::Null, d) => d,
        (DataType::Interval, _) => DataType::Int64,
        (t, _) => t,
    }
}

/// A table named `name` holding `b`'s rows, partitioned by its first SYMBOL column and
/// sorted by its first TIMESTAMP column (a view's key and bucket, as a query reads them).
/// A view's rows (its groups, or its output) as a table of one partition: built whole at each
/// read, where a partition per symbol cost more than a filter over them saves (100k groups:
/// 0.6 s per read).
fn table_of(name: &str, schema: Schema, b: Batch) -> Result<Table> {
    let mut t = Table::new(name, schema, &TableOptions { one_partition: true, ..TableOptions::default() })?;
    let cols = b
        .columns
        .into_iter()
        .zip(&t.schema().columns)
        .map(|(c, d)| typed(Arc::try_unwrap(c).unwrap_or_else(|c| (*c).clone()), d.data_type))
        .collect::<Result<Vec<Column>>>()?;
    if b.rows > 0 {
        t.append(cols)?;
    }
    Ok(t)
}

fn storage(e: SqlError) -> StorageError {
    StorageError::Invalid(e.to_string())
}

impl Upkeep for View {
    fn prepare(&self, columns: &[Column]) -> Delta {
        // A stale view rebuilds from the table at its next read: nothing to prepare (and it
        // cannot turn fresh before the commit: a rebuild waits for the table's lock, held
        // from here to the commit).
        if self.lock().stale {
            return Box::new(Ok(None) as Prepared);
        }
        let t = Instant::now();
        let p: Prepared = self.delta(columns);
        self.counters.upkeep_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Box::new(p)
    }

    fn commit(&self, delta: Delta) {
        let t = Instant::now();
        let mut st = self.lock();
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        if st.stale {
            return;
        }
        let p = delta.downcast::<Prepared>().map(|p| *p);
        let folded = match p {
            Ok(Ok(None)) => Ok(()),
            Ok(Ok(Some(b))) => st.groups.fold(b),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(SqlError::Internal("a view's delta of another type".into())),
        };
        // A batch the view could not fold: rebuilt at the next read, which reports the error.
        st.stale = folded.is_err();
        st.cached = None;
        drop(st);
        self.counters.upkeep_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn invalidate(&self) {
        let mut st = self.lock();
        st.stale = true;
        st.cached = None;
    }

    fn read(&self, catalog: &Catalog) -> std::result::Result<Arc<Table>, StorageError> {
        {
            let mut st = self.lock();
            if !st.stale {
                return self.read_fresh(&mut st).map_err(storage);
            }
        }
        // Stale: rebuilt under the base table's lock, taken before the state's (lock order).
        catalog
            .with_table_locked(&self.split.base, |base| {
                let mut st = self.lock();
                if st.stale {
                    self.rebuild(&mut st, base)?;
                }
                self.read_fresh(&mut st)
            })?
            .map_err(storage)
    }

    fn explain(
        &self,
        catalog: &Catalog,
        hide_totals: &dyn Fn(&Table) -> bool,
    ) -> std::result::Result<String, StorageError> {
        let run = RunContext::unlimited();
        let base = catalog.snapshot(&self.split.base)?;
        let kept = self.partial_plan(&base, &run).map_err(storage)?;
        let read = physical::plan(optimizer::optimize(self.split.top.clone()), &run).map_err(storage)?;
        let indent = |t: String| t.lines().skip(1).map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n");
        Ok(format!(
            "materialized view {}: each append to {} folds in (over the appended rows)\n{}\nread as\n{}",
            self.name,
            self.split.base,
            indent(kept.root().explain_hiding(&[], hide_totals)),
            indent(read.root().explain_hiding(&[], hide_totals))
        ))
    }

    fn keeps_tenants_apart(&self) -> bool {
        self.tenants_apart
    }

    fn state(&self) -> Option<Table> {
        let mut st = self.lock();
        if st.stale || st.groups.is_empty() {
            return None;
        }
        let b = st.groups.states().inspect_err(|_| st.stale = true).ok()?;
        let columns = b
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| ColumnDef { name: format!("c{i}"), data_type: c.data_type() })
            .collect();
        table_of(&self.name, Schema { columns }, b).ok()
    }

    fn restore(&self, state: &Arc<Table>) -> bool {
        let mut st = self.lock();
        match self.restored(state) {
            Ok(groups) => {
                st.groups = groups;
                st.stale = false;
                st.cached = None;
                st.kept = None;
                true
            }
            Err(_) => false,
        }
    }

    fn stats(&self) -> ViewStats {
        let c = &self.counters;
        ViewStats {
            groups: c.groups.load(Ordering::Relaxed),
            commits: c.commits.load(Ordering::Relaxed),
            rebuilds: c.rebuilds.load(Ordering::Relaxed),
            upkeep_ns: c.upkeep_ns.load(Ordering::Relaxed),
            finishes: c.finishes.load(Ordering::Relaxed),
            patched: c.patched.load(Ordering::Relaxed),
            stale: self.state.try_lock().map(|s| s.stale).unwrap_or(false),
        }
    }
}
