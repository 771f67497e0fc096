//! Search and context assembly: filter, rank (see [`crate::rank`]), take the best.
//!
//! With a query embedding the candidates are the records nearest to it (the HNSW index answers
//! when it can, with the filters inside the walk): `candidates` of them (search: default
//! `max(3 · limit, 30)`; context: default 100), which the score then orders. A record outside
//! them is not returned however important. Without one, every record that passes the filters
//! is scored and the best are kept.

use crate::api::{Context, ContextRequest, Filters, MemoryRecord, SearchRequest};
use crate::error::{MemoryError, Result};
use crate::memories::record;
use crate::query::Where;
use crate::rank::Weights;
use crate::store::AgentMemory;
use crate::tables::{Rows, MEMORIES};
use crate::tenant::TenantSources;
use crate::text::content_key;
use crate::validate;
use std::collections::HashSet;
use zepto_sql::interrupt::RunContext;
use zepto_sql::ParamValue;

/// Most records a search returns or a context considers.
pub const MAX_LIMIT: usize = 1000;

/// One ranked read, whatever the endpoint.
struct Ranked<'a> {
    filters: &'a Filters,
    query: Option<&'a [f64]>,
    limit: usize,
    candidates: usize,
    min_similarity: Option<f64>,
    weights: Weights,
    embedding: bool,
}

impl AgentMemory {
    /// `POST /api/ai/memories/search`: the best `limit` records, access statistics updated.
    pub fn search(&self, run: &RunContext, src: &TenantSources<'_>, req: &SearchRequest) -> Result<Vec<MemoryRecord>> {
        let tenant = src.resolve(req.filters.tenant_id.as_deref())?;
        let limit = validate::count("limit", req.limit, 10, MAX_LIMIT)?;
        let ranked = Ranked {
            filters: &req.filters,
            query: req.query_embedding.as_deref(),
            limit,
            candidates: validate::count("candidates", req.candidates, (3 * limit).max(30), 10 * MAX_LIMIT)?.max(limit),
            min_similarity: req
                .min_similarity
                .map(|s| validate::in_range("min_similarity", s, -1.0, 1.0))
                .transpose()?,
            weights: Weights::from_request(req.weights.as_ref(), req.half_life_seconds)?,
            embedding: req.include_embedding.unwrap_or(false),
        };
        let mut found = self.ranked(run, &tenant, &ranked)?;
        if req.update_access.unwrap_or(true) {
            self.accessed(run, &tenant, &mut found)?;
        }
        Ok(found)
    }

    /// `POST /api/ai/context`: ranked records, one per distinct content, as many as fit the
    /// token budget (a record that does not fit is skipped and the next tried).
    pub fn context(&self, run: &RunContext, src: &TenantSources<'_>, req: &ContextRequest) -> Result<Context> {
        let tenant = src.resolve(req.filters.tenant_id.as_deref())?;
        let budget = req.token_budget.ok_or_else(|| MemoryError::bad("token_budget", "is required"))?;
        if !(1..=100_000_000).contains(&budget) {
            return Err(MemoryError::bad("token_budget", format!("{budget} is not between 1 and 100000000")));
        }
        let candidates = validate::count("candidates", req.candidates, 100, MAX_LIMIT)?;
        let ranked = Ranked {
            filters: &req.filters,
            query: req.query_embedding.as_deref(),
            limit: candidates,
            candidates,
            min_similarity: req
                .min_similarity
                .map(|s| validate::in_range("min_similarity", s, -1.0, 1.0))
                .transpose()?,
            weights: Weights::from_request(req.weights.as_ref(), req.half_life_seconds)?,
            embedding: false,
        };
        let (mut kept, mut used, mut skipped, mut duplicates) = (Vec::new(), 0i64, 0, 0);
        let mut seen = HashSet::new();
        for m in self.ranked(run, &tenant, &ranked)? {
            if !seen.insert(content_key(&m.content)) {
                duplicates += 1;
            } else if used + m.token_count > budget {
                skipped += 1;
            } else {
                used += m.token_count;
                kept.push(m);
            }
        }
        self.accessed(run, &tenant, &mut kept)?;
        Ok(Context { memories: kept, token_count: used, token_budget: budget, skipped, duplicates })
    }

    /// The best records of `tenant` by score.
    fn ranked(&self, run: &RunContext, tenant: &str, r: &Ranked<'_>) -> Result<Vec<MemoryRecord>> {
        let Some(dim) = MEMORIES.dim(&self.engine)? else {
            return Ok(Vec::new());
        };
        let now = zepto_storage::time::now_ns();
        let mut w = Where::tenant(tenant);
        w.filters(r.filters)?;
        w.live(now);
        let list = MEMORIES.select_list(r.embedding);
        let (sql, names) = match r.query {
            Some(q) => {
                let q = validate::embedding_of("query_embedding", q, dim, MEMORIES.name)?;
                w.raw("embedding IS NOT NULL");
                let qp = w.param(ParamValue::Vector(q));
                let candidates = r.candidates;
                let keep = r.min_similarity.map_or(String::new(), |s| format!("WHERE similarity >= {s:?}"));
                let sql = format!(
                    "SELECT {list}, similarity, {score} AS score FROM (\
                     SELECT {list}, array_cosine_similarity(embedding, {qp}) AS similarity FROM ai_memories \
                     WHERE {cond} ORDER BY similarity DESC LIMIT {candidates}) {keep} \
                     ORDER BY score DESC, created_at DESC, memory_id LIMIT {limit}",
                    score = r.weights.sql(now, true),
                    cond = w.sql(),
                    limit = r.limit,
                );
                (sql, format!("{list}, similarity, score"))
            }
            None => {
                let sql = format!(
                    "SELECT {list}, {score} AS score FROM ai_memories WHERE {cond} \
                     ORDER BY score DESC, created_at DESC, memory_id LIMIT {limit}",
                    score = r.weights.sql(now, false),
                    cond = w.sql(),
                    limit = r.limit,
                );
                (sql, format!("{list}, score"))
            }
        };
        let res = self.sql(run, &sql, w.params())?;
        let rows = Rows::new(&res);
        let names: Vec<&str> = names.split(", ").collect();
        Ok((0..rows.len()).map(|i| record(&rows, i, &names)).collect())
    }

    /// Count one more access of each of `found` (durably), and show it in them.
    fn accessed(&self, run: &RunContext, tenant: &str, found: &mut [MemoryRecord]) -> Result<()> {
        if found.is_empty() {
            return Ok(());
        }
        let now = zepto_storage::time::now_ns();
        let mut w = Where::tenant(tenant);
        let at = w.param(ParamValue::Timestamp(now));
        w.records('m', "memory_id", found.iter().map(|m| m.memory_id.clone()));
        let sql = format!(
            "UPDATE ai_memories SET access_count = access_count + 1, last_accessed_at = {at} WHERE {}",
            w.sql()
        );
        self.sql(run, &sql, w.params())?;
        let iso = zepto_storage::time::format_timestamp_iso(now);
        for m in found {
            m.access_count += 1;
            m.last_accessed_at = iso.clone();
        }
        Ok(())
    }
}
