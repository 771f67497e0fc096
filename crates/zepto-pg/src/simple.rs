//! The simple-query flow: a Query message's statements answered in order, then ReadyForQuery.
//! It is pgwire's own flow (`SimpleQueryHandler::_on_query`: the cancel, the answers, a COPY
//! left in progress) but for the status ReadyForQuery reports. pgwire folds that from the
//! answers (an error fails a transaction, a transaction tag starts or ends one), which is wrong
//! wherever our transaction ended otherwise than its answers say:
//! - a `COMMIT` that failed (no query slot, a cancel) has rolled the transaction back: idle,
//!   where the fold says failed;
//! - `ROLLBACK TO SAVEPOINT` restores a failed transaction, also when it is not the query's
//!   first statement: in a transaction, where the fold stays failed;
//! - `BEGIN; COPY t FROM STDIN` in one query: the status is reported after the COPY, and the
//!   fold's was never kept.
//!
//! Here the status is the connection's transaction as it stands after the statements
//! ([`crate::txn::status`]), kept on the connection for the COPY's end and the next query;
//! and a query that ends in an error pgwire reports itself (a cancel) fails the transaction
//! first, as any error inside one does.
//!
//! Copied from pgwire 0.42's flow: re-check it against `_on_query` when pgwire is upgraded.

use crate::run::ConnEngine;
use futures::future::{select, Either};
use futures::{Sink, SinkExt};
use pgwire::api::copy::{send_copy_both_response, send_copy_in_response, send_copy_out_response};
use pgwire::api::query::{send_execution_response, send_query_response, send_ready_for_query, SimpleQueryHandler};
use pgwire::api::results::Response;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, ConnectionHandle, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::{EmptyQueryResponse, TransactionStatus};
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;
use std::fmt::Debug;
use std::sync::Arc;

/// Answer `query` through `handler`'s `do_query`, then report ReadyForQuery with the status of
/// the connection's transaction (unless a COPY is now in progress: its end reports).
pub async fn on_query<H, C>(handler: &H, client: &mut C, query: Query) -> PgWireResult<()>
where
    H: SimpleQueryHandler + ?Sized,
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
        return Err(PgWireError::NotReadyForQuery);
    }
    let before = client.transaction_status();
    client.set_state(PgWireConnectionState::QueryInProgress);
    let folded = if query.query.chars().all(|c| c == ';' || c.is_whitespace()) {
        let sent = client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await;
        sent.map(|()| before).map_err(PgWireError::from)
    } else {
        match answer(handler, client, &query.query).await {
            Ok(answers) => send(client, answers, before).await,
            Err(e) => Err(e),
        }
    };
    let conn = client.session_extensions().get::<ConnEngine>();
    let folded = match (folded, &conn) {
        (Ok(folded), _) => folded,
        // A cancel, or an answer that could not be sent: pgwire reports the error and
        // ReadyForQuery with the status kept here made failed. The transaction fails with it
        // (a cancelled COMMIT has already ended it: idle).
        (Err(e), Some(conn)) => {
            crate::txn::failed(conn);
            client.set_transaction_status(crate::txn::status(conn));
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    };
    let status = conn.map_or(folded, |c| crate::txn::status(&c));
    client.set_transaction_status(status);
    if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
        client.set_state(PgWireConnectionState::ReadyForQuery);
        send_ready_for_query(client, status).await?;
    }
    Ok(())
}

/// `handler`'s answers to `sql`, or 57014 when the client's CancelRequest comes first.
async fn answer<H, C>(handler: &H, client: &mut C, sql: &str) -> PgWireResult<Vec<Response>>
where
    H: SimpleQueryHandler + ?Sized,
    C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::PortalStore: PortalStore,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let cancel = match client.session_extensions().get::<Arc<ConnectionHandle>>() {
        Some(handle) => Some(handle.start_query().await),
        None => None,
    };
    match cancel {
        Some(cancel) => match select(handler.do_query(client, sql), cancel).await {
            Either::Left((answers, _)) => answers,
            Either::Right(_) => Err(PgWireError::QueryCanceled),
        },
        None => handler.do_query(client, sql).await,
    }
}

/// Send `answers` to the client; the status pgwire would fold from them, starting at `status`
/// (what a connection without our engine reports).
async fn send<C>(
    client: &mut C,
    answers: Vec<Response>,
    mut status: TransactionStatus,
) -> PgWireResult<TransactionStatus>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for r in answers {
        match r {
            Response::EmptyQuery => {
                client.feed(PgWireBackendMessage::EmptyQueryResponse(EmptyQueryResponse::new())).await?
            }
            Response::Query(rows) => send_query_response(client, rows, true).await?,
            Response::Execution(tag) => send_execution_response(client, tag).await?,
            Response::TransactionStart(tag) => {
                send_execution_response(client, tag).await?;
                status = status.to_in_transaction_state();
            }
            Response::TransactionEnd(tag) => {
                send_execution_response(client, tag).await?;
                status = status.to_idle_state();
            }
            Response::Error(e) => {
                client.feed(PgWireBackendMessage::ErrorResponse((*e).into())).await?;
                status = status.to_error_state();
            }
            Response::CopyIn(c) => {
                send_copy_in_response(client, c).await?;
                client.set_state(PgWireConnectionState::CopyInProgress(false));
            }
            Response::CopyOut(c) => send_copy_out_response(client, c).await?,
            Response::CopyBoth(c) => {
                send_copy_both_response(client, c).await?;
                client.set_state(PgWireConnectionState::CopyInProgress(false));
            }
        }
    }
    Ok(status)
}
