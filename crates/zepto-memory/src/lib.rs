//! Agent memory and LLM answer caches as a thin layer over two ordinary tables, `ai_memories` and
//! `ai_cache`: durable through the WAL like every table, queryable with SQL, searched with the
//! engine's vector index (`docs/agent-memory.md`).
//!
//! # What it owns
//!
//! * [`AgentMemory`] — the layer over one engine, under a [`Config`] (quotas, sizes, sweep
//!   period): put, get, delete, search and context for memories; store and lookup for the cache;
//!   [`AgentMemory::stats`]; [`AgentMemory::sweep`] of expired records.
//! * [`serve`] — one operation ([`Op`], [`Call`]) as JSON in, JSON out: [`AgentMemory::call`].
//! * [`api`] — request and response bodies; [`validate`] checks their fields.
//! * [`tables`] — the two tables ([`tables::MEMORIES`], [`tables::CACHE`]), made on first use.
//! * [`tenant`] — whose rows a request touches ([`TenantSources::resolve`]).
//! * [`rank`] — the score as one SQL expression; [`text`] — ids, prompts, token estimates.
//!
//! # Entry points
//!
//! The HTTP door (`/api/ai/*`, zepto-server's `ai.rs`) and the Python door
//! (`python/src/database.rs`, by [`Op::parse`]) both call [`AgentMemory::call`]. The server runs
//! [`AgentMemory::start_sweeper`]; the Python door, its own thread around [`AgentMemory::sweep`].
//!
//! # Invariants
//!
//! * Every statement is scoped to the tenant (`Where::tenant`, `query.rs`), and request values
//!   reach SQL only as parameters. Another tenant's record reads as not found.
//! * Puts, deletes, cache stores and the sweep hold one lock, so a quota check and the write it
//!   allows are one step. A put of several records stores all or none.
//! * Reads skip expired records before the sweep deletes them.
//! * A table takes the first embedding's dimension, is partitioned by `tenant_id`, ordered by
//!   `created_at`, and has a cosine HNSW index. A table of that name with other columns is
//!   refused. An id holds its record's `created_at`, so a lookup by id is a binary search.
//! * The server never calls a model: embeddings and token counts come from the client.
//!
//! # When you change …
//!
//! * An operation: [`Op`] (`parse`, `has_body`, `target`) and [`AgentMemory::call`]; `route` in
//!   zepto-server's `ai.rs`; `_AI_ROUTES` in `python/zeptodb/_remote.py` and the methods in
//!   `python/zeptodb/_memory.py`; `docs/agent-memory.md`.
//! * A request field: its struct in [`api`] and that type's `FIELDS`, or [`api::parse`] refuses
//!   it; a filter also in `FILTER_FIELDS` (`api.rs`) and `Where::filters` (`query.rs`).
//! * A table's columns: its [`tables::Spec`]. Tables made before then no longer match: refused.
//! * A [`MemoryError`] variant: `From<MemoryError> for ApiError` in zepto-server's `error.rs`,
//!   and the mapping in `python/src/errors.rs`.
//! * The score: [`rank::Weights`], [`api::WeightsInput`], the formula in `rank.rs`'s doc and in
//!   `docs/agent-memory.md`, `expected_score` in `tests/memory.rs`.
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
