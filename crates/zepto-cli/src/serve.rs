//! `zeptodb serve` (SPEC §1): flags → [`zepto_server::Config`], optional demo data, then the
//! server runs until SIGTERM/SIGINT. `zeptodb keygen` makes an API key and its keys-file entry.

mod cluster;
mod fix;
mod flight_sql;
mod ilp_tcp;
mod notify;
mod pg;

use clap::{Arg, ArgAction, ArgMatches, Command};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use zepto_server::{Config, Role, TlsFiles};
use zepto_sql::{Engine, TableAccess};

pub fn command() -> Command {
    Command::new("serve")
        .about("Run the HTTP server (SQL, ingest, metrics) on 127.0.0.1:8123")
        .args(network_args())
        .args(durability_args())
        .arg(Arg::new("demo").long("demo").action(ArgAction::SetTrue).help("Load the generated trades/quotes data set"))
        .arg(crate::demo::rows_arg())
        .args(auth_args())
        .args(request_limit_args())
        .arg(
            Arg::new("copy-root")
                .long("copy-root")
                .value_name("DIR")
                .help("COPY reads and writes only under DIR (never inside the data directory)"),
        )
        .args(query_limit_args())
        .args(connection_args())
        .args(fix::args())
        .args(cluster::args())
        .args(flight_sql::args())
        .args(pg::args())
        .args(ilp_tcp::args())
}

/// `serve` flags: where the server listens, how many threads it runs, and its settings file.
fn network_args() -> Vec<Arg> {
    vec![
        Arg::new("http").long("http").value_name("ADDR").default_value("127.0.0.1:8123").help("Listen address"),
        Arg::new("threads")
            .long("threads")
            .value_name("N")
            .value_parser(clap::value_parser!(usize))
            .help("Async worker threads [default: cores]"),
        Arg::new("config")
            .long("config")
            .value_name("FILE")
            .help("Settings file (JSON; keys are these flags' names; flags win)"),
        Arg::new("console")
            .long("console")
            .value_name("on|off")
            .value_parser(["on", "off"])
            .help("The web console at /console [default: on]"),
        Arg::new("huge-pages")
            .long("huge-pages")
            .value_name("on|off|reserved")
            .value_parser(["on", "off", "reserved"])
            .help(
                "Advise 2 MiB pages for blocks of 32 MiB and up (large columns and buffers); reserved: map them \
                 on the reserved pool (vm.nr_hugepages), advising when it is full [default: on]",
            ),
        Arg::new("cpu-affinity").long("cpu-affinity").value_name("PLAN").help(
            "Cores per thread role: 'query=0-5 ingest=6 fix=7 wal=6' (roles: query, ingest, fix, wal; \
             FIX busy-polling readers take one core each) [default: FIX readers on isolated cores, if any]",
        ),
        Arg::new("console-results-mb")
            .long("console-results-mb")
            .value_parser(clap::value_parser!(usize))
            .help("Query results the server keeps for paging (the console) [default: 512]"),
        Arg::new("subscribe-buffer-mb")
            .long("subscribe-buffer-mb")
            .value_parser(clap::value_parser!(usize))
            .help("Committed writes kept for subscribers (GET /subscribe) to catch up and resume from [default: 64]"),
    ]
}

/// `serve` flags: where and how the tables are kept (data directory, checkpoints, history
/// tiering, WAL sync and recovery).
fn durability_args() -> Vec<Arg> {
    vec![
        Arg::new("data-dir")
            .long("data-dir")
            .value_name("DIR")
            .help("Keep the tables durable here (write-ahead log and checkpoints) [default: ./zepto-data]"),
        Arg::new("in-memory")
            .long("in-memory")
            .action(ArgAction::SetTrue)
            .help("Keep nothing on disk (no --data-dir): every table is lost at exit"),
        Arg::new("checkpoint-mb")
            .long("checkpoint-mb")
            .value_name("MB")
            .value_parser(clap::value_parser!(usize))
            .help("Checkpoint after this much log, or half the last checkpoint's size if more (0: only on CHECKPOINT and at exit) [default: 256]"),
        Arg::new("tier-after")
            .long("tier-after")
            .value_name("AGE")
            .help("Move rows older than AGE (e.g. 7d, '30 days'; whole UTC days) to Parquet history files"),
        Arg::new("memory-budget-mb")
            .long("memory-budget-mb")
            .value_name("MB")
            .value_parser(clap::value_parser!(usize))
            .help("Move the oldest days to Parquet history while tables hold more than MB in memory"),
        Arg::new("sync")
            .long("sync")
            .value_name("MODE")
            .help("With --data-dir: always (fsync before ack, default), interval=<ms>, none"),
        Arg::new("wal-recovery")
            .long("wal-recovery")
            .value_name("MODE")
            .value_parser(["point-in-time", "strict"])
            .help(
                "On WAL corruption: recover to the record before it and keep the damage aside \
                   (point-in-time, default), or refuse to start (strict)",
            ),
        Arg::new("repair-wal")
            .long("repair-wal")
            .action(ArgAction::SetTrue)
            .help("Same as --wal-recovery point-in-time (kept for old scripts)"),
    ]
}

