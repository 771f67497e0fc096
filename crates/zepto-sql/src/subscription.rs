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
//!
//! A query over a materialized view follows the view's table: after each change of it
//! (append, delete, update), the query runs over the view, and its event is the difference
//! from the subscriber's last answer: the rows that are new (a changed row is a new one) and
//! the rows that are gone (a changed row's old version too). Applying each event (drop the
//! gone rows, add the new ones) to a copy keeps it equal to the answer. A resumed
//! subscriber's first event holds every row, and nothing gone: it saw none. The answers are
//! values ([`ViewAnswer`]) a server can share: subscribers that last got the same answer get
//! the same difference, and any answer made after a change serves every subscriber reaching
//! that change (each one's next answer is the view now, whenever now is).

use crate::engine::{Engine, QueryResult};
use crate::error::{Result, SqlError};
use crate::interrupt::RunContext;
use crate::parser::ast::{Expr, SelectItem, SetExpr, Statement, TableRef};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use zepto_storage::feed::cursor::{Cursor, CursorError};
use zepto_storage::feed::FeedChange;
use zepto_storage::{Catalog, Column, Table, TableOptions};

/// A checked subscription query (see the module docs).
#[derive(Debug, Clone)]
pub struct Subscription {
    sql: String,
    table: String,
    engine: Engine,
    /// Over a materialized view: its table, and the answer last sent (shared by clones).
    view: Option<(String, Arc<Mutex<Option<ViewAnswer>>>)>,
    /// The query's plan over one appended batch, when it is a projection of a filtered scan
    /// (it always is, but for a `now()`, which binding fixes): run per batch without binding.
    direct: Option<Arc<Direct>>,
}

/// A view subscription's answer at one moment, and each of its rows as text (the identity
/// rows are compared by). Cheap to clone: subscribers share one.
#[derive(Debug, Clone)]
pub struct ViewAnswer(Arc<Answered>);

#[derive(Debug)]
struct Answered {
    result: QueryResult,
    texts: Vec<String>,
}

impl ViewAnswer {
    fn of(result: QueryResult) -> ViewAnswer {
        let b = result.batch();
        let texts = (0..b.rows).map(|i| row_text(&b, i)).collect();
        ViewAnswer(Arc::new(Answered { result, texts }))
    }

    /// Whether `a` and `b` are the same answer (the same value, not equal rows); two
    /// subscribers without one (resumed, nothing sent yet) count as the same.
    pub fn same(a: Option<&ViewAnswer>, b: Option<&ViewAnswer>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a.0, &b.0),
            (None, None) => true,
            _ => false,
        }
    }
}

/// What one change of the table did to a subscription's answer: the rows to add, and (over a
/// view) the rows to take away.
#[derive(Debug)]
pub struct Answer {
    /// New rows: an append's rows through the query, or the view's new and changed rows.
    pub rows: QueryResult,
    /// Rows of the last answer over a view that it no longer has (a changed row's old
    /// version among them); `None` when there are none.
    pub removed: Option<QueryResult>,
}

/// A subscription's scan, filters and projection, bound once (see [`Subscription::answer`]).
struct Direct {
    scan: crate::view::appended::AppendedScan,
    exprs: Option<Vec<crate::plan::BExpr>>,
    fields: Vec<crate::plan::Field>,
}

impl std::fmt::Debug for Direct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direct").field("columns", &self.scan.columns).finish()
    }
}

impl Direct {
    /// The plan of `p` over one batch, if it is a (projected) filtered scan.
    fn of(p: &crate::engine::Prepared) -> Option<Direct> {
        use crate::plan::physical::scan_shape;
        use crate::plan::Plan;
        let root = p.plan().root();
        let (input, exprs) = match root {
            Plan::Project { input, exprs } => (&**input, Some(exprs.clone())),
            other => (other, None),
        };
        let s = scan_shape(input)?;
        let filters = s.filters.iter().map(|f| (*f).clone()).collect();
        let scan = crate::view::appended::AppendedScan::over(s.table, s.columns.to_vec(), s.range.clone(), filters);
        Some(Direct { scan, exprs, fields: p.fields().to_vec() })
    }

