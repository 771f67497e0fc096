//! The binder: AST queries → logical [`Plan`]s with resolved names and types.
//!
//! Scoping rules follow DuckDB: GROUP BY and ORDER BY accept ordinals and select-list aliases;
//! ORDER BY may use input columns that are not selected (they ride along as hidden columns);
//! uncorrelated subqueries are planned and run once, here (`subquery.rs`), and become constants. Running them
//! is the executor's job, which sits above the planner: the engine hands it to the binder as
//! [`Execute`].
//!
//! The binder builds the plan the statement says, without optimizing it: a WHERE is a `Filter`
//! over what FROM gives, and the optimizer ([`super::optimizer`]) later pushes it into the
//! scan. Two things that look like optimizations stay here because later binding needs them:
//! constant folding (`bind_expr::fold`, as each expression is bound: LIMIT, TOLERANCE, window
//! offsets and join bounds must be values) and running uncorrelated subqueries.
//!
//! A session scoped to a tenant reads a table with a `tenant_id` column through the scope's
//! filter, put directly over the table's scan by `bind_table` (see `tenant` and
//! [`crate::access`]); every FROM item, join side, subquery and CTE reaches tables there.
//!
//! Binding counts against the query: the binder holds the query's [`RunContext`], checks its
//! control (cancel flag, deadline, memory limit) per query and every 1,024 (`CHECK_EVERY_NODES`)
//! expression nodes, and runs uncorrelated subqueries under it.

mod aggregate;
mod alias;
mod join;
pub mod names;
use join::split_equi;
pub mod sample;
mod series;
mod srf;
mod subquery;
use aggregate::{collect_agg_exprs, items_agg_texts};
use subquery::requalify;
pub use subquery::substitute;
pub(crate) mod tenant;
pub mod window;
mod window_join;

use super::bind_expr::{cast_to, common_type, contains_aggregate, resolve, AggCtx, ExprBinder, WinCtx};
use super::{BExpr, Field, PhysicalPlan, Plan, SortHow, SortKey};
use crate::error::{Pos, Result, SqlError};
use crate::eval::Batch;
use crate::interrupt::RunContext;
use crate::parser::ast::*;
use std::sync::Arc;
use zepto_storage::{Catalog, DataType, Table};

/// What binding needs from the executor: running an uncorrelated subquery once, to one batch.
pub trait Execute: Send + Sync {
    /// Run `plan` to completion, as part of the query `run`, and return its rows as one batch.
    fn execute(&self, run: &RunContext, plan: &PhysicalPlan) -> Result<Batch>;
}

/// Bound expression nodes between two checks of the query's control: a check reads the clock
/// and the thread's allocation count, so once per this many nodes costs nothing measurable,
/// while a statement of millions of nodes (a huge IN list) still stops promptly (ordinary
/// binding goes through this many nodes in well under a millisecond).
const CHECK_EVERY_NODES: usize = 1024;

/// Turns parsed queries into logical plans: resolves names against the catalog (within the
/// session's grants), types every expression and fixes the statement's time.
pub struct Binder {
    catalog: Arc<Catalog>,
    /// Visible CTEs: name, plan, fields, and the AST (for correlated subqueries re-planned later).
    ctes: Vec<(String, Plan, Vec<Field>, Query)>,
    /// Set by SAMPLE BY for the rewritten SELECT it binds next: where to put the Fill node.
    pub(super) pending_fill: Option<super::sample::FillSpec>,
    /// Tables this session may read.
    access: crate::access::TableAccess,
    /// Runs uncorrelated subqueries.
    executor: Arc<dyn Execute>,
    /// The statement's time: every `now()` in it binds to this one value (as PostgreSQL's
    /// `now()` is the transaction's start), so the planner can search time ranges with it.
    now: i64,
    /// The query being bound: its control is checked as binding goes (parsing and binding
    /// count against its deadline and memory, and stop when it is cancelled), and the
    /// subqueries binding runs run under it.
    run: RunContext,
    /// Expression nodes bound so far (a check every [`CHECK_EVERY_NODES`]).
    nodes: usize,
    /// The session's transaction, whose held rows its reads see ([`Binder::in_txn`]).
    txn: Option<Arc<crate::txn::Txn>>,
    /// How unaliased select-list entries are named ([`Binder::naming`]).
    names: names::ColumnNames,
}

/// A select-list entry after `*` expansion.
pub(super) enum Item {
    Ast {
        expr: Expr,
        alias: Option<String>,
    },
    /// A wildcard-expanded input column.
    Input(usize),
}