/// `serve` flags: who may connect, and how (API keys, TLS).
fn auth_args() -> Vec<Arg> {
    vec![
        Arg::new("api-key")
            .long("api-key")
            .value_name("KEY")
            .action(ArgAction::Append)
            .help("An admin API key (repeatable; also $ZEPTO_API_KEY)"),
        Arg::new("keys-file").long("keys-file").value_name("FILE").help("API keys with roles and grants (JSON)"),
        Arg::new("tls-cert").long("tls-cert").value_name("PEM").help("TLS certificate chain"),
        Arg::new("tls-key").long("tls-key").value_name("PEM").help("TLS private key"),
    ]
}

/// `serve` flags: limits on one request (body, SQL text, statements, expressions) and on the
/// memory all of them hold.
fn request_limit_args() -> Vec<Arg> {
    vec![
        Arg::new("max-body-mb")
            .long("max-body-mb")
            .value_parser(clap::value_parser!(usize))
            .default_value("1024")
            .help("Largest request body (a 10M-row table as Arrow is about 500 MiB)"),
        Arg::new("max-server-memory-mb").long("max-server-memory-mb").value_parser(clap::value_parser!(usize)).help(
            "Resident memory past which the query holding the most is stopped; 0 = no guard [default: 90% of RAM]",
        ),
        Arg::new("max-inflight-body-mb").long("max-inflight-body-mb").value_parser(clap::value_parser!(usize)).help(
            "Request bodies (and PostgreSQL COPY rows) all connections may hold in memory at once [default: 1024, or twice --max-body-mb: 2048]",
        ),
        Arg::new("max-query-mb")
            .long("max-query-mb")
            .value_parser(clap::value_parser!(usize))
            .default_value("16")
            .help("Largest SQL text in one request"),
        Arg::new("max-statements")
            .long("max-statements")
            .value_parser(clap::value_parser!(usize))
            .default_value("10000")
            .help("Most statements in one request"),
        Arg::new("max-expr-depth")
            .long("max-expr-depth")
            .value_parser(clap::value_parser!(usize))
            .default_value("1000")
            .help("Deepest expression (a chain of n ANDs is n deep; at most 10000)"),
        Arg::new("max-expr-elements")
            .long("max-expr-elements")
            .value_parser(clap::value_parser!(usize))
            .default_value("2000000")
            .help("Most expression nodes in one statement (an IN list of n items is about n)"),
    ]
}

/// `serve` flags: limits on running statements (time, memory, how many at once, how long one
/// waits for a slot).
fn query_limit_args() -> Vec<Arg> {
    vec![
        Arg::new("query-timeout")
            .long("query-timeout")
            .value_name("SECS")
            .value_parser(clap::value_parser!(f64))
            .default_value("300")
            .help("Per-query time limit (0 = none)"),
        Arg::new("query-memory-mb")
            .long("query-memory-mb")
            .value_parser(clap::value_parser!(usize))
            .default_value("0")
            .help("Per-query memory limit (0 = none)"),
        Arg::new("max-queries")
            .long("max-queries")
            .value_parser(clap::value_parser!(usize))
            .help("Statements that run at once; more wait (default: 2 per thread, at least 4)"),
        Arg::new("queue-timeout")
            .long("queue-timeout")
            .value_name("SECS")
            .value_parser(clap::value_parser!(f64))
            .default_value("30")
            .help("How long a statement waits for a slot before 503 with Retry-After"),
        Arg::new("ai-max-memories")
            .long("ai-max-memories")
            .value_name("N")
            .value_parser(clap::value_parser!(usize))
            .help("Agent memories one tenant keeps before puts evict (default 1000000)"),
        Arg::new("ai-max-cache-entries")
            .long("ai-max-cache-entries")
            .value_name("N")
            .value_parser(clap::value_parser!(usize))
            .help("Answer-cache entries one tenant keeps before stores evict (default 100000)"),
    ]
}

