//! `/api/ai/*`: agent memory and answer caches (SPEC §5) over [`zepto_memory::AgentMemory`].
//!
//! | method | path | what | role |
//! |---|---|---|---|
//! | POST | `/api/ai/memories` | store one record, or `{"memories": [...]}` | writer |
//! | GET | `/api/ai/memories/{id}` (`?include_embedding=true`) | one record | reader |
//! | DELETE | `/api/ai/memories/{id}` | delete it | writer |
//! | POST | `/api/ai/memories/search` | ranked matches | reader |
//! | POST | `/api/ai/context` | ranked, deduplicated, fitted to a token budget | reader |
//! | POST | `/api/ai/cache/store` | cache an answer | writer |
//! | POST | `/api/ai/cache/lookup` | exact, then semantic | reader |
//! | GET | `/api/ai/stats` | the tenant's counts | reader |
//!
//! The tenant comes from the key (when bound to one), the `X-Zepto-Tenant-Id` header or the
//! body's `tenant_id` ([`zepto_memory::tenant`]). A key with table grants needs a grant for
//! `ai_memories` (memories) or `ai_cache` (cache). Each request runs on a query slot, under
//! the server's query timeout and memory limit.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::auth::{Principal, Role};
use crate::error::ApiError;
use crate::state::State;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use std::sync::Arc;
use zepto_memory::api::{self, CacheLookupRequest, CacheStoreRequest, ContextRequest, SearchRequest};
use zepto_memory::{AgentMemory, TenantSources};
use zepto_sql::interrupt::{QueryControl, RunContext};

/// One agent-memory operation, parsed from the method and path.
#[derive(Debug, Clone, PartialEq)]
enum Op {
    Put,
    Get(String),
    Delete(String),
    Search,
    Context,
    CacheStore,
    CacheLookup,
    Stats,
}

impl Op {
    /// The table the operation reads or writes, and the role it needs.
    fn needs(&self) -> (&'static str, Role) {
        match self {
            Op::Put | Op::Delete(_) => ("ai_memories", Role::Writer),
            Op::Get(_) | Op::Search | Op::Context | Op::Stats => ("ai_memories", Role::Reader),
            Op::CacheStore => ("ai_cache", Role::Writer),
            Op::CacheLookup => ("ai_cache", Role::Reader),
        }
    }

    fn has_body(&self) -> bool {
        !matches!(self, Op::Get(_) | Op::Delete(_) | Op::Stats)
    }
}

/// The operation at `path` (under `/api/ai`) for `method`; 404 for an unknown path, 405 (with
/// `Allow`) for a known path and another method.
fn route(method: &Method, path: &str) -> Result<Op, ApiError> {
    let rest = path.strip_prefix("/api/ai").unwrap_or(path);
    let get = method == Method::GET || method == Method::HEAD;
    let (op, allow) = match rest {
        "/memories" => (matches!(*method, Method::POST).then_some(Op::Put), "POST"),
        "/memories/search" => (matches!(*method, Method::POST).then_some(Op::Search), "POST"),
        "/context" => (matches!(*method, Method::POST).then_some(Op::Context), "POST"),
        "/cache/store" => (matches!(*method, Method::POST).then_some(Op::CacheStore), "POST"),
        "/cache/lookup" => (matches!(*method, Method::POST).then_some(Op::CacheLookup), "POST"),
        "/stats" => (get.then_some(Op::Stats), "GET, HEAD"),
        r => match r.strip_prefix("/memories/").filter(|id| !id.is_empty() && !id.contains('/')) {
            Some(id) if get => (Some(Op::Get(id.to_string())), ""),
            Some(id) if method == Method::DELETE => (Some(Op::Delete(id.to_string())), ""),
            Some(_) => (None, "GET, HEAD, DELETE"),
            None => return Err(ApiError::not_found(format!("no such endpoint: {method} {path}"))),
        },
    };
    op.ok_or_else(|| {
        let mut e = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "METHOD_NOT_ALLOWED",
            format!("{method} is not allowed on {path}"),
        );
        e.allow = Some(allow);
        e
    })
}

/// The tenant a key is bound to, if any.
fn key_tenant(_who: &Principal) -> Option<&str> {
    None
}

