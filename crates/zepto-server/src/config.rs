//! Server settings (`zeptodb serve` flags) and the checks made before binding.

use crate::auth::KeyStore;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Everything `zeptodb serve` is configured with; [`Config::validate`] checks it before anything
/// binds.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on (default 127.0.0.1:8123); a non-loopback one requires API keys.
    pub addr: SocketAddr,
    /// Async worker threads (accepting, parsing HTTP, streaming results). Queries and ingest
    /// run on a blocking pool sized from this.
    pub threads: usize,
    /// API keys and their roles; empty means no authentication (loopback only).
    pub keys: KeyStore,
    /// Serve HTTPS with these files; `None` serves plain HTTP.
    pub tls: Option<TlsFiles>,
    /// Largest request body accepted (ingest batches included).
    pub max_body_bytes: usize,
    /// Bytes of request bodies all requests may hold at once (`--max-inflight-body-mb`);
    /// `None`: [`Config::inflight_body_bytes`]'s default.
    pub max_inflight_body_bytes: Option<usize>,
    /// Resident memory of the whole process past which the query holding the most is stopped
    /// (`--max-server-memory-mb`; [`crate::memory_guard`]); `None`: no guard.
    pub max_server_memory: Option<usize>,
    /// What one SQL request may ask of the parser (size, statements, expression depth and
    /// elements).
    pub parse_limits: zepto_sql::parser::ParseLimits,
    /// Per-query wall-clock limit.
    pub query_timeout: Option<Duration>,
    /// Per-query memory limit (bytes the query's thread holds).
    pub query_memory_limit: Option<usize>,
    /// Statements that may run at once (`None`: [`Config::query_slots`]'s default).
    pub max_queries: Option<usize>,
    /// How long a statement may wait for a query slot before it is refused with 503 and
    /// `Retry-After` (admission control).
    pub queue_timeout: Duration,
    /// Most open connections; more are closed at accept.
    pub max_connections: usize,
    /// How long shutdown waits for in-flight requests before cancelling them.
    pub shutdown_grace: Duration,
    /// Time allowed to receive a request's headers (slowloris guard).
    pub header_timeout: Duration,
    /// What recovery dropped at start (WAL corruption), reported by `/health` and `/metrics`.
    pub recovery: Option<RecoveryNotice>,
    /// Access log destination: `None` = off, `Some(None)` = stderr, `Some(Some(path))` = file.
    pub access_log: Option<Option<PathBuf>>,
    /// Agent-memory quotas and limits (`/api/ai/*`).
    pub ai: zepto_memory::Config,
    /// Largest `/api/ai/*` request body (a batch of records with their embeddings).
    pub ai_max_body_bytes: usize,
    /// The cluster node this server is part of (`GET /cluster`), if any.
    pub cluster: Option<crate::cluster::ClusterHandle>,
    /// The FIX door's sessions (`/metrics`), if the server accepts FIX sessions.
    pub fix: Option<crate::fix::FixHandle>,
    /// Bytes of query results kept for paging (the console; `--console-results-mb`).
    pub kept_result_bytes: usize,
    /// Bytes of committed writes the change feed keeps for subscribers (`--subscribe-buffer-mb`).
    pub subscribe_buffer_bytes: usize,
    /// Serve the web console at `/console` (`--console off` turns it off).
    pub console: bool,
    /// Line protocol over TCP (`--ilp-tcp`), if on.
    pub ilp_tcp: Option<IlpTcpConfig>,
    /// The query slots and threads, when made before the server (to share them with the
    /// PostgreSQL and Flight SQL doors); `None`: the server makes its own from this config.
    pub admission: Option<std::sync::Arc<crate::admission::Admission>>,
    /// The budget of client data held in memory ([`crate::inflight`]), when made before the
    /// server (to share it with the PostgreSQL door's COPY); `None`: the server makes its own.
    pub bodies: Option<crate::inflight::BodyBudget>,
}

/// WAL corruption that point-in-time recovery cut off when the server started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecoveryNotice {
    /// What was wrong and where (segment, offset), and where the damaged log was kept.
    pub message: String,
    /// Log records dropped (the damaged one and every intact one after it).
    pub records_dropped: u64,
    /// Rows in the intact records dropped (the damaged record's own rows cannot be known).
    pub intact_rows_dropped: u64,
}

/// PEM files for TLS (rustls).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, PEM.
    pub cert: PathBuf,
    /// The private key, PEM.
    pub key: PathBuf,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 8123)),
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            keys: KeyStore::default(),
            tls: None,
            max_body_bytes: 1 << 30,
            max_inflight_body_bytes: None,
            max_server_memory: None,
            parse_limits: zepto_sql::parser::ParseLimits::default(),
            query_timeout: Some(Duration::from_secs(300)),
            query_memory_limit: None,
            max_queries: None,
            queue_timeout: Duration::from_secs(30),
            max_connections: 16_384,
            shutdown_grace: Duration::from_secs(30),
            header_timeout: Duration::from_secs(30),
            access_log: Some(None),
            recovery: None,
            ai: zepto_memory::Config::default(),
            ai_max_body_bytes: 16 << 20,
            cluster: None,
            fix: None,
            kept_result_bytes: 512 << 20,
            subscribe_buffer_bytes: zepto_storage::feed::DEFAULT_LIMIT_BYTES,
            console: true,
            ilp_tcp: None,
            admission: None,
            bodies: None,
        }
    }
}

