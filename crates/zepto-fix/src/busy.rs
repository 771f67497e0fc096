//! Where the FIX door's connections run, and how they read (`zeptodb serve --fix-busy-poll`).
//!
//! By default a connection is a task of the door's two-thread runtime that sleeps until its
//! socket is readable. A message then waits for the kernel to wake that thread, tens of
//! microseconds on a virtual machine. Busy-polling, each session instead runs on a thread of
//! its own, with a single-threaded runtime, and reads by trying again at once whenever its
//! socket has nothing: the thread never sleeps, so a message is read as soon as it lands. The
//! cost is a busy core per connected session, as feed handlers pinned to cores have.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
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
    /// adopts belong to that runtime).
    pub(crate) fn run<F, Fut>(&self, name: &str, make: F)
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        if !self.busy {
            tokio::spawn(make());
            return;
        }
        let mut shutdown = self.shutdown.clone();
        let spawned = std::thread::Builder::new().name(format!("zepto-fix-{name}")).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => return eprintln!("zeptodb: fix: cannot start a busy-polling runtime: {e}"),
            };
            rt.block_on(async move {
                tokio::select! {
                    _ = make() => {}
                    _ = shutdown.wait_for(|stop| *stop) => {}
                }
            });
        });
        match spawned {
            Ok(t) => {
                let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
                threads.retain(|t| !t.is_finished());
                threads.push(t);
            }
            Err(e) => eprintln!("zeptodb: fix: cannot start a busy-polling thread: {e}"),
        }
    }

    /// Wait for the threads started (after the door's shutdown was sent).
    pub(crate) fn join(&self) {
        let threads = std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        for t in threads {
            let _ = t.join();
        }
    }
}

/// Append what `stream` has to `buf`: once it is readable (the runtime sleeps until then),
/// or, `busy`, by trying again at once while it is not, with only a yield to the runtime in
/// between (which polls its sockets and timers, so a heartbeat timeout still fires).
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
