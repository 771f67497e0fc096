//! The engine: runs statements against a catalog. Every statement either fully applies or
//! changes nothing: inputs are parsed, typed and validated before the table lock is taken.
//!
//! Every entry point comes in two forms: `*_in`, which takes the query's [`RunContext`] (its
//! control — cancel flag, deadline, memory limit — made by a door on the thread that runs the
//! query) and passes it down explicitly to parsing, binding, planning, execution, COPY and the
//! result's final copy; and the plain form, a thin wrapper running without limits. The
//! engine's parallelism threshold ([`Engine::with_parallel_min_rows`]) is set on every
//! context it is handed.

mod held;
mod views;

use crate::access::{TableAccess, TENANT_COLUMN};
use crate::cluster::ClusterRef;
use crate::error::{Pos, Result, SqlError};
use crate::exec::{self, cast::cast_column, Batch};
use crate::interrupt::{RunContext, DEFAULT_PARALLEL_MIN_ROWS};
use crate::parser::ast::{CopyEnd, CreateTable, InsertSource, Query, SetExpr, Statement};
use crate::parser::{parse_script, ParamValue, ParseLimits};
use crate::plan::binder::Binder;
use crate::plan::Field;
use crate::result::field;
pub use crate::result::{first_value, QueryResult};
use std::sync::Arc;
use zepto_storage::{Catalog, Change, Column, ColumnDef, DataType, Schema, StorageError, Table, TableOptions, Value};

/// A bound, optimized query over the snapshots taken when it was prepared.
#[derive(Debug, Clone)]
pub struct Prepared {
    plan: crate::plan::PhysicalPlan,
    fields: Vec<Field>,
}

impl Prepared {
    /// The plan it runs.
    pub(crate) fn plan(&self) -> &crate::plan::PhysicalPlan {
        &self.plan
    }

    /// The columns the query answers with.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }
}

impl Prepared {
    /// See [`crate::plan::Plan::linear_scan_rows`]: a bound on the work, when there is one.
    pub fn linear_scan_rows(&self) -> Option<usize> {
        self.plan.root().linear_scan_rows()
    }

    /// See [`crate::plan::Plan::scan_rows`]: the rows every scan reads, joins' both sides too.
    pub fn scan_rows(&self) -> Option<usize> {
        self.plan.root().scan_rows()
    }
}

pub use crate::parser::access::Access;

/// A SQL session over a catalog: parses, plans and runs statements. Cheap to clone; clones share
/// the catalog.
#[derive(Debug, Clone)]
pub struct Engine {
    catalog: Arc<Catalog>,
    access: TableAccess,
    /// Where COPY may read and write.
    files: Arc<crate::files::FilePolicy>,
    /// Partition-wise work of a query goes to helper threads from this many input rows on.
    par_min_rows: usize,
    /// The graphs of the catalog's vector indexes, kept in step by a maintainer thread.
    indexes: Arc<zepto_ann::Registry>,
    /// What `SET` changed (see [`crate::settings`]).
    settings: crate::settings::Settings,
    /// The cluster this node is a member of, if any (see [`crate::plan::dist`]).
    cluster: Option<crate::cluster::ClusterRef>,
    /// The transaction whose rows INSERT and COPY hold until COMMIT, if any ([`crate::txn`]).
    txn: Option<Arc<crate::txn::Txn>>,
    /// How unaliased select-list entries are named (the PostgreSQL door: as PostgreSQL does).
    names: crate::plan::binder::names::ColumnNames,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::with_catalog(Arc::default())
    }
}

impl Engine {
    /// An engine over a new, empty in-memory catalog, with every table allowed.
    pub fn new() -> Engine {
        Engine::default()
    }

    /// An engine over `catalog`, with every table allowed and COPY under the default file policy.
    pub fn with_catalog(catalog: Arc<Catalog>) -> Engine {
        crate::view::Compiler::register(&catalog);
        let e = Engine {
            catalog,
            access: TableAccess::all(),
            files: Arc::default(),
            par_min_rows: DEFAULT_PARALLEL_MIN_ROWS,
            indexes: zepto_ann::Registry::new(),
            settings: Default::default(),
            cluster: None,
            txn: None,
            names: Default::default(),
        };
        e.start_index_maintainer();
        e
    }

    /// Start building the graphs of the catalog's vector indexes in the background, if it has
    /// any (and the maintainer does not run yet): for a door that restored tables into the
    /// catalog after making the engine. Until a graph is built, searches scan exactly.
    pub fn start_index_maintainer(&self) {
        if !self.catalog.indexes().is_empty() {
            crate::index::start_maintainer(&self.indexes, &self.catalog);
        }
    }

    /// The same database, seen through table grants: statements naming other tables fail
    /// with `PERMISSION_DENIED`, and `SHOW TABLES` lists only granted ones. With a tenant
    /// ([`TableAccess::with_tenant`]), tables with a `tenant_id` column hold only that
    /// tenant's rows for every statement (see [`crate::access`]).
    pub fn with_access(&self, access: TableAccess) -> Engine {
        Engine { access, ..self.clone() }
    }

