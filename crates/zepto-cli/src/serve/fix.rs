//! `serve` flags for the FIX door (docs/fix.md): accept sessions (`--fix`), and the settings
//! file (`--fix-config`): CompIDs, heartbeat, table and column renames, tags added as
//! columns, and the sessions ZeptoDB starts itself (initiators).

use super::Settings;
use clap::Arg;
use serde_json::{Map, Value};
use std::sync::Arc;
use zepto_fix::extra::{ExtraTag, Role};
use zepto_fix::map::TableNames;
use zepto_fix::server::FixDoor;
use zepto_fix::session::{InitiatorConfig, SessionConfig, Subscription};
use zepto_fix::tls::{InitiatorTls, TlsFiles};
use zepto_storage::{Catalog, DataType};

/// The FIX flags.
pub(super) fn args() -> Vec<Arg> {
    vec![
        Arg::new("fix")
            .long("fix")
            .value_name("ADDR")
            .help("Also accept FIX 4.4 sessions here (e.g. 127.0.0.1:9878): market data and executions into tables"),
        Arg::new("fix-tls").long("fix-tls").action(clap::ArgAction::SetTrue).help(
            "Accept FIX sessions over TLS only, with the --tls-cert/--tls-key certificate (FIX has no in-band upgrade)",
        ),
        Arg::new("fix-busy-poll").long("fix-busy-poll").action(clap::ArgAction::SetTrue).help(
            "Read FIX connections by spinning on their sockets: lower latency to queryable, a busy core per session",
        ),
        Arg::new("fix-config").long("fix-config").value_name("FILE").help(
            "FIX settings (JSON): sender_comp_id (default ZEPTO), target_comp_ids (default any), heartbeat_secs, \
             tables and columns (renames), tags (added as columns), initiators (sessions to start)",
        ),
    ]
}

/// The FIX door, if `--fix` asks for an acceptor or `--fix-config` names initiators; its
/// acceptor over TLS with `tls` (the HTTP door's certificate) when `--fix-tls` asks.
pub(super) fn start(
    st: &Settings<'_>,
    catalog: &Arc<Catalog>,
    tls: Option<&zepto_server::TlsFiles>,
) -> Result<Option<FixDoor>, String> {
    let listen = st.string("fix")?;
    let mut cfg = config(st.string("fix-config")?.as_deref())?;
    cfg.busy_poll = st.flag("fix-busy-poll")?;
    let tls = match (st.flag("fix-tls")?, tls, &listen) {
        (false, _, _) => None,
        (true, _, None) => return Err("--fix-tls needs --fix (the address to accept FIX sessions on)".into()),
        (true, None, _) => return Err("--fix-tls needs --tls-cert and --tls-key".into()),
        (true, Some(files), _) => Some(zepto_server::server::tls_config(files, b"")?),
    };
    if listen.is_none() && cfg.initiators.is_empty() {
        return Ok(None);
    }
    let secure = if tls.is_some() { " over TLS" } else { "" };
    let sender = cfg.sender.clone();
    let targets: Vec<String> = cfg.initiators.iter().map(|i| format!("{} at {}", i.target, i.connect)).collect();
    let door = FixDoor::start(listen.as_deref(), tls, catalog.clone(), cfg)?;
    if let Some(a) = door.addr() {
        eprintln!("zeptodb: accepting FIX sessions on {a}{secure} (our CompID {sender})");
    }
    if !targets.is_empty() {
        eprintln!("zeptodb: starting FIX sessions as {sender} with {}", targets.join(", "));
    }
    Ok(Some(door))
}

/// The FIX door's sessions as `/metrics` reads them.
pub(super) struct FixMetrics(pub(super) Arc<zepto_fix::registry::Registry>);

impl zepto_server::fix::FixSessions for FixMetrics {
    fn reports(&self) -> Vec<zepto_server::fix::FixSessionReport> {
        self.0
            .reports()
            .into_iter()
            .map(|r| zepto_server::fix::FixSessionReport {
                session: r.session,
                connected: r.connected,
                messages: r.stats.messages,
                rows: r.stats.rows,
                gaps: r.stats.gaps,
                rejects: r.stats.rejects,
                lag_ns: r.lag_ns,
            })
            .collect()
    }
}