/// A constant integer (of either sign) bound from `e`; `None` for NULL.
fn const_i64(b: &mut Binder, e: &Expr) -> Result<Option<i64>> {
    let bound = ExprBinder { scope: &[], agg: None, win: None, runner: b }.bind(e)?;
    match bound {
        BExpr::Lit(v, _) if v.is_null() => Ok(None),
        BExpr::Lit(v, t) if t.is_integer() => Ok(v.as_i64()),
        _ => Err(SqlError::plan("LIMIT must be a constant integer", e.pos())),
    }
}

/// A row range a Limit node keeps: `(offset, limit, counted from the end)`.
type RowRange = (usize, Option<usize>, bool);

fn const_usize(b: &mut Binder, e: &Expr, what: &str) -> Result<usize> {
    let bound = ExprBinder { scope: &[], agg: None, win: None, runner: b }.bind(e)?;
    match bound {
        BExpr::Lit(v, _) => match v.as_i64() {
            Some(n) if n >= 0 => Ok(n as usize),
            _ if v.is_null() => Ok(usize::MAX),
            _ => Err(SqlError::plan(format!("{what} must be a non-negative integer"), e.pos())),
        },
        _ => Err(SqlError::plan(format!("{what} must be a constant"), e.pos())),
    }
}

impl Binder {
    /// A binder over `catalog` that refuses tables outside `access` and runs uncorrelated
    /// subqueries with `executor`.
    pub fn new(
        catalog: Arc<Catalog>,
        access: crate::access::TableAccess,
        executor: Arc<dyn Execute>,
        run: &RunContext,
    ) -> Binder {
        let now = zepto_storage::time::now_ns();
        Binder {
            catalog,
            ctes: Vec::new(),
            pending_fill: None,
            access,
            executor,
            now,
            run: run.clone(),
            nodes: 0,
            txn: None,
            names: names::ColumnNames::Text,
        }
    }

    /// The same binder naming unaliased select-list entries as `names` says, at every level.
    pub fn naming(self, names: names::ColumnNames) -> Binder {
        Binder { names, ..self }
    }

    /// The name of the unaliased select-list entry `expr`.
    fn entry_name(&self, expr: &Expr) -> String {
        match expr {
            Expr::Column { name, .. } => name.clone(),
            e if self.names == names::ColumnNames::Postgres => names::postgres_name(e),
            e => e.to_string(),
        }
    }

    /// The same binder for a session inside transaction `txn` (or none): every table it holds
    /// rows for is read with them, as a copy of the table's snapshot with the rows appended
    /// (the stored table is unchanged; other sessions see them after COMMIT).
    pub fn in_txn(self, txn: Option<Arc<crate::txn::Txn>>) -> Binder {
        Binder { txn, ..self }
    }

    /// `table` as this session reads it: with the changes its transaction holds for it
    /// applied to a copy ([`crate::txn::Txn::view`]), or as stored.
    fn with_held(&self, table: Arc<Table>) -> Result<Arc<Table>> {
        match &self.txn {
            Some(txn) => txn.view(&self.run, table),
            None => Ok(table),
        }
    }

