//! One agent-memory operation as every door names it, taken as JSON and answered as JSON: the
//! HTTP door (`/api/ai/*`) and the Python door (`db.memory`, `db.cache`) both call
//! [`AgentMemory::call`], so a request means the same, and its answer reads the same, whichever
//! door it came through. Only the transport differs.

use crate::api::{self, CacheLookupRequest, CacheStoreRequest, ContextRequest, SearchRequest};
use crate::error::{MemoryError, Result};
use crate::store::AgentMemory;
use crate::tenant::TenantSources;
use zepto_sql::interrupt::RunContext;

/// The operations, with the endpoint each stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `POST /api/ai/memories`.
    Put,
    /// `GET /api/ai/memories/{id}`.
    Get,
    /// `DELETE /api/ai/memories/{id}`.
    Delete,
    /// `POST /api/ai/memories/search`.
    Search,
    /// `POST /api/ai/context`.
    Context,
    /// `POST /api/ai/cache/store`.
    CacheStore,
    /// `POST /api/ai/cache/lookup`.
    CacheLookup,
    /// `GET /api/ai/stats`.
    Stats,
}

impl Op {
    /// The operation called `name` (`put`, `get`, `delete`, `search`, `context`,
    /// `cache_store`, `cache_lookup`, `stats`), if any.
    pub fn parse(name: &str) -> Option<Op> {
        Some(match name {
            "put" => Op::Put,
            "get" => Op::Get,
            "delete" => Op::Delete,
            "search" => Op::Search,
            "context" => Op::Context,
            "cache_store" => Op::CacheStore,
            "cache_lookup" => Op::CacheLookup,
            "stats" => Op::Stats,
            _ => return None,
        })
    }

    /// Whether it takes a JSON body (the others take an id or nothing, as GET and DELETE do).
    pub fn has_body(self) -> bool {
        !matches!(self, Op::Get | Op::Delete | Op::Stats)
    }

    /// The table it reads or writes, and whether it writes (doors check grants and roles).
    pub fn target(self) -> (&'static str, bool) {
        match self {
            Op::Put | Op::Delete => ("ai_memories", true),
            Op::Get | Op::Search | Op::Context | Op::Stats => ("ai_memories", false),
            Op::CacheStore => ("ai_cache", true),
            Op::CacheLookup => ("ai_cache", false),
        }
    }
}

/// One request: the operation and everything its HTTP request would carry.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// What to do.
    pub op: Op,
    /// Where the tenant may come from (the key's binding, the header).
    pub tenant: TenantSources<'a>,
    /// The JSON body, for operations that take one.
    pub body: Option<&'a [u8]>,
    /// The record id (get, delete).
    pub id: Option<&'a str>,
    /// `?include_embedding=true` (get).
    pub include_embedding: bool,
}

fn render<T: serde::Serialize>(v: T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| MemoryError::Internal(format!("rendering the answer: {e}")))
}

impl AgentMemory {
    /// Run `call`; its answer as JSON text (what the endpoint's body holds).
    pub fn call(&self, run: &RunContext, call: &Call<'_>) -> Result<String> {
        let src = &call.tenant;
        let body = match (call.op.has_body(), call.body) {
            (true, Some(b)) => b,
            (true, None) => return Err(MemoryError::bad("body", "is required")),
            (false, Some(b)) if !b.is_empty() => return Err(MemoryError::bad("body", "this operation takes none")),
            (false, _) => &[],
        };
        let id = || call.id.ok_or_else(|| MemoryError::bad("memory_id", "is required"));
        let v = match call.op {
            Op::Put => {
                let (reqs, batch) = api::parse_put(body)?;
                let ids = self.put(run, src, &reqs)?;
                if batch {
                    serde_json::json!({ "memory_ids": ids })
                } else {
                    serde_json::json!({ "memory_id": ids.first() })
                }
            }
            Op::Get => render(self.get(run, src, id()?, call.include_embedding)?)?,
            Op::Delete => {
                self.delete(run, src, id()?)?;
                serde_json::json!({ "deleted": id()? })
            }
            Op::Search => serde_json::json!({ "matches": self.search(run, src, &api::parse::<SearchRequest>(body)?)? }),
            Op::Context => render(self.context(run, src, &api::parse::<ContextRequest>(body)?)?)?,
            Op::CacheStore => {
                serde_json::json!({ "entry_id": self.cache_store(run, src, &api::parse::<CacheStoreRequest>(body)?)? })
            }
            Op::CacheLookup => render(self.cache_lookup(run, src, &api::parse::<CacheLookupRequest>(body)?)?)?,
            Op::Stats => render(self.stats(run, src)?)?,
        };
        serde_json::to_string(&v).map_err(|e| MemoryError::Internal(format!("rendering the answer: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn call<'a>(op: Op, tenant: Option<&'a str>, body: Option<&'a str>, id: Option<&'a str>) -> Call<'a> {
        let tenant = TenantSources { key: None, header: tenant };
        Call { op, tenant, body: body.map(str::as_bytes), id, include_embedding: false }
    }

    #[test]
    fn every_door_gets_the_same_answers() {
        let m = AgentMemory::new(zepto_sql::Engine::new(), Config::default());
        let run = RunContext::unlimited();
        let put = m.call(&run, &call(Op::Put, Some("a"), Some(r#"{"content": "x", "embedding": [1, 0]}"#), None));
        let v: serde_json::Value = serde_json::from_str(&put.expect("stored")).expect("JSON");
        let id = v["memory_id"].as_str().expect("an id").to_string();
        let got = m.call(&run, &call(Op::Get, Some("a"), None, Some(&id))).expect("found");
        assert!(got.contains("\"content\":\"x\""), "{got}");
        let batch = m.call(&run, &call(Op::Put, None, Some(r#"{"memories": [{"content": "y"}]}"#), None));
        assert!(batch.expect("stored").starts_with("{\"memory_ids\":["));
        let other = m.call(&run, &call(Op::Get, Some("b"), None, Some(&id)));
        assert!(matches!(other, Err(MemoryError::NotFound(_))));
        let conflict = m.call(&run, &call(Op::Search, Some("a"), Some(r#"{"tenant_id": "b"}"#), None));
        assert!(matches!(conflict, Err(MemoryError::BadRequest { .. })));
        assert!(m.call(&run, &call(Op::Stats, None, Some("{}"), None)).is_err(), "stats takes no body");
        assert!(m.call(&run, &call(Op::Get, None, None, None)).is_err(), "get needs an id");
        assert_eq!(Op::parse("cache_lookup"), Some(Op::CacheLookup));
        assert_eq!(Op::parse("nope"), None);
        assert_eq!(Op::CacheStore.target(), ("ai_cache", true));
    }
}