/// The `--fix-config` file (every key optional; an unknown key is an error; docs/fix.md).
fn config(path: Option<&str>) -> Result<SessionConfig, String> {
    let mut c = SessionConfig::default();
    let Some(path) = path else {
        return Ok(c);
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("--fix-config {path}: {e}"))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("--fix-config {path}: not JSON: {e}"))?;
    let Value::Object(map) = v else {
        return Err(format!("--fix-config {path}: expected a JSON object"));
    };
    for (k, v) in &map {
        setting(&mut c, k, v).map_err(|e| format!("--fix-config {path}: {k}: {e}"))?;
    }
    c.names.check().map_err(|e| format!("--fix-config {path}: {e}"))?;
    Ok(c)
}

/// Apply one top-level setting.
fn setting(c: &mut SessionConfig, k: &str, v: &Value) -> Result<(), String> {
    match k {
        "sender_comp_id" => c.sender = comp_id(v)?,
        "target_comp_ids" => {
            let list = v.as_array().ok_or("must be a list of CompIDs")?;
            c.targets = list.iter().map(comp_id).collect::<Result<_, _>>()?;
        }
        "heartbeat_secs" => c.heartbeat_secs = heartbeat(v)?,
        "tables" => tables(&mut c.names, v)?,
        "columns" => c.names.columns = renames(v)?,
        "tags" => c.names.tags = tags(v)?,
        "initiators" => {
            let list = v.as_array().ok_or("must be a list of sessions")?;
            c.initiators = list
                .iter()
                .enumerate()
                .map(|(i, s)| initiator(s).map_err(|e| format!("[{i}]: {e}")))
                .collect::<Result<_, _>>()?;
        }
        _ => return Err("unknown setting".into()),
    }
    Ok(())
}

fn comp_id(v: &Value) -> Result<String, String> {
    v.as_str().filter(|s| !s.is_empty() && !s.contains('\x01')).map(str::to_string).ok_or("must be a CompID".into())
}

fn heartbeat(v: &Value) -> Result<u64, String> {
    v.as_u64().filter(|n| (1..=3600).contains(n)).ok_or("must be 1 to 3600 (seconds)".into())
}

/// `"tables": {"quotes": "fx_quotes", ...}`: the tables the FIX mapping writes, renamed.
fn tables(names: &mut TableNames, v: &Value) -> Result<(), String> {
    for (k, name) in renames(v)? {
        let slot = match k.as_str() {
            "quotes" => &mut names.quotes,
            "trades" => &mut names.trades,
            "executions" => &mut names.executions,
            "sessions" => &mut names.sessions,
            _ => return Err(format!("'{k}' is not quotes, trades, executions or sessions")),
        };
        *slot = name;
    }
    Ok(())
}

/// A JSON object of strings, as `(key, value)` pairs.
fn renames(v: &Value) -> Result<Vec<(String, String)>, String> {
    let map = v.as_object().ok_or("expected an object of names")?;
    map.iter()
        .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())).ok_or_else(|| format!("'{k}': expected a name")))
        .collect()
}

/// `"tags": {"quotes": [{"tag": 276, "column": "quote_condition", "type": "SYMBOL"}], ...}`.
fn tags(v: &Value) -> Result<Vec<ExtraTag>, String> {
    let map = v.as_object().ok_or("expected an object of quotes, trades or executions")?;
    let mut out = Vec::new();
    for (table, list) in map {
        let role = Role::parse(table).ok_or_else(|| format!("'{table}' is not quotes, trades or executions"))?;
        let list = list.as_array().ok_or_else(|| format!("{table}: expected a list of tags"))?;
        for t in list {
            out.push(tag(role, t).map_err(|e| format!("{table}: {e}"))?);
        }
    }
    Ok(out)
}