    /// The same session (grants, tenant scope, settings) over another catalog, on this node
    /// only and without vector indexes: a subscription's query over one appended batch
    /// ([`crate::subscription`]).
    pub fn on_catalog(&self, catalog: Arc<Catalog>) -> Engine {
        crate::view::Compiler::register(&catalog);
        Engine { catalog, indexes: zepto_ann::Registry::new(), cluster: None, ..self.clone() }
    }

    /// The same session inside transaction `txn` (INSERT and COPY hold their rows in it until
    /// [`Engine::commit`]), or outside any (`None`); see [`crate::txn`].
    pub fn with_txn(&self, txn: Option<Arc<crate::txn::Txn>>) -> Engine {
        Engine { txn, ..self.clone() }
    }

    /// The same session naming its unaliased select-list entries as `names` says (`count`
    /// rather than `count(*)` for PostgreSQL's clients); see [`crate::plan::binder::names`].
    pub fn with_column_names(&self, names: crate::plan::binder::names::ColumnNames) -> Engine {
        Engine { names, ..self.clone() }
    }

    /// The transaction this session is in, if any.
    pub fn txn(&self) -> Option<&Arc<crate::txn::Txn>> {
        self.txn.as_ref()
    }

    /// The same database, with COPY confined by `files` (the server protects its data
    /// directory, and may set a root).
    pub fn with_files(&self, files: crate::files::FilePolicy) -> Engine {
        Engine { files: Arc::new(files), ..self.clone() }
    }

    /// The same database, its queries running partition-wise work on helper threads from
    /// `rows` input rows on (default 100,000: below it starting helpers costs more than it
    /// saves; tests set 0 so small inputs take the parallel paths too).
    pub fn with_parallel_min_rows(&self, rows: usize) -> Engine {
        Engine { par_min_rows: rows, ..self.clone() }
    }

    /// `run` with this engine's parallelism threshold, index graphs and settings: what every
    /// stage of the query gets.
    fn context(&self, run: &RunContext) -> RunContext {
        run.with_parallel_min_rows(self.par_min_rows)
            .with_indexes(&self.indexes)
            .with_settings(self.settings)
            .with_cluster(self.cluster.as_ref())
    }

    /// The same database as a member of `cluster`: queries over the tables it spreads are
    /// answered by every node, each over the partitions it owns (see [`crate::plan::dist`]).
    pub fn with_cluster(&self, cluster: crate::cluster::ClusterRef) -> Engine {
        Engine { cluster: Some(cluster), ..self.clone() }
    }

    /// The cluster this node is a member of, if any.
    pub fn cluster(&self) -> Option<&crate::cluster::ClusterRef> {
        self.cluster.as_ref()
    }

    /// Run an encoded fragment request another node sent ([`crate::plan::dist::fragment::Request`])
    /// over the partitions it names, which must be among `mine` (those this node owns now:
    /// asked for others, it refuses rather than answer from rows it may not hold whole).
    pub fn run_fragment(&self, run: &RunContext, request: &[u8], mine: &[i32]) -> Result<exec::Batch> {
        let req = crate::plan::dist::fragment::Request::decode(request)?;
        let stray: Vec<i32> = req.partitions.iter().copied().filter(|p| !mine.contains(p)).collect();
        if !stray.is_empty() {
            return Err(SqlError::Execution(format!(
                "this node does not own partitions {stray:?} now, or is still replaying them (the cluster is rebalancing): retry"
            )));
        }
        let scope = crate::plan::dist::Scope::new(req.count, &req.partitions);
        // The asking query's deadline and memory limit, unless the door gave limits of its own.
        let limited;
        let run = match run.control() {
            Some(_) => run,
            None => {
                limited = req.limits.run_context();
                &limited
            }
        };
        let plan = req.fragment.plan_in(&self.catalog, &scope)?;
        exec::execute(&self.context(run), &crate::plan::physical::PhysicalPlan::of_fragment(plan))
    }

    /// The session settings statements run with.
    pub fn settings(&self) -> &crate::settings::Settings {
        &self.settings
    }

    /// The same database under other session settings.
    pub fn with_settings(&self, settings: crate::settings::Settings) -> Engine {
        Engine { settings, ..self.clone() }
    }

    /// The engine the statements after `s` in the same script run on: with the setting `s`
    /// changes when it is a `SET`, else this one. A door that runs a script statement by
    /// statement calls it after each.
    pub fn after(&self, s: &Statement) -> Result<Engine> {
        match s {
            Statement::Set { name, value, pos } => Ok(self.with_settings(self.settings.with(name, value, *pos)?)),
            _ => Ok(self.clone()),
        }
    }

    /// The graphs of the catalog's vector indexes (what a search reads; see `zepto_ann`).
    pub fn indexes(&self) -> &Arc<zepto_ann::Registry> {
        &self.indexes
    }

    /// Bring every vector index's graphs up to date with the tables now, instead of waiting
    /// for the maintainer thread (tests, benchmarks, and before a burst of searches). Returns
    /// the rows added.
    pub fn refresh_indexes(&self) -> Result<usize> {
        crate::index::refresh(&self.indexes, &self.catalog)
    }

