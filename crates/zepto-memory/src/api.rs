//! The request and response bodies of the agent-memory endpoints (SPEC §5), shared by the HTTP
//! door and the Python door. Unknown fields are refused ([`parse`] checks the names, since
//! serde cannot deny unknown fields next to a flattened struct), so a misspelt field is an
//! error rather than a silently ignored filter.

use crate::error::{MemoryError, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The fields of [`Filters`].
const FILTER_FIELDS: &[&str] =
    &["tenant_id", "namespace", "user_id", "session_id", "agent_id", "type", "created_before", "created_after"];

/// A request type and the field names it accepts.
pub trait Request: DeserializeOwned {
    /// Its own fields.
    const FIELDS: &'static [&'static str];
    /// Whether it takes the [`Filters`] fields too.
    const FILTERS: bool = false;
}

/// A request body: a JSON object whose every field the request type knows.
pub fn parse<T: Request>(body: &[u8]) -> Result<T> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| MemoryError::bad("body", format!("not JSON: {e}")))?;
    from_value(v)
}

/// A put body: one record, or `{"memories": [...], "tenant_id"?}` for several (the outer
/// tenant applies to items that name none; an item naming another is an error). Returns the
/// records and whether the body was a batch.
pub fn parse_put(body: &[u8]) -> Result<(Vec<PutRequest>, bool)> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| MemoryError::bad("body", format!("not JSON: {e}")))?;
    let Some(items) = v.get("memories") else {
        return Ok((vec![from_value(v)?], false));
    };
    let obj = v.as_object().ok_or_else(|| MemoryError::bad("body", "expected a JSON object"))?;
    if let Some(k) = obj.keys().find(|k| *k != "memories" && *k != "tenant_id") {
        return Err(MemoryError::bad(k, "unknown field next to \"memories\""));
    }
    let tenant = match obj.get("tenant_id") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(t)) => Some(t.clone()),
        Some(_) => return Err(MemoryError::bad("tenant_id", "must be a string")),
    };
    let items = items.as_array().ok_or_else(|| MemoryError::bad("memories", "must be a list of records"))?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let mut r: PutRequest = from_value(item.clone()).map_err(|e| match e {
            MemoryError::BadRequest { field, message } => {
                MemoryError::BadRequest { field: format!("memories[{i}].{field}"), message }
            }
            e => e,
        })?;
        match (&r.tenant_id, &tenant) {
            (Some(a), Some(b)) if a != b => {
                return Err(MemoryError::bad(&format!("memories[{i}].tenant_id"), "differs from the batch's tenant_id"))
            }
            (None, Some(b)) => r.tenant_id = Some(b.clone()),
            _ => {}
        }
        out.push(r);
    }
    Ok((out, true))
}

/// A request from a JSON value (see [`parse`]).
pub fn from_value<T: Request>(v: serde_json::Value) -> Result<T> {
    let obj = v.as_object().ok_or_else(|| MemoryError::bad("body", "expected a JSON object"))?;
    let known = |k: &str| T::FIELDS.contains(&k) || (T::FILTERS && FILTER_FIELDS.contains(&k));
    if let Some(k) = obj.keys().find(|k| !known(k)) {
        return Err(MemoryError::bad(k, "unknown field"));
    }
    serde_json::from_value(v).map_err(|e| MemoryError::bad("body", e.to_string()))
}

/// A point in time as a client writes it: nanoseconds since the epoch, or ISO-8601 text.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum TimeInput {
    /// Nanoseconds since the Unix epoch, UTC.
    Nanos(i64),
    /// `2024-01-02T09:30:00Z`, `2024-01-02 09:30:00.123456789`, ...
    Text(String),
}

/// The record filters every read shares. Each given field must match exactly.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Filters {
    /// The tenant (see [`crate::tenant`] for how it is resolved).
    pub tenant_id: Option<String>,
    /// A namespace, e.g. an application or a memory space.
    pub namespace: Option<String>,
    /// The end user the memory is about.
    pub user_id: Option<String>,
    /// The conversation or run.
    pub session_id: Option<String>,
    /// The agent that wrote it.
    pub agent_id: Option<String>,
    /// The kind of memory (`fact`, `episode`, `preference`, ...).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Only records created strictly before this time ("what did the agent know at t").
    pub created_before: Option<TimeInput>,
    /// Only records created at or after this time.
    pub created_after: Option<TimeInput>,
}

/// The weights of the ranking score (see [`crate::rank`]); missing weights take their default.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightsInput {
    /// Weight of the cosine similarity to the query embedding.
    pub similarity: Option<f64>,
    /// Weight of the record's importance.
    pub importance: Option<f64>,
    /// Weight of recency (halving every half-life since creation).
    pub recency: Option<f64>,
    /// Weight of how often the record was returned before.
    pub access: Option<f64>,
    /// Bonus of a pinned record.
    pub pinned: Option<f64>,
}

