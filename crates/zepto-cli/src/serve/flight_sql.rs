//! `serve --flight-sql ADDR`: the Arrow Flight SQL door (`zepto-flightsql`, docs/flight-sql.md)
//! beside the HTTP one, on the same engine, keys and query limits.

use super::Settings;
use clap::Arg;
use std::sync::Arc;
use zepto_flightsql::{Door, Limits, Server};
use zepto_server::config::Config;
use zepto_sql::Engine;

/// The Flight SQL flag.
pub(super) fn args() -> Vec<Arg> {
    vec![Arg::new("flight-sql")
        .long("flight-sql")
        .value_name("ADDR")
        .help("Serve Arrow Flight SQL (ADBC, JDBC) on this address, e.g. 127.0.0.1:8815")]
}

/// The door, if `--flight-sql` asks for one: off loopback only with API keys, as HTTP.
pub(super) fn start(st: &Settings<'_>, cfg: &Config, engine: &Engine) -> Result<Option<Server>, String> {
    let Some(addr) = st.string("flight-sql")? else { return Ok(None) };
    let listener = std::net::TcpListener::bind(&addr).map_err(|e| format!("--flight-sql {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| format!("--flight-sql {addr}: {e}"))?;
    if !bound.ip().is_loopback() && cfg.keys.is_empty() {
        return Err(format!("refusing a Flight SQL door on {bound} without authentication: configure API keys"));
    }
    let limits = Limits { timeout: cfg.query_timeout, memory: cfg.query_memory_limit };
    let door = Door::new(engine.clone(), Arc::new(cfg.keys.clone()), limits, super::shared_slots(cfg)?);
    let server = Server::start(listener, door).map_err(|e| e.to_string())?;
    eprintln!("zeptodb: Flight SQL on grpc://{bound}");
    Ok(Some(server))
}