/// `serve` flags: connections, shutdown and the access log.
fn connection_args() -> Vec<Arg> {
    vec![
        Arg::new("max-connections")
            .long("max-connections")
            .value_parser(clap::value_parser!(usize))
            .default_value("16384"),
        Arg::new("shutdown-grace")
            .long("shutdown-grace")
            .value_name("SECS")
            .value_parser(clap::value_parser!(f64))
            .default_value("30")
            .help("On SIGTERM/SIGINT, how long requests in flight may finish before cancellation"),
        Arg::new("access-log")
            .long("access-log")
            .value_name("PATH|-|off")
            .default_value("-")
            .help("Access log: a file, '-' for stderr, or 'off'"),
    ]
}

pub fn keygen_command() -> Command {
    Command::new("keygen")
        .about("Make a random API key: the key on stderr, its keys-file entry (hashed) on stdout")
        .arg(Arg::new("name").long("name").required(true))
        .arg(Arg::new("role").long("role").value_parser(["reader", "writer", "admin"]).default_value("reader"))
        .arg(Arg::new("tables").long("tables").value_name("T1,T2").help("Grant only these tables"))
        .arg(
            Arg::new("tenant")
                .long("tenant")
                .value_name("NAME")
                .help("Bind the key to a tenant: tables with a tenant_id column show it only that tenant's rows"),
        )
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("zeptodb: {msg}");
    ExitCode::FAILURE
}

