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
//! are dropped at once; its share comes back when it ends, however it ends.

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
use std::sync::{Arc, Mutex};
use zepto_server::admission::Admission;
use zepto_server::inflight::{BodyBudget, Held};
use zepto_sql::copy_client::CopyIn;
use zepto_sql::copy_client::CopyOptions;
use zepto_sql::interrupt::RunContext;
use zepto_sql::parser::ast::Statement;
use zepto_sql::result::QueryResult;

/// A COPY FROM receiving rows, and the share of the server's budget they hold.
pub struct Receiving {
    copy: CopyIn,
    held: Held,
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

/// The connection's COPY FROM under way: receiving, or failed (the error CopyDone answers).
#[derive(Default)]
pub struct CopyState(Mutex<Option<Result<Receiving, PgWireError>>>);

impl CopyState {
    fn take(&self) -> Option<Result<Receiving, PgWireError>> {
        self.0.lock().ok()?.take()
    }

    fn put(&self, state: Result<Receiving, PgWireError>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(state);
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
    state: &CopyState,
    s: Statement,
    sql: &str,
    door: Door<'_>,
) -> PgWireResult<Response> {
    let Door { gate, limits, bodies } = door;
    let engine = conn.0.lock().map(|e| e.clone()).map_err(|_| user_error("XX000", "engine lock"))?;
    if let Statement::CopyFrom { .. } = s {
        let copy = engine.copy_in(&s, limits.memory).map_err(|e| pg_error(&e, sql))?;
        let width = copy.width();
        state.put(Ok(Receiving { copy, held: bodies.share() }));
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

/// The answers to the messages of a COPY FROM: its rows stored under `limits`.
pub struct Copier {
    limits: Limits,
}

impl Copier {
    /// A handler storing rows under `limits`.
    pub fn new(limits: Limits) -> Copier {
        Copier { limits }
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
        let state = client.session_extensions().get_or_insert_with(CopyState::default);
        let next = match state.take() {
            Some(Ok(mut r)) => match tokio::task::block_in_place(|| r.copy.feed(&data.data)) {
                Ok(()) => r.cover().map(|()| r),
                Err(e) => Err(pg_error(&e, "")),
            },
            Some(failed) => failed,
            None => Err(user_error("08P01", "CopyData outside a COPY FROM STDIN")),
        };
        state.put(next);
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
        let Receiving { copy, held } = match state.take() {
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
        let n = r.status.as_deref().and_then(|s| s.strip_prefix("COPY ")).and_then(|n| n.parse().ok()).unwrap_or(0);
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
        user_error("57014", format!("COPY from stdin failed: {}; nothing was stored", fail.message))
    }
}
