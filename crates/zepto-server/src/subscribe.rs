//! `GET /subscribe?query=SQL[&from=ID]`: a query's rows as each write commits them, pushed as
//! Server-Sent Events (`text/event-stream`). The query reads one table, row by row (a
//! projection and a `WHERE` filter: no aggregate, join, subquery, ORDER BY or LIMIT, which
//! have no meaning over a stream of appends); each committed append to that table is run
//! through it, and a non-empty answer is one `rows` event. Deletes and updates of the table
//! are `delete`/`update` events with their row counts; a drop is a `drop` event that ends the
//! stream.
//!
//! Every event's `id` is `EPOCH-SEQ`: the server's run and the change feed's number
//! (`zepto_storage::feed`). A client that reconnects with `Last-Event-ID` (what browsers'
//! `EventSource` send) or `from=ID` resumes after that event, missing and repeating nothing,
//! while the feed still holds what followed it; otherwise it is told so (410 with the oldest
//! id held), as is a subscriber that reads too slowly for the feed's ring (an `error` event
//! `SLOW_CONSUMER`, then the end of the stream): a slow subscriber never slows writers or
//! other subscribers.
//!
//! Keys, grants and tenant scopes apply as for queries: the query is bound against the
//! catalog with the key's access when the subscription starts, and each batch is queried
//! with the same access.

use crate::auth::{Principal, Role};
use crate::body::ResponseBody;
use crate::encode::{Encoder, Format};
use crate::error::ApiError;
use crate::state::State;
use bytes::Bytes;
use hyper::{Response, StatusCode};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use zepto_sql::parser::ast::{Expr, SetExpr, Statement, TableRef};
use zepto_sql::Engine;
use zepto_storage::feed::{FeedChange, FeedEvent, Read};
use zepto_storage::{Catalog, Column, Table, TableOptions};

/// A comment line sent when nothing happened for this long (keeps proxies from closing).
const KEEPALIVE: Duration = Duration::from_secs(15);
/// A client that does not read an event for this long is dropped.
const SEND_LIMIT: Duration = Duration::from_secs(30);
/// Events read from the feed at a time.
const BATCH: usize = 64;

/// A subscription's query, checked: its text and the table it reads.
struct Subscription {
    sql: String,
    table: String,
}

/// Start a subscription (see the module docs).
pub fn start(
    state: &Arc<State>,
    who: &Principal,
    params: &[(String, String)],
    last_event_id: Option<&str>,
) -> Result<Response<ResponseBody>, ApiError> {
    who.require(Role::Reader)?;
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let sql =
        get("query").filter(|q| !q.trim().is_empty()).ok_or_else(|| ApiError::bad_request("query= is required"))?;
    let sub = check(sql)?;
    let engine = state.engine.with_access(who.tables.clone());
    let stmt = zepto_sql::parser::parse_statement(sql)?;
    if let Statement::Query(q) = &stmt {
        engine.prepare(q)?;
    }
    let feed = state.engine.catalog().feed().clone();
    let cursor = match get("from").or(last_event_id) {
        Some(id) => resume_point(id, feed.epoch())?,
        None => feed.head(),
    };
    let woken = Arc::new(Notify::new());
    let w = woken.clone();
    let attached = feed.subscribe(Arc::new(move || w.notify_one()));
    if let Read::Gone { oldest } = feed.read(cursor, 0) {
        return Err(gone(feed.epoch(), cursor, oldest));
    }
    let (tx, rx) = mpsc::channel(8);
    let st = state.clone();
    let access = who.tables.clone();
    tokio::spawn(async move {
        st.metrics.subscribers.inc();
        stream(&st, &sub, access, cursor, &woken, &tx).await;
        st.metrics.subscribers.dec();
        drop(attached);
    });
    let mut resp = Response::new(ResponseBody::Stream { rx, _guard: Box::new(()) });
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/event-stream"));
    h.insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-cache"));
    Ok(resp)
}

