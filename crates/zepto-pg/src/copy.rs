//! COPY over the connection: `COPY t FROM STDIN` (psql's `\copy ... from`, psycopg's
//! `cursor.copy()`, JDBC's `CopyManager.copyIn`) and `COPY ... TO STDOUT`, in PostgreSQL's text
//! and CSV formats.
//!
//! A COPY FROM is the engine's [`CopyIn`], kept in the session while the client sends
//! CopyData: each piece is decoded as it arrives (off the async threads), the rows are stored
//! whole at CopyDone. A bad line is remembered and the rest of the stream read and dropped;
//! CopyDone then answers the error and nothing is stored, as with CopyFail. A COPY TO runs the
//! query, then streams its rows, one CopyData per row as PostgreSQL sends them.
//!
//! The rows a COPY FROM holds until CopyDone draw on the server's budget of client data in
//! memory (`--max-inflight-body-mb`, shared with HTTP's request bodies) as they are decoded:
//! without it, connections streaming endless COPYs would grow the server's memory until the
//! kernel killed it. A COPY that would overdraw the budget fails (SQLSTATE 53200) and its rows
//! are dropped at once; its share comes back when it ends, however it ends. A COPY that sends
//! nothing for [`COPY_IDLE_LIMIT`] (the HTTP door's limit on a request body) is failed, its
//! rows and share dropped then (CopyDone answers SQLSTATE 57014): a client that stopped
//! halfway would otherwise hold them for as long as its connection stays open.

use crate::error::{pg_error, user_error};
use crate::run::{ConnEngine, Limits};
use crate::types::{field_type, value_text};
use bytes::{Bytes, BytesMut};
use futures::stream;
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::{CopyResponse, Response, Tag};
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::PgWireBackendMessage;
use pgwire::types::format::FormatOptions;
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use zepto_server::admission::Admission;
use zepto_server::inflight::{BodyBudget, Held};
use zepto_sql::copy_client::CopyIn;
use zepto_sql::copy_client::CopyOptions;
use zepto_sql::interrupt::RunContext;
use zepto_sql::parser::ast::Statement;
use zepto_sql::result::QueryResult;

/// The longest a COPY FROM may go without sending data before it is failed.
pub const COPY_IDLE_LIMIT: Duration = Duration::from_secs(300);

/// A COPY FROM receiving rows, and the share of the server's budget they hold.
pub struct Receiving {
    copy: CopyIn,
    held: Held,
    /// Which COPY of the connection this is (its idle watch's ticket).
    id: u64,
    /// When data last came.
    fed: Instant,
    /// Its idle watch, stopped when the COPY ends (not left asleep for the limit).
    _watch: Watch,
}

/// A COPY's idle watch task, aborted when dropped.
struct Watch(Option<tokio::task::AbortHandle>);

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            h.abort();
        }
    }
}

impl Receiving {
    /// Hold the budget for the rows decoded so far, or fail the COPY (its rows are dropped
    /// with it, at once).
    fn cover(&mut self) -> PgWireResult<()> {
        let held = self.copy.held();
        self.held.try_cover(held).map_err(|over| {
            user_error(
                "53200",
                format!(
                    "COPY FROM STDIN: the server holds as much client data as it may ({} MiB in flight, \
                     this COPY's rows {} MiB; --max-inflight-body-mb raises it); nothing was stored: \
                     retry shortly, or send the rows in smaller COPYs",
                    over.budget_bytes >> 20,
                    held >> 20
                ),
            )
        })
    }
}

/// The connection's COPY FROM under way: receiving, or failed (the error CopyDone answers);
/// and how many COPYs the connection has begun.
#[derive(Default)]
pub struct CopyState(Mutex<Option<Result<Receiving, PgWireError>>>, AtomicU64);

impl CopyState {
    fn take(&self) -> Option<Result<Receiving, PgWireError>> {
        self.0.lock().ok()?.take()
    }

