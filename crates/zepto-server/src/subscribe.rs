//! `GET /subscribe?query=SQL[&from=ID|&from_lsn=N]`: a query's rows as each write commits
//! them, pushed as Server-Sent Events (`text/event-stream`) or WebSocket messages. The query
//! reads one table, row by row (a projection and a `WHERE` filter: no aggregate, join,
//! subquery, ORDER BY or LIMIT, which have no meaning over a stream of appends), or a
//! materialized view; each committed append to that table is run through it, and a non-empty
//! answer is one `rows` event. Deletes and updates of the table are `delete`/`update` events
//! with their row counts; a drop is a `drop` event that ends the stream.
//!
//! Every event's `id` is `TIMELINE-LSN` (`TIMELINE-LSN.K` for an event before the last of its
//! write): the write's record in the write-ahead log, on the database's timeline
//! (`zepto_storage::feed`). A client that reconnects with `Last-Event-ID` (what browsers'
//! `EventSource` send), `from=ID` or `from_lsn=N` resumes after that point, missing and
//! repeating nothing, while the feed's ring or the log still holds what followed it (a
//! restart, even after `kill -9`, keeps the log: `zepto_storage::feed::cursor`); otherwise it
//! is told so (410 `RESUME_GONE`). A subscriber that reads too slowly for the feed's ring gets
//! an `error` event `SLOW_CONSUMER`, then the end of the stream, and resumes from its last id:
//! a slow subscriber never slows writers or other subscribers.
//!
//! Keys, grants and tenant scopes apply as for queries: what a query a stream can answer is,
//! and how each batch is queried with the key's access, is `zepto_sql::subscription`'s.
//!
//! Every query a subscription runs takes one of the server's query slots, as a statement does
//! ([`crate::admission`]): a table's query over an appended batch of at most
//! [`crate::sql::QUICK_ROWS`] rows takes the quick lane, a view's query (and its difference) a
//! query slot. A view subscribed to from now is answered once at the start, and refused (503
//! `SERVER_BUSY`) when no slot frees within `--queue-timeout`. Once streaming, a subscriber
//! waits for a slot as long as it takes (its next events wait in the feed's ring; if they
//! left it meanwhile, its next read of the feed tells it `SLOW_CONSUMER`); a stop ends the
//! wait and the stream, with no event for the change it waited on.

use crate::admission::Refused;
use crate::auth::{self, Principal};
use crate::body::ResponseBody;
use crate::encode::{Encoder, Format};
use crate::error::ApiError;
use crate::sql::Running;
use crate::state::State;
use crate::subscribe_shared::{Group, Rows, ViewGroup};
use bytes::Bytes;
use futures_util::SinkExt;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Message, Role};
use tokio_tungstenite::WebSocketStream;
use zepto_sql::interrupt::{QueryControl, RunContext};
use zepto_sql::subscription::{Answer, Start, Subscription, ViewAnswer};
use zepto_storage::feed::cursor::{Cursor, CursorError};
use zepto_storage::feed::{FeedChange, FeedEvent};

/// A comment line sent when nothing happened for this long (keeps proxies from closing).
const KEEPALIVE: Duration = Duration::from_secs(15);
/// A client that does not read an event for this long is dropped.
const SEND_LIMIT: Duration = Duration::from_secs(30);
/// Events read from the feed at a time.
const BATCH: usize = 64;