    /// Run a script with `?`/`$n` parameters (see [`crate::parser::parse_statements_with_params`]).
    pub fn execute_with_params(&self, sql: &str, params: &[ParamValue]) -> Result<QueryResult> {
        self.execute_with_params_in(&RunContext::unlimited(), sql, params)
    }

    /// [`Engine::execute_with_params`] as part of the query `run`: parsing, binding and every
    /// statement's run check its control.
    pub fn execute_with_params_in(&self, run: &RunContext, sql: &str, params: &[ParamValue]) -> Result<QueryResult> {
        let run = self.context(run);
        let stmts = parse_script(sql, params, &ParseLimits::default(), &|| run.check())?;
        let mut last = QueryResult::status("OK".into());
        let mut engine = self.clone();
        for s in &stmts {
            last = engine.execute_statement_in(&run, s)?;
            engine = engine.after(s)?;
        }
        Ok(last)
    }

    fn binder(&self, run: &RunContext) -> Binder {
        Binder::new(self.catalog.clone(), self.access.clone(), Arc::new(exec::Executor), run)
            .in_txn(self.txn.clone())
            .naming(self.names)
    }

    /// The tables and tenant this engine's sessions may touch.
    pub fn access(&self) -> &TableAccess {
        &self.access
    }

    /// The catalog this engine reads and writes.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Run a script; returns the last statement's result. Stops at the first error (earlier
    /// statements stay applied, like a sequence of auto-committed statements).
    pub fn execute(&self, sql: &str) -> Result<QueryResult> {
        self.execute_with_params(sql, &[])
    }

    /// [`Engine::execute`] as part of the query `run`.
    pub fn execute_in(&self, run: &RunContext, sql: &str) -> Result<QueryResult> {
        self.execute_with_params_in(run, sql, &[])
    }

    /// Plan and run a query.
    pub fn query(&self, q: &Query) -> Result<QueryResult> {
        self.query_in(&RunContext::unlimited(), q)
    }

    /// [`Engine::query`] as part of the query `run`.
    pub fn query_in(&self, run: &RunContext, q: &Query) -> Result<QueryResult> {
        let run = self.context(run);
        self.run_prepared_in(&run, &self.prepare_in(&run, q)?)
    }

    /// Bind and optimize a query against the current snapshots, without running it.
    pub fn prepare(&self, q: &Query) -> Result<Prepared> {
        self.prepare_in(&RunContext::unlimited(), q)
    }

    /// [`Engine::prepare`] as part of the query `run`: binding checks its control, and the
    /// uncorrelated subqueries binding runs run under it.
    pub fn prepare_in(&self, run: &RunContext, q: &Query) -> Result<Prepared> {
        let mut binder = self.binder(&self.context(run));
        let (plan, fields) = binder.bind_query(q)?;
        let run = self.context(run);
        Ok(Prepared { plan: crate::plan::physical::plan(crate::plan::optimizer::optimize(plan), &run)?, fields })
    }

    /// Run a prepared query.
    pub fn run_prepared(&self, p: &Prepared) -> Result<QueryResult> {
        self.run_prepared_in(&RunContext::unlimited(), p)
    }

    /// [`Engine::run_prepared`] as part of the query `run`.
    pub fn run_prepared_in(&self, run: &RunContext, p: &Prepared) -> Result<QueryResult> {
        let run = self.context(run);
        let chunks = exec::execute_chunks(&run, &p.plan)?;
        Ok(QueryResult::chunked(p.fields.clone(), chunks).lacking(run.missing_partitions()))
    }

    /// Run one parsed statement (after checking the table it targets against the grants).
    pub fn execute_statement(&self, s: &Statement) -> Result<QueryResult> {
        self.execute_statement_in(&RunContext::unlimited(), s)
    }