    fn put(&self, state: Result<Receiving, PgWireError>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(state);
        }
    }

    /// Begin receiving `copy` under `held`, failed by [`watch_idle`] once idle for `limit`;
    /// its ticket.
    fn begin(self: &Arc<Self>, copy: CopyIn, held: Held, limit: Duration) -> u64 {
        let id = self.1.fetch_add(1, Ordering::Relaxed) + 1;
        let watch = tokio::spawn(watch_idle(Arc::downgrade(self), id, limit)).abort_handle();
        self.put(Ok(Receiving { copy, held, id, fed: Instant::now(), _watch: Watch(Some(watch)) }));
        id
    }

    /// Feed `data` to the COPY under way (under the lock, so an idle watch never sees it
    /// missing while it is fed); a failure is kept for CopyDone.
    fn feed(&self, data: &[u8]) {
        let Ok(mut slot) = self.0.lock() else { return };
        let next = match slot.take() {
            Some(Ok(mut r)) => match tokio::task::block_in_place(|| r.copy.feed(data)) {
                Ok(()) => r.cover().map(|()| {
                    r.fed = Instant::now();
                    r
                }),
                Err(e) => Err(pg_error(&e, "")),
            },
            Some(failed) => failed,
            None => Err(user_error("08P01", "CopyData outside a COPY FROM STDIN")),
        };
        *slot = Some(next);
    }

    /// COPY `id`, if it is still under way: failed when it has been idle for `limit` (its
    /// rows and budget share dropped now; `None`), else how long until it would be. `None`
    /// too when it has ended or failed.
    fn expire_idle(&self, id: u64, limit: Duration) -> Option<Duration> {
        let mut slot = match self.0.try_lock() {
            Ok(slot) => slot,
            // Being fed this moment: not idle.
            Err(std::sync::TryLockError::WouldBlock) => return Some(limit),
            Err(std::sync::TryLockError::Poisoned(_)) => return None,
        };
        let idle = match slot.as_ref() {
            Some(Ok(r)) if r.id == id => r.fed.elapsed(),
            _ => return None,
        };
        if idle < limit {
            return Some(limit - idle);
        }
        let message = format!(
            "COPY FROM STDIN sent no data for {} s and was failed; nothing was stored",
            limit.as_secs_f64().round()
        );
        *slot = Some(Err(user_error("57014", message)));
        None
    }
}

/// Fail COPY `id` of the connection whose state is `state` once it has sent no data for
/// `limit` ([`COPY_IDLE_LIMIT`] for clients); over when the COPY or the connection ends.
async fn watch_idle(state: Weak<CopyState>, id: u64, limit: Duration) {
    let mut wait = limit;
    loop {
        tokio::time::sleep(wait).await;
        let Some(state) = state.upgrade() else { return };
        match state.expire_idle(id, limit) {
            Some(left) => wait = left.max(Duration::from_millis(10)),
            None => return,
        }
    }
}

/// What a COPY runs under: the query slots (a COPY TO's query), the statement limits, the
/// budget a COPY FROM's rows draw on.
pub struct Door<'a> {
    pub gate: &'a Admission,
    pub limits: Limits,
    pub bodies: &'a BodyBudget,
}

/// Drop a COPY FROM the client left (a query sent in its place: PostgreSQL's protocol ends the
/// COPY with an error, which pgwire answers without a CopyFail): its rows and its share of the
/// budget go at once, not when the connection closes.
pub fn abandon<C: ClientInfo + ?Sized>(client: &C) {
    if let Some(state) = client.session_extensions().get::<CopyState>() {
        drop(state.take());
    }
}

/// Start `s` (a client COPY, text `sql`) on `conn`: CopyIn for a COPY FROM (its state kept in
/// `state`), the rows streamed for a COPY TO.
pub async fn start(
    conn: &Arc<ConnEngine>,
    state: &Arc<CopyState>,
    s: Statement,
    sql: &str,
    door: Door<'_>,
) -> PgWireResult<Response> {
    let Door { gate, limits, bodies } = door;
    let engine = conn.0.lock().map(|e| e.clone()).map_err(|_| user_error("XX000", "engine lock"))?;
    if let Statement::CopyFrom { .. } = s {
        let copy = engine.copy_in(&s, limits.memory).map_err(|e| pg_error(&e, sql))?;
        let width = copy.width();
        state.begin(copy, bodies.share(), COPY_IDLE_LIMIT);
        return Ok(Response::CopyIn(CopyResponse::new(0, width, stream::empty())));
    }
    let (r, opts) = crate::run::in_slot(gate, limits, false, sql, move |run| engine.copy_out(run, &s)).await?;
    let width = r.fields.len();
    Ok(Response::CopyOut(CopyResponse::new(0, width, stream::iter(CopyRows::new(r, opts)))))
}