/// Start a subscription (see the module docs).
pub async fn start(
    state: &Arc<State>,
    who: &Principal,
    params: &[(String, String)],
    req: &mut Request<Incoming>,
) -> Result<Response<ResponseBody>, ApiError> {
    let header = |n: &str| req.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    let last_event_id = header("last-event-id");
    let websocket = header("upgrade").is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let ws_key = header("sec-websocket-key");
    who.require(auth::Role::Reader)?;
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let sql =
        get("query").filter(|q| !q.trim().is_empty()).ok_or_else(|| ApiError::bad_request("query= is required"))?;
    // A reconnecting EventSource sends the id of the last event it got: that wins over the
    // URL's starting point (from= or from_lsn=), which it also sends again.
    let start = match (last_event_id.as_deref(), get("from"), get("from_lsn")) {
        (Some(id), _, _) => Start::Id(id),
        (None, Some(_), Some(_)) => return Err(ApiError::bad_request("from= and from_lsn= are exclusive")),
        (None, Some(id), None) => Start::Id(id),
        (None, None, Some(n)) => Start::Lsn(
            n.trim().parse().map_err(|_| ApiError::bad_request(format!("from_lsn={n}: an LSN is a whole number")))?,
        ),
        (None, None, None) => Start::Now,
    };
    let sub = Subscription::new(&state.engine.with_access(who.tables.clone()), sql)?;
    // A view's subscriber from now is told what changes after its answer now: a query over the
    // view, under a query slot.
    let sub = if matches!(start, Start::Now) && sub.over_view() {
        let slot = crate::sql::admit(state).await?;
        let (ctl, _running) = controlled(state);
        let job = move || sub.from_now_in(&RunContext::new(Some(ctl)));
        state.admission.run_in(slot, job).await.map_err(crate::sql::refused)??
    } else {
        sub
    };
    let arrow = match get("format") {
        None => false,
        Some(f) if f.eq_ignore_ascii_case("json") => false,
        Some(f) if f.eq_ignore_ascii_case("arrow") => true,
        Some(f) => return Err(ApiError::bad_request(format!("format={f}: a subscription sends json or arrow"))),
    };
    // Subscribers of the same query, key and format share each change's event.
    let group = if sub.over_view() {
        Shared::View(state.subscriptions.view_group(sql, &who.name, arrow))
    } else {
        Shared::Table(state.subscriptions.group(sql, &who.name, arrow))
    };
    let sub = Subscriber { sub, arrow, group };
    let feed = state.engine.catalog().feed().clone();
    let woken = Arc::new(Notify::new());
    let w = woken.clone();
    let attached = feed.subscribe(Arc::new(move || w.notify_one()));
    let cursor = sub.sub.cursor(start).map_err(|e| match e {
        CursorError::BadId(m) => ApiError::bad_request(m),
        CursorError::Gone(m) | CursorError::Behind(m) => ApiError::new(StatusCode::GONE, "RESUME_GONE", m),
    })?;
    let st = state.clone();
    if websocket {
        let key = ws_key.ok_or_else(|| ApiError::bad_request("a WebSocket upgrade needs Sec-WebSocket-Key"))?;
        let upgrade = hyper::upgrade::on(req);
        tokio::spawn(async move {
            let Ok(io) = upgrade.await else { return };
            let ws = WebSocketStream::from_raw_socket(TokioIo::new(io), Role::Server, None).await;
            st.metrics.subscribers.inc();
            stream(&st, &sub, cursor, &woken, &mut Sink::Ws(Box::new(ws))).await;
            st.metrics.subscribers.dec();
            drop(attached);
        });
        let mut resp = Response::new(ResponseBody::empty());
        *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let h = resp.headers_mut();
        h.insert(hyper::header::UPGRADE, hyper::header::HeaderValue::from_static("websocket"));
        h.insert(hyper::header::CONNECTION, hyper::header::HeaderValue::from_static("Upgrade"));
        let accept = derive_accept_key(key.as_bytes());
        h.insert(
            "sec-websocket-accept",
            hyper::header::HeaderValue::from_str(&accept).map_err(|e| ApiError::internal(e.to_string()))?,
        );
        return Ok(resp);
    }
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(async move {
        st.metrics.subscribers.inc();
        stream(&st, &sub, cursor, &woken, &mut Sink::Sse(tx)).await;
        st.metrics.subscribers.dec();
        drop(attached);
    });
    let mut resp = Response::new(ResponseBody::stream(rx, Box::new(())));
    *resp.status_mut() = StatusCode::OK;
    let h = resp.headers_mut();
    h.insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("text/event-stream"));
    h.insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-cache"));
    Ok(resp)
}

/// One client's subscription: its query, its format, and the group of identical subscribers
/// it shares events with.
struct Subscriber {
    sub: Subscription,
    arrow: bool,
    group: Shared,
}

/// The identical subscribers one shares events with: of a table, or of a view.
enum Shared {
    Table(Arc<Group>),
    View(Arc<ViewGroup>),
}

