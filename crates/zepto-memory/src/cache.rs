//! The answer cache: exact lookups on the normalized prompt, then semantic ones on the prompt's
//! embedding (cosine similarity at least the threshold, 0.92 by default). Storing a prompt
//! that is already cached replaces the entry. Each hit is counted on its entry, durably.

use crate::api::{CacheEntry, CacheLookup, CacheLookupRequest, CacheStoreRequest};
use crate::error::{MemoryError, Result};
use crate::memories::columns;
use crate::query::Where;
use crate::store::AgentMemory;
use crate::tables::{metadata_json, Rows, CACHE};
use crate::tenant::TenantSources;
use crate::text::normalize_prompt;
use crate::validate;
use zepto_sql::interrupt::RunContext;
use zepto_sql::ParamValue;
use zepto_storage::Value;

/// The least similarity of a semantic hit when the lookup gives none.
pub const DEFAULT_SEMANTIC_THRESHOLD: f64 = 0.92;

impl AgentMemory {
    /// `POST /api/ai/cache/store`: cache an answer; returns the entry's id.
    pub fn cache_store(&self, run: &RunContext, src: &TenantSources<'_>, req: &CacheStoreRequest) -> Result<String> {
        let tenant = src.resolve(req.tenant_id.as_deref())?;
        let now = zepto_storage::time::now_ns();
        let prompt = validate::text("prompt", req.prompt.as_deref(), self.config.max_text_bytes)?;
        let response = validate::text("response", req.response.as_deref(), self.config.max_text_bytes)?;
        let metadata = validate::metadata(req.metadata.as_ref(), self.config.max_metadata_bytes)?;
        let expires = validate::expiry(req.expires_at.as_ref(), req.ttl_seconds, now)?;
        let dim = match (CACHE.dim(&self.engine)?, &req.embedding) {
            (Some(d), _) => d,
            (None, Some(e)) => u16::try_from(e.len()).unwrap_or(0),
            (None, None) => {
                return Err(MemoryError::bad(
                    "embedding",
                    "the first cache entry stored must carry an embedding: its length fixes the dimension",
                ))
            }
        };
        let embedding = match &req.embedding {
            Some(e) => Value::Vector(validate::embedding_of("embedding", e, dim, CACHE.name)?),
            None => Value::Null,
        };
        let norm = normalize_prompt(prompt);
        let _w = self.write_lock();
        if CACHE.ensure(&self.engine, run, dim)? != dim {
            return Err(MemoryError::bad("embedding", "the table was created meanwhile with another dimension"));
        }
        let mut same = Where::tenant(&tenant);
        same.cmp("prompt_norm", "=", ParamValue::Str(norm.clone()));
        self.sql(run, &format!("DELETE FROM ai_cache WHERE {}", same.sql()), same.params())?;
        self.make_cache_room(run, &tenant)?;
        let created = self.tick();
        let id = self.ids.next('c', created);
        let row = vec![
            Value::Timestamp(created),
            Value::Str(tenant),
            Value::Str(id.clone()),
            Value::Str(prompt.to_string()),
            Value::Str(norm),
            Value::Str(response.to_string()),
            Value::Str(metadata),
            embedding,
            expires.map_or(Value::Null, Value::Timestamp),
            Value::Int64(0),
            Value::Null,
        ];
        self.engine.catalog().append(CACHE.name, columns(&self.engine, CACHE.name, std::iter::once(row))?)?;
        Ok(id)
    }

    /// Room for one more entry: expired entries go first, then the least hit, oldest first.
    fn make_cache_room(&self, run: &RunContext, tenant: &str) -> Result<()> {
        let quota = self.config.max_cache_entries_per_tenant;
        let p = [ParamValue::Str(tenant.to_string()), ParamValue::Timestamp(zepto_storage::time::now_ns())];
        let r = self.sql(run, "SELECT count(*) FROM ai_cache WHERE tenant_id = $1", &p[..1])?;
        let total = usize::try_from(Rows::new(&r).int(0, 0).unwrap_or(0)).unwrap_or(0);
        if total < quota {
            return Ok(());
        }
        self.sql(run, "DELETE FROM ai_cache WHERE tenant_id = $1 AND expires_at <= $2", &p)?;
        let r = self.sql(run, "SELECT count(*) FROM ai_cache WHERE tenant_id = $1", &p[..1])?;
        let over = usize::try_from(Rows::new(&r).int(0, 0).unwrap_or(0)).unwrap_or(0).saturating_sub(quota - 1);
        if over > 0 {
            let v = self.sql(
                run,
                &format!(
                    "SELECT entry_id FROM ai_cache WHERE tenant_id = $1 ORDER BY hits ASC, created_at ASC LIMIT {over}"
                ),
                &p[..1],
            )?;
            let v = Rows::new(&v);
            let mut w = Where::tenant(tenant);
            w.one_of("entry_id", (0..v.len()).filter_map(|i| v.text(0, i)).map(ParamValue::Str));
            self.sql(run, &format!("DELETE FROM ai_cache WHERE {}", w.sql()), w.params())?;
        }
        Ok(())
    }