    /// [`Engine::execute_statement`] as part of the query `run`.
    pub fn execute_statement_in(&self, run: &RunContext, s: &Statement) -> Result<QueryResult> {
        if let Some((table, pos)) = s.target() {
            self.access.check(table, pos)?;
        }
        self.refuse_out_of_scope(s)?;
        let run = &self.context(run);
        run.check()?;
        let cluster = crate::spread::through_log(self.cluster.as_ref(), run, s);
        if let Some(txn) = &self.txn {
            crate::txn::refuse_beside_held(txn, s, cluster.is_some())?;
        }
        if let Some(cluster) = cluster {
            return self.through_log(run, cluster, s);
        }
        match s {
            Statement::Query(q) => self.query_in(run, q),
            Statement::Explain { query, analyze } => self.explain(run, query, *analyze),
            Statement::CreateTable(ct) => self.create_table(ct),
            Statement::CreateTableAs { name, if_not_exists, query } => {
                self.create_table_as(run, name, *if_not_exists, query)
            }
            Statement::CreateIndex { name, table, column, method, options, if_not_exists, pos } => {
                let def = crate::index::IndexRequest { name, table, column, method, options, pos: *pos };
                match &self.txn {
                    Some(txn) if txn.made(table) => self.hold_index(txn, &def, *if_not_exists)?,
                    _ => crate::index::create_index(&self.indexes, &self.catalog, &def, *if_not_exists)?,
                };
                Ok(QueryResult::status("CREATE INDEX".into()))
            }
            Statement::DropIndex { name, if_exists, pos } => {
                crate::index::drop_index(&self.indexes, &self.catalog, name, *if_exists, *pos)?;
                Ok(QueryResult::status("DROP INDEX".into()))
            }
            Statement::CreateMaterializedView { .. }
            | Statement::RefreshMaterializedView { .. }
            | Statement::DropMaterializedView { .. } => views::statement(self, run, s),
            Statement::DropTable { name, .. } if self.catalog.is_view(name) => views::statement(self, run, s),
            Statement::DropTable { name, if_exists, pos } if self.txn.is_some() => {
                self.hold_drop(name, *if_exists, *pos)?;
                Ok(QueryResult::status("DROP TABLE".into()))
            }
            Statement::DropTable { name, if_exists, pos } => {
                self.catalog.drop_table(name, *if_exists).map_err(|e| match e {
                    StorageError::TableNotFound(n) => SqlError::TableNotFound { name: n, pos: Some(*pos) },
                    e => e.into(),
                })?;
                Ok(QueryResult::status("DROP TABLE".into()))
            }
            Statement::AlterAddColumn { table, column, data_type, if_not_exists, .. } => {
                let def = ColumnDef { name: column.clone(), data_type: *data_type };
                let r = self.catalog.add_column(table, def);
                match r {
                    Err(StorageError::ColumnExists(_)) if *if_not_exists => {}
                    r => r?,
                }
                Ok(QueryResult::status("ALTER TABLE".into()))
            }
            Statement::Insert { table, columns, source, pos } => self.insert(run, table, columns, source, *pos),
            Statement::CopyFrom { table, columns, source, options, pos } => {
                self.copy_from(run, table, columns, source, options, *pos)
            }
            Statement::CopyTo { query, target: CopyEnd::File(path), options } => {
                let r = self.query_in(run, query)?;
                let n = crate::copy::write_file(&self.files, path, options, &r)?;
                Ok(QueryResult::status(format!("COPY {n}")))
            }
            Statement::CopyTo { target: CopyEnd::Client, .. } => Err(crate::copy::needs_a_client("TO STDOUT")),
            Statement::Checkpoint => Ok(QueryResult::status(self.catalog.checkpoint()?)),
            Statement::Backup { dest, .. } => {
                // A directory is checked like COPY's files; an object store is the admin's word.
                let dest = match dest.starts_with("s3://") {
                    true => dest.clone(),
                    false => self.files.resolve_dir(dest)?.display().to_string(),
                };
                Ok(QueryResult::status(self.catalog.backup(&dest)?))
            }
            Statement::AlterSetTtl { table, ttl_ns, .. } => {
                self.catalog.set_ttl(table, *ttl_ns)?;
                let msg = match ttl_ns {
                    Some(_) => self.catalog.enforce_ttl(table, zepto_storage::time::now_ns())?,
                    None => format!("retention of '{table}' removed"),
                };
                Ok(QueryResult::status(format!("ALTER TABLE: {msg}")))
            }
            Statement::AlterDedup { table, keys, .. } => {
                self.catalog.set_dedup(table, keys)?;
                let msg = if keys.is_empty() { "deduplication off" } else { "deduplication on" };
                Ok(QueryResult::status(format!("ALTER TABLE: {msg} for '{table}'")))
            }
            Statement::AlterTier { table, column, before, pos } => self.alter_tier(table, column, *before, *pos),
            Statement::Delete { .. } | Statement::Update { .. } => self.edit(run, s),
            Statement::ShowTables => Ok(QueryResult::text_column("name", self.table_names())),
            Statement::Describe { table, pos } => self.describe(table, *pos),
            Statement::Set { name, value, pos } => {
                self.settings.with(name, value, *pos)?;
                Ok(QueryResult::status("SET".into()))
            }
        }
    }

    /// `EXPLAIN [ANALYZE] query`: the physical plan, one line per row (with ANALYZE, after
    /// running it, each node's rows, batches, time and memory).
    fn explain(&self, run: &RunContext, query: &Query, analyze: bool) -> Result<QueryResult> {
        let p = self.prepare_in(run, query)?;
        let mut text = if analyze {
            exec::explain_analyze(run, &p.plan, &p.fields)?.0
        } else {
            p.plan.root().explain_for(&p.fields, &self.access)
        };
        let scoped = |t: &zepto_storage::Table| self.access.scope_of(t.schema()).is_some();
        for v in crate::view::explain_views(&self.catalog, p.plan.root(), &scoped)? {
            text.push_str(&v);
            text.push('\n');
        }
        Ok(QueryResult::text_column("plan", text.lines().map(str::to_string).collect()))
    }

