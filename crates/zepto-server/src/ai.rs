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
use crate::inflight::Held;
use crate::state::State;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::{Method, StatusCode};
use std::sync::Arc;
use zepto_memory::{Call, Op, TenantSources};
use zepto_sql::interrupt::{QueryControl, RunContext};

/// The operation at `path` (under `/api/ai`) for `method`; 404 for an unknown path, 405 (with
/// `Allow`) for a known path and another method.
fn route(method: &Method, path: &str) -> Result<(Op, Option<String>), ApiError> {
    let rest = path.strip_prefix("/api/ai").unwrap_or(path);
    let get = method == Method::GET || method == Method::HEAD;
    let (op, allow) = match rest {
        "/memories" => (matches!(*method, Method::POST).then_some((Op::Put, None)), "POST"),
        "/memories/search" => (matches!(*method, Method::POST).then_some((Op::Search, None)), "POST"),
        "/context" => (matches!(*method, Method::POST).then_some((Op::Context, None)), "POST"),
        "/cache/store" => (matches!(*method, Method::POST).then_some((Op::CacheStore, None)), "POST"),
        "/cache/lookup" => (matches!(*method, Method::POST).then_some((Op::CacheLookup, None)), "POST"),
        "/stats" => (get.then_some((Op::Stats, None)), "GET, HEAD"),
        r => match r.strip_prefix("/memories/").filter(|id| !id.is_empty() && !id.contains('/')) {
            Some(id) if get => (Some((Op::Get, Some(id.to_string()))), ""),
            Some(id) if method == Method::DELETE => (Some((Op::Delete, Some(id.to_string()))), ""),
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
fn key_tenant(who: &Principal) -> Option<&str> {
    who.tables.tenant()
}

/// Serve one `/api/ai/*` request: the status and JSON body.
pub(crate) async fn handle(
    state: &Arc<State>,
    req: hyper::Request<Incoming>,
    who: &Principal,
    params: &[(String, String)],
) -> Result<(StatusCode, String), ApiError> {
    let (op, id) = route(req.method(), req.uri().path())?;
    let (table, writes) = op.target();
    who.require(if writes { Role::Writer } else { Role::Reader })?;
    who.require_table(table)?;
    let header = match req.headers().get("x-zepto-tenant-id") {
        None => None,
        Some(v) => {
            Some(v.to_str().map_err(|_| ApiError::bad_request("X-Zepto-Tenant-Id is not printable ASCII"))?.to_string())
        }
    };
    let include_embedding = params.iter().any(|(k, v)| k == "include_embedding" && (v == "true" || v == "1"));
    let (body, held) = if op.has_body() {
        let (b, h) = crate::request_body::read_body(state, req, state.config.ai_max_body_bytes).await?;
        (b, Some(h))
    } else {
        (Bytes::new(), None)
    };
    let request = Request { op, id, header, include_embedding, body, key: key_tenant(who).map(str::to_string) };
    run(state, request, held).await
}

/// An `/api/ai/*` request, read and checked, ready to run.
struct Request {
    op: Op,
    id: Option<String>,
    header: Option<String>,
    include_embedding: bool,
    body: Bytes,
    key: Option<String>,
}

/// Run a request on a query slot under the server's limits (cancelled at shutdown): it
/// waits for the slot at most `--queue-timeout`, as statements do (503 after).
async fn run(state: &Arc<State>, r: Request, held: Option<Held>) -> Result<(StatusCode, String), ApiError> {
    let slot = crate::sql::admit(state).await?;
    let ctl = QueryControl::new(state.config.query_timeout, state.config.query_memory_limit);
    // Cancelled and forgotten however the request ends, the client leaving included.
    let _running = crate::sql::Running::start(state, &ctl);
    let memory = state.memory.clone();
    let result = state
        .admission
        .run_in(slot, move || {
            let _held = held;
            let run = RunContext::new(Some(ctl));
            let call = Call {
                op: r.op,
                tenant: TenantSources { key: r.key.as_deref(), header: r.header.as_deref() },
                body: r.op.has_body().then_some(&r.body[..]),
                id: r.id.as_deref(),
                include_embedding: r.include_embedding,
            };
            let mut answer = memory.call(&run, &call)?;
            answer.push('\n');
            Ok((StatusCode::OK, answer))
        })
        .await;
    result.map_err(crate::sql::refused)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route(&Method::POST, "/api/ai/memories").expect("put"), (Op::Put, None));
        assert_eq!(route(&Method::GET, "/api/ai/memories/m1").expect("get"), (Op::Get, Some("m1".into())));
        assert_eq!(route(&Method::DELETE, "/api/ai/memories/m1").expect("delete"), (Op::Delete, Some("m1".into())));
        assert_eq!(route(&Method::POST, "/api/ai/memories/search").expect("search"), (Op::Search, None));
        assert_eq!(route(&Method::GET, "/api/ai/stats").expect("stats"), (Op::Stats, None));
        let e = route(&Method::GET, "/api/ai/context").expect_err("405");
        assert_eq!((e.status, e.allow), (StatusCode::METHOD_NOT_ALLOWED, Some("POST")));
        assert_eq!(route(&Method::POST, "/api/ai/memories/m1").expect_err("405").allow, Some("GET, HEAD, DELETE"));
        assert_eq!(route(&Method::GET, "/api/ai/nope").expect_err("404").status, StatusCode::NOT_FOUND);
        assert_eq!(route(&Method::GET, "/api/ai/memories/a/b").expect_err("404").status, StatusCode::NOT_FOUND);
    }
}
