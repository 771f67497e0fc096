//! `BEGIN`, `COMMIT`, `ROLLBACK` and savepoints on the connection's engine
//! ([`zepto_sql::txn`]): between BEGIN and COMMIT, INSERT and COPY FROM hold their rows in the
//! connection's transaction, COMMIT stores them all as one change, ROLLBACK (or a connection
//! that closes first) drops them.
//!
//! After a statement fails inside a transaction, every statement but the ones that end it (or
//! `ROLLBACK TO SAVEPOINT`, which goes on from the savepoint) is refused with 25P02, and
//! COMMIT answers ROLLBACK and stores nothing, as PostgreSQL does. The rows held draw on the server's budget of
//! client data in memory (`--max-inflight-body-mb`, shared with HTTP bodies and COPY): a
//! transaction that would overdraw it fails (53200).

use crate::error::{pg_error, user_error};
use crate::run::{ConnEngine, Limits};
use crate::session::Answer;
use pgwire::error::PgWireResult;
use std::sync::{Arc, Mutex};
use zepto_server::admission::Admission;
use zepto_server::inflight::{BodyBudget, Held};
use zepto_sql::txn::Txn;

/// The share of the server's budget the connection's transaction holds for its rows.
#[derive(Default)]
pub struct Share(Mutex<Option<Held>>);

/// What a transaction statement needs of the door: the query slots and limits COMMIT runs
/// under, and the connection's share of the budget, given back when the transaction ends.
pub struct Door<'a> {
    /// The server's query slots.
    pub gate: &'a Admission,
    /// The statement limits.
    pub limits: Limits,
    /// The connection's share of the server's budget of client data in memory.
    pub share: &'a Share,
}

/// The connection's transaction, if it is in one.
pub fn current(conn: &ConnEngine) -> Option<Arc<Txn>> {
    conn.0.lock().ok()?.txn().cloned()
}

/// A statement of the transaction failed: it refuses statements until it ends (storing
/// nothing) or rolls back to a savepoint.
pub fn failed(conn: &ConnEngine) {
    if let Some(t) = current(conn) {
        t.fail();
    }
}

/// The status a client is told for the connection's transaction (what ReadyForQuery says):
/// none, under way, or failed.
pub fn status(conn: &ConnEngine) -> pgwire::messages::response::TransactionStatus {
    use pgwire::messages::response::TransactionStatus;
    match current(conn) {
        None => TransactionStatus::Idle,
        Some(t) if t.failed() => TransactionStatus::Error,
        Some(_) => TransactionStatus::Transaction,
    }
}

/// Refuse a statement of a failed transaction (25P02, PostgreSQL's words).
pub fn refuse_if_failed(conn: &ConnEngine) -> PgWireResult<()> {
    match current(conn) {
        Some(t) if t.failed() => {
            Err(user_error("25P02", "current transaction is aborted, commands ignored until end of transaction block"))
        }
        _ => Ok(()),
    }
}

/// After a statement of a transaction: cover its rows held with the budget, or fail it
/// (53200) when the budget cannot.
pub fn cover(conn: &ConnEngine, bodies: &BodyBudget, share: &Share) -> PgWireResult<()> {
    let Some(t) = current(conn) else { return Ok(()) };
    let bytes = t.held_bytes();
    let mut slot = share.0.lock().unwrap_or_else(|e| e.into_inner());
    let held = slot.get_or_insert_with(|| bodies.share());
    if let Err(over) = held.try_cover(bytes) {
        drop(slot);
        failed(conn);
        return Err(user_error(
            "53200",
            format!(
                "the transaction's rows ({} MiB) would pass the server's budget of client data in memory \
                 ({} MiB, --max-inflight-body-mb); the transaction has failed and will store nothing: \
                 ROLLBACK, then COMMIT more often",
                bytes >> 20,
                over.budget_bytes >> 20
            ),
        ));
    }
    Ok(())
}

/// Hold no more of the budget than `bytes`: rows dropped (ROLLBACK TO) give their part back.
fn shrink(share: &Share, bytes: usize) {
    if let Some(held) = share.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        held.shrink_to(bytes);
    }
}