/// Feed events to the client until it goes, the table is dropped, it falls behind the ring, or
/// the server stops.
async fn stream(state: &Arc<State>, sub: &Subscriber, mut cursor: Cursor, woken: &Notify, out: &mut Sink) {
    let catalog = state.engine.catalog().clone();
    let timeline = catalog.feed().epoch();
    loop {
        if state.shutting_down() {
            return;
        }
        // Reading back from the log is file work: off the async threads.
        let read = if cursor.in_ring() {
            cursor.read(&catalog, BATCH)
        } else {
            let cat = catalog.clone();
            let Ok((c, read)) = tokio::task::spawn_blocking(move || {
                let r = cursor.read(&cat, BATCH);
                (cursor, r)
            })
            .await
            else {
                return;
            };
            cursor = c;
            read
        };
        let events = match read {
            Ok(e) => e,
            Err(e) => {
                let (code, from) = match e {
                    CursorError::Behind(_) => ("SLOW_CONSUMER", Some(cursor.position().id(timeline))),
                    _ => ("RESUME_GONE", None),
                };
                let from = from.map(|id| format!(",\"resume_from\":{}", json_str(&id))).unwrap_or_default();
                let msg = format!("{{\"error\":\"{code}\",\"message\":{}{from}}}", json_str(&e.to_string()));
                let _ = out.send("error", None, &msg).await;
                return;
            }
        };
        if events.is_empty() {
            tokio::select! {
                _ = woken.notified() => {}
                _ = state.closing() => return,
                _ = tokio::time::sleep(KEEPALIVE) => {
                    if !out.keepalive().await {
                        return;
                    }
                }
            }
            continue;
        }
        for e in events {
            if !sub.sub.reads(&e.table) {
                continue;
            }
            let id = e.pos.id(timeline);
            let (frame, last) = match event_frame(state, sub, &e).await {
                Ok(f) => f,
                // Stopping: no event under this id (the client resumes from its last one, and
                // gets this change then), as for any stream a shutdown ends.
                Err(_) if state.shutting_down() => return,
                Err(msg) => (Some(("error", json_str(&msg))), true),
            };
            if let Some((kind, data)) = frame {
                if !out.send(kind, Some(&id), &data).await {
                    return;
                }
            }
            if last {
                return;
            }
        }
    }
}

/// The event for feed event `e`, its kind and JSON data (`None`: nothing to say, as for an
/// append the filter drops whole), and whether the stream ends after it.
async fn event_frame(
    state: &Arc<State>,
    sub: &Subscriber,
    e: &Arc<FeedEvent>,
) -> Result<(Option<(&'static str, String)>, bool), String> {
    let table = json_str(&e.table);
    let over_view = sub.sub.over_view();
    Ok(match &e.change {
        FeedChange::Delete(n) if !over_view => (Some(("delete", format!("{{\"table\":{table},\"rows\":{n}}}"))), false),
        FeedChange::Update(n) if !over_view => (Some(("update", format!("{{\"table\":{table},\"rows\":{n}}}"))), false),
        FeedChange::Append(_) | FeedChange::Delete(_) | FeedChange::Update(_) => {
            let body = match &sub.group {
                Shared::Table(g) => g.event(e.pos, || rows_of(state, &sub.sub, sub.arrow, e.clone())).await,
                Shared::View(g) => {
                    let now = || answer_now(state, &sub.sub);
                    let diff = |next| view_rows(state, &sub.sub, sub.arrow, next);
                    g.event(e.pos, sub.sub.last_answer(), now, diff, |next| sub.sub.skip_to(next)).await
                }
            };
            let key = if sub.arrow { "arrow" } else { "result" };
            let event = |(rows, removed): &(String, Option<String>)| {
                let removed = removed.as_ref().map(|r| format!(",\"removed\":{r}")).unwrap_or_default();
                ("rows", format!("{{\"table\":{table},\"{key}\":{rows}{removed}}}"))
            };
            (body.as_ref().as_ref().map_err(String::clone)?.as_ref().map(event), false)
        }
        FeedChange::Drop => (Some(("drop", format!("{{\"table\":{table}}}"))), true),
    })
}

/// A table subscription's answer to one appended batch as JSON values ([`encode_answer`]):
/// the quick lane's work when the batch is small ([`crate::sql::QUICK_ROWS`]).
async fn rows_of(state: &Arc<State>, sub: &Subscription, arrow: bool, e: Arc<FeedEvent>) -> Rows {
    let rows = match &e.change {
        FeedChange::Append(cols) => cols.first().map_or(0, |c| c.len()),
        _ => 0,
    };
    let quick = rows <= crate::sql::QUICK_ROWS;
    in_slot(state, quick, sub, move |sub, run| {
        encode_answer(sub.answer_change_in(run, &e.change).map_err(|x| x.to_string())?, arrow)
    })
    .await
}

/// A view subscription's query over the view now.
async fn answer_now(state: &Arc<State>, sub: &Subscription) -> Result<ViewAnswer, String> {
    in_slot(state, false, sub, |sub, run| sub.answer_now_in(run).map_err(|x| x.to_string())).await
}

/// A view subscription's event to answer `next`: what changed since its last answer, which
/// `next` becomes ([`encode_answer`]).
async fn view_rows(state: &Arc<State>, sub: &Subscription, arrow: bool, next: ViewAnswer) -> Rows {
    in_slot(state, false, sub, move |sub, _| encode_answer(sub.advance_to(&next), arrow)).await
}

/// A subscription query's control under the server's limits (`--query-timeout`,
/// `--query-memory-mb`), counted among the running statements (a stop cancels it) until the
/// guard drops; dropping it cancels the query (its stream's task was dropped).
fn controlled(state: &Arc<State>) -> (Arc<QueryControl>, Running) {
    let ctl = QueryControl::new(state.config.query_timeout, state.config.query_memory_limit);
    let running = Running::start(state, &ctl);
    (ctl, running)
}

/// `work` over (a clone of) `sub` under a query slot (the quick lane's for `quick` work), on
/// its lane's threads, under the server's limits ([`controlled`]): each is a query, or a
/// large view's difference. Waits through busy spells (module docs); a stop ends the wait.
async fn in_slot<T: Send + 'static>(
    state: &Arc<State>,
    quick: bool,
    sub: &Subscription,
    work: impl FnOnce(Subscription, &RunContext) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let slot = loop {
        let admitted = tokio::select! {
            a = state.admission.admit_for(quick) => a,
            () = state.closing() => Err(Refused::Stopping),
        };
        match admitted {
            Ok(slot) => break slot,
            Err(Refused::Busy { .. }) => {}
            Err(e) => return Err(e.to_string()),
        }
    };
    let (ctl, _running) = controlled(state);
    let sub = sub.clone();
    let job = move || work(sub, &RunContext::new(Some(ctl)));
    state.admission.run_in(slot, job).await.map_err(|x| x.to_string())?
}

