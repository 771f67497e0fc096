//! `serve --pg ADDR`: the PostgreSQL wire protocol door (`zepto-pg`, docs/pg.md) beside the
//! HTTP one, on the same engine, keys, query limits and TLS certificate. On by default on
//! 127.0.0.1:8812 (`--pg off` turns it off); the default address being taken is a warning,
//! an address given being taken is an error.

use super::Settings;
use clap::Arg;
use std::sync::Arc;
use zepto_pg::{Door, Limits, Server};
use zepto_server::config::Config;
use zepto_sql::Engine;

/// Where the door listens unless told otherwise (QuestDB's PostgreSQL port, which clients
/// of time-series databases know).
const DEFAULT: &str = "127.0.0.1:8812";

/// The PostgreSQL flag.
pub(super) fn args() -> Vec<Arg> {
    vec![Arg::new("pg").long("pg").value_name("ADDR").help(
        "Serve the PostgreSQL wire protocol (psql, psycopg, JDBC) here [default: 127.0.0.1:8812; off to disable]",
    )]
}

/// The door, unless `--pg off`: off loopback only with API keys, as HTTP.
pub(super) fn start(st: &Settings<'_>, cfg: &Config, engine: &Engine) -> Result<Option<Server>, String> {
    let given = st.string("pg")?;
    if given.as_deref() == Some("off") {
        return Ok(None);
    }
    let addr = given.clone().unwrap_or_else(|| DEFAULT.to_string());
    let listener = match std::net::TcpListener::bind(&addr) {
        Ok(l) => l,
        Err(e) if given.is_none() => {
            eprintln!("zeptodb: PostgreSQL door not started: {addr}: {e} (--pg ADDR picks another address)");
            return Ok(None);
        }
        Err(e) => return Err(format!("--pg {addr}: {e}")),
    };
    let bound = listener.local_addr().map_err(|e| format!("--pg {addr}: {e}"))?;
    if !bound.ip().is_loopback() && cfg.keys.is_empty() {
        return Err(format!("refusing a PostgreSQL door on {bound} without authentication: configure API keys"));
    }
    let tls = match &cfg.tls {
        Some(files) => Some(zepto_server::server::tls_config(files, b"postgresql")?.into()),
        None => None,
    };
    let limits = Limits { timeout: cfg.query_timeout, memory: cfg.query_memory_limit, parse: cfg.parse_limits };
    let secure = if tls.is_some() { ", TLS offered" } else { "" };
    let door = Door {
        engine: engine.clone(),
        keys: Arc::new(cfg.keys.clone()),
        limits,
        tls,
        max_connections: cfg.max_connections,
        admission: super::shared_slots(cfg)?,
        bodies: cfg.bodies.clone().ok_or("the body budget is made before the doors")?,
    };
    let server = Server::start(listener, door)?;
    eprintln!("zeptodb: PostgreSQL wire protocol on {bound}{secure}");
    Ok(Some(server))
}
