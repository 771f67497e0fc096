//! Where the FIX door's connections run, and how they read (`zeptodb serve --fix-busy-poll`).
//!
//! By default a connection is a task of the door's two-thread runtime that sleeps until its
//! socket is readable. A message then waits for the kernel to wake that thread, tens of
//! microseconds on a virtual machine. Busy-polling, each session instead runs on a thread of
//! its own, with a single-threaded runtime, and once logged on never lets that thread sleep:
//! after each read that finds nothing it yields to its runtime, which asks epoll again with a
//! zero timeout (and runs the timers), so a message is read as soon as it lands. The cost is a
//! busy core per logged-on session, as feed handlers pinned to cores have; so at most one
//! session fewer than there are cores spins (at least one), further ones run as tasks, and a
//! connection that has not logged on sleeps like any other.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// Starts connections and initiator sessions: as tasks of the current runtime, or busy-polling
/// on threads of their own that end when the door stops.
#[derive(Clone)]
pub(crate) struct Spawner {
    busy: bool,
    shutdown: watch::Receiver<bool>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Spawner {
    /// Threads of their own when `busy`; `shutdown` turning true ends them.
    pub(crate) fn new(busy: bool, shutdown: watch::Receiver<bool>) -> Spawner {
        Spawner { busy, shutdown, threads: Arc::default() }
    }

    /// Run the future `make` returns (it is made where it runs, so that sockets it opens or
    /// adopts belong to that runtime). `make` is told whether it runs on a thread of its own,
    /// where it may spin ([`read`]); when busy-polling threads are at their limit it runs as a
    /// task.
    pub(crate) fn run<F, Fut>(&self, make: F)
    where
        F: FnOnce(bool) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        threads.retain(|t| !t.is_finished());
        let limit = std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1).max(1);
        if !self.busy || threads.len() >= limit {
            tokio::spawn(make(false));
            return;
        }
        let mut shutdown = self.shutdown.clone();
        let spawned = std::thread::Builder::new().name("zepto-fix-busy".into()).spawn(move || {
            zepto_storage::affinity::pin_own_core(zepto_storage::affinity::Role::Fix);
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return eprintln!("zeptodb: fix: cannot start a busy-polling runtime: {e}"),
            };
            rt.block_on(async move {
                tokio::select! {
                    _ = make(true) => {}
                    _ = shutdown.wait_for(|stop| *stop) => {}
                }
            });
        });
        match spawned {
            Ok(t) => threads.push(t),
            Err(e) => eprintln!("zeptodb: fix: cannot start a busy-polling thread: {e}"),
        }
    }

    /// Wait up to `within` for the threads started to end (after the door's shutdown was
    /// sent; each ends at its session's next await). One still busy after that (a slow fsync)
    /// is left to end on its own.
    pub(crate) fn join(&self, within: Duration) {
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        let deadline = Instant::now() + within;
        for t in threads {
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// Append what `stream` has to `buf`: once it is readable (the runtime sleeps until then),
/// or, `busy`, by trying again after only a yield to the runtime while it is not (the yield
/// polls epoll with a zero timeout and runs the timers, so a heartbeat timeout still fires).
pub(crate) async fn read<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    busy: bool,
) -> std::io::Result<usize> {
    if !busy {
        return stream.read_buf(buf).await;
    }
    loop {
        let tried = std::future::poll_fn(|cx| {
            let read = std::pin::pin!(stream.read_buf(&mut *buf));
            std::task::Poll::Ready(match read.poll(cx) {
                std::task::Poll::Ready(r) => Some(r),
                std::task::Poll::Pending => None,
            })
        })
        .await;
        match tried {
            Some(r) => return r,
            None => tokio::task::yield_now().await,
        }
    }
}