    /// The catalog as this session sees it (its grants, its transaction's held tables), for
    /// the system catalogs and the catalog functions.
    fn catalog_context(&self) -> crate::system::CatalogContext<'_> {
        crate::system::CatalogContext { catalog: &self.catalog, access: &self.access, txn: self.txn.as_deref() }
    }

    /// The query this binder binds for (and runs subqueries under).
    pub fn run_context(&self) -> &RunContext {
        &self.run
    }

    /// The same binder for a statement whose time is `now` (a correlated subquery planned
    /// again, row by row, keeps its statement's time).
    pub fn at(self, now: i64) -> Binder {
        Binder { now, ..self }
    }

    /// Bind a query (its CTEs visible only inside it): the logical plan and its output columns.
    #[recursive::recursive]
    pub fn bind_query(&mut self, q: &Query) -> Result<(Plan, Vec<Field>)> {
        self.run.check()?;
        let saved = self.ctes.len();
        let r = self.bind_query_inner(q);
        self.ctes.truncate(saved);
        r
    }

    fn bind_query_inner(&mut self, q: &Query) -> Result<(Plan, Vec<Field>)> {
        for (name, cq) in &q.ctes {
            let (p, f) = self.bind_query(cq)?;
            let f = requalify(f, Some(name));
            self.ctes.push((name.clone(), p, f, cq.clone()));
        }
        let (mut plan, fields) = match &q.body {
            // ORDER BY ALL sorts the outputs, whatever the select list computes.
            SetExpr::Select(s) if q.order_by.iter().any(|o| o.all) => {
                let (p, f) = self.bind_select(s, &[])?;
                self.order_outputs(p, f, &q.order_by)?
            }
            SetExpr::Select(s) => self.bind_select(s, &q.order_by)?,
            body => {
                let (p, f) = self.bind_set_expr(body)?;
                self.order_outputs(p, f, &q.order_by)?
            }
        };
        if let Some(ranges) = self.questdb_limit(q)? {
            for (offset, limit, from_end) in ranges {
                plan = Plan::Limit { input: Box::new(plan), offset, limit, from_end };
            }
            return Ok((plan, fields));
        }
        let offset = q.offset.as_ref().map(|e| const_usize(self, e, "OFFSET")).transpose()?.unwrap_or(0);
        let offset = if offset == usize::MAX { 0 } else { offset };
        let limit = q.limit.as_ref().map(|e| const_usize(self, e, "LIMIT")).transpose()?.filter(|&l| l != usize::MAX);
        if limit.is_some() || offset > 0 {
            // A TopN: the Sort, or the one under the projection that drops hidden sort keys
            // (it keeps rows and their order).
            let sort = match &mut plan {
                Plan::Project { input, .. } if matches!(**input, Plan::Sort { .. }) => &mut **input,
                p => p,
            };
            if let (Plan::Sort { limit: sl, .. }, Some(l)) = (sort, limit) {
                *sl = Some(l.saturating_add(offset));
            }
            plan = Plan::Limit { input: Box::new(plan), offset, limit, from_end: false };
        }
        Ok((plan, fields))
    }

    /// QuestDB's LIMIT forms, as the row ranges applied one after another (`(offset, limit,
    /// from_end)`): `LIMIT -n` (the last n rows) and `LIMIT lo, hi` (rows `lo..hi`, either
    /// order, 0-based and `hi` exclusive; a negative bound counts from the end, `LIMIT -lo,
    /// hi` with a positive `hi` refused as QuestDB does). `None` for a standard LIMIT.
    fn questdb_limit(&mut self, q: &Query) -> Result<Option<Vec<RowRange>>> {
        let Some(e) = &q.limit else { return Ok(None) };
        let a = const_i64(self, e)?;
        let b = q.limit_to.as_ref().map(|e| const_i64(self, e)).transpose()?;
        if b.is_none() && a.is_none_or(|a| a >= 0) {
            return Ok(None);
        }
        if let Some(o) = &q.offset {
            return Err(SqlError::plan("OFFSET with QuestDB's LIMIT -n or LIMIT lo, hi", o.pos()));
        }
        let size = |x: i64| usize::try_from(x.unsigned_abs()).unwrap_or(usize::MAX);
        let ranges = match (a, b) {
            (Some(a), None) => vec![(0, Some(size(a)), true)],
            (None, _) | (_, Some(None)) => return Err(SqlError::plan("LIMIT lo, hi with a NULL bound", e.pos())),
            (Some(a), Some(Some(b))) if a >= 0 && b >= 0 => {
                let (lo, hi) = (size(a.min(b)), size(a.max(b)));
                vec![(lo, Some(hi - lo), false)]
            }
            (Some(a), Some(Some(b))) if a < 0 && b < 0 => {
                let (far, near) = (size(a.min(b)), size(a.max(b)));
                vec![(near, Some(far - near), true)]
            }
            (Some(a), Some(Some(b))) if a >= 0 => vec![(size(a), None, false), (size(b), None, true)],
            _ => return Err(SqlError::plan("LIMIT <negative>, <positive> is not allowed", e.pos())),
        };
        Ok(Some(ranges))
    }

    fn bind_set_expr(&mut self, body: &SetExpr) -> Result<(Plan, Vec<Field>)> {
        match body {
            SetExpr::Select(s) => self.bind_select(s, &[]),
            SetExpr::Query(q) => self.bind_query(q),
            SetExpr::Values(rows) => self.bind_values(rows),
            SetExpr::SetOp { op, all, left, right } => {
                let (lp, lf) = self.bind_set_expr(left)?;
                let (rp, rf) = self.bind_set_expr(right)?;
                if lf.len() != rf.len() {
                    return Err(SqlError::plan(
                        format!("set operation inputs have different column counts ({} and {})", lf.len(), rf.len()),
                        None,
                    ));
                }
                let mut types = Vec::with_capacity(lf.len());
                for (a, b) in lf.iter().zip(&rf) {
                    let t = common_type(a.data_type, b.data_type).ok_or_else(|| {
                        SqlError::plan(
                            format!("set operation column '{}' mixes {} and {}", a.name, a.data_type, b.data_type),
                            None,
                        )
                    })?;
                    types.push(t);
                }
                let lp = cast_plan(lp, &lf, &types)?;
                let rp = cast_plan(rp, &rf, &types)?;
                let fields = lf.iter().zip(&types).map(|(f, t)| Field::new(f.name.clone(), *t)).collect();
                Ok((Plan::SetOp { op: *op, all: *all, left: Box::new(lp), right: Box::new(rp) }, fields))
            }
        }
    }

    fn bind_values(&mut self, rows: &[Vec<Expr>]) -> Result<(Plan, Vec<Field>)> {
        let width = rows.first().map_or(0, Vec::len);
        let mut bound = Vec::with_capacity(rows.len());
        for r in rows {
            if r.len() != width {
                return Err(SqlError::plan("VALUES rows have different lengths", r.first().and_then(Expr::pos)));
            }
            let mut b = ExprBinder { scope: &[], agg: None, win: None, runner: self };
            bound.push(r.iter().map(|e| b.bind(e)).collect::<Result<Vec<_>>>()?);
        }
        let mut types = vec![DataType::Null; width];
        for r in &bound {
            for (t, e) in types.iter_mut().zip(r) {
                *t = common_type(*t, e.data_type())
                    .ok_or_else(|| SqlError::plan(format!("VALUES column mixes {t} and {}", e.data_type()), None))?;
            }
        }
        let rows = bound
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.into_iter().zip(&types).map(|(e, t)| cast_to(e, *t)).collect::<Result<Vec<_>>>().map_err(
                    |e| match e {
                        SqlError::Execution(m) => SqlError::Execution(format!("VALUES row {}: {m}", i + 1)),
                        e => e,
                    },
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let fields = types.iter().enumerate().map(|(i, t)| Field::new(format!("col{i}"), *t)).collect();
        Ok((Plan::Values { rows, width }, fields))
    }

    /// Bind a FROM item (table, CTE, subquery or join): its plan and the columns it brings into
    /// scope.
    pub fn bind_from(&mut self, t: &TableRef) -> Result<(Plan, Vec<Field>)> {
        match t {
            TableRef::Table { name, system: None, alias, pos } => self.bind_table(name, alias.as_deref(), *pos),
            TableRef::Table { name, system: Some(schema), alias, pos } => {
                self.bind_system_table(*schema, name, alias.as_deref(), *pos)
            }
            TableRef::Subquery { query, alias, columns } => {
                let (p, mut f) = self.bind_query(query)?;
                if columns.len() > f.len() {
                    return Err(SqlError::plan(
                        format!("{} column aliases given for a subquery with {} columns", columns.len(), f.len()),
                        None,
                    ));
                }
                for (field, name) in f.iter_mut().zip(columns) {
                    field.name = name.clone();
                }
                Ok((p, requalify(f, alias.as_deref())))
            }
            TableRef::Function { name, args, alias, columns, pos } => {
                let call = series::Call { name, args, alias: alias.as_deref(), columns, pos: *pos };
                self.bind_table_function(&call)
            }
            TableRef::Join { left, right, kind, on, using } => self.bind_join(left, right, *kind, on.as_ref(), using),
        }
    }

    /// A table name in FROM: a visible CTE, else a scan of the table's snapshot — under the
    /// tenant scope's filter when the session is scoped and the table has `tenant_id` (see
    /// [`crate::access`]): every read of a table comes through here.
    fn bind_table(&mut self, name: &str, alias: Option<&str>, pos: Pos) -> Result<(Plan, Vec<Field>)> {
        let q = alias.unwrap_or(name);
        if let Some((_, p, f, _)) = self.ctes.iter().rev().find(|c| c.0.eq_ignore_ascii_case(name)) {
            return Ok((p.clone(), requalify(f.clone(), Some(q))));
        }
        let held = self.txn.as_ref().and_then(|t| t.defined(name));
        // pg_catalog is on every search path, after no table of that name.
        let exists = held.as_ref().map_or_else(|| self.catalog.exists(name), Option::is_some);
        if !exists && crate::system::in_search_path(name) {
            return self.bind_system_table(SystemSchema::PgCatalog, &name.to_ascii_lowercase(), alias, pos);
        }
        self.access.check(name, Some(pos))?;
        let not_found = || SqlError::TableNotFound { name: name.to_string(), pos: Some(pos) };
        let table = match held {
            // Made or dropped by the session's transaction, not stored yet.
            Some(t) => t.ok_or_else(not_found)?,
            None => self.catalog.snapshot(name).map_err(|e| match e {
                zepto_storage::StorageError::TableNotFound(_) => not_found(),
                e => e.into(),
            })?,
        };
        crate::access::check_scoped_read(&self.catalog, &self.access, name, table.schema())?;
        let table = self.with_held(table)?;
        self.bind_scan(table, q)
    }

    /// A system catalog's table (`information_schema.tables`), built now from the catalog as
    /// this session may see it, and scanned like any table.
    fn bind_system_table(
        &mut self,
        schema: SystemSchema,
        name: &str,
        alias: Option<&str>,
        pos: Pos,
    ) -> Result<(Plan, Vec<Field>)> {
        let table = crate::system::table(schema, name, &self.catalog_context(), pos)?;
        let (plan, mut fields) = self.bind_scan(table, alias.unwrap_or(name))?;
        for f in &mut fields {
            f.array_of = crate::system::array_item(name, &f.name);
        }
        Ok((plan, fields))
    }

    /// A scan of every column of `table`, qualified by `q`, under the session's tenant scope.
    fn bind_scan(&mut self, table: Arc<Table>, q: &str) -> Result<(Plan, Vec<Field>)> {
        let fields = table
            .schema()
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| Field {
                qualifier: Some(q.to_string()),
                name: c.name.clone(),
                data_type: c.data_type,
                designated_ts: table.ts_col() == Some(i),
                using_copy: false,
                star_offset: None,
                array_of: None,
            })
            .collect();
        let columns = (0..table.schema().len()).collect();
        let scope = tenant::scope_filter(&self.access, table.schema())?;
        let scan = Plan::Scan { table, columns, range: Default::default() };
        let plan = match scope {
            Some(pred) => Plan::Filter { input: Box::new(scan), pred },
            None => scan,
        };
        Ok((plan, fields))
    }

    pub(super) fn bind_select(&mut self, s: &Select, order_by: &[OrderItem]) -> Result<(Plan, Vec<Field>)> {
        if let Some(sb) = &s.sample_by {
            return self.bind_sample_by(s, sb, order_by);
        }
        // Taken before FROM is bound, so that subqueries in FROM never see it.
        let fill = self.pending_fill.take();
        let (mut plan, scope) = match &s.from {
            Some(t) => self.bind_from(t)?,
            None => (Plan::Values { rows: vec![vec![]], width: 0 }, vec![]),
        };
        if let Some(w) = &s.where_ {
            if contains_aggregate(w) {
                return Err(SqlError::plan("aggregates are not allowed in WHERE", w.pos()));
            }
            let w = &alias::with_select_aliases(w, &s.items, &scope);
            let pred = ExprBinder { scope: &scope, agg: None, win: None, runner: self }.bind_bool(w)?;
            plan = Plan::Filter { input: Box::new(plan), pred };
        }
        if let Some(lt) = &s.latest {
            plan = self.bind_latest(plan, lt, &scope)?;
        }
        let items = expand_items(&s.items, &scope)?;
        let is_agg = !s.group_by.is_empty()
            || s.having.is_some()
            || items.iter().any(|i| matches!(i, Item::Ast { expr, .. } if contains_aggregate(expr)));
        let agg_ctx;
        let agg = if window_join::is_window_join(&plan) {
            let (p, ctx) = self.bind_window_join(plan, s, &items, order_by, &scope)?;
            plan = p;
            agg_ctx = ctx;
            Some(&agg_ctx)
        } else if is_agg {
            let (p, ctx) = self.bind_aggregate(plan, s, &items, order_by, &scope)?;
            plan = match &fill {
                Some(f) => f.plan(self, p, &ctx, &items_agg_texts(&items))?,
                None => p,
            };
            agg_ctx = ctx;
            Some(&agg_ctx)
        } else {
            None
        };
        if let Some(h) = &s.having {
            let pred = ExprBinder { scope: &scope, agg, win: None, runner: self }.bind_bool(h)?;
            plan = Plan::Filter { input: Box::new(plan), pred };
        }
        // Window functions run after GROUP BY/HAVING and before DISTINCT/ORDER BY/LIMIT.
        let qualify = s.qualify.as_ref().map(|q| qualify_with_aliases(q, &scope, &items));
        let found = window_calls(&items, qualify.as_ref(), order_by);
        let win_ctx;
        let win = if found.is_empty() {
            if let Some(q) = &qualify {
                return Err(SqlError::plan("QUALIFY needs a window function", q.pos()));
            }
            None
        } else {
            let (p, ctx) = self.bind_windows(plan, s, &found, &scope, agg)?;
            plan = p;
            win_ctx = ctx;
            Some(&win_ctx)
        };
        let srfs = srf::collect(&items);
        let srf_ctx;
        let win = if srfs.is_empty() {
            win
        } else {
            let (p, ctx) = self.bind_project_set(plan, &srfs, &Scopes { scope: &scope, agg, win })?;
            plan = p;
            srf_ctx = ctx;
            Some(&srf_ctx)
        };
        let sc = Scopes { scope: &scope, agg, win };
        if let Some(q) = &qualify {
            let pred = sc.binder(self).bind_bool(q)?;
            plan = Plan::Filter { input: Box::new(plan), pred };
        }
        let (mut exprs, fields) = self.project_items(&items, &sc)?;
        let n_out = exprs.len();
        let keys = self.order_keys(s, order_by, &items, &fields, &mut exprs, &sc)?;
        let hidden = exprs.len() > n_out;
        plan = Plan::Project { input: Box::new(plan), exprs };
        if s.distinct {
            plan = Plan::Distinct { input: Box::new(plan) };
        }
        if !keys.is_empty() {
            plan = Plan::Sort { input: Box::new(plan), keys, limit: None, how: SortHow::Full };
        }
        if hidden {
            let exprs = fields.iter().enumerate().map(|(i, f)| BExpr::Col(i, f.data_type)).collect();
            plan = wrap_project_keep_sort(plan, exprs);
        }
        Ok((plan, fields))
    }

    /// The Window node over `plan` for the window calls `found` (each bound once), and the
    /// context that maps each call's text to its column.
    fn bind_windows(
        &mut self,
        plan: Plan,
        s: &Select,
        found: &[(String, &FuncCall)],
        scope: &[Field],
        agg: Option<&AggCtx>,
    ) -> Result<(Plan, WinCtx)> {
        let defaults = self.window_defaults(s, scope);
        let mut calls = Vec::with_capacity(found.len());
        let mut texts = Vec::with_capacity(found.len());
        for (text, f) in found {
            let c = window::bind_window_call(self, f, scope, agg, &defaults)?;
            texts.push((text.clone(), c.ty));
            calls.push(c);
        }
        let base = plan.width();
        let plan = Plan::Window { input: Box::new(plan), calls, how: super::WindowHow::Whole };
        Ok((plan, WinCtx { base, calls: texts }))
    }

    /// The select list bound over the input (and GROUP BY and window contexts): its
    /// expressions and output fields.
    fn project_items(&mut self, items: &[Item], sc: &Scopes) -> Result<(Vec<BExpr>, Vec<Field>)> {
        let mut exprs = Vec::with_capacity(items.len());
        let mut fields = Vec::with_capacity(items.len());
        for item in items {
            if let Item::Ast { expr, alias } = item {
                if let Some(parts) = srf::composite_fields(expr, alias.as_deref()) {
                    for (part, name) in parts {
                        let b = sc.binder(self).bind(&part)?;
                        fields.push(Field::new(name, b.data_type()));
                        exprs.push(b);
                    }
                    continue;
                }
            }
            let (e, name, designated, array_of) = match item {
                Item::Ast { expr, alias } => {
                    let b = sc.binder(self).bind(expr)?;
                    let array_of = match b.data_type() {
                        DataType::Varchar => {
                            Scopes { scope: sc.scope, agg: None, win: None }.binder(self).array_of(expr)?
                        }
                        _ => None,
                    };
                    let name = alias.clone().unwrap_or_else(|| self.entry_name(expr));
                    let designated = matches!(expr, Expr::Column { .. })
                        && sc.agg.is_none()
                        && matches!(b, BExpr::Col(i, _) if sc.scope[i].designated_ts);
                    (b, name, designated, array_of)
                }
                Item::Input(i) => {
                    let f = &sc.scope[*i];
                    let b = match sc.agg {
                        None => BExpr::Col(*i, f.data_type),
                        Some(ctx) => match ctx.keys.iter().position(|(_, c, _)| *c == Some(*i)) {
                            Some(k) => BExpr::Col(k, ctx.keys[k].2),
                            None => {
                                return Err(SqlError::plan(
                                    format!("column '{}' must appear in the GROUP BY clause or be used in an aggregate function", f.name),
                                    None,
                                ))
                            }
                        },
                    };
                    (b, f.name.clone(), sc.agg.is_none() && f.designated_ts, f.array_of)
                }
            };
            fields.push(Field {
                qualifier: None,
                name,
                data_type: e.data_type(),
                designated_ts: designated,
                using_copy: false,
                star_offset: None,
                array_of,
            });
            exprs.push(e);
        }
        Ok((exprs, fields))
    }

    /// ORDER BY keys over the projection: ordinals, output names, select-list expressions, or
    /// input expressions appended to `exprs` as hidden columns.
    fn order_keys(
        &mut self,
        s: &Select,
        order_by: &[OrderItem],
        items: &[Item],
        fields: &[Field],
        exprs: &mut Vec<BExpr>,
        sc: &Scopes,
    ) -> Result<Vec<SortKey>> {
        let n_out = exprs.len();
        let mut keys = Vec::new();
        for o in order_by {
            let col = match &o.expr {
                Expr::Lit(Literal::Int(k), pos) => {
                    if *k < 1 || *k as usize > n_out {
                        return Err(SqlError::plan(
                            format!("ORDER BY position {k} is not in the select list"),
                            Some(*pos),
                        ));
                    }
                    *k as usize - 1
                }
                e => match select_list_position(e, items, fields) {
                    Some(i) => i,
                    None => {
                        if s.distinct {
                            return Err(SqlError::plan(
                                "ORDER BY expressions must appear in the select list when DISTINCT is used",
                                e.pos(),
                            ));
                        }
                        exprs.push(sc.binder(self).bind(e)?);
                        exprs.len() - 1
                    }
                },
            };
            let ty = exprs[col].data_type();
            keys.push(SortKey { expr: BExpr::Col(col, ty), desc: o.desc, nulls_first: o.nulls_first.unwrap_or(false) });
        }
        Ok(keys)
    }

    /// `LATEST ON ts PARTITION BY keys`: the last row (by `ts`) of every key.
    fn bind_latest(&mut self, input: Plan, lt: &Latest, scope: &[Field]) -> Result<Plan> {
        let ts = match &lt.ts {
            Some(e) => ExprBinder { scope, agg: None, win: None, runner: self }.bind(e)?,
            None => match scope.iter().position(|f| f.designated_ts) {
                Some(i) => BExpr::Col(i, DataType::Timestamp),
                None => {
                    return Err(SqlError::plan(
                        "LATEST BY needs a designated timestamp; use LATEST ON ts PARTITION BY ...",
                        Some(lt.pos),
                    ))
                }
            },
        };
        let t = ts.data_type();
        if !(t.is_numeric() || matches!(t, DataType::Timestamp | DataType::Date)) {
            return Err(SqlError::plan(format!("LATEST ON needs a timestamp or number, got {t}"), Some(lt.pos)));
        }
        let keys = lt
            .keys
            .iter()
            .map(|k| {
                if contains_aggregate(k) {
                    return Err(SqlError::plan("aggregates are not allowed in LATEST ON", k.pos()));
                }
                ExprBinder { scope, agg: None, win: None, runner: self }.bind(k)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Plan::Latest { input: Box::new(input), keys, ts, how: super::LatestHow::HashByKey })
    }

    /// The kdb-style default window: the FROM table's partition key and designated timestamp.
    fn window_defaults(&self, s: &Select, scope: &[Field]) -> window::WinDefaults {
        let partition = match &s.from {
            Some(TableRef::Table { name, pos, system: None, .. })
                if !self.ctes.iter().any(|c| c.0.eq_ignore_ascii_case(name)) =>
            {
                self.catalog_context().table(name).and_then(|t| {
                    let k = t.key_col()?;
                    Some(Expr::Column { table: None, name: t.schema().columns[k].name.clone(), pos: *pos })
                })
            }
            _ => None,
        };
        let order = scope.iter().find(|f| f.designated_ts).map(|f| Expr::Column {
            table: f.qualifier.clone(),
            name: f.name.clone(),
            pos: Pos::default(),
        });
        window::WinDefaults { partition, order }
    }

    /// ORDER BY over the output of a set operation or VALUES: names, ordinals, expressions.
    fn order_outputs(&mut self, plan: Plan, fields: Vec<Field>, order_by: &[OrderItem]) -> Result<(Plan, Vec<Field>)> {
        if order_by.is_empty() {
            return Ok((plan, fields));
        }
        let mut keys = Vec::new();
        for o in order_by {
            if o.all {
                let nulls_first = o.nulls_first.unwrap_or(false);
                let all = fields.iter().enumerate().map(|(i, f)| BExpr::Col(i, f.data_type));
                keys.extend(all.map(|expr| SortKey { expr, desc: o.desc, nulls_first }));
                continue;
            }
            let e = match &o.expr {
                Expr::Lit(Literal::Int(k), pos) => {
                    if *k < 1 || *k as usize > fields.len() {
                        return Err(SqlError::plan(
                            format!("ORDER BY position {k} is not in the select list"),
                            Some(*pos),
                        ));
                    }
                    BExpr::Col(*k as usize - 1, fields[*k as usize - 1].data_type)
                }
                e => {
                    let unq = requalify(fields.clone(), None);
                    ExprBinder { scope: &unq, agg: None, win: None, runner: self }.bind(e)?
                }
            };
            keys.push(SortKey { expr: e, desc: o.desc, nulls_first: o.nulls_first.unwrap_or(false) });
        }
        Ok((Plan::Sort { input: Box::new(plan), keys, limit: None, how: SortHow::Full }, fields))
    }
}