/// The rows of a COPY TO as CopyData messages, the header (if asked for) in the first.
struct CopyRows {
    result: QueryResult,
    opts: CopyOptions,
    types: Vec<postgres_types::Type>,
    chunk: usize,
    row: usize,
    header: Option<Vec<u8>>,
    value: BytesMut,
    format: FormatOptions,
}

impl CopyRows {
    fn new(result: QueryResult, opts: CopyOptions) -> CopyRows {
        let types = result.fields.iter().map(field_type).collect();
        let header = opts.header().then(|| {
            let names: Vec<String> = result.fields.iter().map(|f| f.name.clone()).collect();
            let mut out = Vec::new();
            opts.push_header(&names, &mut out);
            out
        });
        CopyRows {
            result,
            opts,
            types,
            chunk: 0,
            row: 0,
            header,
            value: BytesMut::new(),
            format: FormatOptions::default(),
        }
    }

    /// Row `i` of `columns` in the COPY's format, after `out`'s bytes.
    fn encode(&mut self, columns: &[Arc<zepto_storage::Column>], i: usize, mut out: Vec<u8>) -> PgWireResult<Bytes> {
        for (k, (c, ty)) in columns.iter().zip(&self.types).enumerate() {
            self.value.clear();
            let valid = value_text(&mut self.value, c, i, ty, &self.format)?;
            self.opts.push_field(valid.then_some(&self.value[..]), k, &mut out);
        }
        self.opts.end_row(&mut out);
        Ok(Bytes::from(out))
    }
}

impl Iterator for CopyRows {
    type Item = PgWireResult<CopyData>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(batch) = self.result.chunks().get(self.chunk) else {
                // No rows: the header alone.
                return self.header.take().map(|h| Ok(CopyData::new(Bytes::from(h))));
            };
            if self.row < batch.rows {
                let (columns, i) = (batch.columns.clone(), self.row);
                self.row += 1;
                let out = self.header.take().unwrap_or_default();
                return Some(self.encode(&columns, i, out).map(CopyData::new));
            }
            (self.chunk, self.row) = (self.chunk + 1, 0);
        }
    }
}

/// The answers to the messages of a COPY FROM: its rows stored under `limits` (or held in
/// the connection's transaction, under `bodies`, the server's budget of client data).
pub struct Copier {
    limits: Limits,
    bodies: BodyBudget,
}

impl Copier {
    /// A handler storing rows under `limits`.
    pub fn new(limits: Limits, bodies: BodyBudget) -> Copier {
        Copier { limits, bodies }
    }

    /// The rows of the COPY `state` held, stored (or held in the connection's transaction):
    /// how many.
    async fn finish(&self, state: Option<Result<Receiving, PgWireError>>) -> PgWireResult<usize> {
        let Receiving { copy, held, .. } = match state {
            Some(r) => r?,
            None => return Err(user_error("08P01", "CopyDone outside a COPY FROM STDIN")),
        };
        let ctl = self.limits.control();
        let job = move || {
            let stored = copy.finish(&RunContext::new(Some(ctl)));
            // The rows' share of the budget is held until they are stored (or refused).
            drop(held);
            stored
        };
        let r = match tokio::task::spawn_blocking(job).await {
            Ok(r) => r.map_err(|e| pg_error(&e, ""))?,
            Err(e) => return Err(PgWireError::ApiError(Box::new(e))),
        };
        Ok(r.status.as_deref().and_then(|s| s.strip_prefix("COPY ")).and_then(|n| n.parse().ok()).unwrap_or(0))
    }

    /// A COPY ended: a failure fails the connection's transaction, if any (as any statement's
    /// does); rows held in it are covered by the budget.
    fn ended<C: ClientInfo + ?Sized>(&self, client: &C, r: PgWireResult<()>) -> PgWireResult<()> {
        let ext = client.session_extensions();
        let (Some(conn), share) = (ext.get::<ConnEngine>(), ext.get_or_insert_with(crate::txn::Share::default)) else {
            return r;
        };
        match r {
            Ok(()) => crate::txn::cover(&conn, &self.bodies, &share),
            Err(e) => {
                crate::txn::failed(&conn);
                Err(e)
            }
        }
    }
}