/// `POST /api/ai/memories`: one record (or, with `memories`, several at once).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutRequest {
    /// The tenant.
    pub tenant_id: Option<String>,
    /// Namespace (`default` when not given).
    pub namespace: Option<String>,
    /// End user.
    pub user_id: Option<String>,
    /// Conversation or run.
    pub session_id: Option<String>,
    /// Writing agent.
    pub agent_id: Option<String>,
    /// Kind of memory.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The text (required).
    pub content: Option<String>,
    /// Any JSON value, stored as JSON text.
    pub metadata: Option<serde_json::Value>,
    /// The client's embedding of the content (its length is the table's dimension).
    pub embedding: Option<Vec<f64>>,
    /// Tokens of the content; estimated when not given.
    pub token_count: Option<i64>,
    /// 0 to 1 (default 0.5).
    pub importance: Option<f64>,
    /// Pinned records are ranked up and never evicted.
    pub pinned: Option<bool>,
    /// When the record expires (reads skip it from then on; it is deleted later).
    pub expires_at: Option<TimeInput>,
    /// Alternatively, seconds from now until it expires.
    pub ttl_seconds: Option<f64>,
    /// When it was created (default: now), for importing history.
    pub created_at: Option<TimeInput>,
}

/// A stored memory as the endpoints return it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemoryRecord {
    /// Its id.
    pub memory_id: String,
    /// Its tenant.
    pub tenant_id: String,
    /// Namespace.
    pub namespace: Option<String>,
    /// End user.
    pub user_id: Option<String>,
    /// Conversation or run.
    pub session_id: Option<String>,
    /// Writing agent.
    pub agent_id: Option<String>,
    /// Kind of memory.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The text.
    pub content: String,
    /// The metadata as given.
    pub metadata: serde_json::Value,
    /// The embedding, when asked for (`include_embedding`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
    /// Tokens of the content.
    pub token_count: i64,
    /// 0 to 1.
    pub importance: f64,
    /// Whether it is pinned.
    pub pinned: bool,
    /// Creation time (ISO-8601, nanoseconds).
    pub created_at: String,
    /// Last time a search or context returned it.
    pub last_accessed_at: String,
    /// Expiry, if any.
    pub expires_at: Option<String>,
    /// How many searches and contexts returned it.
    pub access_count: i64,
    /// The ranking score (search and context only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Cosine similarity to the query embedding (search and context with an embedding only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
}

/// `POST /api/ai/memories/search`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SearchRequest {
    /// Which records qualify.
    #[serde(flatten)]
    pub filters: Filters,
    /// Rank by similarity to this embedding too.
    pub query_embedding: Option<Vec<f64>>,
    /// How many to return (default 10, at most 1,000).
    pub limit: Option<usize>,
    /// How many records nearest to the query embedding the score ranks (default
    /// `max(3 · limit, 30)`, at most 10,000): more finds important records that are less
    /// similar, at the cost of time.
    pub candidates: Option<usize>,
    /// Drop matches less similar than this.
    pub min_similarity: Option<f64>,
    /// Ranking weights.
    pub weights: Option<WeightsInput>,
    /// Recency half-life in seconds (default 7 days).
    pub half_life_seconds: Option<f64>,
    /// Return each record's embedding too (default false).
    pub include_embedding: Option<bool>,
    /// Count this search in the records' access statistics (default true).
    pub update_access: Option<bool>,
}

/// `POST /api/ai/context`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ContextRequest {
    /// Which records qualify.
    #[serde(flatten)]
    pub filters: Filters,
    /// Rank by similarity to this embedding too.
    pub query_embedding: Option<Vec<f64>>,
    /// Most tokens the assembled context may hold (required).
    pub token_budget: Option<i64>,
    /// Records nearest to the query embedding that are ranked and offered to the budget
    /// (default 100, at most 1,000).
    pub candidates: Option<usize>,
    /// Drop matches less similar than this.
    pub min_similarity: Option<f64>,
    /// Ranking weights.
    pub weights: Option<WeightsInput>,
    /// Recency half-life in seconds (default 7 days).
    pub half_life_seconds: Option<f64>,
}

/// `POST /api/ai/cache/store`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheStoreRequest {
    /// The tenant.
    pub tenant_id: Option<String>,
    /// The prompt (required).
    pub prompt: Option<String>,
    /// The model's answer (required).
    pub response: Option<String>,
    /// The client's embedding of the prompt, for semantic lookups.
    pub embedding: Option<Vec<f64>>,
    /// Any JSON value (model name, parameters, ...).
    pub metadata: Option<serde_json::Value>,
    /// When the entry expires.
    pub expires_at: Option<TimeInput>,
    /// Alternatively, seconds from now until it expires.
    pub ttl_seconds: Option<f64>,
}

/// `POST /api/ai/cache/lookup`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheLookupRequest {
    /// The tenant.
    pub tenant_id: Option<String>,
    /// The prompt (required).
    pub prompt: Option<String>,
    /// Its embedding, for a semantic lookup when the exact one misses.
    pub embedding: Option<Vec<f64>>,
    /// Least cosine similarity of a semantic hit (default 0.92).
    pub semantic_threshold: Option<f64>,
}