fn tag(role: Role, v: &Value) -> Result<ExtraTag, String> {
    let o = object(v, &["tag", "column", "type"])?;
    let n = o.get("tag").and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0);
    let tag = n.ok_or("'tag' must be a tag number")?;
    let column =
        o.get("column").and_then(Value::as_str).ok_or_else(|| format!("tag {tag}: 'column' must be a name"))?;
    let ty = o.get("type").and_then(Value::as_str).unwrap_or("VARCHAR");
    let data_type = DataType::from_sql(ty).ok_or_else(|| format!("tag {tag}: '{ty}' is not a type"))?;
    Ok(ExtraTag { role, tag, column: column.to_string(), data_type })
}

/// One of `"initiators"`: `{"connect": "host:port", "target_comp_id": "FEED",
/// "heartbeat_secs": 30, "reset_on_logon": false, "subscribe": {...}, "tls": ...}`.
fn initiator(v: &Value) -> Result<InitiatorConfig, String> {
    let o = object(v, &["connect", "target_comp_id", "heartbeat_secs", "reset_on_logon", "subscribe", "tls"])?;
    let connect = o.get("connect").and_then(Value::as_str).filter(|s| s.contains(':'));
    let connect = connect.ok_or("'connect' must be host:port")?.to_string();
    let target = comp_id(o.get("target_comp_id").unwrap_or(&Value::Null)).map_err(|e| format!("target_comp_id {e}"))?;
    let heartbeat_secs =
        o.get("heartbeat_secs").map_or(Ok(30), heartbeat).map_err(|e| format!("heartbeat_secs {e}"))?;
    let reset_on_logon = match o.get("reset_on_logon") {
        None => false,
        Some(b) => b.as_bool().ok_or("'reset_on_logon' must be true or false")?,
    };
    let subscribe = o.get("subscribe").map(subscription).transpose().map_err(|e| format!("subscribe: {e}"))?;
    let tls = match o.get("tls") {
        None | Some(Value::Bool(false) | Value::Null) => None,
        Some(v) => Some(initiator_tls(&connect, v).map_err(|e| format!("tls: {e}"))?),
    };
    Ok(InitiatorConfig { connect, target, heartbeat_secs, reset_on_logon, subscribe, tls })
}

/// An initiator's `"tls"`: `true` (the system's roots, the connect host's name) or
/// `{"ca_file": "ca.pem", "server_name": "feed.example.com", "cert_file": "me.pem",
/// "key_file": "me.key"}` (each optional; a client certificate needs both files).
fn initiator_tls(connect: &str, v: &Value) -> Result<InitiatorTls, String> {
    if v.as_bool() == Some(true) {
        return InitiatorTls::load(connect, None, &TlsFiles::default());
    }
    let o = object(v, &["ca_file", "server_name", "cert_file", "key_file"])?;
    let text = |k: &str| -> Result<Option<&str>, String> {
        o.get(k).map(|v| v.as_str().ok_or_else(|| format!("'{k}' must be a string"))).transpose()
    };
    let client = match (text("cert_file")?, text("key_file")?) {
        (None, None) => None,
        (Some(c), Some(k)) => Some((c.into(), k.into())),
        _ => return Err("a client certificate needs both 'cert_file' and 'key_file'".into()),
    };
    let files = TlsFiles { ca_file: text("ca_file")?.map(Into::into), client };
    InitiatorTls::load(connect, text("server_name")?, &files)
}