    /// Run `s`, which changes a table `cluster` spreads, through its log ([`crate::spread`]).
    fn through_log(&self, run: &RunContext, cluster: &ClusterRef, s: &Statement) -> Result<QueryResult> {
        let (snap, cols, verb) = match s {
            Statement::CreateTable(ct) if self.catalog.exists(&ct.name) => return self.create_table(ct),
            Statement::CreateTable(ct) => return self.create_table(&crate::spread::publish_create(cluster, ct)?),
            Statement::Insert { table, columns, source, pos } => {
                let (snap, cols) = self.insert_columns(run, table, columns, source, *pos)?;
                (snap, cols, "INSERT")
            }
            Statement::CopyFrom { table, columns, source, options, pos } => {
                let (snap, cols) = self.copy_columns(run, table, columns, source, options, *pos)?;
                (snap, cols, "COPY")
            }
            other => return Err(crate::spread::refused(other)),
        };
        self.publish_rows(cluster, &snap, &cols, verb)
    }

    /// Send rows for `snap`'s table through `cluster`'s log.
    fn publish_rows(&self, cluster: &ClusterRef, snap: &Table, cols: &[Column], verb: &str) -> Result<QueryResult> {
        check_tenant_rows(&self.access, snap, cols)?;
        let n = crate::spread::publish_rows(cluster, snap, cols)?;
        Ok(QueryResult::status(format!("{verb} {n}")))
    }

    /// The table `s` (a statement adding rows) writes to, after the checks every statement
    /// passes: the key may write it, the tenant scope allows it.
    pub(crate) fn target_snapshot(&self, s: &Statement) -> Result<Arc<Table>> {
        let Some((table, pos)) = s.target() else {
            return Err(SqlError::Internal("a statement adding rows names no table".into()));
        };
        self.access.check(table, pos)?;
        self.refuse_out_of_scope(s)?;
        self.find_table(table).ok_or_else(|| SqlError::TableNotFound { name: table.to_string(), pos })
    }

    /// `table` as this session finds it: as its transaction made or dropped it (not stored
    /// yet), else as stored.
    fn find_table(&self, table: &str) -> Option<Arc<Table>> {
        self.catalog_context().table(table)
    }

