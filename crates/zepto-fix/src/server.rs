//! The FIX door's network loops (tokio): the acceptor's (plain TCP, or TLS only when it has a
//! TLS configuration: FIX has no in-band upgrade), and one per initiator session (which
//! connects, logs on, and reconnects after a growing pause when the connection ends). Each
//! connection drives a [`Session`] with what the socket reads, as a task of the door's runtime
//! or busy-polling on a thread of its own (`busy.rs`). A read's complete
//! messages are stored as one batch (with the session's sequence numbers) before the
//! responses go out. The store is written on the connection's task: a WAL fsync holds only
//! that session.

use crate::busy::Spawner;
use crate::map::compact_sessions;
use crate::session::{InitiatorConfig, Registry, Session, SessionConfig};
use crate::time::now_ns;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;
use zepto_storage::Catalog;

/// Longest a TLS client may take to finish its handshake.
const TLS_HANDSHAKE: Duration = Duration::from_secs(10);

/// How often the session table is cut to each session's newest row.
const COMPACT: Duration = Duration::from_secs(60);

/// Most bytes buffered for one message still arriving (a larger BodyLength is garbage).
const MAX_PENDING: usize = crate::parse::MAX_BODY + 64;

/// Accept FIX sessions on `listener` (if any; over TLS with `tls`), each run by `spawn`, and
/// compact the session table now and then, until `shutdown` turns true.
pub(crate) async fn serve(
    listener: Option<TcpListener>,
    tls: Option<TlsAcceptor>,
    catalog: Arc<Catalog>,
    cfg: Arc<SessionConfig>,
    registry: Arc<Registry>,
    spawn: &Spawner,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut compact = tokio::time::interval(COMPACT);
    loop {
        tokio::select! {
            _ = compact.tick() => compact_now(&catalog, &cfg).await,
            r = accept(listener.as_ref()) => match r.and_then(|(s, peer)| Ok((s.into_std()?, peer))) {
                Ok((stream, peer)) => {
                    let (catalog, cfg, registry, tls) = (catalog.clone(), cfg.clone(), registry.clone(), tls.clone());
                    spawn.run(move |own_thread| async move {
                        if let Err(e) = accepted(stream, tls, &catalog, cfg, registry, own_thread).await {
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

/// A connection accepted (its socket handed over to the runtime it runs on): a TLS handshake
/// first with `tls`, then the session (spinning once logged on if `own_thread`).
async fn accepted(
    stream: std::net::TcpStream,
    tls: Option<TlsAcceptor>,
    catalog: &Catalog,
    cfg: Arc<SessionConfig>,
    registry: Arc<Registry>,
    own_thread: bool,
) -> std::io::Result<()> {
    let stream = TcpStream::from_std(stream)?;
    let _ = stream.set_nodelay(true);
    match tls {
        None => connection(stream, catalog, cfg, registry, own_thread).await,
        Some(tls) => match tokio::time::timeout(TLS_HANDSHAKE, tls.accept(stream)).await {
            Ok(Ok(s)) => connection(s, catalog, cfg, registry, own_thread).await,
            Ok(Err(e)) => Err(std::io::Error::other(format!("TLS handshake: {e}"))),
            Err(_) => Err(std::io::Error::other("no TLS handshake in 10 s")),
        },
    }
}

/// The next connection on `listener`; without one, never.
async fn accept(listener: Option<&TcpListener>) -> std::io::Result<(TcpStream, std::net::SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Cut the session table to each session's newest row (off the async threads).
async fn compact_now(catalog: &Arc<Catalog>, cfg: &SessionConfig) {
    let (catalog, names) = (catalog.clone(), cfg.names.clone());
    let done = tokio::task::spawn_blocking(move || compact_sessions(&catalog, &names)).await;
    if let Ok(Err(e)) = done {
        eprintln!("zeptodb: fix: compacting the session table: {e}");
    }
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    catalog: &Catalog,
    cfg: Arc<SessionConfig>,
    registry: Arc<Registry>,
    own_thread: bool,
) -> std::io::Result<()> {
    let mut s = Session::new(cfg, registry);
    let r = drive(stream, &mut s, catalog, own_thread).await;
    disconnected(&s);
    r
}

/// Start initiator session `init` and keep it up until the runtime stops: connect, log on,
/// drive the session; after it ends, wait (1 s, doubling to 30 s while no Logon succeeds) and
/// connect again. `own_thread`: it runs on a thread of its own, and spins once logged on.
async fn initiate(
    catalog: Arc<Catalog>,
    cfg: Arc<SessionConfig>,
    registry: Arc<Registry>,
    init: Arc<InitiatorConfig>,
    own_thread: bool,
) {
    let mut pause = Duration::from_secs(1);
    let who = format!("{}-{}", cfg.sender, init.target);
    loop {
        match tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(&init.connect)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                let logged_on = match &init.tls {
                    None => run_initiator(stream, &who, &catalog, &cfg, &registry, &init, own_thread).await,
                    Some(tls) => {
                        let (connector, name) = tls.connector();
                        match tokio::time::timeout(TLS_HANDSHAKE, connector.connect(name, stream)).await {
                            Ok(Ok(s)) => run_initiator(s, &who, &catalog, &cfg, &registry, &init, own_thread).await,
                            Ok(Err(e)) => {
                                eprintln!("zeptodb: fix {who}: TLS handshake with {}: {e}", init.connect);
                                false
                            }
                            Err(_) => {
                                eprintln!("zeptodb: fix {who}: no TLS handshake with {} in 10 s", init.connect);
                                false
                            }
                        }
                    }
                };
                if logged_on {
                    pause = Duration::from_secs(1);
                }
            }
            Ok(Err(e)) => eprintln!("zeptodb: fix {who}: cannot connect to {}: {e}", init.connect),
            Err(_) => eprintln!("zeptodb: fix {who}: no connection to {} in 10 s", init.connect),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

/// One connection of initiator session `init` (`who` in the log) over `stream`: log on and
/// drive it until it ends (errors are logged). True when the Logon succeeded.
async fn run_initiator<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    who: &str,
    catalog: &Catalog,
    cfg: &Arc<SessionConfig>,
    registry: &Arc<Registry>,
    init: &Arc<InitiatorConfig>,
    own_thread: bool,
) -> bool {
    let Some(mut s) = Session::initiate(cfg.clone(), registry.clone(), init.clone(), catalog, now_ns()) else {
        eprintln!("zeptodb: fix {who}: already logged on; not connecting");
        return false;
    };
    if let Err(e) = drive(stream, &mut s, catalog, own_thread).await {
        eprintln!("zeptodb: fix {who}: connection to {}: {e}", init.connect);
    }
    disconnected(&s);
    s.logged_on()
}

/// Feed `s` what `stream` reads and send what it answers, until either side ends it. A
/// session started by [`Session::initiate`] sends its Logon first. On a thread of its own
/// (`own_thread`), a logged-on session reads by spinning ([`crate::busy::read`]).
async fn drive<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    s: &mut Session,
    catalog: &Catalog,
    own_thread: bool,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let first = s.commit(catalog, now_ns()).map_err(|e| std::io::Error::other(e.to_string()))?;
    stream.write_all(&first).await?;
    // A TLS stream may hold written bytes until flushed (a no-op on plain TCP).
    stream.flush().await?;
    loop {
        let wait = Duration::from_secs(s.heartbeat_secs());
        let busy = own_thread && s.logged_on();
        match tokio::time::timeout(wait, crate::busy::read(&mut stream, &mut buf, busy)).await {
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
            stream.flush().await?;
        }
        if s.closed() {
            break;
        }
    }
    // Ends the write side (a TLS close_notify first), so a last Logout is not cut off.
    let _ = stream.shutdown().await;
    Ok(())
}

/// Say how a session's connection ended.
fn disconnected(s: &Session) {
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
}

/// A running FIX door (its own small runtime on its own thread): an acceptor if asked for,
/// and the initiator sessions of its settings. [`FixDoor::stop`] ends it.
pub struct FixDoor {
    stop: tokio::sync::watch::Sender<bool>,
    sessions: Arc<Registry>,
    thread: std::thread::JoinHandle<()>,
    addr: Option<std::net::SocketAddr>,
}

/// A listener bound to `addr`, and the address it has.
fn bind(addr: &str) -> Result<(std::net::TcpListener, std::net::SocketAddr), String> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| format!("--fix {addr}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("--fix {addr}: {e}"))?;
    let local = listener.local_addr().map_err(|e| format!("--fix {addr}: {e}"))?;
    Ok((listener, local))
}

impl FixDoor {
    /// Accept sessions on `listen` (if given; TLS only with `tls`) and start `cfg`'s initiator
    /// sessions, writing into `catalog`, on a thread of its own.
    pub fn start(
        listen: Option<&str>,
        tls: Option<Arc<ServerConfig>>,
        catalog: Arc<Catalog>,
        cfg: SessionConfig,
    ) -> Result<FixDoor, String> {
        let bound = listen.map(bind).transpose()?;
        let tls = tls.map(TlsAcceptor::from);
        let local = bound.as_ref().map(|(_, a)| *a);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zepto-fix")
            .on_thread_start(|| zepto_storage::affinity::pin(zepto_storage::affinity::Role::Ingest))
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
                let spawn = Spawner::new(cfg.busy_poll, rx.clone());
                rt.block_on(async {
                    for init in &cfg.initiators {
                        let (c, r, i, cfg) = (catalog.clone(), registry.clone(), Arc::new(init.clone()), cfg.clone());
                        spawn.run(move |own_thread| initiate(c, cfg, r, i, own_thread));
                    }
                    match bound.map(|(l, _)| TcpListener::from_std(l)).transpose() {
                        Ok(l) => serve(l, tls, catalog, cfg, registry, &spawn, rx).await,
                        Err(e) => eprintln!("zeptodb: fix listener: {e}"),
                    }
                });
                // Sessions stop at their next await: a batch is stored whole or not at all.
                rt.shutdown_timeout(Duration::from_secs(5));
                spawn.join(Duration::from_secs(5));
            })
            .map_err(|e| format!("cannot start the FIX thread: {e}"))?;
        Ok(FixDoor { stop, sessions, thread, addr: local })
    }

    /// The address the acceptor listens on (`None`: initiators only).
    pub fn addr(&self) -> Option<std::net::SocketAddr> {
        self.addr
    }

    /// The sessions and their counters (`/metrics`).
    pub fn sessions(&self) -> Arc<Registry> {
        self.sessions.clone()
    }

    /// Stop the acceptor and the initiators, end the sessions, and wait for them.
    pub fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.thread.join();
    }
}