/// An answer as JSON values: its new rows, and the rows a view no longer has, if any. Each is
/// the JSON `/query` gives, or (`arrow`) a string of the Arrow IPC stream in base64; `None`
/// when there is nothing to send.
fn encode_answer(a: Option<Answer>, arrow: bool) -> Result<Option<(String, Option<String>)>, String> {
    let Some(a) = a else { return Ok(None) };
    let removed = a.removed.as_ref().map(|r| encoded(r, arrow)).transpose()?;
    Ok(Some((encoded(&a.rows, arrow)?, removed)))
}

/// `r` as a JSON value: `/query`'s JSON, or (`arrow`) its Arrow IPC stream as a base64 string.
fn encoded(r: &zepto_sql::QueryResult, arrow: bool) -> Result<String, String> {
    use base64::Engine as _;
    let format = if arrow { Format::Arrow(None) } else { Format::Json };
    let mut enc = Encoder::new(format, r, 0.0).map_err(|x| x.body())?;
    let mut out = Vec::new();
    while enc.next_chunk(&mut out).map_err(|x| x.body())? {}
    if arrow {
        return Ok(format!("\"{}\"", base64::engine::general_purpose::STANDARD.encode(&out)));
    }
    Ok(String::from_utf8_lossy(&out).trim_end().to_string())
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

/// Where a subscription's events go: a Server-Sent Events body, or a WebSocket.
enum Sink {
    Sse(mpsc::Sender<Result<Bytes, std::io::Error>>),
    Ws(Box<WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>>),
}

impl Sink {
    /// Hand an event to the client, waiting at most [`SEND_LIMIT`]; false when it is gone.
    /// A WebSocket message is one text frame: `{"event","id","data"}`.
    async fn send(&mut self, kind: &str, id: Option<&str>, data: &str) -> bool {
        match self {
            Sink::Sse(tx) => {
                let frame = sse(kind, id, data);
                matches!(tokio::time::timeout(SEND_LIMIT, tx.send(Ok(frame))).await, Ok(Ok(())))
            }
            Sink::Ws(ws) => {
                let id = id.map_or_else(|| "null".to_string(), json_str);
                let text = format!("{{\"event\":{},\"id\":{id},\"data\":{data}}}", json_str(kind));
                matches!(tokio::time::timeout(SEND_LIMIT, ws.send(Message::Text(text.into()))).await, Ok(Ok(())))
            }
        }
    }

    /// Tell an idle client the stream is alive: an SSE comment, a WebSocket ping.
    async fn keepalive(&mut self) -> bool {
        match self {
            Sink::Sse(tx) => {
                let frame = Bytes::from_static(b": keepalive\n\n");
                matches!(tokio::time::timeout(SEND_LIMIT, tx.send(Ok(frame))).await, Ok(Ok(())))
            }
            Sink::Ws(ws) => {
                matches!(tokio::time::timeout(SEND_LIMIT, ws.send(Message::Ping(Bytes::new()))).await, Ok(Ok(())))
            }
        }
    }
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}