    /// The catalog as this session sees it (its grants, its transaction's held tables).
    fn catalog_context(&self) -> crate::system::CatalogContext<'_> {
        crate::system::CatalogContext { catalog: &self.catalog, access: &self.access, txn: self.txn.as_deref() }
    }

    /// The tables this session may read, as it finds them ([`Engine::find_table`]).
    fn table_names(&self) -> Vec<String> {
        let mut names = self.catalog.table_names();
        if let Some(txn) = &self.txn {
            for n in txn.defined_names() {
                names.retain(|m| !m.eq_ignore_ascii_case(&n));
                names.extend(txn.defined(&n).flatten().map(|t| t.name().to_string()));
            }
            names.sort_by_key(|n| n.to_ascii_lowercase());
        }
        names.retain(|n| self.access.allows(n));
        names
    }

    /// Whether this session finds a table or view called `name` ([`Engine::find_table`]).
    fn exists_here(&self, name: &str) -> bool {
        match self.txn.as_ref().and_then(|t| t.defined(name)) {
            Some(t) => t.is_some(),
            None => self.catalog.exists(name),
        }
    }

    /// Store `cols` (shaped for `snap`'s table) as statement `s` (COPY) does: through the
    /// cluster's log when the table is spread, else appended here, whole or not at all.
    pub(crate) fn store_rows(
        &self,
        run: &RunContext,
        s: &Statement,
        snap: &Table,
        cols: Vec<Column>,
    ) -> Result<QueryResult> {
        let run = &self.context(run);
        run.check()?;
        if let Some(cluster) = crate::spread::through_log(self.cluster.as_ref(), run, s) {
            return self.publish_rows(cluster, snap, &cols, "COPY");
        }
        let n = self.append_rows(snap, cols)?;
        Ok(QueryResult::status(format!("COPY {n}")))
    }

    fn create_table(&self, ct: &CreateTable) -> Result<QueryResult> {
        let schema =
            Schema { columns: ct.columns.iter().map(|(n, t)| ColumnDef { name: n.clone(), data_type: *t }).collect() };
        let opts = TableOptions {
            partition_key: ct.partition_by.clone(),
            timestamp: ct.timestamp.clone(),
            dedup_keys: ct.dedup_keys.clone(),
            one_partition: false,
        };
        let table = Table::new(&ct.name, schema, &opts)?;
        match &self.txn {
            Some(txn) => self.hold_create(txn, table, ct.if_not_exists)?,
            None => self.catalog.create(table, ct.if_not_exists)?,
        };
        Ok(QueryResult::status("CREATE TABLE".into()))
    }

    /// `INSERT INTO table [(columns)] VALUES ... | query`: the source run like any query,
    /// shaped for the table, then appended whole.
    fn insert(
        &self,
        run: &RunContext,
        table: &str,
        columns: &[String],
        source: &InsertSource,
        pos: Pos,
    ) -> Result<QueryResult> {
        let (snap, cols) = self.insert_columns(run, table, columns, source, pos)?;
        let n = self.append_rows(&snap, cols)?;
        Ok(QueryResult::status(format!("INSERT {n}")))
    }

    /// `table`'s snapshot; a missing table is reported at `pos`.
    fn snapshot_at(&self, table: &str, pos: Pos) -> Result<Arc<Table>> {
        self.find_table(table).ok_or_else(|| SqlError::TableNotFound { name: table.to_string(), pos: Some(pos) })
    }

    /// The rows an INSERT's `source` gives, shaped for `table` (its snapshot with them).
    fn insert_columns(
        &self,
        run: &RunContext,
        table: &str,
        columns: &[String],
        source: &InsertSource,
        pos: Pos,
    ) -> Result<(Arc<Table>, Vec<Column>)> {
        let snap = self.snapshot_at(table, pos)?;
        let q = match source {
            InsertSource::Values(rows) => Query {
                ctes: vec![],
                body: SetExpr::Values(rows.clone()),
                order_by: vec![],
                limit: None,
                limit_to: None,
                offset: None,
            },
            InsertSource::Query(q) => (**q).clone(),
        };
        let src = self.query_in(run, &q)?;
        let cols = shape_for_table(&snap, columns, src.into_batch())?;
        Ok((snap, cols))
    }

    /// `COPY table [(columns)] FROM path`. All of a Parquet file's columns into a table with a
    /// partition key, outside a tenant scope, are read grouped by that key and moved into the
    /// partitions group by group (`copy::read_grouped`); anything else is read whole, then
    /// appended.
    fn copy_from(
        &self,
        run: &RunContext,
        table: &str,
        columns: &[String],
        source: &CopyEnd,
        options: &[(String, String)],
        pos: Pos,
    ) -> Result<QueryResult> {
        if let (true, None, None, CopyEnd::File(path)) = (columns.is_empty(), self.access.tenant(), &self.txn, source) {
            let snap = self.snapshot_at(table, pos)?;
            if let Some(groups) = crate::copy::read_grouped(run, &self.files, path, options, &snap)? {
                let n = self.catalog.append_groups(table, groups)?;
                return Ok(QueryResult::status(format!("COPY {n}")));
            }
        }
        let (snap, cols) = self.copy_columns(run, table, columns, source, options, pos)?;
        let n = self.append_rows(&snap, cols)?;
        Ok(QueryResult::status(format!("COPY {n}")))
    }

    /// The rows `COPY table [(columns)] FROM path` reads, as columns of `table` (its snapshot
    /// with them).
    fn copy_columns(
        &self,
        run: &RunContext,
        table: &str,
        columns: &[String],
        source: &CopyEnd,
        options: &[(String, String)],
        pos: Pos,
    ) -> Result<(Arc<Table>, Vec<Column>)> {
        let CopyEnd::File(path) = source else {
            return Err(crate::copy::needs_a_client("FROM STDIN"));
        };
        let snap = self.snapshot_at(table, pos)?;
        if columns.is_empty() {
            let cols = crate::copy::read_file(run, &self.files, path, options, snap.schema())?;
            return Ok((snap, cols));
        }
        let schema = Schema { columns: crate::copy::listed_columns(&snap, columns, pos)? };
        let cols = crate::copy::read_file(run, &self.files, path, options, &schema)?;
        let rows = cols.first().map_or(0, Column::len);
        let cols = shape_for_table(&snap, columns, Batch::new(cols, rows))?;
        Ok((snap, cols))
    }

    /// Apply a DELETE or UPDATE, or hold it in the session's transaction: its status counts
    /// the rows it changes (in a transaction, in its own view of the table).
    fn edit(&self, run: &RunContext, s: &Statement) -> Result<QueryResult> {
        let (b, a) = (self.binder(run), &self.access);
        let (edit, what, pos) = match s {
            Statement::Delete { table, filter, pos } => {
                (crate::dml::bind_delete(b, a, table, filter.as_ref(), *pos)?, "DELETE", *pos)
            }
            Statement::Update { table, sets, filter, pos } => {
                (crate::dml::bind_update(b, a, table, sets, filter.as_ref(), *pos)?, "UPDATE", *pos)
            }
            _ => return Err(SqlError::Internal("edit: not a DELETE or UPDATE".into())),
        };
        let n = match &self.txn {
            None => edit.store(run, &self.catalog)?,
            Some(txn) => self.hold_edit(run, txn, edit, pos)?,
        };
        Ok(QueryResult::status(format!("{what} {n}")))
    }

    /// Append rows to `table`. In a session scoped to a tenant, every row's `tenant_id` must
    /// be the tenant, checked under the table's write lock against its schema then (so a
    /// `tenant_id` column added meanwhile is seen): otherwise nothing is stored.
    fn append_rows(&self, snap: &Table, cols: Vec<Column>) -> Result<usize> {
        if let Some(txn) = &self.txn {
            return self.hold(txn, snap, cols);
        }
        let table = snap.name();
        if self.access.tenant().is_none() {
            return Ok(self.catalog.append(table, cols)?);
        }
        self.catalog.modify(table, |t| {
            check_tenant_rows(&self.access, t, &cols)?;
            t.validate(&cols)?;
            let logged = self.catalog.log(&[Change::Append { table: t.name(), columns: &cols }])?;
            Ok(logged.apply(|| t.append(cols))?)
        })
    }

    /// The tenant scope's refusals (see [`crate::access`]): in a scoped session, statements
    /// that change the structure of a table with `tenant_id` or its other tenants' rows
    /// wholesale, ALTER TABLE ADD COLUMN `tenant_id`, and EXPLAIN ANALYZE (its row counts
    /// include what the scope filters out). A table that does not exist is left to the
    /// statement to report.
    fn refuse_out_of_scope(&self, s: &Statement) -> Result<()> {
        let Some(tenant) = self.access.tenant() else {
            if let Statement::DropIndex { name, pos, .. } = s {
                if let Some(owner) = self.index_owner(name) {
                    self.access.check(&owner, Some(*pos))?;
                }
            }
            return Ok(());
        };
        let (table, what) = match s {
            Statement::DropTable { name, .. } => (name.clone(), "DROP TABLE"),
            Statement::AlterAddColumn { column, .. } if column.eq_ignore_ascii_case(TENANT_COLUMN) => {
                return Err(SqlError::PermissionDenied(format!(
                    "ALTER TABLE ADD COLUMN {TENANT_COLUMN} is not allowed for a session scoped to tenant '{tenant}'"
                )))
            }
            Statement::AlterAddColumn { table, .. }
            | Statement::AlterSetTtl { table, .. }
            | Statement::AlterDedup { table, .. }
            | Statement::AlterTier { table, .. } => (table.clone(), "ALTER TABLE"),
            Statement::CopyFrom { table, source: CopyEnd::File(_), .. } => (table.clone(), "COPY ... FROM a file"),
            Statement::CreateIndex { table, .. } => (table.clone(), "CREATE INDEX"),
            Statement::DropIndex { name, pos, .. } => match self.index_owner(name) {
                Some(owner) => {
                    self.access.check(&owner, Some(*pos))?;
                    (owner, "DROP INDEX")
                }
                None => return Ok(()),
            },
            Statement::Explain { analyze: true, .. } => {
                return Err(SqlError::PermissionDenied(format!(
                    "EXPLAIN ANALYZE is not allowed for a session scoped to tenant '{tenant}' (its row counts include other tenants' rows); use EXPLAIN"
                )))
            }
            _ => return Ok(()),
        };
        // As the session finds it: a table its transaction made too.
        match self.find_table(&table) {
            Some(t) => self.access.refuse_scoped(&table, t.schema(), what),
            None => Ok(()),
        }
    }

    /// The table that holds index `name` (ASCII case-insensitive), if there is one.
    fn index_owner(&self, name: &str) -> Option<String> {
        self.catalog.indexes().into_iter().find(|(_, d)| d.name().eq_ignore_ascii_case(name)).map(|(t, _)| t)
    }
    /// `CREATE TABLE name AS query`: the table and its rows, or nothing.
    fn create_table_as(&self, run: &RunContext, name: &str, if_not_exists: bool, query: &Query) -> Result<QueryResult> {
        if self.exists_here(name) {
            if if_not_exists {
                return Ok(QueryResult::status("CREATE TABLE".into()));
            }
            return Err(SqlError::TableExists(name.to_string()));
        }
        let r = self.query_in(run, query)?;
        let columns = r
            .fields
            .iter()
            .map(|f| ColumnDef {
                name: f.name.clone(),
                data_type: match f.data_type {
                    DataType::Null => DataType::Varchar,
                    DataType::Interval => DataType::Int64,
                    t => t,
                },
            })
            .collect::<Vec<_>>();
        let cols = r
            .batch()
            .columns
            .iter()
            .zip(&columns)
            .map(|(c, d)| cast_column(c, d.data_type, false))
            .collect::<Result<Vec<_>>>()?;
        let table = Table::new(name, Schema { columns }, &TableOptions::default())?;
        table.validate(&cols)?;
        check_tenant_rows(&self.access, &table, &cols)?;
        if let Some(txn) = self.txn.as_ref() {
            let n = cols.first().map_or(0, Column::len);
            self.hold_create(txn, table, false)?;
            txn.hold(name, cols);
            return Ok(QueryResult::status(format!("CREATE TABLE {n}")));
        }
        let Some(n) = self.catalog.create_with(table, cols, if_not_exists)? else {
            return Ok(QueryResult::status("CREATE TABLE".into()));
        };
        Ok(QueryResult::status(format!("CREATE TABLE {n}")))
    }

    /// `ALTER TABLE t CONVERT PARTITION TO PARQUET WHERE ts < before`: by the designated timestamp only.
    fn alter_tier(&self, table: &str, column: &str, before: i64, pos: Pos) -> Result<QueryResult> {
        let t = self.catalog.snapshot(table)?;
        let ts = t.ts_col().map(|i| t.schema().columns[i].name.as_str());
        match ts {
            Some(ts) if ts.eq_ignore_ascii_case(column) => {}
            Some(ts) => {
                return Err(SqlError::plan(
                    format!("rows move to history by the designated timestamp '{ts}', not '{column}'"),
                    Some(pos),
                ))
            }
            None => {
                return Err(SqlError::plan(
                    format!("table '{table}' has no designated timestamp to move rows by"),
                    Some(pos),
                ))
            }
        }
        drop(t);
        Ok(QueryResult::status(self.catalog.tier(table, before)?))
    }

    /// `DESCRIBE t`: each column's name, type and role.
    fn describe(&self, table: &str, pos: Pos) -> Result<QueryResult> {
        let t = self.snapshot_at(table, pos)?;
        let mut names = Vec::new();
        let mut types = Vec::new();
        let mut roles = Vec::new();
        for (i, c) in t.schema().columns.iter().enumerate() {
            names.push(c.name.as_str());
            types.push(c.data_type.sql_name().into_owned());
            let role = [
                (t.key_col() == Some(i), "partition key"),
                (t.ts_col() == Some(i), "designated timestamp"),
                (t.dedup_keys().contains(&i), "dedup key"),
            ];
            roles.push(role.iter().filter(|r| r.0).map(|r| r.1).collect::<Vec<_>>().join(", "));
        }
        let n = names.len();
        let mk = |v: Vec<&str>| Column::from_data(zepto_storage::ColumnData::Varchar(v.into_iter().collect()));
        let types: Vec<&str> = types.iter().map(String::as_str).collect();
        let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
        Ok(QueryResult::rows(
            vec![
                field("column_name", DataType::Varchar),
                field("column_type", DataType::Varchar),
                field("role", DataType::Varchar),
            ],
            Batch::new(vec![mk(names), mk(types), mk(roles)], n),
        ))
    }
}

