//! ZeptoDB's PostgreSQL wire protocol door (`zeptodb serve --pg ADDR`, on by default on
//! 127.0.0.1:8812): the protocol `psql`, `psycopg`, JDBC, SQLAlchemy, pandas and Grafana's
//! PostgreSQL data source speak. The protocol itself (startup, simple and extended query,
//! portals with row limits, cancel requests, TLS) is the `pgwire` crate's; this crate is what
//! ZeptoDB answers:
//!
//! - [`auth`]: the password is an API key (the same keys, roles, grants and tenants as HTTP);
//! - [`session`]: statements about the session (transactions, `SET`/`SHOW`, `version()`);
//! - [`handler`]: the simple and extended protocol, Describe from the plan;
//! - [`simple`]: the simple protocol's flow, ReadyForQuery's status from [`txn`];
//! - [`txn`]: BEGIN ... COMMIT, the rows held and the status they give;
//! - [`copy`]: `COPY FROM STDIN` and `COPY TO STDOUT`, text and CSV;
//! - [`run`]: statements run under the server's limits, results streamed;
//! - [`types`], [`params`]: ZeptoDB's types as PostgreSQL's, in text and binary;
//! - [`error`]: our errors as SQLSTATEs with positions.
//!
//! A query runs on the server's engine: on a cluster node it answers for the whole cluster.
//!
//! # Entry points
//!
//! [`Server::start`] serves a [`Door`] (engine, keys, [`Limits`], TLS, connection cap) on a
//! runtime of its own; [`Server::stop`] ends it. `zepto-cli/src/serve/pg.rs` starts it. Per
//! connection, pgwire drives [`auth::Startup`], [`handler::Backend`] and [`copy::Copier`].
//!
//! # Invariants
//!
//! - The HTTP door's keys and role check: every statement passes
//!   `zepto_server::sql::check_statements` ([`run::statements`]) before it runs.
//! - Describe plans a statement, never runs it; a portal's plan is kept for its Execute.
//! - A column's type OID ([`types::pg_type`]) is the OID the engine's `pg_catalog` gives its
//!   type: drivers join the two.
//! - Session statements are answered on their text by [`session`]; everything else, every
//!   catalog query included, is the engine's (`information_schema`, `pg_catalog`, arrays and
//!   set-returning functions in `zepto-sql`): no query is recognized by its text here. A
//!   CancelRequest cancels the statement running.
//! - A column of `{...}` arrays (`array_agg`, a catalog's `text[]`) goes out as its array
//!   type ([`types::field_type`]), in text or binary.
//!
//! # When you change …
//!
//! - **A PostgreSQL type OID** (a ZeptoDB type sent as another PostgreSQL type, or a new
//!   column type): [`types::pg_type`]; the cells in `types.rs` (`binary_value`, and
//!   [`types::value_text`], which COPY TO uses too); the table in [`types`]'s docs. In
//!   `zepto-sql`, `system::pg_names` and `BASES` in `system/types.rs`, so that `pg_type` and
//!   `pg_attribute` give the same OID. Then `docs/pg.md` (`## Types`) and tests in `types.rs`,
//!   `crates/zepto-cli/tests/pg.rs` and `python/tests/test_pg.py`.
//! - **A parameter type** clients bind: [`params::decode`] (binary and text), and the list in
//!   `docs/pg.md` (`## Queries`).
//! - **An error's SQLSTATE**: [`error::sqlstate`] and `docs/pg.md` (`## Errors`).
//! - **An engine setting** (`zepto_sql::settings`): its name in `ENGINE_SETTINGS`
//!   (`session.rs`), or `SET` of it stays a session parameter and never reaches the engine.
//! - **A session parameter** (`SHOW`): `default_param` in `session.rs`.

pub mod auth;
pub mod copy;
pub mod error;
pub mod handler;
pub mod params;
pub mod run;
pub mod session;
pub mod simple;
pub mod txn;
pub mod types;

pub use run::Limits;

use pgwire::api::auth::StartupHandler;
use pgwire::api::cancel::{CancelHandler, DefaultCancelHandler};
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{ConnectionManager, PgWireServerHandlers};
use pgwire::tokio::TlsAcceptor;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use zepto_server::auth::KeyStore;
use zepto_sql::Engine;

/// Every connection's handlers.
struct Handlers {
    backend: Arc<handler::Backend>,
    copy: Arc<copy::Copier>,
    startup: Arc<auth::Startup>,
    cancel: Arc<DefaultCancelHandler>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.backend.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.backend.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.startup.clone()
    }

    fn cancel_handler(&self) -> Arc<impl CancelHandler> {
        self.cancel.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.copy.clone()
    }
}

