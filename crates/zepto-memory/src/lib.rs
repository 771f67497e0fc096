//! Agent memory and LLM answer caches (SPEC §5) as a thin layer over two ordinary tables,
//! `ai_memories` and `ai_cache` ([`tables`]): durable through the WAL like every table,
//! queryable with SQL, searched with the engine's vector index.
//!
//! * [`AgentMemory`] — put, get, delete, search and context assembly for memories; store and
//!   lookup for the cache; per-tenant quotas with eviction; TTLs swept in the background.
//! * [`api`] — the request and response bodies every door shares.
//! * [`serve`] — one operation as JSON in, JSON out: what the HTTP and Python doors both call.
//! * [`tenant`] — whose rows a request touches (API key, header, field).
//! * [`rank`] — the documented ranking score, written once, as SQL.
//!
//! The server never calls a model: embeddings and token counts come from the client (a
//! count is estimated when not given). Every statement the layer runs names the tenant, and
//! request values reach SQL only as parameters.
#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

pub mod api;
mod cache;
pub mod error;
mod memories;
mod query;
pub mod rank;
mod search;
pub mod serve;
mod store;
pub mod tables;
pub mod tenant;
pub mod text;
pub mod validate;

pub use cache::DEFAULT_SEMANTIC_THRESHOLD;
pub use error::{MemoryError, Result};
pub use search::MAX_LIMIT;
pub use serve::{Call, Op};
pub use store::{AgentMemory, Config};
pub use tenant::{TenantSources, DEFAULT_TENANT};
