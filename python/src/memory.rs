//! Agent memory in process (`db.memory`, `db.cache`): the operations of the server's
//! `/api/ai/*` (crates/zepto-server/src/ai.rs) over an [`AgentMemory`] on the database's own
//! engine, taking and giving the same JSON bodies, so the Python package builds a request once
//! for both doors and only the transport differs. The tenant comes as the server's
//! `X-Zepto-Tenant-Id` header would (there is no API key in process), or in the body.

use zepto_memory::api::{self, CacheLookupRequest, CacheStoreRequest, ContextRequest, SearchRequest};
use zepto_memory::{AgentMemory, MemoryError, TenantSources};
use zepto_sql::interrupt::RunContext;

/// One operation, named as the Python side names it.
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
    /// The operation called `name`, if any.
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

    /// Whether it takes a JSON body (the others take an id or nothing, as their GET and DELETE
    /// counterparts do).
    fn has_body(self) -> bool {
        !matches!(self, Op::Get | Op::Delete | Op::Stats)
    }
}

/// What one request asks: the operation and everything the HTTP request would carry.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub op: Op,
    /// The `X-Zepto-Tenant-Id` header's counterpart.
    pub tenant: Option<&'a str>,
    /// The JSON body (operations that take one).
    pub body: Option<&'a str>,
    /// The record id (get, delete).
    pub id: Option<&'a str>,
    /// `?include_embedding=true` (get).
    pub include_embedding: bool,
}

/// Why a call failed: the layer refused it, or its answer could not be rendered (a bug).
#[derive(Debug)]
pub enum Failure {
    Memory(MemoryError),
    Render(String),
}

impl From<MemoryError> for Failure {
    fn from(e: MemoryError) -> Failure {
        Failure::Memory(e)
    }
}

fn render(e: serde_json::Error) -> Failure {
    Failure::Render(format!("rendering the answer: {e}"))
}

/// Run `call` and render its answer as the server's endpoint does.
pub fn serve(m: &AgentMemory, run: &RunContext, call: &Call<'_>) -> Result<String, Failure> {
    let src = TenantSources { key: None, header: call.tenant };
    let body = match (call.op.has_body(), call.body) {
        (true, Some(b)) => b.as_bytes(),
        (true, None) => return Err(MemoryError::bad("body", "is required").into()),
        (false, Some(_)) => return Err(MemoryError::bad("body", "this operation takes none").into()),
        (false, None) => &[],
    };
    let id = || call.id.ok_or_else(|| MemoryError::bad("memory_id", "is required"));
    let v = match call.op {
        Op::Put => {
            let (reqs, batch) = api::parse_put(body)?;
            let ids = m.put(run, &src, &reqs)?;
            if batch {
                serde_json::json!({ "memory_ids": ids })
            } else {
                serde_json::json!({ "memory_id": ids.first() })
            }
        }
        Op::Get => serde_json::to_value(m.get(run, &src, id()?, call.include_embedding)?).map_err(render)?,
        Op::Delete => {
            m.delete(run, &src, id()?)?;
            serde_json::json!({ "deleted": id()? })
        }
        Op::Search => serde_json::json!({ "matches": m.search(run, &src, &api::parse::<SearchRequest>(body)?)? }),
        Op::Context => {
            serde_json::to_value(m.context(run, &src, &api::parse::<ContextRequest>(body)?)?).map_err(render)?
        }
        Op::CacheStore => {
            serde_json::json!({ "entry_id": m.cache_store(run, &src, &api::parse::<CacheStoreRequest>(body)?)? })
        }
        Op::CacheLookup => serde_json::to_value(m.cache_lookup(run, &src, &api::parse::<CacheLookupRequest>(body)?)?)
            .map_err(render)?,
        Op::Stats => serde_json::to_value(m.stats(run, &src)?).map_err(render)?,
    };
    serde_json::to_string(&v).map_err(render)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_memory::Config;

    fn call<'a>(op: Op, tenant: Option<&'a str>, body: Option<&'a str>, id: Option<&'a str>) -> Call<'a> {
        Call { op, tenant, body, id, include_embedding: false }
    }

    #[test]
    fn answers_as_the_server_does() {
        let m = AgentMemory::new(zepto_sql::Engine::new(), Config::default());
        let run = RunContext::unlimited();
        let put = serve(&m, &run, &call(Op::Put, Some("a"), Some(r#"{"content": "x", "embedding": [1, 0]}"#), None))
            .expect("stored");
        let v: serde_json::Value = serde_json::from_str(&put).expect("JSON");
        let id = v["memory_id"].as_str().expect("an id").to_string();
        let got = serve(&m, &run, &call(Op::Get, Some("a"), None, Some(&id))).expect("found");
        assert!(got.contains("\"content\":\"x\""), "{got}");
        let batch = serve(&m, &run, &call(Op::Put, None, Some(r#"{"memories": [{"content": "y"}]}"#), None));
        assert!(batch.expect("stored").starts_with("{\"memory_ids\":["));
        let other = serve(&m, &run, &call(Op::Get, Some("b"), None, Some(&id)));
        assert!(matches!(other, Err(Failure::Memory(MemoryError::NotFound(_)))));
        let conflict = serve(&m, &run, &call(Op::Search, Some("a"), Some(r#"{"tenant_id": "b"}"#), None));
        assert!(matches!(conflict, Err(Failure::Memory(MemoryError::BadRequest { .. }))));
        assert!(serve(&m, &run, &call(Op::Stats, None, Some("{}"), None)).is_err(), "stats takes no body");
        assert!(serve(&m, &run, &call(Op::Get, None, None, None)).is_err(), "get needs an id");
        assert_eq!(Op::parse("cache_lookup"), Some(Op::CacheLookup));
        assert_eq!(Op::parse("nope"), None);
    }
}
