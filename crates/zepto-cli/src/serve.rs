//! `zeptodb serve` (SPEC §1): flags → [`zepto_server::Config`], optional demo data, then the
//! server runs until SIGTERM/SIGINT. `zeptodb keygen` makes an API key and its keys-file entry.

use clap::{Arg, ArgAction, ArgMatches, Command};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use zepto_server::{Config, Role, TlsFiles};
use zepto_sql::{Engine, TableAccess};

pub fn command() -> Command {
    Command::new("serve")
        .about("Run the HTTP server (SQL, ingest, metrics) on 127.0.0.1:8123")
        .arg(Arg::new("http").long("http").value_name("ADDR").default_value("127.0.0.1:8123").help("Listen address"))
        .arg(
            Arg::new("threads")
                .long("threads")
                .value_name("N")
                .value_parser(clap::value_parser!(usize))
                .help("Async worker threads [default: cores]"),
        )
        .arg(
            Arg::new("data-dir")
                .long("data-dir")
                .value_name("DIR")
                .help("Data directory (durability: not yet, see README)"),
        )
        .arg(Arg::new("sync").long("sync").value_name("MODE").help("WAL sync mode (durability: not yet, see README)"))
        .arg(Arg::new("demo").long("demo").action(ArgAction::SetTrue).help("Load the generated trades/quotes data set"))
        .arg(
            Arg::new("rows")
                .long("rows")
                .value_parser(clap::value_parser!(usize))
                .default_value("1000000")
                .help("Rows per demo table"),
        )
        .arg(
            Arg::new("api-key")
                .long("api-key")
                .value_name("KEY")
                .action(ArgAction::Append)
                .help("An admin API key (repeatable; also $ZEPTO_API_KEY)"),
        )
        .arg(Arg::new("keys-file").long("keys-file").value_name("FILE").help("API keys with roles and grants (JSON)"))
        .arg(Arg::new("tls-cert").long("tls-cert").value_name("PEM").requires("tls-key").help("TLS certificate chain"))
        .arg(Arg::new("tls-key").long("tls-key").value_name("PEM").requires("tls-cert").help("TLS private key"))
        .arg(
            Arg::new("max-body-mb")
                .long("max-body-mb")
                .value_parser(clap::value_parser!(usize))
                .default_value("256")
                .help("Largest request body"),
        )
        .arg(
            Arg::new("query-timeout")
                .long("query-timeout")
                .value_name("SECS")
                .value_parser(clap::value_parser!(f64))
                .default_value("300")
                .help("Per-query time limit (0 = none)"),
        )
        .arg(
            Arg::new("query-memory-mb")
                .long("query-memory-mb")
                .value_parser(clap::value_parser!(usize))
                .default_value("0")
                .help("Per-query memory limit (0 = none)"),
        )
        .arg(
            Arg::new("max-connections")
                .long("max-connections")
                .value_parser(clap::value_parser!(usize))
                .default_value("16384"),
        )
        .arg(
            Arg::new("shutdown-grace")
                .long("shutdown-grace")
                .value_name("SECS")
                .value_parser(clap::value_parser!(f64))
                .default_value("30")
                .help("On SIGTERM/SIGINT, how long requests in flight may finish before cancellation"),
        )
        .arg(
            Arg::new("access-log")
                .long("access-log")
                .value_name("PATH|-|off")
                .default_value("-")
                .help("Access log: a file, '-' for stderr, or 'off'"),
        )
}

pub fn keygen_command() -> Command {
    Command::new("keygen")
        .about("Make a random API key: the key on stderr, its keys-file entry (hashed) on stdout")
        .arg(Arg::new("name").long("name").required(true))
        .arg(Arg::new("role").long("role").value_parser(["reader", "writer", "admin"]).default_value("reader"))
        .arg(Arg::new("tables").long("tables").value_name("T1,T2").help("Grant only these tables"))
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
    match zepto_server::auth::keygen(name, role, &tables) {
        Ok((key, entry)) => {
            eprintln!("API key (shown once; store it safely): {key}");
            println!("{entry}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("cannot read random bytes: {e}")),
    }
}

fn config(a: &ArgMatches) -> Result<Config, String> {
    let mut c = Config::default();
    let addr = a.get_one::<String>("http").map(String::as_str).unwrap_or("127.0.0.1:8123");
    c.addr = addr.parse().map_err(|_| format!("--http: '{addr}' is not an address like 127.0.0.1:8123"))?;
    if let Some(&n) = a.get_one::<usize>("threads") {
        c.threads = n;
    }
    let mut keys: Vec<String> = a.get_many::<String>("api-key").map(|v| v.cloned().collect()).unwrap_or_default();
    if let Ok(k) = std::env::var("ZEPTO_API_KEY") {
        if !k.is_empty() {
            keys.push(k);
        }
    }
    for (i, k) in keys.iter().enumerate() {
        c.keys.add_plain(&format!("admin{}", i + 1), k, Role::Admin, TableAccess::all())?;
    }
    if let Some(f) = a.get_one::<String>("keys-file") {
        c.keys.load_file(f)?;
    }
    if let (Some(cert), Some(key)) = (a.get_one::<String>("tls-cert"), a.get_one::<String>("tls-key")) {
        c.tls = Some(TlsFiles { cert: PathBuf::from(cert), key: PathBuf::from(key) });
    }
    c.max_body_bytes = a.get_one::<usize>("max-body-mb").copied().unwrap_or(256).saturating_mul(1 << 20);
    let t = a.get_one::<f64>("query-timeout").copied().unwrap_or(300.0);
    if !(0.0..=31_622_400.0).contains(&t) {
        return Err("--query-timeout must be a number of seconds, at most a year".into());
    }
    c.query_timeout = (t > 0.0).then(|| Duration::from_secs_f64(t));
    let mb = a.get_one::<usize>("query-memory-mb").copied().unwrap_or(0);
    c.query_memory_limit = (mb > 0).then(|| mb.saturating_mul(1 << 20));
    let g = a.get_one::<f64>("shutdown-grace").copied().unwrap_or(30.0);
    if !(0.0..=86_400.0).contains(&g) {
        return Err("--shutdown-grace must be between 0 and 86400 seconds".into());
    }
    c.shutdown_grace = Duration::from_secs_f64(g);
    c.max_connections = a.get_one::<usize>("max-connections").copied().unwrap_or(16_384).max(1);
    c.access_log = match a.get_one::<String>("access-log").map(String::as_str) {
        Some("off") | Some("none") => None,
        Some("-") | None => Some(None),
        Some(p) => Some(Some(PathBuf::from(p))),
    };
    c.validate()?;
    Ok(c)
}

pub fn run(a: &ArgMatches) -> ExitCode {
    let cfg = match config(a) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    if a.get_one::<String>("data-dir").is_some() || a.get_one::<String>("sync").is_some() {
        eprintln!("zeptodb: warning: durable storage is not built yet; --data-dir/--sync are ignored and data lives in memory");
    }
    let engine = Engine::new();
    if a.get_flag("demo") {
        let rows = a.get_one::<usize>("rows").copied().unwrap_or(1_000_000);
        if let Err(e) = crate::demo::load(&engine, rows, true) {
            return fail(&format!("demo data: {e}"));
        }
    }
    let threads = cfg.threads;
    let auth =
        if cfg.keys.is_empty() { "off (loopback only)".to_string() } else { format!("{} key(s)", cfg.keys.len()) };
    let result = zepto_server::run(cfg, engine, |addr, tls| {
        let scheme = if tls { "https" } else { "http" };
        eprintln!("zeptodb: listening on {scheme}://{addr} ({threads} threads, auth {auth})");
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}