    /// The answer over one appended batch, under `run`.
    fn answer(&self, run: &RunContext, columns: &[Column]) -> Result<Option<QueryResult>> {
        let Some(b) = self.scan.rows(columns)? else { return Ok(None) };
        let b = match &self.exprs {
            None => b,
            Some(exprs) => {
                let ctx = crate::exec::ExecContext::new(run);
                let cols = exprs
                    .iter()
                    .map(|e| crate::exec::eval::eval(&ctx, e, &b).map(|c| c.into_owned()))
                    .collect::<Result<Vec<_>>>()?;
                crate::eval::Batch::new(cols, b.rows)
            }
        };
        Ok(Some(QueryResult::rows(self.fields.clone(), b)))
    }
}

impl Subscription {
    /// `sql` as a subscription through `engine` (its grants and tenant scope): refused unless
    /// a stream of appends can answer it, or if it does not bind.
    pub fn new(engine: &Engine, sql: &str) -> Result<Subscription> {
        let stmt = crate::parser::parse_statement(sql)?;
        let table = check(&stmt)?;
        let mut direct = None;
        if let Statement::Query(q) = &stmt {
            let p = engine.prepare(q)?;
            direct = Direct::of(&p).filter(|_| !crate::view::calls_now(q)).map(Arc::new);
        }
        let view = engine.catalog().view_defs().into_iter().find(|d| d.name().eq_ignore_ascii_case(&table));
        let mut sub = Subscription { sql: sql.to_string(), table, engine: engine.clone(), view: None, direct };
        if let Some(def) = view {
            sub.view = Some((def.base().to_string(), Arc::default()));
        }
        Ok(sub)
    }

    /// The same subscription starting from the query's answer now: its first event holds only
    /// what changes after (a view's; a table's subscription starts from now anyway).
    pub fn from_now(self) -> Result<Subscription> {
        self.from_now_in(&RunContext::unlimited())
    }

    /// [`Subscription::from_now`], its query under `run` (a server's limits and cancellation).
    pub fn from_now_in(self, run: &RunContext) -> Result<Subscription> {
        if self.view.is_some() {
            self.skip_to(&ViewAnswer::of(self.engine.execute_in(run, &self.sql)?));
        }
        Ok(self)
    }