/// `{"symbols": ["EUR/USD"], "entry_types": ["0", "1", "2"], "depth": 1, "md_req_id": "Z1"}`.
fn subscription(v: &Value) -> Result<Subscription, String> {
    let o = object(v, &["symbols", "entry_types", "depth", "md_req_id"])?;
    let strings = |k: &str, default: &[&str]| -> Result<Vec<String>, String> {
        let Some(v) = o.get(k) else { return Ok(default.iter().map(|s| s.to_string()).collect()) };
        let list = v.as_array().ok_or_else(|| format!("'{k}' must be a list of strings"))?;
        list.iter().map(|s| comp_id(s).map_err(|_| format!("'{k}' must be a list of strings"))).collect()
    };
    let symbols = strings("symbols", &[])?;
    if symbols.is_empty() {
        return Err("'symbols' must name at least one symbol".into());
    }
    let entry_types = strings("entry_types", &["0", "1", "2"])?;
    let depth = match o.get("depth") {
        None => 1,
        Some(d) => d.as_u64().ok_or("'depth' must be 0 (full book) or more")?,
    };
    let md_req_id = o.get("md_req_id").and_then(Value::as_str).unwrap_or("ZEPTO-1").to_string();
    Ok(Subscription { md_req_id, symbols, entry_types, depth })
}

/// `v` as an object whose keys are among `known`.
fn object<'a>(v: &'a Value, known: &[&str]) -> Result<&'a Map<String, Value>, String> {
    let o = v.as_object().ok_or("expected an object")?;
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("unknown key '{k}' (known: {})", known.join(", "))),
        None => Ok(o),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<SessionConfig, String> {
        let mut c = SessionConfig::default();
        let Value::Object(map) = serde_json::from_str(json).expect("JSON") else { panic!("an object") };
        for (k, v) in &map {
            setting(&mut c, k, v).map_err(|e| format!("{k}: {e}"))?;
        }
        c.names.check()?;
        Ok(c)
    }

    #[test]
    fn tags_and_initiators_are_read_and_checked() {
        let c = parse(
            r#"{"tags": {"quotes": [{"tag": 276, "column": "cond", "type": "symbol"}],
                         "executions": [{"tag": 1, "column": "account"}]},
                "initiators": [{"connect": "venue:9878", "target_comp_id": "FEED",
                                "subscribe": {"symbols": ["EUR/USD", "GBP/USD"]}}]}"#,
        )
        .expect("valid");
        assert_eq!(c.names.tags.len(), 2);
        let account = c.names.tags.iter().find(|t| t.column == "account").expect("account");
        assert_eq!((account.tag, account.role, account.data_type), (1, Role::Executions, DataType::Varchar));
        let i = &c.initiators[0];
        assert_eq!(
            (i.connect.as_str(), i.target.as_str(), i.heartbeat_secs, i.reset_on_logon),
            ("venue:9878", "FEED", 30, false)
        );
        let sub = i.subscribe.as_ref().expect("a subscription");
        assert_eq!((sub.symbols.len(), sub.entry_types.join(","), sub.depth), (2, "0,1,2".to_string(), 1));
        for (json, want) in [
            (r#"{"tags": {"orders": []}}"#, "tags: 'orders' is not quotes, trades or executions"),
            (r#"{"tags": {"quotes": [{"tag": 0, "column": "c"}]}}"#, "tags: quotes: 'tag' must be a tag number"),
            (
                r#"{"tags": {"quotes": [{"tag": 5, "column": "c", "type": "blob"}]}}"#,
                "tags: quotes: tag 5: 'blob' is not a type",
            ),
            (
                r#"{"tags": {"quotes": [{"tag": 5, "column": "price"}]}}"#,
                "two columns of one table would be named 'price'",
            ),
            (r#"{"initiators": [{"connect": "nowhere"}]}"#, "initiators: [0]: 'connect' must be host:port"),
            (
                r#"{"initiators": [{"connect": "h:1", "target_comp_id": "F", "subscribe": {"symbols": []}}]}"#,
                "initiators: [0]: subscribe: 'symbols' must name at least one symbol",
            ),
            (r#"{"initiators": [{"connect": "h:1", "target": "F"}]}"#, "initiators: [0]: unknown key 'target'"),
            (r#"{"heartbeat_secs": 0}"#, "heartbeat_secs: must be 1 to 3600 (seconds)"),
        ] {
            let err = parse(json).expect_err(json);
            assert!(err.starts_with(want), "{json}: {err}");
        }
    }
}