pub fn keygen(a: &ArgMatches) -> ExitCode {
    let name = a.get_one::<String>("name").map(String::as_str).unwrap_or("key");
    let role = a.get_one::<String>("role").and_then(|r| Role::parse(r)).unwrap_or(Role::Reader);
    let tables: Vec<String> = a
        .get_one::<String>("tables")
        .map(|t| t.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let tenant = a.get_one::<String>("tenant").map(String::as_str);
    if let Some(t) = tenant {
        if let Err(e) = zepto_server::auth::check_tenant(t) {
            return fail(&format!("--tenant: {e}"));
        }
    }
    match zepto_server::auth::keygen(name, role, &tables, tenant) {
        Ok((key, entry)) => {
            eprintln!("API key (shown once; store it safely): {key}");
            println!("{entry}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("cannot read random bytes: {e}")),
    }
}

/// Settings from the command line, else the `--config` file, else the flag defaults. The file
/// is a JSON object keyed by long flag names: `{"http": "0.0.0.0:8123", "keys-file": "...",
/// "query-timeout": 60, "api-key": ["..."], "demo": true}`; an unknown key is an error.
struct Settings<'a> {
    a: &'a ArgMatches,
    file: serde_json::Map<String, serde_json::Value>,
    path: String,
}

/// Keys a config file may set (every serve flag but --config itself).
const FILE_KEYS: &[&str] = &[
    "http",
    "threads",
    "data-dir",
    "in-memory",
    "checkpoint-mb",
    "tier-after",
    "memory-budget-mb",
    "sync",
    "wal-recovery",
    "demo",
    "rows",
    "api-key",
    "keys-file",
    "tls-cert",
    "tls-key",
    "max-body-mb",
    "max-inflight-body-mb",
    "max-server-memory-mb",
    "max-query-mb",
    "max-statements",
    "max-expr-depth",
    "max-expr-elements",
    "copy-root",
    "query-timeout",
    "query-memory-mb",
    "max-connections",
    "max-queries",
    "queue-timeout",
    "ai-max-memories",
    "ai-max-cache-entries",
    "shutdown-grace",
    "access-log",
    "fix",
    "fix-tls",
    "fix-busy-poll",
    "fix-config",
    "cluster",
    "cluster-topic",
    "cluster-group",
    "flight",
    "node-id",
    "flight-sql",
    "pg",
    "ilp-tcp",
    "ilp-tcp-unauthenticated",
    "ilp-tcp-max-line-kb",
    "console",
    "huge-pages",
    "cpu-affinity",
    "console-results-mb",
    "subscribe-buffer-mb",
];

impl<'a> Settings<'a> {
    fn new(a: &'a ArgMatches) -> Result<Settings<'a>, String> {
        let Some(path) = a.get_one::<String>("config") else {
            return Ok(Settings { a, file: Default::default(), path: String::new() });
        };
        let text = std::fs::read_to_string(path).map_err(|e| format!("--config {path}: {e}"))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("--config {path}: not JSON: {e}"))?;
        let serde_json::Value::Object(file) = v else {
            return Err(format!("--config {path}: expected a JSON object of settings"));
        };
        if let Some(k) = file.keys().find(|k| !FILE_KEYS.contains(&k.as_str())) {
            return Err(format!("--config {path}: unknown setting '{k}' (settings are serve's flag names)"));
        }
        Ok(Settings { a, file, path: path.clone() })
    }

    /// The file's value, unless the flag was given on the command line.
    fn file_value(&self, id: &str) -> Option<&serde_json::Value> {
        if self.a.value_source(id) == Some(clap::parser::ValueSource::CommandLine) {
            return None;
        }
        self.file.get(id)
    }

    fn bad(&self, id: &str, want: &str) -> String {
        format!("--config {}: '{id}' must be {want}", self.path)
    }

    fn string(&self, id: &str) -> Result<Option<String>, String> {
        match self.file_value(id) {
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(id, "a string")),
            None => Ok(self.a.get_one::<String>(id).cloned()),
        }
    }

    fn number(&self, id: &str) -> Result<Option<f64>, String> {
        match self.file_value(id) {
            Some(v) => v.as_f64().map(Some).ok_or_else(|| self.bad(id, "a number")),
            None => Ok(self.a.get_one::<f64>(id).copied()),
        }
    }

    fn count(&self, id: &str) -> Result<Option<usize>, String> {
        match self.file_value(id) {
            Some(v) => v.as_u64().map(|n| Some(n as usize)).ok_or_else(|| self.bad(id, "a whole number")),
            None => Ok(self.a.get_one::<usize>(id).copied()),
        }
    }

    fn flag(&self, id: &str) -> Result<bool, String> {
        match self.file_value(id) {
            Some(v) => v.as_bool().ok_or_else(|| self.bad(id, "true or false")),
            None => Ok(self.a.get_flag(id)),
        }
    }

    fn strings(&self, id: &str) -> Result<Vec<String>, String> {
        let mut out: Vec<String> = self.a.get_many::<String>(id).map(|v| v.cloned().collect()).unwrap_or_default();
        match self.file.get(id) {
            None => {}
            Some(serde_json::Value::String(s)) => out.push(s.clone()),
            Some(serde_json::Value::Array(v)) => {
                for x in v {
                    out.push(x.as_str().ok_or_else(|| self.bad(id, "a string or a list of strings"))?.to_string());
                }
            }
            Some(_) => return Err(self.bad(id, "a string or a list of strings")),
        }
        Ok(out)
    }
}

fn config(st: &Settings<'_>) -> Result<Config, String> {
    let mut c = Config::default();
    let addr = st.string("http")?.unwrap_or_else(|| "127.0.0.1:8123".into());
    c.addr = addr.parse().map_err(|_| format!("--http: '{addr}' is not an address like 127.0.0.1:8123"))?;
    if let Some(n) = st.count("threads")? {
        c.threads = n;
    }
    let mut keys = st.strings("api-key")?;
    if let Ok(k) = std::env::var("ZEPTO_API_KEY") {
        if !k.is_empty() {
            keys.push(k);
        }
    }
    for (i, k) in keys.iter().enumerate() {
        c.keys.add_plain(&format!("admin{}", i + 1), k, Role::Admin, TableAccess::all())?;
    }
    if let Some(f) = st.string("keys-file")? {
        c.keys.load_file(&f)?;
    }
    match (st.string("tls-cert")?, st.string("tls-key")?) {
        (Some(cert), Some(key)) => c.tls = Some(TlsFiles { cert: PathBuf::from(cert), key: PathBuf::from(key) }),
        (None, None) => {}
        _ => return Err("TLS needs both a certificate (tls-cert) and a key (tls-key)".into()),
    }
    c.max_body_bytes = st.count("max-body-mb")?.unwrap_or(1024).saturating_mul(1 << 20);
    c.max_inflight_body_bytes = st.count("max-inflight-body-mb")?.map(|m| m.saturating_mul(1 << 20));
    c.console = match st.string("console")?.as_deref() {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => return Err(format!("console: '{other}' is not on or off")),
    };
    let (advise, reserved) = match st.string("huge-pages")?.as_deref() {
        None | Some("on") => (true, false),
        Some("off") => (false, false),
        Some("reserved") => (true, true),
        Some(other) => return Err(format!("huge-pages: '{other}' is not on, off or reserved")),
    };
    zepto_storage::mem::set_huge_pages(advise);
    zepto_storage::hugetlb::set(reserved);
    if reserved && zepto_storage::hugetlb::pool().is_none_or(|(pages, _)| pages == 0) {
        eprintln!(
            "zeptodb: --huge-pages reserved, but no 2 MiB huge pages are reserved ({}/nr_hugepages): \
             large blocks fall back to transparent huge page advice",
            zepto_storage::hugetlb::POOL_DIR
        );
    }
    install_affinity(st.string("cpu-affinity")?.as_deref().unwrap_or(""))?;
    c.kept_result_bytes = st.count("console-results-mb")?.unwrap_or(512).saturating_mul(1 << 20);
    c.subscribe_buffer_bytes = st.count("subscribe-buffer-mb")?.unwrap_or(64).max(1).saturating_mul(1 << 20);
    c.max_server_memory = match st.count("max-server-memory-mb")? {
        Some(0) => None,
        Some(m) => Some(m.saturating_mul(1 << 20)),
        None => zepto_server::memory_guard::default_limit(),
    };
    let d = zepto_sql::parser::ParseLimits::default();
    c.parse_limits = zepto_sql::parser::ParseLimits {
        max_bytes: st.count("max-query-mb")?.map_or(d.max_bytes, |m| m.saturating_mul(1 << 20)),
        max_statements: st.count("max-statements")?.unwrap_or(d.max_statements),
        max_depth: st.count("max-expr-depth")?.unwrap_or(d.max_depth),
        max_elements: st.count("max-expr-elements")?.unwrap_or(d.max_elements),
    };
    let t = st.number("query-timeout")?.unwrap_or(300.0);
    if !(0.0..=31_622_400.0).contains(&t) {
        return Err("--query-timeout must be a number of seconds, at most a year".into());
    }
    c.query_timeout = (t > 0.0).then(|| Duration::from_secs_f64(t));
    let mb = st.count("query-memory-mb")?.unwrap_or(0);
    c.query_memory_limit = (mb > 0).then(|| mb.saturating_mul(1 << 20));
    c.max_queries = st.count("max-queries")?;
    let d = zepto_memory::Config::default();
    c.ai.max_memories_per_tenant = st.count("ai-max-memories")?.unwrap_or(d.max_memories_per_tenant).max(1);
    c.ai.max_cache_entries_per_tenant =
        st.count("ai-max-cache-entries")?.unwrap_or(d.max_cache_entries_per_tenant).max(1);
    let q = st.number("queue-timeout")?.unwrap_or(30.0);
    if !(0.0..=86_400.0).contains(&q) {
        return Err("--queue-timeout must be between 0 and 86400 seconds".into());
    }
    c.queue_timeout = Duration::from_secs_f64(q);
    let g = st.number("shutdown-grace")?.unwrap_or(30.0);
    if !(0.0..=86_400.0).contains(&g) {
        return Err("--shutdown-grace must be between 0 and 86400 seconds".into());
    }
    c.shutdown_grace = Duration::from_secs_f64(g);
    c.max_connections = st.count("max-connections")?.unwrap_or(16_384).max(1);
    c.access_log = match st.string("access-log")?.as_deref() {
        Some("off") | Some("none") => None,
        Some("-") | None => Some(None),
        Some(p) => Some(Some(PathBuf::from(p))),
    };
    c.validate()?;
    Ok(c)
}

/// The cores each role's threads run on (`--cpu-affinity`), decided before any of them
/// starts, and said on stderr when anything is pinned.
fn install_affinity(spec: &str) -> Result<(), String> {
    use zepto_storage::affinity::{install, Plan};
    let plan = Plan::for_this_host(spec).map_err(|e| format!("cpu-affinity: {e}"))?;
    if !plan.is_empty() {
        eprintln!("zeptodb: cpu affinity: {plan}");
    }
    install(plan)
}

pub fn run(a: &ArgMatches) -> ExitCode {
    let settings = match Settings::new(a) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let mut cfg = match config(&settings) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let (demo, rows) = match (settings.flag("demo"), settings.count("rows")) {
        (Ok(d), Ok(r)) => (d, r.unwrap_or(1_000_000)),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let engine = Engine::new();
    let copy_root = match settings.string("copy-root") {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let (data_dir, sync, in_memory) =
        match (settings.string("data-dir"), settings.string("sync"), settings.flag("in-memory")) {
            (Ok(d), Ok(s), Ok(m)) => (d, s, m),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return fail(&e),
        };
    let checkpoint_mb = match settings.count("checkpoint-mb") {
        Ok(n) => n.map(|n| n as u64),
        Err(e) => return fail(&e),
    };
    let tiering = match tiering(&settings) {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    if in_memory && (tiering.after_ns.is_some() || tiering.memory_budget_mb.is_some()) {
        return fail("--tier-after and --memory-budget-mb need a data directory (--in-memory keeps nothing)");
    }
    let shared = match shared_history_dir(&settings, in_memory, &tiering) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    // With shared history, cluster tables tier through it (sealing), never to local files.
    let tiering = match &shared {
        Some(_) => crate::durable::Tiering { after_ns: None, ..tiering },
        None => tiering,
    };
    let mut protected: Vec<PathBuf> = Vec::new();
    let durable = match (data_dir, in_memory) {
        (Some(_), true) => return fail("--in-memory and --data-dir contradict each other"),
        (None, true) if sync.is_some() => return fail("--sync needs a data directory (--in-memory keeps nothing)"),
        (None, true) => None,
        (dir, false) => {
            let dir = dir.unwrap_or_else(|| DEFAULT_DATA_DIR.to_string());
            let mode = match settings.string("wal-recovery") {
                Ok(None) => zepto_wal::RecoveryMode::default(),
                Ok(Some(m)) => match zepto_wal::RecoveryMode::parse(&m) {
                    Some(m) => m,
                    None => return fail(&format!("--wal-recovery: '{m}' is not point-in-time or strict")),
                },
                Err(e) => return fail(&e),
            };
            if settings.flag("repair-wal").unwrap_or(false) && mode == zepto_wal::RecoveryMode::Strict {
                return fail("--repair-wal and --wal-recovery strict contradict each other");
            }
            protected.push(PathBuf::from(&dir));
            let opts =
                zepto_durable::DirOptions { sync, recovery: mode, checkpoint_mb, tiering, shared: shared.clone() };
            match crate::durable::open(&engine, &dir, opts) {
                Ok(d) => {
                    cfg.recovery = d.corruption().map(|c| zepto_server::RecoveryNotice {
                        message: crate::durable::corruption_message(c),
                        records_dropped: c.records_dropped,
                        intact_rows_dropped: c.intact_rows_dropped,
                    });
                    Some(d)
                }
                Err(e) => return fail(&e),
            }
        }
    };
    // A durable demo is loaded once; later starts recover it.
    let demo = demo && !engine.catalog().exists("trades");
    if demo {
        if let Err(e) = crate::demo::load(&engine, rows, true) {
            return fail(&format!("demo data: {e}"));
        }
    }
    let protected: Vec<&Path> = protected.iter().map(PathBuf::as_path).collect();
    let files = match zepto_sql::FilePolicy::new(copy_root.as_deref().map(Path::new), &protected) {
        Ok(f) => f,
        Err(e) => return fail(&e),
    };
    let engine = engine.with_files(files);
    let catalog = engine.catalog().clone();
    let result = run_doors(&settings, cfg, engine, shared);
    if let Some(d) = &durable {
        crate::durable::close(d, &catalog);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// The HTTP server until shutdown, with the FIX, cluster, Flight SQL, PostgreSQL and line
/// protocol over TCP doors beside it if asked for (stopped after it; line protocol over TCP
/// runs in the HTTP server's runtime and stops with it). `shared` is the store of `--shared-history`, opened once.
fn run_doors(
    settings: &Settings<'_>,
    mut cfg: Config,
    engine: Engine,
    shared: Option<zepto_history::SharedStore>,
) -> Result<(), String> {
    let fix = fix::start(settings, engine.catalog(), cfg.tls.as_ref())?;
    cfg.fix =
        fix.as_ref().map(|f| zepto_server::fix::FixHandle::new(std::sync::Arc::new(fix::FixMetrics(f.sessions()))));
    let (node, engine) = match cluster::start(settings, &engine, cfg.addr, &cfg.keys, shared)? {
        Some((node, member)) => (Some(node), member),
        None => (None, engine),
    };
    cfg.cluster = node.as_ref().map(|n| zepto_server::cluster::ClusterHandle::new(n.view()));
    // One set of query slots for every door that runs statements (HTTP's server takes it
    // from the config).
    let admission = cfg.make_admission().map_err(|e| format!("query threads: {e}"))?;
    cfg.admission = Some(std::sync::Arc::new(admission));
    // ... and one budget for client data held before it is stored (HTTP bodies, PG COPY).
    cfg.bodies = Some(zepto_server::inflight::BodyBudget::new(cfg.inflight_body_bytes()));
    let flight_sql = flight_sql::start(settings, &cfg, &engine)?;
    let pg = pg::start(settings, &cfg, &engine)?;
    cfg.ilp_tcp = ilp_tcp::bind(settings, &cfg)?;
    let threads = cfg.threads;
    let auth =
        if cfg.keys.is_empty() { "off (loopback only)".to_string() } else { format!("{} key(s)", cfg.keys.len()) };
    let result = zepto_server::run(cfg, engine, |addr, tls| {
        let scheme = if tls { "https" } else { "http" };
        eprintln!("zeptodb: listening on {scheme}://{addr} ({threads} threads, auth {auth})");
        notify::notify(&format!("READY=1\nSTATUS=listening on {scheme}://{addr}"));
    });
    notify::notify("STOPPING=1\nSTATUS=stopping: closing the doors, then the checkpoint on exit");
    if let Some(f) = fix {
        f.stop();
    }
    if let Some(f) = flight_sql {
        f.stop();
    }
    if let Some(p) = pg {
        p.stop();
    }
    if let Some(n) = node {
        n.stop();
    }
    result
}

/// The server's query slots, made before its doors ([`run_doors`]).
fn shared_slots(cfg: &Config) -> Result<std::sync::Arc<zepto_server::admission::Admission>, String> {
    cfg.admission.clone().ok_or_else(|| "the query slots are made before the doors".to_string())
}

/// The shared store of `--shared-history`, checked against the other settings.
fn shared_history_dir(
    st: &Settings<'_>,
    in_memory: bool,
    tiering: &crate::durable::Tiering,
) -> Result<Option<zepto_history::SharedStore>, String> {
    let Some(store) = cluster::shared_store(st)? else { return Ok(None) };
    if st.string("cluster")?.is_none() {
        return Err("--shared-history needs --cluster BROKERS".into());
    }
    if in_memory {
        return Err("--shared-history needs a data directory (--in-memory keeps nothing)".into());
    }
    if tiering.memory_budget_mb.is_some() {
        return Err("--memory-budget-mb with --shared-history: cluster tables tier by age only (--tier-after)".into());
    }
    Ok(Some(store))
}

/// History tiering from `tier-after` and `memory-budget-mb`.
fn tiering(st: &Settings<'_>) -> Result<crate::durable::Tiering, String> {
    let after_ns = match st.string("tier-after")? {
        None => None,
        Some(a) => match zepto_storage::time::parse_interval(&a) {
            Some(ns) if ns > 0 => Some(ns),
            _ => return Err(format!("--tier-after: '{a}' is not a positive duration (e.g. 7d)")),
        },
    };
    let mb = st.count("memory-budget-mb")?;
    Ok(crate::durable::Tiering { after_ns, memory_budget_mb: mb.map(|m| m as u64), background: true })
}

/// Where `zeptodb serve` keeps its tables unless told otherwise (SPEC §1).
const DEFAULT_DATA_DIR: &str = "./zepto-data";
