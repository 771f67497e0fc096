//! ZeptoDB's Arrow Flight SQL door (`zeptodb serve --flight-sql ADDR`): the protocol ADBC,
//! JDBC and ODBC drivers for Flight SQL speak, so that their clients (Python's
//! `adbc_driver_flightsql`, DBeaver, Java programs) run SQL and read results as Arrow record
//! batches, without a copy into rows and back.
//!
//! - [`service`]: what each Flight SQL command does (statements, updates, prepared
//!   statements without parameters, SqlInfo, tables).
//! - [`run`]: a statement run for its caller, under the server's limits.
//! - [`catalog`]: the metadata commands' rows.
//!
//! The door authenticates as the HTTP door does (the same keys, roles and table grants) and
//! runs on the same engine: on a cluster node, a query answers for the whole cluster.

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
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
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
