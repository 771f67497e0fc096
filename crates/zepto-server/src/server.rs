//! The listener: a tokio runtime, an accept loop, HTTP/1.1 connections (plain or TLS), and a
//! graceful shutdown on SIGTERM/SIGINT.
//!
//! Per connection: one task running hyper's HTTP/1.1 state machine (keep-alive, pipelining,
//! a header-read timeout against slow clients); no per-connection thread and no buffers beyond
//! hyper's read buffer, so an idle keep-alive connection costs a few KiB. Queries and ingest
//! run on the blocking pool, so a long query never holds up an async worker. Idle workers park
//! in the OS (epoll), never spin.
//!
//! Shutdown: stop accepting, mark `/ready` 503, let line protocol over TCP commit what its
//! connections fully received ([`crate::ilp_tcp`]), let connections finish their current
//! request (idle keep-alive connections close at once), and after the grace period cancel the queries
//! still running (their clients get `CANCELLED`) and exit within 5 s more.

use crate::access_log::AccessLog;
use crate::config::{Config, TlsFiles};
use crate::router::handle;
use crate::state::State;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;
use zepto_sql::Engine;

/// Build the runtime and serve until SIGTERM/SIGINT. `on_listening` is called once the socket
/// is bound (with the actual address, useful with port 0).
pub fn run(config: Config, engine: Engine, on_listening: impl FnOnce(SocketAddr, bool)) -> Result<(), String> {
    config.validate()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.threads)
        .max_blocking_threads(config.blocking_threads())
        .thread_name("zepto-http")
        .on_thread_start(|| zepto_storage::affinity::pin(zepto_storage::affinity::Role::Ingest))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    rt.block_on(serve(config, engine, on_listening))
}

fn load_tls(files: &TlsFiles) -> Result<TlsAcceptor, String> {
    Ok(TlsAcceptor::from(tls_config(files, b"http/1.1")?))
}

/// The rustls server configuration of `files` (ring provider), offering the ALPN protocol
/// `alpn` (`http/1.1` here; `postgresql` for the PostgreSQL door; none when empty, for FIX).
pub fn tls_config(files: &TlsFiles, alpn: &[u8]) -> Result<Arc<rustls::ServerConfig>, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| format!("{}: {e}", files.cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", files.cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate found", files.cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| format!("{}: {e}", files.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate/key: {e}"))?;
    if !alpn.is_empty() {
        cfg.alpn_protocols = vec![alpn.to_vec()];
    }
    Ok(Arc::new(cfg))
}

/// SIGTERM or SIGINT. The handlers are installed when this is called, not when the future is
/// first polled: a signal sent after the server said it listens but before the accept loop
/// polled this would otherwise meet its default action and kill the process without its
/// clean stop and checkpoint (seen in a test that stopped a server right after its queries).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
    async move {
        match handlers {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {},
                    _ = int.recv() => {},
                }
            }
            _ => std::future::pending::<()>().await,
        }
    }
}

async fn serve(config: Config, engine: Engine, on_listening: impl FnOnce(SocketAddr, bool)) -> Result<(), String> {
    let tls = config.tls.as_ref().map(load_tls).transpose()?;
    let log = match &config.access_log {
        None => None,
        Some(path) => Some(AccessLog::open(path.as_deref()).map_err(|e| format!("access log: {e}"))?),
    };
    let listener =
        TcpListener::bind(config.addr).await.map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let grace = config.shutdown_grace;
    let permits = Arc::new(Semaphore::new(config.max_connections));
    let state = Arc::new(State::new(engine, config, log).map_err(|e| format!("starting the query threads: {e}"))?);
    if let Some(limit) = state.config.max_server_memory {
        crate::memory_guard::start(&state, limit).map_err(|e| format!("starting the memory guard: {e}"))?;
    }
    state.memory.start_sweeper().map_err(|e| format!("starting the agent-memory sweeper: {e}"))?;
    // Kept results nobody reads are freed within a minute of their idle limit, traffic or not.
    let kept = Arc::downgrade(&state);
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
        while let Some(st) = {
            every.tick().await;
            kept.upgrade()
        } {
            st.results.sweep();
        }
    });
    let mut shutdown = std::pin::pin!(shutdown_signal());
    let ilp_tcp = match &state.config.ilp_tcp {
        Some(cfg) => {
            let tls = match &state.config.tls {
                Some(files) => Some(TlsAcceptor::from(tls_config(files, b"")?)),
                None => None,
            };
            Some(crate::ilp_tcp::Door::start(&state, cfg, tls)?)
        }
        None => None,
    };
    state.ready.store(true, Ordering::Relaxed);
    on_listening(local, tls.is_some());

    let graceful = GracefulShutdown::new();
    loop {
        let (stream, remote) = tokio::select! {
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    eprintln!("zeptodb: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            drop(stream); // over --max-connections: close at once
            continue;
        };
        let _ = stream.set_nodelay(true);
        crate::net::keep_alive(&stream);
        let state = state.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            state.metrics.connections_total.inc();
            state.metrics.connections_open.inc();
            match tls {
                None => serve_conn(TokioIo::new(stream), &state, remote, watcher).await,
                Some(acceptor) => {
                    let hs = tokio::time::timeout(state.config.header_timeout, acceptor.accept(stream)).await;
                    if let Ok(Ok(s)) = hs {
                        serve_conn(TokioIo::new(s), &state, remote, watcher).await;
                    }
                }
            }
            state.metrics.connections_open.dec();
            drop(permit);
        });
    }
    state.ready.store(false, Ordering::Relaxed);
    state.begin_shutdown();
    drop(listener);
    if let Some(door) = ilp_tcp {
        // Its connections commit what they fully received before the checkpoint on exit.
        door.stop(grace).await;
    }
    eprintln!("zeptodb: shutting down: finishing requests in flight (up to {} s)", grace.as_secs());
    let mut drained = std::pin::pin!(graceful.shutdown());
    tokio::select! {
        _ = &mut drained => {},
        _ = tokio::time::sleep(grace) => {
            eprintln!("zeptodb: grace period over: cancelling the queries still running");
            state.cancel_all();
            // Cancelled queries stop at their next check; give their clients the answer.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), drained).await;
        },
    }
    Ok(())
}

async fn serve_conn<I>(
    io: TokioIo<I>,
    state: &Arc<State>,
    remote: SocketAddr,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let st = state.clone();
    // The request future is boxed: hyper keeps the service future inline in the connection's
    // state, so an unboxed one (the whole SQL/ingest state machine) would cost every idle
    // keep-alive connection its size.
    let svc = service_fn(move |req| Box::pin(handle(st.clone(), req, remote)));
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(state.config.header_timeout)
        .keep_alive(true)
        .serve_connection(io, svc)
        .with_upgrades(); // a subscription's WebSocket takes the connection over
                          // Connection errors (resets, malformed HTTP answered with 400 by hyper) end only this
                          // connection. hyper-util's watcher does not take an upgradeable connection: shutdown is
                          // told through the state instead, and the watcher is held until the connection ends, so
                          // the drain still waits for it.
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = state.closing() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
    drop(watcher);
}