/// A cache entry as lookups return it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CacheEntry {
    /// Its id.
    pub entry_id: String,
    /// Its tenant.
    pub tenant_id: String,
    /// The prompt as stored.
    pub prompt: String,
    /// The cached answer.
    pub response: String,
    /// The metadata as given.
    pub metadata: serde_json::Value,
    /// When it was stored.
    pub created_at: String,
    /// Expiry, if any.
    pub expires_at: Option<String>,
    /// Lookups it answered.
    pub hits: i64,
}

/// The answer to a cache lookup.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CacheLookup {
    /// Whether an entry answered.
    pub hit: bool,
    /// `exact` or `semantic` (absent on a miss).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// 1.0 for an exact hit, the cosine similarity for a semantic one; on a semantic miss the
    /// best similarity seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The entry that answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<CacheEntry>,
}

/// `POST /api/ai/context`'s answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Context {
    /// The records that fit, best first.
    pub memories: Vec<MemoryRecord>,
    /// Their tokens together.
    pub token_count: i64,
    /// The budget asked for.
    pub token_budget: i64,
    /// Ranked records left out because they did not fit.
    pub skipped: usize,
    /// Ranked records left out as duplicates of a better one's content.
    pub duplicates: usize,
}

/// `GET /api/ai/stats`'s answer, for one tenant.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stats {
    /// The tenant.
    pub tenant_id: String,
    /// Stored memories (expired ones not yet deleted included).
    pub memories: i64,
    /// Of those, pinned.
    pub pinned: i64,
    /// Of those, expired.
    pub expired: i64,
    /// Tokens of the unexpired memories.
    pub tokens: i64,
    /// Cache entries.
    pub cache_entries: i64,
    /// Lookups answered by each entry, summed (durable).
    pub cache_hits: i64,
    /// Exact hits since the server started.
    pub cache_exact_hits: u64,
    /// Semantic hits since the server started.
    pub cache_semantic_hits: u64,
    /// Misses since the server started.
    pub cache_misses: u64,
    /// The embedding dimension of the memories (absent before the first one).
    pub embedding_dim: Option<u16>,
    /// Most memories this tenant may keep.
    pub quota_memories: usize,
    /// Most cache entries this tenant may keep.
    pub quota_cache_entries: usize,
}

impl Request for PutRequest {
    const FIELDS: &'static [&'static str] = &[
        "tenant_id",
        "namespace",
        "user_id",
        "session_id",
        "agent_id",
        "type",
        "content",
        "metadata",
        "embedding",
        "token_count",
        "importance",
        "pinned",
        "expires_at",
        "ttl_seconds",
        "created_at",
    ];
}

impl Request for SearchRequest {
    const FIELDS: &'static [&'static str] = &[
        "query_embedding",
        "limit",
        "candidates",
        "min_similarity",
        "weights",
        "half_life_seconds",
        "include_embedding",
        "update_access",
    ];
    const FILTERS: bool = true;
}

impl Request for ContextRequest {
    const FIELDS: &'static [&'static str] =
        &["query_embedding", "token_budget", "candidates", "min_similarity", "weights", "half_life_seconds"];
    const FILTERS: bool = true;
}

impl Request for CacheStoreRequest {
    const FIELDS: &'static [&'static str] =
        &["tenant_id", "prompt", "response", "embedding", "metadata", "expires_at", "ttl_seconds"];
}

impl Request for CacheLookupRequest {
    const FIELDS: &'static [&'static str] = &["tenant_id", "prompt", "embedding", "semantic_threshold"];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_named() {
        let e = parse::<SearchRequest>(br#"{"namespace": "a", "query_embeding": [1]}"#).expect_err("typo");
        assert!(e.to_string().starts_with("query_embeding: unknown field"), "{e}");
        let r = parse::<SearchRequest>(br#"{"namespace": "a", "limit": 3, "created_before": 5}"#).expect("parses");
        assert_eq!((r.filters.namespace.as_deref(), r.limit), (Some("a"), Some(3)));
        assert!(matches!(r.filters.created_before, Some(TimeInput::Nanos(5))));
        assert!(parse::<PutRequest>(br#"{"content": "x", "namespace": 3}"#).is_err(), "a number is not a name");
        assert!(parse::<PutRequest>(b"[1]").is_err());
        assert!(parse::<PutRequest>(b"{").is_err());
        let (one, batch) = parse_put(br#"{"content": "x"}"#).expect("one");
        assert_eq!((one.len(), batch), (1, false));
        let (two, batch) =
            parse_put(br#"{"tenant_id": "t", "memories": [{"content": "a"}, {"content": "b", "tenant_id": "t"}]}"#)
                .expect("two");
        assert!(batch && two.iter().all(|r| r.tenant_id.as_deref() == Some("t")));
        assert!(parse_put(br#"{"tenant_id": "t", "memories": [{"content": "a", "tenant_id": "u"}]}"#).is_err());
        let e = parse_put(br#"{"memories": [{"content": "a"}, {"contnet": "b"}]}"#).expect_err("typo");
        assert!(e.to_string().starts_with("memories[1].contnet"), "{e}");
        assert!(parse_put(br#"{"memories": [], "extra": 1}"#).is_err());
    }
}
