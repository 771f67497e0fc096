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
//! Keys, grants and tenant scopes apply as for queries: what a query a stream can answer is,
//! and how each batch is queried with the key's access, is `zepto_sql::subscription`'s.

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
use zepto_sql::subscription::{start_point, StartError, Subscription};
use zepto_storage::feed::{FeedChange, FeedEvent, Read};

/// A comment line sent when nothing happened for this long (keeps proxies from closing).
const KEEPALIVE: Duration = Duration::from_secs(15);
/// A client that does not read an event for this long is dropped.
const SEND_LIMIT: Duration = Duration::from_secs(30);
/// Events read from the feed at a time.
const BATCH: usize = 64;

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
    let sub = Subscription::new(&state.engine.with_access(who.tables.clone()), sql)?;
    let arrow = match get("format") {
        None => false,
        Some(f) if f.eq_ignore_ascii_case("json") => false,
        Some(f) if f.eq_ignore_ascii_case("arrow") => true,
        Some(f) => return Err(ApiError::bad_request(format!("format={f}: a subscription sends json or arrow"))),
    };
    let feed = state.engine.catalog().feed().clone();
    let woken = Arc::new(Notify::new());
    let w = woken.clone();
    let attached = feed.subscribe(Arc::new(move || w.notify_one()));
    let cursor = start_point(&feed, get("from").or(last_event_id)).map_err(|e| match e {
        StartError::BadId(m) => ApiError::bad_request(m),
        StartError::Gone(m) => ApiError::new(StatusCode::GONE, "RESUME_GONE", m),
    })?;
    let (tx, rx) = mpsc::channel(8);
    let st = state.clone();
    tokio::spawn(async move {
        st.metrics.subscribers.inc();
        stream(&st, &sub, arrow, cursor, &woken, &tx).await;
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

/// Feed events to the client until it goes, the table is dropped, it falls behind the ring, or
/// the server stops.
async fn stream(
    state: &Arc<State>,
    sub: &Subscription,
    arrow: bool,
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
            if !sub.reads(&e.table) {
                continue;
            }
            let id = format!("{epoch}-{}", e.seq);
            let (frame, last) = match event_frame(sub, arrow, &e, &id).await {
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
    sub: &Subscription,
    arrow: bool,
    e: &Arc<FeedEvent>,
    id: &str,
) -> Result<(Option<Bytes>, bool), String> {
    let table = json_str(&e.table);
    Ok(match &e.change {
        FeedChange::Append(_) => {
            let body = rows_of(sub, arrow, e.clone()).await?;
            let key = if arrow { "arrow" } else { "result" };
            (body.map(|b| sse("rows", Some(id), &format!("{{\"table\":{table},\"{key}\":{b}}}"))), false)
        }
        FeedChange::Delete(n) => (Some(sse("delete", Some(id), &format!("{{\"table\":{table},\"rows\":{n}}}"))), false),
        FeedChange::Update(n) => (Some(sse("update", Some(id), &format!("{{\"table\":{table},\"rows\":{n}}}"))), false),
        FeedChange::Drop => (Some(sse("drop", Some(id), &format!("{{\"table\":{table}}}"))), true),
    })
}

/// The subscription's answer over one appended batch as a JSON value: the JSON `/query`
/// gives, or (`arrow`) a string of the Arrow IPC stream in base64; `None` when no row
/// passes. Runs on the blocking pool: it is a query.
async fn rows_of(sub: &Subscription, arrow: bool, e: Arc<FeedEvent>) -> Result<Option<String>, String> {
    use base64::Engine as _;
    let sub = sub.clone();
    let run = move || -> Result<Option<String>, String> {
        let FeedChange::Append(cols) = &e.change else { return Ok(None) };
        let Some(r) = sub.answer(cols).map_err(|x| x.to_string())? else { return Ok(None) };
        let format = if arrow { Format::Arrow(None) } else { Format::Json };
        let mut enc = Encoder::new(format, &r, 0.0).map_err(|x| x.body())?;
        let mut out = Vec::new();
        while enc.next_chunk(&mut out).map_err(|x| x.body())? {}
        if arrow {
            return Ok(Some(format!("\"{}\"", base64::engine::general_purpose::STANDARD.encode(&out))));
        }
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
