//! ZeptoDB's HTTP door (SPEC §2 and §5): `zeptodb serve`.
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
//! * [`auth`] — API keys (stored hashed), roles and table grants.
//! * [`request_body`] — request bodies read under size and time limits, gunzipped.
//! * [`inflight`] — one budget for the request bodies held in memory at once.
//! * [`memory_guard`] — stops the heaviest query when the process holds too much.
//! * [`pool`] — the query threads, apart from ingest's and at a lower CPU priority.
//! * [`metrics`], [`access_log`] — Prometheus `/metrics` and one JSON log line per request.
#![warn(missing_docs)]

pub mod access_log;
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
pub mod pool;
pub mod questdb;
pub mod request_body;
pub mod results;
pub mod router;
pub mod row_text;
pub mod server;
pub mod sql;
pub mod state;

pub use auth::{KeyStore, Role};
pub use config::{Config, RecoveryNotice, TlsFiles};
pub use server::run;
