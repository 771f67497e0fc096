//! The server's shared state: the engine, configuration, metrics, the access log, the
//! queries in flight and the admission slots every request goes through.

use crate::access_log::{now_ns, AccessLog};
use crate::config::Config;
use crate::metrics::Metrics;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::Semaphore;
use zepto_sql::interrupt::QueryControl;
use zepto_sql::Engine;

/// Everything requests share.
pub struct State {
    /// The database every request queries and writes.
    pub engine: Engine,
    /// The settings the server was started with.
    pub config: Config,
    /// Counters and gauges served at `/metrics`.
    pub metrics: Metrics,
    /// The access log, if enabled (one JSON line per request).
    pub log: Option<AccessLog>,
    /// Queries in flight, so shutdown can cancel them (added with [`State::add_running`]).
    pub(crate) running: Mutex<HashMap<u64, Arc<QueryControl>>>,
    /// Told of every query added to `running`: the memory guard sleeps on it while none runs.
    pub(crate) query_starts: Arc<QueryStarts>,
    /// The query slots and the quick lane's, with their threads, shared with the other doors
    /// that run statements ([`crate::admission`]).
    pub admission: Arc<crate::admission::Admission>,
    /// Ingest batches that may be parsed and applied at once (see [`Config::ingest_slots`]).
    pub ingest_slots: Arc<Semaphore>,
    /// The budget every request body draws on while it is held ([`crate::inflight`]).
    pub bodies: crate::inflight::BodyBudget,
    /// What `/ready` reports: set once the server accepts, cleared when shutdown starts.
    pub ready: AtomicBool,
    /// When the server started (for the uptime `/health` reports).
    pub started: Instant,
    /// Agent memory and caches over the engine's tables (`/api/ai/*`).
    pub memory: Arc<zepto_memory::AgentMemory>,
    /// Results kept for paging (`POST /query?keep=1`, `GET /results/{id}`).
    pub results: crate::results::KeptResults,
    /// The events of identical table subscriptions, made once per change.
    pub subscriptions: crate::subscribe_shared::SharedEvents,
    next_id: AtomicU64,
    id_prefix: String,
    /// Set when shutdown starts: subscriptions end, and connections finish their request and
    /// close (an upgraded one too).
    closing: tokio::sync::watch::Sender<bool>,
}

impl State {
    /// The server's shared state; starts the query threads.
    pub fn new(engine: Engine, config: Config, log: Option<AccessLog>) -> std::io::Result<State> {
        // Request ids: a per-process prefix and a counter, unique without coordination.
        let id_prefix = format!("{:x}", (now_ns() as u64 ^ u64::from(std::process::id())) & 0xff_ffff_ffff);
        let metrics = Metrics::new();
        let admission = match &config.admission {
            Some(a) => a.clone(),
            None => Arc::new(config.make_admission()?),
        };
        metrics.query_slots.set(i64::try_from(admission.slots()).unwrap_or(i64::MAX));
        if let Some(r) = &config.recovery {
            metrics.recovery_dropped_records.set(i64::try_from(r.records_dropped).unwrap_or(i64::MAX));
            metrics.recovery_dropped_rows.set(i64::try_from(r.intact_rows_dropped).unwrap_or(i64::MAX));
        }
        engine.catalog().feed().set_limit(config.subscribe_buffer_bytes);
        Ok(State {
            admission,
            memory: Arc::new(zepto_memory::AgentMemory::new(engine.clone(), config.ai.clone())),
            ingest_slots: Arc::new(Semaphore::new(config.ingest_slots())),
            bodies: config
                .bodies
                .clone()
                .unwrap_or_else(|| crate::inflight::BodyBudget::new(config.inflight_body_bytes())),
            results: crate::results::KeptResults::new(config.kept_result_bytes),
            subscriptions: crate::subscribe_shared::SharedEvents::default(),
            engine,
            config,
            metrics,
            log,
            running: Mutex::new(HashMap::new()),
            query_starts: Arc::new(QueryStarts::default()),
            ready: AtomicBool::new(false),
            started: Instant::now(),
            next_id: AtomicU64::new(1),
            id_prefix,
            closing: tokio::sync::watch::Sender::new(false),
        })
    }