/// The subscription's query, if it is one a stream of appends can answer.
fn check(sql: &str) -> Result<Subscription, ApiError> {
    let refuse =
        |why: &str| ApiError::bad_request(format!("a subscription's query must read one table row by row: {why}"));
    let stmt = zepto_sql::parser::parse_statement(sql)?;
    let Statement::Query(q) = &stmt else { return Err(refuse("this is not a SELECT")) };
    if !q.ctes.is_empty() || !q.order_by.is_empty() || q.limit.is_some() || q.offset.is_some() {
        return Err(refuse("no WITH, ORDER BY, LIMIT or OFFSET"));
    }
    let SetExpr::Select(s) = &q.body else { return Err(refuse("no set operations or VALUES")) };
    let Some(TableRef::Table { name, system: None, .. }) = &s.from else {
        return Err(refuse("FROM names one table (no join, subquery, function or system table)"));
    };
    if s.distinct
        || !s.group_by.is_empty()
        || s.having.is_some()
        || s.qualify.is_some()
        || s.latest.is_some()
        || s.sample_by.is_some()
    {
        return Err(refuse("no DISTINCT, GROUP BY, HAVING, QUALIFY, LATEST ON or SAMPLE BY"));
    }
    let mut exprs: Vec<Expr> = s
        .items
        .iter()
        .filter_map(|i| match i {
            zepto_sql::parser::ast::SelectItem::Expr { expr, .. } => Some(expr.clone()),
            _ => None,
        })
        .collect();
    exprs.extend(s.where_.clone());
    for mut e in exprs {
        let mut bad = None;
        zepto_sql::parser::visit::rewrite_expr(&mut e, &mut |x: &mut Expr| match x {
            Expr::Func(f) if f.over.is_some() => bad = Some("no window functions"),
            Expr::Func(f) if zepto_sql::expr::functions::is_aggregate(&f.name) => bad = Some("no aggregates"),
            Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. } => bad = Some("no subqueries"),
            _ => {}
        });
        if let Some(why) = bad {
            return Err(refuse(why));
        }
    }
    Ok(Subscription { sql: sql.to_string(), table: name.clone() })
}

/// The feed number after which to resume, from an event id `EPOCH-SEQ`.
fn resume_point(id: &str, epoch: u64) -> Result<u64, ApiError> {
    let bad = || ApiError::bad_request(format!("'{id}' is not an event id (EPOCH-SEQ, as the stream's ids are)"));
    let (e, s) = id.trim().split_once('-').ok_or_else(bad)?;
    let (e, s) = (e.parse::<u64>().map_err(|_| bad())?, s.parse::<u64>().map_err(|_| bad())?);
    if e != epoch {
        return Err(ApiError::new(
            StatusCode::GONE,
            "RESUME_GONE",
            format!("event {id} is from an earlier run of the server (this run's ids start with {epoch}-): subscribe again without from="),
        ));
    }
    Ok(s)
}

fn gone(epoch: u64, cursor: u64, oldest: u64) -> ApiError {
    ApiError::new(
        StatusCode::GONE,
        "RESUME_GONE",
        format!("the events after {epoch}-{cursor} are no longer held (the oldest is {epoch}-{oldest}): subscribe again without from="),
    )
}

/// Feed events to the client until it goes, the table is dropped, it falls behind the ring, or
/// the server stops.
async fn stream(
    state: &Arc<State>,
    sub: &Subscription,
    access: zepto_sql::TableAccess,
    mut cursor: u64,
    woken: &Notify,
    tx: &mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    let feed = state.engine.catalog().feed().clone();
    let epoch = feed.epoch();
    loop {
        if state.subscriptions_stopping() {
            return;
        }
        let events = match feed.read(cursor, BATCH) {
            Read::Gone { oldest } => {
                let msg = format!(
                    "{{\"error\":\"SLOW_CONSUMER\",\"message\":\"this subscriber fell behind what the server keeps; resume from a later point or subscribe again\",\"oldest\":\"{epoch}-{oldest}\"}}"
                );
                let _ = send(tx, sse("error", None, &msg)).await;
                return;
            }
            Read::Events(e) => e,
        };
        if events.is_empty() {
            tokio::select! {
                _ = woken.notified() => {}
                _ = state.subscriptions_stop().notified() => return,
                _ = tokio::time::sleep(KEEPALIVE) => {
                    if !send(tx, Bytes::from_static(b": keepalive\n\n")).await {
                        return;
                    }
                }
            }
            continue;
        }
        for e in events {
            cursor = e.seq;
            if !e.table.eq_ignore_ascii_case(&sub.table) {
                continue;
            }
            let id = format!("{epoch}-{}", e.seq);
            let (frame, last) = match event_frame(state, sub, &access, &e, &id).await {
                Ok(f) => f,
                Err(msg) => (Some(sse("error", Some(&id), &msg)), true),
            };
            if let Some(f) = frame {
                if !send(tx, f).await {
                    return;
                }
            }
            if last {
                return;
            }
        }
    }
}