    /// `POST /api/ai/cache/lookup`: an exact hit, else a semantic one, else a miss.
    pub fn cache_lookup(
        &self,
        run: &RunContext,
        src: &TenantSources<'_>,
        req: &CacheLookupRequest,
    ) -> Result<CacheLookup> {
        let tenant = src.resolve(req.tenant_id.as_deref())?;
        let prompt = validate::text("prompt", req.prompt.as_deref(), self.config.max_text_bytes)?;
        let threshold = validate::in_range(
            "semantic_threshold",
            req.semantic_threshold.unwrap_or(DEFAULT_SEMANTIC_THRESHOLD),
            -1.0,
            1.0,
        )?;
        let miss = CacheLookup { hit: false, kind: None, score: None, entry: None };
        let Some(dim) = CACHE.dim(&self.engine)? else {
            if let Some(e) = &req.embedding {
                validate::embedding("embedding", e)?;
            }
            self.count(&tenant, |c| c.misses += 1);
            return Ok(miss);
        };
        let query =
            req.embedding.as_ref().map(|e| validate::embedding_of("embedding", e, dim, CACHE.name)).transpose()?;
        let now = zepto_storage::time::now_ns();
        let list = CACHE.select_list(false);
        let mut w = Where::tenant(&tenant);
        w.live(now);
        let mut exact = Where::tenant(&tenant);
        exact.live(now);
        exact.cmp("prompt_norm", "=", ParamValue::Str(normalize_prompt(prompt)));
        let sql = format!("SELECT {list} FROM ai_cache WHERE {} ORDER BY created_at DESC LIMIT 1", exact.sql());
        let r = self.sql(run, &sql, exact.params())?;
        if let Some(e) = entry(&Rows::new(&r), &list) {
            return self.hit(run, &tenant, e, "exact", 1.0);
        }
        let Some(q) = query else {
            self.count(&tenant, |c| c.misses += 1);
            return Ok(miss);
        };
        w.raw("embedding IS NOT NULL");
        let qp = w.param(ParamValue::Vector(q));
        let sql = format!(
            "SELECT {list}, array_cosine_similarity(embedding, {qp}) AS similarity FROM ai_cache WHERE {} \
             ORDER BY similarity DESC LIMIT 1",
            w.sql()
        );
        let r = self.sql(run, &sql, w.params())?;
        let rows = Rows::new(&r);
        let names = format!("{list}, similarity");
        let best = rows.float(names.split(", ").count() - 1, 0);
        match (entry(&rows, &names), best) {
            (Some(e), Some(s)) if s >= threshold => self.hit(run, &tenant, e, "semantic", s),
            (_, best) => {
                self.count(&tenant, |c| c.misses += 1);
                Ok(CacheLookup { score: best, ..miss })
            }
        }
    }

    fn hit(
        &self,
        run: &RunContext,
        tenant: &str,
        mut e: CacheEntry,
        kind: &'static str,
        score: f64,
    ) -> Result<CacheLookup> {
        let mut w = Where::tenant(tenant);
        let at = w.param(ParamValue::Timestamp(zepto_storage::time::now_ns()));
        w.records('c', "entry_id", [e.entry_id.clone()]);
        self.sql(
            run,
            &format!("UPDATE ai_cache SET hits = hits + 1, last_hit_at = {at} WHERE {}", w.sql()),
            w.params(),
        )?;
        e.hits += 1;
        self.count(tenant, |c| if kind == "exact" { c.exact += 1 } else { c.semantic += 1 });
        Ok(CacheLookup { hit: true, kind: Some(kind), score: Some(score), entry: Some(e) })
    }
}

/// The first row of a result whose columns are `names` (a select list of `ai_cache`).
fn entry(rows: &Rows, names: &str) -> Option<CacheEntry> {
    if rows.is_empty() {
        return None;
    }
    let names: Vec<&str> = names.split(", ").collect();
    let c = |n: &str| names.iter().position(|x| *x == n).unwrap_or(usize::MAX);
    Some(CacheEntry {
        entry_id: rows.text(c("entry_id"), 0).unwrap_or_default(),
        tenant_id: rows.text(c("tenant_id"), 0).unwrap_or_default(),
        prompt: rows.text(c("prompt"), 0).unwrap_or_default(),
        response: rows.text(c("response"), 0).unwrap_or_default(),
        metadata: metadata_json(rows.text(c("metadata"), 0)),
        created_at: rows.time(c("created_at"), 0).unwrap_or_default(),
        expires_at: rows.time(c("expires_at"), 0),
        hits: rows.int(c("hits"), 0).unwrap_or(0),
    })
}
