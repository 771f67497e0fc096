//! [`AgentMemory`]: the layer's state (its engine, limits, id and clock, cache counters) and
//! what is not one endpoint: statistics and the sweep of expired records.

use crate::api::Stats;
use crate::error::Result;
use crate::tables::{Rows, CACHE, MEMORIES};
use crate::tenant::TenantSources;
use crate::text::IdGen;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
use zepto_sql::interrupt::RunContext;
use zepto_sql::{Engine, ParamValue, QueryResult};

/// Limits of the memory layer.
#[derive(Debug, Clone)]
pub struct Config {
    /// Most memories one tenant keeps; a put beyond it evicts (expired first, then the lowest
    /// score; pinned records never).
    pub max_memories_per_tenant: usize,
    /// Most cache entries one tenant keeps (beyond: expired first, then the least hit).
    pub max_cache_entries_per_tenant: usize,
    /// Longest content, prompt or response, in bytes.
    pub max_text_bytes: usize,
    /// Longest metadata, as JSON text.
    pub max_metadata_bytes: usize,
    /// How often expired records are deleted.
    pub sweep_every: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_memories_per_tenant: 1_000_000,
            max_cache_entries_per_tenant: 100_000,
            max_text_bytes: 1 << 20,
            max_metadata_bytes: 64 << 10,
            sweep_every: Duration::from_secs(60),
        }
    }
}

/// Cache lookups of one tenant since the server started.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CacheCounts {
    pub exact: u64,
    pub semantic: u64,
    pub misses: u64,
}

/// Agent memory and caches over the engine's tables (see the crate docs).
#[derive(Debug)]
pub struct AgentMemory {
    pub(crate) engine: Engine,
    pub(crate) config: Config,
    pub(crate) ids: IdGen,
    clock: AtomicI64,
    /// Held by every write, so a quota check and the write it allows are one step.
    writes: Mutex<()>,
    counts: Mutex<HashMap<String, CacheCounts>>,
}

impl AgentMemory {
    /// The layer over `engine`'s catalog (its statements run with the engine's own access: the
    /// tenant is enforced by the layer's predicates, the caller's grants by the door).
    pub fn new(engine: Engine, config: Config) -> AgentMemory {
        AgentMemory {
            engine,
            config,
            ids: IdGen::new(),
            clock: AtomicI64::new(0),
            writes: Mutex::new(()),
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// The limits in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Now, in nanoseconds, never equal to an earlier answer: record times are unique.
    pub(crate) fn tick(&self) -> i64 {
        let now = zepto_storage::time::now_ns();
        let prev = self.clock.fetch_max(now, Ordering::AcqRel);
        if prev < now {
            return now;
        }
        self.clock.fetch_add(1, Ordering::AcqRel) + 1
    }

    pub(crate) fn write_lock(&self) -> MutexGuard<'_, ()> {
        self.writes.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn count(&self, tenant: &str, f: impl FnOnce(&mut CacheCounts)) {
        let mut m = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(m.entry(tenant.to_string()).or_default());
    }

    pub(crate) fn sql(&self, run: &RunContext, sql: &str, params: &[ParamValue]) -> Result<QueryResult> {
        Ok(self.engine.execute_with_params_in(run, sql, params)?)
    }

    /// `GET /api/ai/stats`: the tenant's counts.
    pub fn stats(&self, run: &RunContext, src: &TenantSources<'_>) -> Result<Stats> {
        let tenant = src.resolve(None)?;
        let now = zepto_storage::time::now_ns();
        let counts = self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&tenant).copied();
        let counts = counts.unwrap_or_default();
        let mut s = Stats {
            tenant_id: tenant.clone(),
            memories: 0,
            pinned: 0,
            expired: 0,
            tokens: 0,
            cache_entries: 0,
            cache_hits: 0,
            cache_exact_hits: counts.exact,
            cache_semantic_hits: counts.semantic,
            cache_misses: counts.misses,
            embedding_dim: MEMORIES.dim(&self.engine)?,
            quota_memories: self.config.max_memories_per_tenant,
            quota_cache_entries: self.config.max_cache_entries_per_tenant,
        };
        let p = [ParamValue::Str(tenant), ParamValue::Timestamp(now)];
        if s.embedding_dim.is_some() {
            let r = self.sql(
                run,
                "SELECT count(*), sum(CASE WHEN pinned THEN 1 ELSE 0 END), \
                 sum(CASE WHEN expires_at <= $2 THEN 1 ELSE 0 END), \
                 sum(CASE WHEN expires_at <= $2 THEN 0 ELSE token_count END) \
                 FROM ai_memories WHERE tenant_id = $1",
                &p,
            )?;
            let r = Rows::new(&r);
            (s.memories, s.pinned, s.expired, s.tokens) = (
                r.int(0, 0).unwrap_or(0),
                r.int(1, 0).unwrap_or(0),
                r.int(2, 0).unwrap_or(0),
                r.int(3, 0).unwrap_or(0),
            );
        }
        if CACHE.dim(&self.engine)?.is_some() {
            let r = self.sql(run, "SELECT count(*), sum(hits) FROM ai_cache WHERE tenant_id = $1", &p[..1])?;
            let r = Rows::new(&r);
            (s.cache_entries, s.cache_hits) = (r.int(0, 0).unwrap_or(0), r.int(1, 0).unwrap_or(0));
        }
        Ok(s)
    }

    /// Delete every expired memory and cache entry; returns how many.
    pub fn sweep(&self, run: &RunContext) -> Result<usize> {
        let now = [ParamValue::Timestamp(zepto_storage::time::now_ns())];
        let mut n = 0;
        let _w = self.write_lock();
        for spec in [&MEMORIES, &CACHE] {
            if spec.dim(&self.engine)?.is_some() {
                let sql = format!("DELETE FROM {} WHERE expires_at <= $1", spec.name);
                n += affected(&self.sql(run, &sql, &now)?);
            }
        }
        Ok(n)
    }

    /// Sweep expired records every [`Config::sweep_every`] on a thread of its own, until the
    /// layer is dropped.
    pub fn start_sweeper(self: &Arc<Self>) -> std::io::Result<()> {
        let weak: Weak<AgentMemory> = Arc::downgrade(self);
        let every = self.config.sweep_every;
        std::thread::Builder::new().name("zepto-ai-sweep".into()).spawn(move || loop {
            std::thread::sleep(every);
            let Some(me) = weak.upgrade() else { return };
            if let Err(e) = me.sweep(&RunContext::unlimited()) {
                eprintln!("zeptodb: sweeping expired agent memories failed: {e}");
            }
        })?;
        Ok(())
    }
}

/// Rows a DELETE or UPDATE changed (its status is `DELETE n` / `UPDATE n`).
pub(crate) fn affected(r: &QueryResult) -> usize {
    r.status.as_deref().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}