    /// One of ingest's slots (every door's batch writes take one: `/write`, `/imp`, ILP over
    /// TCP), waited for; `None` only if the slots were closed, which nothing does: a stopping
    /// server still stores what its doors received (each door's stop signal ends them).
    pub(crate) async fn ingest_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.ingest_slots.clone().acquire_owned().await.ok()
    }

    /// `f` run on the blocking pool while holding an ingest slot.
    pub(crate) async fn run_ingest<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, crate::error::ApiError> {
        let permit =
            self.ingest_slot().await.ok_or_else(|| crate::error::ApiError::internal("the server is shutting down"))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f()
        })
        .await
        .map_err(|e| crate::error::ApiError::internal(format!("ingest task failed: {e}")))
    }

    /// A fresh number for this process (queries in flight are keyed by it in `running`).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A request id unique in this process and across restarts: `<prefix>-<counter>`.
    pub fn request_id(&self) -> String {
        format!("{}-{}", self.id_prefix, self.next_id())
    }

    /// Register a query in flight under `id` (a [`State::next_id`]), waking the memory guard.
    pub(crate) fn add_running(&self, id: u64, ctl: Arc<QueryControl>) {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).insert(id, ctl);
        self.query_starts.tell();
    }

    /// Forget the query in flight under `id`.
    pub(crate) fn remove_running(&self, id: u64) {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    /// Shutdown starts: every subscription's stream ends, and every connection closes after
    /// the request it is answering.
    pub fn begin_shutdown(&self) {
        self.closing.send_replace(true);
    }

    /// Whether shutdown has started.
    pub(crate) fn shutting_down(&self) -> bool {
        *self.closing.borrow()
    }

    /// Resolves once shutdown starts.
    pub(crate) async fn closing(&self) {
        let mut rx = self.closing.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Cancel every query in flight (shutdown).
    pub fn cancel_all(&self) {
        for q in self.running.lock().unwrap_or_else(|e| e.into_inner()).values() {
            q.cancel();
        }
    }
}

/// How many queries have started, and a condition to wait for the next one on. Kept apart
/// from [`State`] so that a waiter does not keep the state alive.
#[derive(Default)]
pub(crate) struct QueryStarts {
    count: Mutex<u64>,
    started: std::sync::Condvar,
}

impl QueryStarts {
    /// How many queries have started so far.
    pub(crate) fn count(&self) -> u64 {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn tell(&self) {
        *self.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.started.notify_all();
    }

    /// Wait until more than `seen` queries have started, or `timeout` passes.
    pub(crate) fn wait_past(&self, seen: u64, timeout: std::time::Duration) {
        let count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let waited = self.started.wait_timeout_while(count, timeout, |n| *n <= seen);
        drop(waited.unwrap_or_else(|e| e.into_inner()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_waiter_wakes_when_a_query_starts_and_not_before() {
        let starts = Arc::new(QueryStarts::default());
        let seen = starts.count();
        // Nothing starts: the wait runs out.
        let t = Instant::now();
        starts.wait_past(seen, Duration::from_millis(50));
        assert!(t.elapsed() >= Duration::from_millis(50), "woke after {:?} with no start", t.elapsed());
        // A start told before the wait begins is not missed.
        starts.tell();
        let t = Instant::now();
        starts.wait_past(seen, Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(10), "a start told before the wait was missed");
        assert_eq!(starts.count(), seen + 1);
        // A start told while waiting ends the wait.
        let seen = starts.count();
        let teller = {
            let starts = starts.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                starts.tell();
            })
        };
        let t = Instant::now();
        starts.wait_past(seen, Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(10), "woken by the start, not the timeout");
        assert_eq!(starts.count(), seen + 1);
        teller.join().expect("teller");
    }
}
