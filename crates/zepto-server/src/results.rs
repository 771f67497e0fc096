//! Kept results: a query run with `keep=1` leaves its answer here and returns its first page;
//! `GET /results/{id}?offset=&limit=` reads further pages, `DELETE /results/{id}` frees it.
//!
//! This is how the web console shows a 1M-row answer: the browser holds one page, the server
//! holds the result (already materialized by the query; keeping it copies nothing). The store
//! is bounded in bytes and entries, and so is each key's share ([`OWNER_ENTRIES`], half the
//! bytes), so one key cannot push every other key's results out: a key's own oldest result
//! goes first, then the least recently read of all. A result nobody read for [`IDLE`] is
//! dropped (on every use of the store, and by [`KeptResults::sweep`], which the server runs
//! each minute). A result is read only by the key that made it (key names are unique), by an
//! id of 128 random bits.

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
/// At most this many results are kept for one key.
pub const OWNER_ENTRIES: usize = 8;

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
}

/// A kept result as read back: the rows and the time the query took.
pub struct Page {
    /// The whole result, in the batches the query made.
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

    /// Keep `result` for `owner`; its id, or why it cannot be kept (larger than a key's
    /// share of the store).
    pub fn keep(&self, owner: &str, result: Arc<QueryResult>, elapsed_us: f64) -> Result<String, String> {
        let bytes = result_bytes(&result);
        let share = self.max_bytes / 2;
        if bytes > share {
            return Err(format!(
                "the result holds {} MiB, over the {} MiB one key may keep for paging (half of \
                 --console-results-mb)",
                bytes >> 20,
                share >> 20
            ));
        }
        let id = random_id().map_err(|e| format!("no random id for the result: {e}"))?;
        let mut g = self.lock();
        g.expire();
        // The key's own oldest results make room for its new one first.
        while g.owned(owner).count() >= OWNER_ENTRIES || g.owned(owner).map(|k| k.bytes).sum::<usize>() + bytes > share
        {
            let Some(oldest) = g.oldest(Some(owner)) else { break };
            g.entries.remove(&oldest);
        }
        while g.entries.len() >= MAX_ENTRIES || g.held() + bytes > self.max_bytes {
            let Some(oldest) = g.oldest(None) else { break };
            g.entries.remove(&oldest);
        }
        let kept = Kept { owner: owner.to_string(), result, elapsed_us, bytes, last_read: Instant::now() };
        g.entries.insert(id.clone(), kept);
        Ok(id)
    }

    /// Drop the results nobody read for [`IDLE`].
    pub fn sweep(&self) {
        self.lock().expire();
    }

    /// The kept result `id` of `owner` (a result of another key is not found, as if absent).
    pub fn get(&self, owner: &str, id: &str) -> Result<Page, ApiError> {
        let mut g = self.lock();
        g.expire();
        match g.entries.get_mut(id) {
            Some(k) if k.owner == owner => {
                k.last_read = Instant::now();
                Ok(Page { result: k.result.clone(), elapsed_us: k.elapsed_us })
            }
            _ => Err(gone(id)),
        }
    }

    /// Free the kept result `id` of `owner`.
    pub fn forget(&self, owner: &str, id: &str) -> Result<(), ApiError> {
        let mut g = self.lock();
        g.expire();
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

    fn owned<'a>(&'a self, owner: &'a str) -> impl Iterator<Item = &'a Kept> + 'a {
        self.entries.values().filter(move |k| k.owner == owner)
    }

    /// The least recently read result (of `owner`, if given).
    fn oldest(&self, owner: Option<&str>) -> Option<String> {
        self.entries
            .iter()
            .filter(|(_, k)| owner.is_none_or(|o| k.owner == o))
            .min_by_key(|(_, k)| k.last_read)
            .map(|(id, _)| id.clone())
    }

    fn expire(&mut self) {
        self.entries.retain(|_, k| k.last_read.elapsed() < IDLE);
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

/// An id nobody guesses, from another or otherwise: 128 bits from the OS.
fn random_id() -> std::io::Result<String> {
    crate::auth::random_hex::<16>()
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
        let store = KeptResults::new(2000);
        let a = store.keep("alice", result(50), 1.0).expect("fits");
        assert_eq!(store.get("alice", &a).expect("kept").result.row_count(), 50);
        assert_eq!(store.get("bob", &a).err().map(|e| e.code), Some("RESULT_NOT_FOUND"));
        assert_eq!(store.bytes(), 400);
        // 100 rows = 800 bytes: the first result goes to make room.
        let b = store.keep("alice", result(100), 1.0).expect("fits");
        assert!(store.get("alice", &a).is_err());
        assert_eq!(store.bytes(), 800);
        assert!(store.keep("alice", result(126), 1.0).is_err(), "over a key's share");
        // Bob's results do not push Alice's out while his own can make room.
        let bob: Vec<String> = (0..3).map(|_| store.keep("bob", result(100), 1.0).expect("fits")).collect();
        assert!(store.get("alice", &b).is_ok(), "alice keeps hers");
        assert!(store.get("bob", &bob[0]).is_err() && store.get("bob", &bob[2]).is_ok());
        let small: Vec<String> =
            (0..OWNER_ENTRIES + 3).map(|_| store.keep("carol", result(1), 1.0).expect("fits")).collect();
        assert!(store.get("carol", &small[0]).is_err() && store.get("carol", &small[OWNER_ENTRIES + 2]).is_ok());
        assert!(store.get("alice", &b).is_ok(), "many small results of one key evict only its own");
        assert!(store.forget("bob", &b).is_err());
        store.forget("alice", &b).expect("freed");
        assert_ne!(random_id().expect("id"), random_id().expect("id"));
    }
}