#[async_trait::async_trait]
impl CopyHandler for Copier {
    async fn on_copy_data<C>(&self, client: &mut C, data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        client.session_extensions().get_or_insert_with(CopyState::default).feed(&data.data);
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        use futures::SinkExt;
        let state = client.session_extensions().get_or_insert_with(CopyState::default);
        let stored = self.finish(state.take()).await;
        let n = stored.as_ref().map_or(0, |n| *n);
        self.ended(client, stored.map(drop))?;
        client.send(PgWireBackendMessage::CommandComplete(Tag::new("COPY").with_rows(n).into())).await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        let state = client.session_extensions().get_or_insert_with(CopyState::default);
        drop(state.take());
        let e = user_error("57014", format!("COPY from stdin failed: {}; nothing was stored", fail.message));
        match self.ended(client, Err(e)) {
            Err(e) => e,
            Ok(()) => user_error("57014", "COPY from stdin failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_sql::parser::parse_statements;
    use zepto_sql::Engine;

    /// A COPY FROM STDIN of `t` begun on `state`, holding a share of `budget`, fed one row.
    fn copying(engine: &Engine, state: &Arc<CopyState>, budget: &BodyBudget) -> u64 {
        let s = parse_statements("COPY t FROM STDIN").expect("parses").remove(0);
        let id = state.begin(engine.copy_in(&s, None).expect("a COPY"), budget.share(), COPY_IDLE_LIMIT);
        state.feed(b"1\tx\n");
        id
    }

    fn failed_with(state: &CopyState) -> Option<String> {
        match state.take()? {
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        }
    }

    /// A COPY that goes quiet is failed after the limit, its budget share given back at once;
    /// one that keeps sending is not; the watch ends with the COPY or the connection.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_silent_copy_is_failed_and_gives_back_its_share() {
        let engine = Engine::new();
        engine.execute("CREATE TABLE t (n BIGINT, s VARCHAR)").expect("table");
        let budget = BodyBudget::new(64 << 20);
        let limit = Duration::from_millis(200);

        let quiet = Arc::new(CopyState::default());
        let id = copying(&engine, &quiet, &budget);
        assert!(budget.held() > 0, "the fed row holds a share");
        let t0 = Instant::now();
        watch_idle(Arc::downgrade(&quiet), id, limit).await;
        assert!(t0.elapsed() >= limit);
        assert_eq!(budget.held(), 0, "the share comes back when the COPY is failed");
        let err = failed_with(&quiet).expect("failed, for CopyDone to answer");
        assert!(err.contains("57014") && err.contains("sent no data"), "{err}");

        // Fed every 50 ms for 600 ms: never idle for the limit.
        let busy = Arc::new(CopyState::default());
        let id = copying(&engine, &busy, &budget);
        let watch = tokio::spawn(watch_idle(Arc::downgrade(&busy), id, limit));
        for _ in 0..12 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            busy.feed(b"2\ty\n");
        }
        assert!(!watch.is_finished(), "the watch goes on while the COPY is under way");
        assert!(matches!(busy.take(), Some(Ok(_))), "still receiving");
        // Ended (CopyDone took it): the watch stops at its next look, and budget is back.
        tokio::time::timeout(limit * 3, watch).await.expect("the watch ends").expect("joins");
        assert_eq!(budget.held(), 0);

        // The connection closed: the watch ends without touching anything.
        let gone = Arc::new(CopyState::default());
        let id = copying(&engine, &gone, &budget);
        let watch = tokio::spawn(watch_idle(Arc::downgrade(&gone), id, limit));
        drop(gone);
        assert_eq!(budget.held(), 0, "the connection's COPY went with it");
        tokio::time::timeout(limit * 3, watch).await.expect("the watch ends").expect("joins");

        // A later COPY of the same connection is not failed by an earlier one's watch.
        let conn = Arc::new(CopyState::default());
        let first = copying(&engine, &conn, &budget);
        let watch = tokio::spawn(watch_idle(Arc::downgrade(&conn), first, limit));
        drop(conn.take());
        let _second = copying(&engine, &conn, &budget);
        tokio::time::timeout(limit * 3, watch).await.expect("the watch ends").expect("joins");
        assert!(matches!(conn.take(), Some(Ok(_))), "the second COPY is untouched");
    }
}
