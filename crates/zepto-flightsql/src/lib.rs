//! ZeptoDB's Arrow Flight SQL door (`zeptodb serve --flight-sql ADDR`): ADBC, JDBC and other Flight
//! SQL clients run SQL and read results as Arrow record batches (`docs/flight-sql.md`).
//!
//! # What it owns
//!
//! The gRPC door only. Keys, roles and the role check of statements are zepto-server's, the engine
//! runs the SQL, and zepto-io turns columns into Arrow.
//!
//! * [`service`] — [`Door`], the `FlightSqlService`: statements, updates, prepared statements
//!   without parameters, the handshake, `GetSqlInfo` and the metadata listings.
//! * [`run`] — a statement run for one caller under [`Limits`]; results as record batches,
//!   engine errors as gRPC statuses, and the handle a ticket carries.
//! * [`catalog`] — the rows of `GetTables` and `GetTableTypes`.
//! * [`Server`] — the tonic server, on a runtime and thread of its own.
//!
//! # Entry points
//!
//! zepto-cli's `serve/flight_sql.rs` binds the socket (off loopback only with API keys), builds a
//! [`Door`] ([`Door::new`]) on its engine, keys and [`Limits`], and calls [`Server::start`];
//! [`Server::stop`] (or a drop) ends it. End-to-end tests: `python/tests/test_flight_sql.py`.
//!
//! # Invariants
//!
//! * The door keeps no state between calls. A ticket carries the SQL (`R`) or the outcome of SQL
//!   that changed data (`D`); a prepared statement's handle is its SQL. Any node can redeem them.
//! * Only reads wait for `DoGet`. SQL that changes data runs at `GetFlightInfo`, because some
//!   clients never redeem the ticket of an INSERT.
//! * Every call authenticates its `authorization` header. Statements are checked for the caller's
//!   role as on HTTP (`zepto_server::sql::check_statements`) and run on a blocking thread, on the
//!   engine narrowed to the caller's tables (`Engine::with_access`).
//! * Dictionary columns go out as their values, both in the announced schema (`run::hydrated`)
//!   and in the batches (`DictionaryHandling::Hydrate`): the two must agree.
//! * An error is a gRPC status whose message starts with the engine's error code.
//!
//! # When you change …
//!
//! * A Flight SQL command: its `get_flight_info_*` and `do_get_*` methods in `service.rs`
//!   (listings through `listing` and `listed`), its rows in `catalog.rs`, the table in
//!   `docs/flight-sql.md`, a test in `python/tests/test_flight_sql.py`. A command not
//!   implemented answers `UNIMPLEMENTED` (arrow-flight's defaults and `do_get_fallback`).
//! * A `zepto_sql::SqlError` variant: its gRPC code in `run::status` (otherwise
//!   `INVALID_ARGUMENT`), and the list of codes in `docs/flight-sql.md`.
//! * The `arrow-flight` version in `Cargo.toml`: `FlightSqlServerArrowVersion` in `SQL_INFO`
//!   (`service.rs`).
//! * A query limit of `serve`: [`Limits`] and zepto-cli's `serve/flight_sql.rs`.

pub mod catalog;
pub mod run;
pub mod service;

pub use run::Limits;
pub use service::Door;

use arrow_flight::flight_service_server::FlightServiceServer;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Why the door could not start.
#[derive(Debug, thiserror::Error)]
#[error("Flight SQL door: {0}")]
pub struct StartError(String);

/// A running door; stops when [`Server::stop`] is called or it is dropped.
pub struct Server {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serve `door` on `listener` (a bound socket), on a runtime of its own.
    pub fn start(listener: std::net::TcpListener, door: Door) -> Result<Server, StartError> {
        let fail = |e: std::io::Error| StartError(e.to_string());
        listener.set_nonblocking(true).map_err(fail)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zepto-flight-sql")
            .on_thread_start(|| zepto_storage::affinity::pin(zepto_storage::affinity::Role::Ingest))
            .enable_all()
            .build()
            .map_err(fail)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("zepto-flight-sql".into())
            .spawn(move || rt.block_on(serve(listener, door, stopping)))
            .map_err(fail)?;
        Ok(Server { stop, thread: Some(thread) })
    }

    /// Stop serving (calls under way are cut).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.halt();
    }
}

async fn serve(listener: std::net::TcpListener, door: Door, stop: Arc<AtomicBool>) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => return eprintln!("zeptodb: Flight SQL door: {e}"),
    };
    // Keepalive as every door's connections have it (`zepto_server::net`).
    let incoming = tonic::transport::server::TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(zepto_server::net::KEEPALIVE_IDLE))
        .with_keepalive_interval(Some(zepto_server::net::KEEPALIVE_INTERVAL))
        .with_keepalive_retries(Some(zepto_server::net::KEEPALIVE_PROBES));
    let stopped = async move {
        while !stop.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let service = FlightServiceServer::new(door).max_decoding_message_size(64 << 20);
    let server = tonic::transport::Server::builder().add_service(service);
    if let Err(e) = server.serve_with_incoming_shutdown(incoming, stopped).await {
        eprintln!("zeptodb: Flight SQL door stopped: {e}");
    }
}