    /// Over a view: the answer it last sent (`None` before any, or over a table).
    pub fn last_answer(&self) -> Option<ViewAnswer> {
        let (_, last) = self.view.as_ref()?;
        last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Over a view: the query's answer now (over a table: an error, its answers are batches).
    pub fn answer_now(&self) -> Result<ViewAnswer> {
        self.answer_now_in(&RunContext::unlimited())
    }

    /// [`Subscription::answer_now`] under `run`.
    pub fn answer_now_in(&self, run: &RunContext) -> Result<ViewAnswer> {
        if self.view.is_none() {
            return Err(SqlError::Internal("a table's subscription has no answer now".into()));
        }
        Ok(ViewAnswer::of(self.engine.execute_in(run, &self.sql)?))
    }

    /// Over a view: `now` becomes the last answer sent, when the client was sent what another
    /// subscriber's [`Subscription::advance_to`] made from the same last answer (or, starting
    /// from now, holds it already).
    pub fn skip_to(&self, now: &ViewAnswer) {
        if let Some((_, last)) = &self.view {
            *last.lock().unwrap_or_else(|e| e.into_inner()) = Some(now.clone());
        }
    }

    /// Over a view: what takes a client from the last answer sent to `now` (`None`: nothing
    /// changed), and `now` becomes the last.
    pub fn advance_to(&self, now: &ViewAnswer) -> Option<Answer> {
        let (_, last) = self.view.as_ref()?;
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        let answer = difference(last.as_ref().map(|l| &*l.0), &now.0);
        *last = Some(now.clone());
        answer
    }

    /// Whether it reads a materialized view (every change of the view's table is answered by
    /// [`Subscription::answer_change`] with rows, not counts).
    pub fn over_view(&self) -> bool {
        self.view.is_some()
    }

    /// The answer to one feed change of the table it follows: an append's rows through the
    /// query (a table's), or the difference of the view's answer (a view's). `None`: nothing
    /// to send (no row passed, nothing changed, or a table's delete, update or drop, which are
    /// counted instead).
    pub fn answer_change(&self, change: &FeedChange) -> Result<Option<Answer>> {
        self.answer_change_in(&RunContext::unlimited(), change)
    }

    /// [`Subscription::answer_change`], its query under `run`.
    pub fn answer_change_in(&self, run: &RunContext, change: &FeedChange) -> Result<Option<Answer>> {
        match (&self.view, change) {
            (None, FeedChange::Append(cols)) => {
                Ok(self.answer_in(run, cols)?.map(|rows| Answer { rows, removed: None }))
            }
            (None, _) | (Some(_), FeedChange::Drop) => Ok(None),
            (Some(_), _) => Ok(self.advance_to(&self.answer_now_in(run)?)),
        }
    }

    /// The table it reads, as the query names it.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Whether a feed event for `table` is this subscription's (a view's are its table's).
    pub fn reads(&self, table: &str) -> bool {
        let follows = self.view.as_ref().map_or(self.table.as_str(), |(base, _)| base.as_str());
        table.eq_ignore_ascii_case(follows)
    }

    /// The query's answer over one appended batch of the table (`columns` in schema order, as
    /// the feed holds them); `None` when no row passes.
    pub fn answer(&self, columns: &[Column]) -> Result<Option<QueryResult>> {
        self.answer_in(&RunContext::unlimited(), columns)
    }

    /// [`Subscription::answer`] under `run`.
    pub fn answer_in(&self, run: &RunContext, columns: &[Column]) -> Result<Option<QueryResult>> {
        if let Some(d) = &self.direct {
            return d.answer(run, columns);
        }
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
        let r = self.engine.on_catalog(Arc::new(delta)).execute_in(run, &self.sql)?;
        Ok((r.row_count() > 0).then_some(r))
    }
}

/// The rows of `now` that `last` lacks, and those of `last` that `now` lacks (as many times
/// as a row is repeated); `None` when the answers are the same.
fn difference(last: Option<&Answered>, now: &Answered) -> Option<Answer> {
    fn missing<'a>(texts: &'a [String], other: &'a [String]) -> Vec<u32> {
        let mut left: HashMap<&str, usize> = HashMap::new();
        other.iter().for_each(|t| *left.entry(t.as_str()).or_default() += 1);
        let mut out = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            match left.get_mut(t.as_str()) {
                Some(n) if *n > 0 => *n -= 1,
                _ => out.push(i as u32),
            }
        }
        out
    }
    let b = now.result.batch();
    let (fresh, gone) = match last {
        None => ((0..b.rows as u32).collect(), Vec::new()),
        Some(l) => (missing(&now.texts, &l.texts), missing(&l.texts, &now.texts)),
    };
    if fresh.is_empty() && gone.is_empty() {
        return None;
    }
    let rows = QueryResult::rows(now.result.fields.clone(), b.take(&fresh));
    let removed = last
        .filter(|_| !gone.is_empty())
        .map(|l| QueryResult::rows(l.result.fields.clone(), l.result.batch().take(&gone)));
    Some(Answer { rows, removed })
}

fn row_text(b: &crate::eval::Batch, i: usize) -> String {
    b.columns.iter().map(|c| format!("{:?}", c.get(i))).collect::<Vec<_>>().join("\u{1f}")
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

/// Where a subscriber starts.
#[derive(Debug, Clone, Copy)]
pub enum Start<'a> {
    /// With the next write.
    Now,
    /// After the event of this id (`TIMELINE-LSN[.K]`, as events' ids are written).
    Id(&'a str),
    /// After the whole record of this LSN of the database's log.
    Lsn(u64),
}

impl Subscription {
    /// The subscriber's cursor over the feed, from `start` (attach it to the feed first:
    /// `zepto_storage::feed::cursor`): gone when neither the feed nor the log holds what
    /// follows.
    pub fn cursor(&self, start: Start<'_>) -> std::result::Result<Cursor, CursorError> {
        let catalog = self.engine.catalog();
        let follows = self.view.as_ref().map_or(self.table.as_str(), |(base, _)| base.as_str());
        let cursor = match start {
            Start::Now => Ok(Cursor::now(catalog, follows)),
            Start::Id(id) => Cursor::after_id(catalog, follows, id),
            Start::Lsn(lsn) => Cursor::after_lsn(catalog, follows, lsn),
        }?;
        // A view's event is its answer now: a change it may have answered before its write
        // reached the view must come again.
        Ok(if self.view.is_some() { cursor.answering_now() } else { cursor })
    }

    /// The catalog its events come from.
    pub fn catalog(&self) -> &Catalog {
        self.engine.catalog()
    }
}