/// What the door serves: the engine, the keys that may connect, the limits statements run
/// under, and TLS if configured.
pub struct Door {
    /// The server's engine.
    pub engine: Engine,
    /// The API keys (empty: no authentication, loopback only).
    pub keys: Arc<KeyStore>,
    /// The statement limits.
    pub limits: Limits,
    /// TLS, offered to clients that ask for it (`sslmode=require`).
    pub tls: Option<TlsAcceptor>,
    /// Connections open at once; one more is refused with SQLSTATE 53300, as PostgreSQL
    /// refuses past `max_connections`.
    pub max_connections: usize,
    /// The server's query slots and threads, shared with its other doors: a statement that
    /// finds every slot busy for `--queue-timeout` is refused with SQLSTATE 53000.
    pub admission: Arc<zepto_server::admission::Admission>,
    /// The server's budget of client data held before it is stored, shared with HTTP's
    /// request bodies: a COPY FROM STDIN's rows draw on it as they arrive (`copy.rs`).
    pub bodies: zepto_server::inflight::BodyBudget,
}

/// A running door (its own runtime on its own thread); [`Server::stop`] ends it.
pub struct Server {
    stop: tokio::sync::watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serve `door` on `listener` (bound), on a runtime of its own.
    pub fn start(listener: std::net::TcpListener, door: Door) -> Result<Server, String> {
        listener.set_nonblocking(true).map_err(|e| format!("PostgreSQL door: {e}"))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zepto-pg")
            .on_thread_start(|| zepto_storage::affinity::pin(zepto_storage::affinity::Role::Ingest))
            .enable_all()
            .build()
            .map_err(|e| format!("PostgreSQL door: cannot start its runtime: {e}"))?;
        let manager = Arc::new(ConnectionManager::new());
        let handlers = Arc::new(Handlers {
            copy: Arc::new(copy::Copier::new(door.limits, door.bodies.clone())),
            backend: Arc::new(handler::Backend::new(door.engine, door.limits, door.admission, door.bodies)),
            startup: Arc::new(auth::Startup::new(door.keys, door.tls.is_some(), manager.clone())),
            cancel: Arc::new(DefaultCancelHandler::new(manager)),
        });
        let (stop, rx) = tokio::sync::watch::channel(false);
        let tls = door.tls;
        let slots = Slots {
            free: Arc::new(tokio::sync::Semaphore::new(door.max_connections.max(1))),
            max: door.max_connections.max(1),
        };
        let thread = std::thread::Builder::new()
            .name("zepto-pg-accept".into())
            .spawn(move || {
                rt.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => accept(l, handlers, tls, slots, rx).await,
                        Err(e) => eprintln!("zeptodb: pg listener: {e}"),
                    }
                });
                rt.shutdown_timeout(Duration::from_secs(5));
            })
            .map_err(|e| format!("PostgreSQL door: cannot start its thread: {e}"))?;
        Ok(Server { stop, thread: Some(thread) })
    }

    /// Stop accepting, end the connections, and wait.
    pub fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The connections the door may hold: `max`, of which `free` are not taken.
struct Slots {
    free: Arc<tokio::sync::Semaphore>,
    max: usize,
}

async fn accept(
    listener: tokio::net::TcpListener,
    handlers: Arc<Handlers>,
    tls: Option<TlsAcceptor>,
    slots: Slots,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((socket, peer)) => {
                    let _ = socket.set_nodelay(true);
                    zepto_server::net::keep_alive(&socket);
                    let Ok(slot) = slots.free.clone().try_acquire_owned() else {
                        eprintln!("zeptodb: pg connection from {peer} refused: {} connections are open", slots.max);
                        tokio::spawn(refuse(socket));
                        continue;
                    };
                    let (h, tls) = (handlers.clone(), tls.clone());
                    tokio::spawn(async move {
                        let _slot = slot;
                        if let Err(e) = pgwire::tokio::process_socket(socket, tls, h).await {
                            eprintln!("zeptodb: pg connection: {e}");
                        }
                    });
                }
                Err(e) => {
                    eprintln!("zeptodb: pg accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => break,
        }
    }
}

/// Refuse a connection over the limit as PostgreSQL does: a FATAL ErrorResponse with SQLSTATE
/// 53300 (too_many_connections), whatever the client sent first, then close.
async fn refuse(mut socket: tokio::net::TcpStream) {
    use pgwire::messages::Message;
    use tokio::io::AsyncWriteExt;
    let message = "too many connections to ZeptoDB's PostgreSQL door (the server's --max-connections)";
    let info = pgwire::error::ErrorInfo::new("FATAL".into(), "53300".into(), message.into());
    let mut msg = bytes::BytesMut::new();
    if pgwire::messages::response::ErrorResponse::from(info).encode(&mut msg).is_err() {
        return;
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        let _ = socket.write_all(&msg).await;
        let _ = socket.shutdown().await;
    })
    .await;
}