/// In a session scoped to a tenant, when `table` has a `tenant_id` column: `Ok` only if every
/// row of `cols` (the table's columns, in schema order) has the tenant there (compared as text,
/// as the scope's filter reads it); `PERMISSION_DENIED` naming the first other row otherwise.
pub(crate) fn check_tenant_rows(access: &TableAccess, table: &Table, cols: &[Column]) -> Result<()> {
    let Some((tenant, i)) = access.scope_of(table.schema()) else { return Ok(()) };
    let col = cols.get(i).ok_or_else(|| SqlError::Internal(format!("no column {i} to check the tenant of")))?;
    let text = if col.data_type().is_string() {
        std::borrow::Cow::Borrowed(col)
    } else {
        std::borrow::Cow::Owned(cast_column(col, DataType::Varchar, false)?)
    };
    let other = (0..text.len()).map(|r| (r, text.get(r))).find(|(_, v)| !matches!(v, Value::Str(s) if s == tenant));
    match other {
        None => Ok(()),
        Some((r, v)) => Err(SqlError::PermissionDenied(format!(
            "row {} has {TENANT_COLUMN} {}: a session scoped to tenant '{tenant}' writes only rows of its own tenant; nothing was stored",
            r + 1,
            if v.is_null() { "NULL".to_string() } else { format!("'{v}'") }
        ))),
    }
}

