//! The structured access log: one JSON object per request, written by a background thread so
//! a slow disk or terminal never holds up a request (lines are dropped, and counted, if the
//! writer falls more than `QUEUE` lines behind).

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;

const QUEUE: usize = 65_536;

/// The access log's sending end: [`AccessLog::log`] queues a line for the writer thread and never
/// blocks.
pub struct AccessLog {
    tx: SyncSender<String>,
    dropped: Arc<AtomicU64>,
}

/// One request's entry.
pub struct Entry<'a> {
    /// The request id (the client's `x-request-id`, or one the server made).
    pub id: &'a str,
    /// The client's address.
    pub remote: std::net::SocketAddr,
    /// HTTP method.
    pub method: &'a str,
    /// URL path, without the query string.
    pub path: &'a str,
    /// HTTP status sent.
    pub status: u16,
    /// Microseconds from the request's arrival to its response headers.
    pub micros: u128,
    /// Name of the API key used (`-` with authentication off, `?` when it failed), never the key.
    pub key: &'a str,
    /// Rows returned or ingested, when the request had any.
    pub rows: Option<u64>,
    /// The error code, for a failed request.
    pub error: Option<&'a str>,
}

impl AccessLog {
    /// Log to `path`, or to stderr when `None`.
    pub fn open(path: Option<&Path>) -> std::io::Result<AccessLog> {
        let mut out: Box<dyn Write + Send> = match path {
            Some(p) => Box::new(std::fs::OpenOptions::new().create(true).append(true).open(p)?),
            None => Box::new(std::io::stderr()),
        };
        let (tx, rx) = sync_channel::<String>(QUEUE);
        std::thread::Builder::new().name("zepto-access-log".into()).spawn(move || {
            let mut buf = Vec::with_capacity(64 << 10);
            while let Ok(line) = rx.recv() {
                buf.extend_from_slice(line.as_bytes());
                // Batch whatever else is already queued into one write.
                while let Ok(more) = rx.try_recv() {
                    buf.extend_from_slice(more.as_bytes());
                    if buf.len() > (60 << 10) {
                        break;
                    }
                }
                let _ = out.write_all(&buf);
                let _ = out.flush();
                buf.clear();
            }
        })?;
        Ok(AccessLog { tx, dropped: Arc::new(AtomicU64::new(0)) })
    }

    /// Queue `e` as one JSON line; dropped (and counted) if the writer is more than 65,536 lines
    /// behind.
    pub fn log(&self, e: &Entry<'_>) {
        let mut s = String::with_capacity(192);
        s.push_str("{\"ts\":\"");
        s.push_str(&zepto_storage::time::format_timestamp_iso(now_ns()));
        s.push_str("\",\"id\":");
        zepto_io::format::json_escape(e.id, &mut s);
        s.push_str(&format!(",\"remote\":\"{}\",\"method\":", e.remote));
        zepto_io::format::json_escape(e.method, &mut s);
        s.push_str(",\"path\":");
        zepto_io::format::json_escape(e.path, &mut s);
        s.push_str(&format!(",\"status\":{},\"us\":{},\"key\":", e.status, e.micros));
        zepto_io::format::json_escape(e.key, &mut s);
        if let Some(r) = e.rows {
            s.push_str(&format!(",\"rows\":{r}"));
        }
        if let Some(code) = e.error {
            s.push_str(&format!(",\"error\":\"{code}\""));
        }
        s.push_str("}\n");
        match self.tx.try_send(s) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The wall-clock time in nanoseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