/// Cast a plan's output columns to `types` (no-op when they already match).
fn cast_plan(plan: Plan, fields: &[Field], types: &[DataType]) -> Result<Plan> {
    if fields.iter().zip(types).all(|(f, t)| f.data_type == *t) {
        return Ok(plan);
    }
    let exprs = fields
        .iter()
        .enumerate()
        .zip(types)
        .map(|((i, f), t)| cast_to(BExpr::Col(i, f.data_type), *t))
        .collect::<Result<Vec<_>>>()?;
    Ok(Plan::Project { input: Box::new(plan), exprs })
}

/// Put `Project` below a trailing Sort is impossible (the sort needs hidden columns), so the
/// projection goes on top.
fn wrap_project_keep_sort(plan: Plan, exprs: Vec<BExpr>) -> Plan {
    Plan::Project { input: Box::new(plan), exprs }
}

/// The scopes an expression above the input binds in: the input's fields, and the GROUP BY
/// and window contexts when there are such nodes.
struct Scopes<'a> {
    scope: &'a [Field],
    agg: Option<&'a AggCtx>,
    win: Option<&'a WinCtx>,
}

impl Scopes<'_> {
    fn binder<'b>(&'b self, runner: &'b mut Binder) -> ExprBinder<'b> {
        ExprBinder { scope: self.scope, agg: self.agg, win: self.win, runner }
    }
}

