//! ZeptoDB's HTTP door (SPEC §2 and §5): `zeptodb serve`. It also holds what the other doors
//! share: keys and roles, the role check of statements, and ingest (`zepto-pg`, `zepto-cluster`).
//!
//! * [`server`] — runtime, accept loop, TLS (rustls), graceful shutdown.
//! * [`router`] — routes, authentication, request ids, metrics and the access log per request.
//! * [`sql`] — the SQL endpoint: parameters, role checks, cancellation, streamed results.
//! * [`encode`] — results as JSON, JSONL, CSV or an Arrow IPC stream ([`row_text`]: rows of
//!   JSON arrays, each column's way of writing decided once per run of rows).
//! * [`ingest`] — `/write`: CSV, JSONL, Arrow IPC and InfluxDB line protocol, all-or-nothing
//!   (line protocol tokenized into a sink that types it straight into column builders).
//! * [`imp`] — QuestDB's CSV import, `POST /imp` (multipart; types guessed; bad rows skipped).
//! * [`ilp_tcp`] — line protocol over TCP (`--ilp-tcp`, QuestDB's port 9009), in batches.
//! * [`ai`] — `/api/ai/*`: agent memory and answer caches, tenant-scoped.
//! * [`subscribe`] — `GET /subscribe`: a query's rows as writes commit them (SSE or WebSocket).
//!   [`subscribe_shared`]: identical table subscribers share each change's event.
//! * [`auth`] — API keys (stored hashed), roles and table grants.
//! * [`request_body`] — request bodies read under size and time limits, gunzipped.
//! * [`inflight`] — one budget for the request bodies held in memory at once.
//! * [`memory_guard`] — stops the heaviest query when the process holds too much.
//! * [`pool`] — the query threads, apart from ingest's and at a lower CPU priority.
//! * [`metrics`], [`access_log`] — Prometheus `/metrics` and one JSON log line per request.
//!
//! # Entry points
//!
//! [`run`] serves a [`Config`] and an engine until SIGTERM (`zepto-cli/src/serve.rs`). Each
//! request enters [`router::handle`]. Other doors call [`sql::check_statements`], and the
//! cluster calls [`ingest::check()`] (before producing) and [`ingest::write_marked`] (to apply).
//!
//! # Invariants
//!
//! - Every request passes [`router::handle`]: key, request id, metrics, access log; an error is
//!   an [`error::ApiError`], JSON with a stable code. With keys set, only probes and the console
//!   answer without one.
//! - A statement's role is checked from its kind before it is planned
//!   ([`sql::check_statements`]); the PostgreSQL door runs the same check.
//! - `/write` is all or nothing: the whole body is typed and checked before anything is stored.
//! - Ingest never waits for a query's thread: statements run on [`pool`] (a cheap point query
//!   inline on the async thread), ingest on tokio's blocking pool.
//!
//! # When you change …
//!
//! - **An HTTP endpoint**: its path in `route_of` and its arm in `dispatch` (`router.rs`; the
//!   `Allow` methods there too); a new [`metrics::Route`] also needs its place in `Route::ALL`
//!   and `name()`. Its handler, in a module of its own, calls [`auth::Principal::require`];
//!   say which role in `auth.rs`'s docs. Then `docs/http.md` (`## Endpoints`) and a test in
//!   `crates/zepto-cli/tests/http.rs`.
//! - **An ILP field type**: the tokenizer, `ingest/ilp.rs`: a [`ingest::ilp::FieldValue`]
//!   variant, its `kind`, its parse in `text_value` (or `binary_value`, protocol version 2).
//!   The typing, `ingest/lines.rs`: `convert` (the column types it fills) and `new_type` (the
//!   column it creates). `ingest/check.rs`, the cluster's check, types through the same
//!   `decode_lines`, and each line's `span` goes to Kafka as it is: a value must stay inside it
//!   (`line_records_copy_binary_values_whole` in `zepto-cluster/src/produce.rs`). A seed in
//!   `zepto-fuzz/src/seeds.rs` (`ingest`), and `docs/http.md` (`## Ingest`).
//! - **A `SqlError` variant**: its status in `error.rs` (`From<SqlError> for ApiError`) and the
//!   table in `docs/http.md` (`## Errors`).
//! - **A `serve` flag**: a [`Config`] field, checked in [`Config::validate`], set in
//!   `zepto-cli/src/serve.rs`, listed in `docs/http.md` (`## Flags`).
#![warn(missing_docs)]

pub mod access_log;
pub mod admission;
pub mod ai;
pub mod auth;
mod body;
pub mod cluster;
pub mod config;
pub mod console;
pub mod encode;
pub mod error;
pub mod exec_json;
pub mod fix;
pub mod ilp_tcp;
pub mod imp;
pub mod inflight;
pub mod ingest;
pub mod memory_guard;
pub mod metrics;
pub mod net;
pub mod pool;
pub mod questdb;
pub mod request_body;
pub mod results;
pub mod router;
pub mod row_text;
pub mod server;
pub mod sql;
pub mod state;
pub mod subscribe;
pub mod subscribe_shared;

pub use auth::{KeyStore, Role};
pub use config::{Config, RecoveryNotice, TlsFiles};
pub use server::run;