/// Serve one `/api/ai/*` request: the status and JSON body.
pub(crate) async fn handle(
    state: &Arc<State>,
    req: Request<Incoming>,
    who: &Principal,
    params: &[(String, String)],
) -> Result<(StatusCode, String), ApiError> {
    let op = route(req.method(), req.uri().path())?;
    let (table, role) = op.needs();
    who.require(role)?;
    who.require_table(table)?;
    let header = match req.headers().get("x-zepto-tenant-id") {
        None => None,
        Some(v) => {
            Some(v.to_str().map_err(|_| ApiError::bad_request("X-Zepto-Tenant-Id is not printable ASCII"))?.to_string())
        }
    };
    let include_embedding = params.iter().any(|(k, v)| k == "include_embedding" && (v == "true" || v == "1"));
    let (body, held) = if op.has_body() {
        let (b, h) = crate::router::read_body(state, req, state.config.ai_max_body_bytes).await?;
        (b, Some(h))
    } else {
        (Bytes::new(), None)
    };
    let permit = state
        .query_slots
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| ApiError::internal("the server is shutting down"))?;
    let ctl = QueryControl::new(state.config.query_timeout, state.config.query_memory_limit);
    let id = state.next_id();
    state.running.lock().unwrap_or_else(|e| e.into_inner()).insert(id, ctl.clone());
    let memory = state.memory.clone();
    let key = key_tenant(who).map(str::to_string);
    let result = tokio::task::spawn_blocking(move || {
        let (_permit, _held) = (permit, held);
        let run = RunContext::new(Some(ctl));
        let src = TenantSources { key: key.as_deref(), header: header.as_deref() };
        serve(&memory, &run, &src, op, &body, include_embedding)
    })
    .await;
    state.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    result.map_err(|e| ApiError::internal(format!("agent-memory task failed: {e}")))?
}

/// Run one operation and render its answer.
fn serve(
    m: &AgentMemory,
    run: &RunContext,
    src: &TenantSources<'_>,
    op: Op,
    body: &[u8],
    include_embedding: bool,
) -> Result<(StatusCode, String), ApiError> {
    let v = match op {
        Op::Put => {
            let (reqs, batch) = api::parse_put(body)?;
            let ids = m.put(run, src, &reqs)?;
            if batch {
                serde_json::json!({ "memory_ids": ids })
            } else {
                serde_json::json!({ "memory_id": ids.first() })
            }
        }
        Op::Get(id) => serde_json::to_value(m.get(run, src, &id, include_embedding)?).map_err(render)?,
        Op::Delete(id) => {
            m.delete(run, src, &id)?;
            serde_json::json!({ "deleted": id })
        }
        Op::Search => serde_json::json!({ "matches": m.search(run, src, &api::parse::<SearchRequest>(body)?)? }),
        Op::Context => {
            serde_json::to_value(m.context(run, src, &api::parse::<ContextRequest>(body)?)?).map_err(render)?
        }
        Op::CacheStore => {
            serde_json::json!({ "entry_id": m.cache_store(run, src, &api::parse::<CacheStoreRequest>(body)?)? })
        }
        Op::CacheLookup => {
            serde_json::to_value(m.cache_lookup(run, src, &api::parse::<CacheLookupRequest>(body)?)?).map_err(render)?
        }
        Op::Stats => serde_json::to_value(m.stats(run, src)?).map_err(render)?,
    };
    let mut s = serde_json::to_string(&v).map_err(render)?;
    s.push('\n');
    Ok((StatusCode::OK, s))
}

fn render(e: serde_json::Error) -> ApiError {
    ApiError::internal(format!("rendering the answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route(&Method::POST, "/api/ai/memories").expect("put"), Op::Put);
        assert_eq!(route(&Method::GET, "/api/ai/memories/m1").expect("get"), Op::Get("m1".into()));
        assert_eq!(route(&Method::DELETE, "/api/ai/memories/m1").expect("delete"), Op::Delete("m1".into()));
        assert_eq!(route(&Method::POST, "/api/ai/memories/search").expect("search"), Op::Search);
        assert_eq!(route(&Method::GET, "/api/ai/stats").expect("stats"), Op::Stats);
        let e = route(&Method::GET, "/api/ai/context").expect_err("405");
        assert_eq!((e.status, e.allow), (StatusCode::METHOD_NOT_ALLOWED, Some("POST")));
        assert_eq!(route(&Method::POST, "/api/ai/memories/m1").expect_err("405").allow, Some("GET, HEAD, DELETE"));
        assert_eq!(route(&Method::GET, "/api/ai/nope").expect_err("404").status, StatusCode::NOT_FOUND);
        assert_eq!(route(&Method::GET, "/api/ai/memories/a/b").expect_err("404").status, StatusCode::NOT_FOUND);
    }
}