/// QUALIFY may name select-list aliases (as in DuckDB): their expressions substituted.
fn qualify_with_aliases(q: &Expr, scope: &[Field], items: &[Item]) -> Expr {
    let mut q = q.clone();
    crate::parser::visit::rewrite_expr(&mut q, &mut |e| {
        if let Expr::Column { table: None, name, pos } = e {
            if resolve(scope, None, name, *pos).is_err() {
                let hit = items.iter().find_map(|it| match it {
                    Item::Ast { expr, alias: Some(a) } if a.eq_ignore_ascii_case(name) => Some(expr.clone()),
                    _ => None,
                });
                if let Some(x) = hit {
                    *e = x;
                }
            }
        }
    });
    q
}

/// The window calls of the select list, QUALIFY and ORDER BY (deduplicated by text, in
/// first-seen order).
fn window_calls<'e>(
    items: &'e [Item],
    qualify: Option<&'e Expr>,
    order_by: &'e [OrderItem],
) -> Vec<(String, &'e FuncCall)> {
    let mut found = Vec::new();
    for it in items {
        if let Item::Ast { expr, .. } = it {
            window::collect_calls(expr, &mut found);
        }
    }
    if let Some(q) = qualify {
        window::collect_calls(q, &mut found);
    }
    for o in order_by {
        window::collect_calls(&o.expr, &mut found);
    }
    found
}

