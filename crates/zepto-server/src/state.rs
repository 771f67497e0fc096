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
    /// Queries in flight, so shutdown can cancel them.
    pub running: Mutex<HashMap<u64, Arc<QueryControl>>>,
    /// Statements and ingest batches that may run at once (see [`Config::query_slots`]).
    pub query_slots: Arc<Semaphore>,
    /// Ingest batches that may be parsed and applied at once (see [`Config::ingest_slots`]).
    pub ingest_slots: Arc<Semaphore>,
    /// The budget every request body draws on while it is held ([`crate::inflight`]).
    pub bodies: crate::inflight::BodyBudget,
    /// Where statements run (apart from ingest, at a lower CPU priority).
    pub query_pool: crate::pool::QueryPool,
    /// What `/ready` reports: set once the server accepts, cleared when shutdown starts.
    pub ready: AtomicBool,
    /// When the server started (for the uptime `/health` reports).
    pub started: Instant,
    /// Agent memory and caches over the engine's tables (`/api/ai/*`).
    pub memory: Arc<zepto_memory::AgentMemory>,
    /// Results kept for paging (`POST /query?keep=1`, `GET /results/{id}`).
    pub results: crate::results::KeptResults,
    next_id: AtomicU64,
    id_prefix: String,
}

impl State {
    /// The server's shared state; starts the query threads.
    pub fn new(engine: Engine, config: Config, log: Option<AccessLog>) -> std::io::Result<State> {
        // Request ids: a per-process prefix and a counter, unique without coordination.
        let id_prefix = format!("{:x}", (now_ns() as u64 ^ u64::from(std::process::id())) & 0xff_ffff_ffff);
        let metrics = Metrics::new();
        if let Some(r) = &config.recovery {
            metrics.recovery_dropped_records.set(i64::try_from(r.records_dropped).unwrap_or(i64::MAX));
            metrics.recovery_dropped_rows.set(i64::try_from(r.intact_rows_dropped).unwrap_or(i64::MAX));
        }
        Ok(State {
            query_pool: crate::pool::QueryPool::new(config.query_slots())?,
            memory: Arc::new(zepto_memory::AgentMemory::new(engine.clone(), config.ai.clone())),
            query_slots: Arc::new(Semaphore::new(config.query_slots())),
            ingest_slots: Arc::new(Semaphore::new(config.ingest_slots())),
            bodies: crate::inflight::BodyBudget::new(config.inflight_body_bytes()),
            results: crate::results::KeptResults::new(config.kept_result_bytes),
            engine,
            config,
            metrics,
            log,
            running: Mutex::new(HashMap::new()),
            ready: AtomicBool::new(false),
            started: Instant::now(),
            next_id: AtomicU64::new(1),
            id_prefix,
        })
    }

    /// A fresh number for this process (queries in flight are keyed by it in `running`).
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// A request id unique in this process and across restarts: `<prefix>-<counter>`.
    pub fn request_id(&self) -> String {
        format!("{}-{}", self.id_prefix, self.next_id())
    }

    /// Cancel every query in flight (shutdown).
    pub fn cancel_all(&self) {
        for q in self.running.lock().unwrap_or_else(|e| e.into_inner()).values() {
            q.cancel();
        }
    }
}