/// Map source columns onto the table's columns (by the INSERT column list, or positionally),
/// cast each to the column type, NULL-fill the rest.
pub fn shape_for_table(t: &Table, names: &[String], src: Batch) -> Result<Vec<Column>> {
    let n = src.rows;
    let targets: Vec<usize> = if names.is_empty() {
        (0..t.schema().len()).collect()
    } else {
        names
            .iter()
            .map(|c| {
                t.schema().index_of(c).ok_or_else(|| SqlError::ColumnNotFound {
                    message: format!("column '{c}' does not exist in table '{}'", t.name()),
                    pos: None,
                    table: None,
                    name: c.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?
    };
    if src.columns.len() != targets.len() {
        return Err(SqlError::plan(
            format!("table '{}' expects {} values per row, got {}", t.name(), targets.len(), src.columns.len()),
            None,
        ));
    }
    for (k, i) in targets.iter().enumerate() {
        if targets[..k].contains(i) {
            return Err(SqlError::plan(format!("column '{}' is listed twice", t.schema().columns[*i].name), None));
        }
    }
    let mut out: Vec<Option<Column>> = vec![None; t.schema().len()];
    for (c, &i) in src.columns.into_iter().zip(&targets) {
        let c = std::sync::Arc::unwrap_or_clone(c);
        let want = t.schema().columns[i].data_type;
        let c = if want == DataType::Symbol && c.data_type().is_string() {
            c
        } else if want == DataType::Symbol {
            cast_column(&c, DataType::Varchar, false)?
        } else {
            cast_column(&c, want, false)
                .map_err(|e| SqlError::exec(format!("column '{}': {e}", t.schema().columns[i].name)))?
        };
        out[i] = Some(c);
    }
    Ok(out
        .into_iter()
        .zip(&t.schema().columns)
        .map(|(c, d)| c.unwrap_or_else(|| Column::nulls(d.data_type, n)))
        .collect())
}