/// An ORDER BY expression that names an output column (its name, if unique) or repeats a
/// select-list expression: that column's position.
fn select_list_position(e: &Expr, items: &[Item], fields: &[Field]) -> Option<usize> {
    let by_name = match e {
        Expr::Column { table: None, name, .. } => {
            let hits: Vec<usize> = (0..fields.len()).filter(|&i| fields[i].name.eq_ignore_ascii_case(name)).collect();
            match hits.as_slice() {
                [i] => Some(*i),
                _ => None,
            }
        }
        _ => None,
    };
    by_name.or_else(|| {
        let texts: Vec<Option<String>> = items
            .iter()
            .map(|it| if let Item::Ast { expr, .. } = it { Some(expr.to_string()) } else { None })
            .collect();
        let text = e.text_within(texts.iter().flatten().map(String::len).max()?)?;
        texts.iter().position(|t| t.as_ref() == Some(&text))
    })
}

fn expand_items(items: &[SelectItem], scope: &[Field]) -> Result<Vec<Item>> {
    let mut out = Vec::new();
    for it in items {
        match it {
            SelectItem::Expr { expr, alias } => out.push(Item::Ast { expr: expr.clone(), alias: alias.clone() }),
            SelectItem::Wildcard { table, exclude, pos } => {
                // (place in the listing, column): a table's columns in its order (star_offset).
                let mut cols: Vec<(isize, usize)> = Vec::new();
                for (i, f) in scope.iter().enumerate() {
                    let (q_ok, at) = match table.as_deref() {
                        None => (!f.using_copy, i as isize),
                        Some(t) => (
                            f.qualifier.as_deref().is_some_and(|q| q.eq_ignore_ascii_case(t)),
                            i as isize + f.star_offset.unwrap_or(0),
                        ),
                    };
                    if q_ok && !exclude.iter().any(|x| x.eq_ignore_ascii_case(&f.name)) {
                        cols.push((at, i));
                    }
                }
                cols.sort_by_key(|&(at, _)| at);
                let any = !cols.is_empty();
                out.extend(cols.into_iter().map(|(_, i)| Item::Input(i)));
                if let (Some(t), false) = (table, any) {
                    return Err(SqlError::plan(format!("no table named '{t}' in FROM"), Some(*pos)));
                }
                if table.is_none() && scope.is_empty() {
                    return Err(SqlError::plan("SELECT * needs a FROM clause", Some(*pos)));
                }
            }
        }
    }
    Ok(out)
}
