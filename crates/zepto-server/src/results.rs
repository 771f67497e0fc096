//! Kept results: a query run with `keep=1` leaves its answer here and returns its first page;
//! `GET /results/{id}?offset=&limit=` reads further pages, `DELETE /results/{id}` frees it.
//!
//! This is how the web console shows a 1M-row answer: the browser holds one page, the server
//! holds the result (already materialized by the query; keeping it copies nothing). The store
//! is bounded in bytes and entries; the least recently read result goes first, and a result
//! nobody read for [`IDLE`] is dropped. A result is read only by the key that made it.

use crate::error::ApiError;
use hyper::StatusCode;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zepto_sql::QueryResult;

/// A kept result nobody read for this long is dropped.
pub const IDLE: Duration = Duration::from_secs(15 * 60);
/// At most this many results are kept at once (server-wide).
const MAX_ENTRIES: usize = 64;

/// One kept result.
struct Kept {
    owner: String,
    result: Arc<QueryResult>,
    elapsed_us: f64,
    bytes: usize,
    last_read: Instant,
}

/// The server's kept results, bounded by bytes and entries.
pub struct KeptResults {
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Kept>,
    next: u64,
}

/// A kept result as read back: the rows and the time the query took.
pub struct Page {
    /// The whole result (one batch).
    pub result: Arc<QueryResult>,
    /// How long the query ran, in microseconds.
    pub elapsed_us: f64,
}

/// Bytes a result holds (values and validity of its columns).
pub fn result_bytes(r: &QueryResult) -> usize {
    r.chunks().iter().flat_map(|b| b.columns.iter()).map(|c| c.data_bytes()).sum()
}

impl KeptResults {
    /// A store holding at most `max_bytes` of results.
    pub fn new(max_bytes: usize) -> KeptResults {
        KeptResults { max_bytes, inner: Mutex::new(Inner::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `result` for `owner`; its id, or why it cannot be kept (larger than the store).
    pub fn keep(&self, owner: &str, result: Arc<QueryResult>, elapsed_us: f64) -> Result<String, String> {
        let bytes = result_bytes(&result);
        if bytes > self.max_bytes {
            return Err(format!(
                "the result holds {} MiB, over the {} MiB kept for paging (--console-results-mb raises it)",
                bytes >> 20,
                self.max_bytes >> 20
            ));
        }
        let now = Instant::now();
        let mut g = self.lock();
        g.entries.retain(|_, k| now.duration_since(k.last_read) < IDLE);
        while g.entries.len() >= MAX_ENTRIES || g.held() + bytes > self.max_bytes {
            let Some(oldest) = g.entries.iter().min_by_key(|(_, k)| k.last_read).map(|(id, _)| id.clone()) else {
                break;
            };
            g.entries.remove(&oldest);
        }
        g.next += 1;
        let id = result_id(g.next);
        g.entries.insert(id.clone(), Kept { owner: owner.to_string(), result, elapsed_us, bytes, last_read: now });
        Ok(id)
    }

    /// The kept result `id` of `owner` (a result of another key is not found, as if absent).
    pub fn get(&self, owner: &str, id: &str) -> Result<Page, ApiError> {
        let mut g = self.lock();
        match g.entries.get_mut(id) {
            Some(k) if k.owner == owner && k.last_read.elapsed() < IDLE => {
                k.last_read = Instant::now();
                Ok(Page { result: k.result.clone(), elapsed_us: k.elapsed_us })
            }
            _ => Err(gone(id)),
        }
    }

    /// Free the kept result `id` of `owner`.
    pub fn forget(&self, owner: &str, id: &str) -> Result<(), ApiError> {
        let mut g = self.lock();
        match g.entries.get(id) {
            Some(k) if k.owner == owner => {
                g.entries.remove(id);
                Ok(())
            }
            _ => Err(gone(id)),
        }
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.lock().held()
    }
}

impl Inner {
    fn held(&self) -> usize {
        self.entries.values().map(|k| k.bytes).sum()
    }
}

fn gone(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "RESULT_NOT_FOUND",
        format!(
            "no kept result '{id}' (results unread for {} minutes are dropped; run the query again)",
            IDLE.as_secs() / 60
        ),
    )
}

/// An id nobody guesses from another: the counter mixed with the clock and the process.
fn result_id(n: u64) -> String {
    let t = crate::access_log::now_ns() as u64;
    let mut x = n ^ t.rotate_left(17) ^ (u64::from(std::process::id()) << 40);
    // splitmix64 finalizer: every input bit moves every output bit.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    format!("{x:016x}{n:x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_sql::Engine;

    fn result(rows: usize) -> Arc<QueryResult> {
        let e = Engine::new();
        e.execute("CREATE TABLE t (x BIGINT)").expect("ddl");
        let vals: Vec<String> = (0..rows).map(|i| format!("({i})")).collect();
        e.execute(&format!("INSERT INTO t VALUES {}", vals.join(","))).expect("insert");
        Arc::new(e.execute("SELECT x FROM t").expect("query"))
    }

    #[test]
    fn kept_per_owner_bounded_and_freed() {
        let store = KeptResults::new(1000);
        let a = store.keep("alice", result(50), 1.0).expect("fits");
        assert_eq!(store.get("alice", &a).expect("kept").result.row_count(), 50);
        assert_eq!(store.get("bob", &a).err().map(|e| e.code), Some("RESULT_NOT_FOUND"));
        assert_eq!(store.bytes(), 400);
        // 100 rows = 800 bytes: the first result goes to make room.
        let b = store.keep("alice", result(100), 1.0).expect("fits");
        assert!(store.get("alice", &a).is_err());
        assert_eq!(store.bytes(), 800);
        assert!(store.keep("alice", result(200), 1.0).is_err(), "over the whole store");
        assert!(store.forget("bob", &b).is_err());
        store.forget("alice", &b).expect("freed");
        assert_eq!(store.bytes(), 0);
        assert_ne!(result_id(1), result_id(2));
    }
}
