//! A subscription's query over the change feed (`zepto_storage::feed`): checked once, then run
//! over each appended batch of its table. The one implementation behind the HTTP door's
//! `GET /subscribe` and the Python package's `subscribe`.
//!
//! A stream of appends can answer a query that reads one table row by row: a select list and
//! a `WHERE` filter. Everything whose answer depends on rows other than the batch's
//! (aggregates, window functions, DISTINCT, joins, subqueries, ORDER BY, LIMIT, SAMPLE BY,
//! LATEST ON) is refused with the reason. The query is bound against the engine when the
//! subscription starts (so a missing table, column or grant fails then), and each batch is
//! queried through an engine with the same grants and tenant scope.

use crate::engine::{Engine, QueryResult};
use crate::error::{Result, SqlError};
use crate::parser::ast::{Expr, SelectItem, SetExpr, Statement, TableRef};
use std::sync::Arc;
use zepto_storage::{Catalog, Column, Table, TableOptions};

/// A checked subscription query (see the module docs).
#[derive(Debug, Clone)]
pub struct Subscription {
    sql: String,
    table: String,
    engine: Engine,
}

impl Subscription {
    /// `sql` as a subscription through `engine` (its grants and tenant scope): refused unless
    /// a stream of appends can answer it, or if it does not bind.
    pub fn new(engine: &Engine, sql: &str) -> Result<Subscription> {
        let stmt = crate::parser::parse_statement(sql)?;
        let table = check(&stmt)?;
        if let Statement::Query(q) = &stmt {
            engine.prepare(q)?;
        }
        Ok(Subscription { sql: sql.to_string(), table, engine: engine.clone() })
    }

    /// The table it reads, as the query names it.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Whether a feed event for `table` is this subscription's.
    pub fn reads(&self, table: &str) -> bool {
        table.eq_ignore_ascii_case(&self.table)
    }

    /// The query's answer over one appended batch of the table (`columns` in schema order, as
    /// the feed holds them); `None` when no row passes.
    pub fn answer(&self, columns: &[Column]) -> Result<Option<QueryResult>> {
        let base = self.engine.catalog().snapshot(&self.table).map_err(|e| SqlError::Execution(e.to_string()))?;
        if base.schema().len() != columns.len() {
            return Err(SqlError::Execution(format!(
                "table '{}' changed its columns since this batch; subscribe again",
                self.table
            )));
        }
        let internal = |e: zepto_storage::StorageError| SqlError::Execution(e.to_string());
        let delta = Catalog::new();
        let t = Table::new(base.name(), base.schema().clone(), &TableOptions::default()).map_err(internal)?;
        delta.create(t, false).map_err(internal)?;
        delta.append(base.name(), columns.to_vec()).map_err(internal)?;
        let r = self.engine.on_catalog(Arc::new(delta)).execute(&self.sql)?;
        Ok((r.row_count() > 0).then_some(r))
    }
}

/// The table `stmt` reads, if a stream of appends can answer it.
fn check(stmt: &Statement) -> Result<String> {
    let refuse =
        |why: &str| SqlError::plan(format!("a subscription's query must read one table row by row: {why}"), None);
    let Statement::Query(q) = stmt else { return Err(refuse("this is not a SELECT")) };
    if !q.ctes.is_empty() || !q.order_by.is_empty() || q.limit.is_some() || q.offset.is_some() {
        return Err(refuse("no WITH, ORDER BY, LIMIT or OFFSET"));
    }
    let SetExpr::Select(s) = &q.body else { return Err(refuse("no set operations or VALUES")) };
    let Some(TableRef::Table { name, system: None, .. }) = &s.from else {
        return Err(refuse("FROM names one table (no join, subquery, function or system table)"));
    };
    let grouped = !s.group_by.is_empty() || s.having.is_some() || s.qualify.is_some();
    if s.distinct || grouped || s.latest.is_some() || s.sample_by.is_some() {
        return Err(refuse("no DISTINCT, GROUP BY, HAVING, QUALIFY, LATEST ON or SAMPLE BY"));
    }
    let items = s.items.iter().filter_map(|i| match i {
        SelectItem::Expr { expr, .. } => Some(expr),
        _ => None,
    });
    for e in items.chain(s.where_.iter()) {
        let mut e = e.clone();
        let mut bad = None;
        crate::parser::visit::rewrite_expr(&mut e, &mut |x: &mut Expr| match x {
            Expr::Func(f) if f.over.is_some() => bad = Some("no window functions"),
            Expr::Func(f) if crate::expr::functions::is_aggregate(&f.name) => bad = Some("no aggregates"),
            Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => bad = Some("no subqueries"),
            _ => {}
        });
        if let Some(why) = bad {
            return Err(refuse(why));
        }
    }
    Ok(name.clone())
}

/// Why a subscriber cannot start where it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The id is not an event id.
    BadId(String),
    /// The events after it are not held (or it is from an earlier run).
    Gone(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::BadId(m) | StartError::Gone(m) => f.write_str(m),
        }
    }
}

/// The feed number a subscriber attached to `feed` starts after: after event `from`
/// (`EPOCH-SEQ`, as event ids are written) while the feed holds what follows it, or from now.
pub fn start_point(feed: &zepto_storage::feed::ChangeFeed, from: Option<&str>) -> std::result::Result<u64, StartError> {
    let epoch = feed.epoch();
    let Some(id) = from else { return Ok(feed.head()) };
    let bad = || StartError::BadId(format!("'{id}' is not an event id (EPOCH-SEQ, as events' ids are)"));
    let (e, s) = id.trim().split_once('-').ok_or_else(bad)?;
    let (e, s) = (e.parse::<u64>().map_err(|_| bad())?, s.parse::<u64>().map_err(|_| bad())?);
    if e != epoch {
        return Err(StartError::Gone(format!(
            "event {id} is from an earlier run of the database (this run's ids start with {epoch}-): subscribe again from now"
        )));
    }
    match feed.read(s, 0) {
        zepto_storage::feed::Read::Gone { oldest } => Err(StartError::Gone(format!(
            "the events after {id} are no longer held (the oldest is {epoch}-{oldest}): subscribe again from now"
        ))),
        zepto_storage::feed::Read::Events(_) => Ok(s),
    }
}
