//! The FIX acceptor's network loop (tokio): one task per connection, each a [`Session`] fed
//! with what the socket reads. A read's complete messages are stored as one batch (with the
//! session's sequence numbers) before the responses go out. The store is written on the
//! connection's task: a WAL fsync holds only that session.

use crate::map::compact_sessions;
use crate::session::{Registry, Session, SessionConfig};
use crate::time::now_ns;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zepto_storage::Catalog;

/// How often the session table is cut to each session's newest row.
const COMPACT: Duration = Duration::from_secs(60);

/// Most bytes buffered for one message still arriving (a larger BodyLength is garbage).
const MAX_PENDING: usize = crate::parse::MAX_BODY + 64;

/// Accept FIX sessions on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    catalog: Arc<Catalog>,
    cfg: Arc<SessionConfig>,
    registry: Arc<Registry>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut compact = tokio::time::interval(COMPACT);
    loop {
        tokio::select! {
            _ = compact.tick() => {
                let (catalog, names) = (catalog.clone(), cfg.names.clone());
                let done = tokio::task::spawn_blocking(move || compact_sessions(&catalog, &names)).await;
                if let Ok(Err(e)) = done {
                    eprintln!("zeptodb: fix: compacting the session table: {e}");
                }
            }
            r = listener.accept() => match r {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let (catalog, cfg, registry) = (catalog.clone(), cfg.clone(), registry.clone());
                    tokio::spawn(async move {
                        if let Err(e) = connection(stream, &catalog, cfg, registry).await {
                            eprintln!("zeptodb: fix connection from {peer}: {e}");
                        }
                    });
                }
                Err(e) => {
                    eprintln!("zeptodb: fix accept: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => break,
        }
    }
}

async fn connection(
    mut stream: TcpStream,
    catalog: &Catalog,
    cfg: Arc<SessionConfig>,
    registry: Arc<Registry>,
) -> std::io::Result<()> {
    let mut s = Session::new(cfg, registry);
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        let wait = Duration::from_secs(s.heartbeat_secs());
        match tokio::time::timeout(wait, stream.read_buf(&mut buf)).await {
            Err(_) => s.on_idle(now_ns()),
            Ok(Ok(0)) => break,
            Ok(Ok(_)) => {
                let used = s.receive(&buf, catalog, now_ns());
                buf.drain(..used.min(buf.len()));
                if buf.len() > MAX_PENDING {
                    buf.clear();
                }
            }
            Ok(Err(e)) => return Err(e),
        }
        let out = match s.commit(catalog, now_ns()) {
            Ok(out) => out,
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        };
        if !out.is_empty() {
            stream.write_all(&out).await?;
        }
        if s.closed() {
            break;
        }
    }
    let st = s.stats;
    if !s.name().is_empty() {
        eprintln!(
            "zeptodb: fix {}: disconnected ({} messages, {} rows, {} gaps, {} rejects; next expected {})",
            s.name(),
            st.messages,
            st.rows,
            st.gaps,
            st.rejects,
            s.expected()
        );
    }
    Ok(())
}

/// A running acceptor (its own small runtime on its own thread); [`Acceptor::stop`] ends it.
pub struct Acceptor {
    stop: tokio::sync::watch::Sender<bool>,
    sessions: Arc<Registry>,
    thread: std::thread::JoinHandle<()>,
    addr: std::net::SocketAddr,
}

impl Acceptor {
    /// Listen on `addr` and accept sessions into `catalog`, on a thread of its own.
    pub fn start(addr: &str, catalog: Arc<Catalog>, cfg: SessionConfig) -> Result<Acceptor, String> {
        let listener = std::net::TcpListener::bind(addr).map_err(|e| format!("--fix {addr}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| format!("--fix {addr}: {e}"))?;
        let local = listener.local_addr().map_err(|e| format!("--fix {addr}: {e}"))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zepto-fix")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the FIX runtime: {e}"))?;
        let (stop, rx) = tokio::sync::watch::channel(false);
        let cfg = Arc::new(cfg);
        let sessions = Arc::new(Registry::default());
        let registry = sessions.clone();
        let thread = std::thread::Builder::new()
            .name("zepto-fix-accept".into())
            .spawn(move || {
                rt.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(l) => serve(l, catalog, cfg, registry, rx).await,
                        Err(e) => eprintln!("zeptodb: fix listener: {e}"),
                    }
                });
                // Sessions stop at their next await: a batch is stored whole or not at all.
                rt.shutdown_timeout(Duration::from_secs(5));
            })
            .map_err(|e| format!("cannot start the FIX thread: {e}"))?;
        Ok(Acceptor { stop, sessions, thread, addr: local })
    }

    /// The address listened on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// The sessions and their counters (`/metrics`).
    pub fn sessions(&self) -> Arc<Registry> {
        self.sessions.clone()
    }

    /// Stop accepting, end the sessions, and wait for them.
    pub fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.thread.join();
    }
}