impl Config {
    /// Refuse unsafe settings before anything binds.
    pub fn validate(&self) -> Result<(), String> {
        if !self.addr.ip().is_loopback() && self.keys.is_empty() {
            return Err(format!(
                "refusing to listen on {} without authentication: configure API keys (--api-key, \
                 --keys-file or ZEPTO_API_KEY) or bind a loopback address such as 127.0.0.1",
                self.addr
            ));
        }
        if self.threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        if self.query_timeout.is_some_and(|t| t > Duration::from_secs(366 * 86_400)) {
            return Err("--query-timeout is limited to a year".into());
        }
        if self.max_body_bytes == 0 {
            return Err("the body size limit must be positive".into());
        }
        if self.inflight_body_bytes() < self.max_body_bytes.saturating_mul(2) {
            return Err(format!(
                "--max-inflight-body-mb ({} MiB) must hold two of the largest bodies (--max-body-mb: \
                 {} MiB; a gzip body is held compressed and decoded)",
                self.inflight_body_bytes() >> 20,
                self.max_body_bytes >> 20
            ));
        }
        self.parse_limits.validate()?;
        Ok(())
    }

    /// Bytes of request bodies all requests may hold at once: the setting, else 1 GiB or two
    /// of the largest bodies, whichever is more.
    pub fn inflight_body_bytes(&self) -> usize {
        self.max_inflight_body_bytes.unwrap_or_else(|| (1usize << 30).max(self.max_body_bytes.saturating_mul(2)))
    }

    /// Statements that may run at once (more wait, holding no thread): two per core, so the
    /// cores stay busy while a statement waits (on its client, a file, another node), and few
    /// enough not to thrash.
    /// Short statements do not count them (they have a lane of their own, [`Self::quick_slots`]).
    ///
    /// Why not more: every running statement is a thread at nice +10, and the scheduler
    /// time-slices them. One preempted while it holds a malloc arena's lock keeps every
    /// thread of that arena waiting (the async threads that answer each request among them)
    /// until its next slice. `bench/query_fairness.py` (24 heavy clients, 2 cores; off-CPU
    /// stacks showed the HTTP threads waiting for arena locks up to 81 ms at a time), short
    /// queries' p99: 12 slots 46-126 ms, 8 38-57, 6 12-32, 4 11-16; heavy statements answered
    /// 31-35/s with each, server peak RSS 1.3-1.5 GiB with 12, 0.7-0.8 with 4.
    pub fn query_slots(&self) -> usize {
        self.max_queries.unwrap_or((self.threads * 2).max(4)).max(1)
    }

    /// Statements that read few rows ([`crate::sql::QUICK_ROWS`]) and may run at once in a
    /// lane of their own, beside the query slots: a point lookup or a small join never queues
    /// behind heavy statements, and heavy ones never take this lane.
    pub fn quick_slots(&self) -> usize {
        self.threads.max(2)
    }

    /// The query slots and their threads ([`crate::admission`]) this config asks for.
    pub fn make_admission(&self) -> std::io::Result<crate::admission::Admission> {
        crate::admission::Admission::new(self.query_slots(), self.quick_slots(), self.queue_timeout)
    }

    /// Ingest batches that may be parsed and applied at once: a separate allowance, so queries
    /// can never take every thread from ingestion.
    pub fn ingest_slots(&self) -> usize {
        (self.threads * 2).max(4)
    }

    /// Threads of tokio's blocking pool: ingest's allowance plus a few for the rest (queries
    /// run on the query pool, [`crate::pool`]).
    pub fn blocking_threads(&self) -> usize {
        self.ingest_slots() + 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Role;

    #[test]
    fn public_bind_needs_keys() {
        let mut c = Config { addr: "0.0.0.0:8123".parse().expect("addr"), ..Config::default() };
        let e = c.validate().expect_err("no keys");
        assert!(e.contains("without authentication"), "{e}");
        c.keys.add_plain("ops", "a-long-enough-admin-key", Role::Admin, Default::default()).expect("key");
        assert!(c.validate().is_ok());
        assert!(Config::default().validate().is_ok(), "loopback without keys is fine");
    }
}

// The ILP/TCP door's settings (`crate::ilp_tcp`), here so the configuration does not
// depend on the door.

/// How batches are cut and how long a line may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest line, in bytes without its line end; a longer one closes the connection.
    pub max_line_bytes: usize,
    /// A batch is committed once its complete lines hold this many bytes.
    pub batch_bytes: usize,
    /// A batch is committed once it holds this many lines.
    pub batch_lines: usize,
    /// A batch is committed at most this long after its first complete line arrived.
    pub flush_after: Duration,
    /// While a commit is in flight the next batch gathers up to this many bytes of complete
    /// lines (then the socket is not read until the commit settles), and is committed as soon
    /// as it settles: under a steady stream batches grow with the time a commit takes.
    pub max_batch_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_line_bytes: 1 << 20,
            batch_bytes: 1 << 20,
            batch_lines: 10_000,
            flush_after: Duration::from_millis(5),
            max_batch_bytes: 8 << 20,
        }
    }
}

/// The door's settings (`serve --ilp-tcp`).
#[derive(Debug, Clone)]
pub struct IlpTcpConfig {
    /// The bound socket (bound by the caller, so that a taken address is told at once).
    pub listener: Arc<std::net::TcpListener>,
    /// Batch and line limits.
    pub limits: Limits,
    /// Who every connection writes as (a writer without a tenant).
    pub who: crate::auth::Principal,
}

impl IlpTcpConfig {
    /// The principal the door's connections write as: role writer, every table, no tenant.
    pub fn writer() -> crate::auth::Principal {
        crate::auth::Principal {
            name: "ilp-tcp".into(),
            role: crate::Role::Writer,
            tables: zepto_sql::TableAccess::all(),
        }
    }
}