/// The SSE frame for event `e` (`None`: nothing to say, as for an append the filter drops
/// whole), and whether the stream ends after it.
async fn event_frame(
    state: &Arc<State>,
    sub: &Subscription,
    access: &zepto_sql::TableAccess,
    e: &Arc<FeedEvent>,
    id: &str,
) -> Result<(Option<Bytes>, bool), String> {
    let table = json_str(&e.table);
    Ok(match &e.change {
        FeedChange::Append(cols) => {
            let body = rows_of(state, sub, access, e.clone(), cols.len()).await?;
            (body.map(|b| sse("rows", Some(id), &format!("{{\"table\":{table},\"result\":{b}}}"))), false)
        }
        FeedChange::Delete(n) => (Some(sse("delete", Some(id), &format!("{{\"table\":{table},\"rows\":{n}}}"))), false),
        FeedChange::Update(n) => (Some(sse("update", Some(id), &format!("{{\"table\":{table},\"rows\":{n}}}"))), false),
        FeedChange::Drop => (Some(sse("drop", Some(id), &format!("{{\"table\":{table}}}"))), true),
    })
}

/// The subscription's answer over one appended batch, as the JSON `/query` gives; `None`
/// when no row passes. Runs on the blocking pool: it is a query.
async fn rows_of(
    state: &Arc<State>,
    sub: &Subscription,
    access: &zepto_sql::TableAccess,
    e: Arc<FeedEvent>,
    ncols: usize,
) -> Result<Option<String>, String> {
    let base = state.engine.catalog().snapshot(&sub.table).map_err(|x| x.to_string())?;
    let schema = base.schema().clone();
    if schema.len() != ncols {
        // A column was added after this batch: read it with the columns it had.
        return Err(format!("table '{}' changed its columns; subscribe again", sub.table));
    }
    let (sql, name, access) = (sub.sql.clone(), base.name().to_string(), access.clone());
    let run = move || -> Result<Option<String>, String> {
        let FeedChange::Append(cols) = &e.change else { return Ok(None) };
        let delta = Catalog::new();
        let t = Table::new(&name, schema, &TableOptions::default()).map_err(|x| x.to_string())?;
        delta.create(t, false).map_err(|x| x.to_string())?;
        delta.append(&name, cols.iter().map(Column::clone).collect()).map_err(|x| x.to_string())?;
        let engine = Engine::with_catalog(Arc::new(delta)).with_access(access);
        let r = engine.execute(&sql).map_err(|x| x.to_string())?;
        if r.row_count() == 0 {
            return Ok(None);
        }
        let mut enc = Encoder::new(Format::Json, &r, 0.0).map_err(|x| x.body())?;
        let mut out = Vec::new();
        while enc.next_chunk(&mut out).map_err(|x| x.body())? {}
        Ok(Some(String::from_utf8_lossy(&out).trim_end().to_string()))
    };
    tokio::task::spawn_blocking(run).await.map_err(|x| x.to_string())?
}

/// One SSE frame: `event`, `id` if any, and `data` line by line.
fn sse(event: &str, id: Option<&str>, data: &str) -> Bytes {
    let mut s = format!("event: {event}\n");
    if let Some(id) = id {
        s.push_str(&format!("id: {id}\n"));
    }
    for line in data.lines() {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    Bytes::from(s)
}

/// Hand a frame to the client, waiting at most [`SEND_LIMIT`]; false when it is gone.
async fn send(tx: &mpsc::Sender<Result<Bytes, std::io::Error>>, b: Bytes) -> bool {
    matches!(tokio::time::timeout(SEND_LIMIT, tx.send(Ok(b))).await, Ok(Ok(())))
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}