/// Act on a transaction statement, answering as PostgreSQL does: the answer to send.
pub async fn act(conn: &Arc<ConnEngine>, door: Door<'_>, a: Answer, sql: &str) -> PgWireResult<Answer> {
    let txn = current(conn);
    // A failed transaction takes only what ends it, or a ROLLBACK TO a savepoint.
    if txn.as_ref().is_some_and(|t| t.failed()) && !matches!(a, Answer::End(_) | Answer::RollbackTo(_)) {
        refuse_if_failed(conn)?;
    }
    match &a {
        // BEGIN in a transaction goes on with it (PostgreSQL warns, and does the same).
        Answer::Begin if txn.is_none() => {
            set(conn, Some(Txn::new()))?;
        }
        Answer::End(_) => {
            let engine = set(conn, None)?;
            let held = door.share.0.lock().unwrap_or_else(|e| e.into_inner()).take();
            return end(engine, txn.as_deref(), &door, (a, held), sql).await;
        }
        Answer::Savepoint(name) => in_block(txn.as_deref(), "SAVEPOINT")?.savepoint(name),
        Answer::RollbackTo(name) => {
            let t = in_block(txn.as_deref(), "ROLLBACK TO SAVEPOINT")?;
            t.rollback_to(name).map_err(|e| pg_error(&e, sql))?;
            shrink(door.share, t.held_bytes());
        }
        Answer::Release(name) => {
            in_block(txn.as_deref(), "RELEASE SAVEPOINT")?.release(name).map_err(|e| pg_error(&e, sql))?;
        }
        _ => {}
    }
    Ok(a)
}

/// End `txn` (the connection is already out of it) with `a`, COMMIT or ROLLBACK, running a
/// COMMIT on `engine` (the connection's engine in the transaction): the answer to send.
/// `held`, the transaction's share of the budget, is given back when its rows are stored (or
/// dropped): a COMMIT's job keeps it, also when a cancel drops this future while the job runs.
async fn end(
    engine: zepto_sql::Engine,
    txn: Option<&Txn>,
    door: &Door<'_>,
    (a, held): (Answer, Option<Held>),
    sql: &str,
) -> PgWireResult<Answer> {
    let Some(txn) = txn else { return Ok(a) };
    if txn.failed() || matches!(&a, Answer::End(tag) if tag == "ROLLBACK") {
        return Ok(Answer::End("ROLLBACK".into()));
    }
    // A COMMIT that fails (no slot, a cancel before its rows are logged, a table changed
    // under it) has rolled the transaction back, as in PostgreSQL.
    let commit = move |run: &_| {
        let stored = engine.commit_in(run);
        drop(held);
        stored
    };
    let stored = crate::run::in_slot(door.gate, door.limits, false, sql, commit).await;
    stored.map_err(|e| rolled_back(&e))?;
    Ok(a)
}

/// A COMMIT's error, saying that the transaction was rolled back.
fn rolled_back(e: &pgwire::error::PgWireError) -> pgwire::error::PgWireError {
    use pgwire::error::{ErrorInfo, PgWireError};
    match e {
        PgWireError::UserError(info) => PgWireError::UserError(Box::new(ErrorInfo::new(
            info.severity.clone(),
            info.code.clone(),
            format!("{}; COMMIT failed: the transaction was rolled back, nothing was stored", info.message),
        ))),
        e => user_error("40000", format!("{e}; COMMIT failed: the transaction was rolled back, nothing was stored")),
    }
}

/// The transaction a savepoint statement needs (25P01 outside one, PostgreSQL's words).
fn in_block<'a>(txn: Option<&'a Txn>, what: &str) -> PgWireResult<&'a Txn> {
    txn.ok_or_else(|| user_error("25P01", format!("{what} can only be used in transaction blocks")))
}

/// Put the connection's engine in `txn` (or out of any); the engine as it was.
fn set(conn: &ConnEngine, txn: Option<Arc<Txn>>) -> PgWireResult<zepto_sql::Engine> {
    let mut e = conn.0.lock().map_err(|_| user_error("XX000", "engine lock"))?;
    let before = e.clone();
    *e = e.with_txn(txn);
    Ok(before)
}
