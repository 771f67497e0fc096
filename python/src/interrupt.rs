//! Ctrl-C cancels a statement running on Python's main thread.
//!
//! While the engine works the GIL is released, so the interpreter cannot run its SIGINT handler
//! until the statement ends. Python's own C-level handler does one thing at once, though: it
//! writes the signal number to the "wakeup fd" (`signal.set_wakeup_fd`). The package points
//! that fd at one end of a socket pair for the duration of a main-thread statement
//! (`zeptodb.Connection`), and a watcher thread reading the other end cancels the statement
//! registered here. The statement then fails with `CANCELLED` at its next check, and the
//! pending KeyboardInterrupt is raised in its place.
//!
//! Cost per statement: two `set_wakeup_fd` calls and a mutex on the main thread only; threads
//! other than the main one never see signals, and run without any of this.

use pyo3::prelude::*;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, OnceLock};
use zepto_sql::interrupt::QueryControl;

/// The statement running on the main thread, if any (only the main thread sees signals).
static MAIN: Mutex<Option<Arc<QueryControl>>> = Mutex::new(None);

/// The write end of the socket pair, whose read end the watcher thread drains.
static WAKEUP: OnceLock<Result<UnixStream, String>> = OnceLock::new();

fn start_watcher() -> Result<UnixStream, String> {
    let (mut rx, tx) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    // Python's handler writes without blocking and ignores a full buffer.
    tx.set_nonblocking(true).map_err(|e| e.to_string())?;
    std::thread::Builder::new()
        .name("zepto-sigint".into())
        .spawn(move || {
            let mut buf = [0u8; 64];
            // Every byte is a signal number; SIGINT is 2 (POSIX).
            while let Ok(n) = rx.read(&mut buf) {
                if n == 0 {
                    return;
                }
                if buf[..n].contains(&2) {
                    if let Some(c) = MAIN.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                        c.cancel();
                    }
                }
            }
        })
        .map_err(|e| format!("starting the interrupt watcher: {e}"))?;
    Ok(tx)
}

/// The fd to pass to `signal.set_wakeup_fd` around a main-thread statement (the watcher is
/// started on first use).
#[pyfunction]
pub fn wakeup_fd() -> PyResult<i32> {
    match WAKEUP.get_or_init(start_watcher) {
        Ok(tx) => Ok(tx.as_raw_fd()),
        Err(e) => Err(pyo3::exceptions::PyOSError::new_err(e.clone())),
    }
}

/// Registers `ctl` as the main thread's statement until dropped.
pub struct OnMain;

impl OnMain {
    pub fn register(ctl: &Arc<QueryControl>) -> OnMain {
        *MAIN.lock().unwrap_or_else(|e| e.into_inner()) = Some(ctl.clone());
        OnMain
    }
}

impl Drop for OnMain {
    fn drop(&mut self) {
        *MAIN.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
