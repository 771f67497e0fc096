//! `serve --ilp-tcp ADDR`: InfluxDB line protocol over TCP (`zepto_server::ilp_tcp`,
//! docs/questdb.md), QuestDB's port 9009 door. On by default on 127.0.0.1:9009 (`--ilp-tcp
//! off` turns it off); the default address being taken is a warning, an address given being
//! taken is an error. TLS-only when the server has a certificate.
//!
//! A TCP client cannot present an API key, so the door's connections write as one writer
//! without a tenant. Without API keys the door listens on loopback only, as HTTP does. With
//! API keys it does not start unless `--ilp-tcp-unauthenticated` says the operator accepts
//! unauthenticated writes on it: given explicitly, `--ilp-tcp ADDR` is then an error, and the
//! default door is left off with a notice.

use super::Settings;
use clap::{Arg, ArgAction};
use std::sync::Arc;
use zepto_server::config::Config;
use zepto_server::ilp_tcp::{IlpTcpConfig, Limits};

/// Where the door listens unless told otherwise (QuestDB's line protocol port).
const DEFAULT: &str = "127.0.0.1:9009";

/// The line protocol over TCP flags.
pub(super) fn args() -> Vec<Arg> {
    vec![
        Arg::new("ilp-tcp").long("ilp-tcp").value_name("ADDR").help(
            "Accept InfluxDB line protocol over TCP here (QuestDB's tcp:: senders) [default: 127.0.0.1:9009; off to disable]",
        ),
        Arg::new("ilp-tcp-unauthenticated").long("ilp-tcp-unauthenticated").action(ArgAction::SetTrue).help(
            "With API keys: open the line protocol TCP door anyway; anyone who reaches it writes (as a writer, every table)",
        ),
        Arg::new("ilp-tcp-max-line-kb")
            .long("ilp-tcp-max-line-kb")
            .value_name("KB")
            .value_parser(clap::value_parser!(usize))
            .help("Longest line over TCP; a longer one closes its connection [default: 1024]"),
    ]
}

/// The door's settings with its socket bound, unless it is off.
pub(super) fn bind(st: &Settings<'_>, cfg: &Config) -> Result<Option<IlpTcpConfig>, String> {
    let given = st.string("ilp-tcp")?;
    if given.as_deref() == Some("off") {
        return Ok(None);
    }
    if !cfg.keys.is_empty() && !st.flag("ilp-tcp-unauthenticated")? {
        if given.is_some() {
            return Err("--ilp-tcp: this server has API keys and a TCP line protocol client cannot present one; \
                        add --ilp-tcp-unauthenticated to accept unauthenticated writes on it, or write with a key \
                        through POST /write"
                .into());
        }
        eprintln!(
            "zeptodb: ILP/TCP door not started: the server has API keys and the door has none \
             (--ilp-tcp-unauthenticated opens it anyway, --ilp-tcp off silences this)"
        );
        return Ok(None);
    }
    let addr = given.clone().unwrap_or_else(|| DEFAULT.to_string());
    let listener = match std::net::TcpListener::bind(&addr) {
        Ok(l) => l,
        Err(e) if given.is_none() => {
            eprintln!("zeptodb: ILP/TCP door not started: {addr}: {e} (--ilp-tcp ADDR picks another address)");
            return Ok(None);
        }
        Err(e) => return Err(format!("--ilp-tcp {addr}: {e}")),
    };
    let bound = listener.local_addr().map_err(|e| format!("--ilp-tcp {addr}: {e}"))?;
    if !bound.ip().is_loopback() && cfg.keys.is_empty() {
        return Err(format!("refusing an ILP/TCP door on {bound} without authentication: configure API keys"));
    }
    let mut limits = Limits::default();
    if let Some(kb) = st.count("ilp-tcp-max-line-kb")? {
        if kb == 0 {
            return Err("--ilp-tcp-max-line-kb must be at least 1".into());
        }
        limits.max_line_bytes = kb.saturating_mul(1 << 10);
    }
    let secure = if cfg.tls.is_some() { " over TLS" } else { "" };
    let who = if cfg.keys.is_empty() { "" } else { ", unauthenticated" };
    eprintln!("zeptodb: ILP over TCP on {bound}{secure}{who}");
    Ok(Some(IlpTcpConfig { listener: Arc::new(listener), limits, who: IlpTcpConfig::writer() }))
}
