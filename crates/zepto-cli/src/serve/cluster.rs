//! `serve` flags for a cluster node (docs/cluster.md): join a Kafka consumer group, apply the
//! records of the topic partitions Kafka assigns this node, and answer the other nodes' query
//! fragments on an Arrow Flight door.

use super::Settings;
use clap::Arg;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;
use zepto_cluster::history::SharedHistory;
use zepto_cluster::{Config, Node};
use zepto_history::SharedStore;
use zepto_server::auth::KeyStore;
use zepto_sql::Engine;

/// The cluster flags.
pub(super) fn args() -> Vec<Arg> {
    vec![
        Arg::new("cluster")
            .long("cluster")
            .value_name("BROKERS")
            .help("Be a cluster node: ingest through the Kafka brokers here (host:port[,host:port...])"),
        Arg::new("cluster-topic")
            .long("cluster-topic")
            .value_name("TOPIC")
            .help("The Kafka topic carrying the rows (default zepto)"),
        Arg::new("cluster-group")
            .long("cluster-group")
            .value_name("GROUP")
            .help("The consumer group whose members the nodes are (default zepto)"),
        Arg::new("node-id")
            .long("node-id")
            .value_name("NAME")
            .help("This node's name in the group (default host:port of the HTTP door)"),
        Arg::new("flight").long("flight").value_name("ADDR").help(
            "Where the other nodes reach this one's Arrow Flight door (default: the HTTP door's host, any free port)",
        ),
        Arg::new("shared-history").long("shared-history").value_name("DIR").help(
            "Keep the owned partitions' rows in storage every node reads (a directory or file:// URL), so a node \
             taking a partition over loads them from there",
        ),
        Arg::new("seal-every")
            .long("seal-every")
            .value_name("AGE")
            .help("With --shared-history: how often each owned partition is written there (default 60s)"),
    ]
}

/// The setting names the config file may give.
pub(super) const KEYS: [&str; 7] =
    ["cluster", "cluster-topic", "cluster-group", "node-id", "flight", "shared-history", "seal-every"];

/// The shared store `--shared-history` names, if it names one.
pub(super) fn shared_store(st: &Settings<'_>) -> Result<Option<SharedStore>, String> {
    match st.string("shared-history")? {
        None => Ok(None),
        Some(loc) => SharedStore::open(&loc).map(Some).map_err(|e| format!("--shared-history {loc}: {e}")),
    }
}

/// The shared-history settings, if `--shared-history` opened `store` (rows older than
/// `tier_after_ns` are sealed as history).
fn shared_history(
    st: &Settings<'_>,
    store: Option<SharedStore>,
    tier_after_ns: Option<i64>,
) -> Result<Option<SharedHistory>, String> {
    let Some(store) = store else {
        return match st.string("seal-every")? {
            Some(_) => Err("--seal-every needs --shared-history".into()),
            None => Ok(None),
        };
    };
    let every = match st.string("seal-every")? {
        None => Duration::from_secs(60),
        Some(a) => match zepto_storage::time::parse_interval(&a) {
            Some(ns) if ns > 0 => Duration::from_nanos(ns.unsigned_abs()),
            _ => return Err(format!("--seal-every: '{a}' is not a positive duration (e.g. 60s)")),
        },
    };
    SharedHistory::new(store, every, tier_after_ns).map(Some).map_err(|e| e.to_string())
}

/// The environment variable holding the admin key a node sends the others' Flight doors when
/// the servers have API keys.
const CLUSTER_KEY_ENV: &str = "ZEPTO_CLUSTER_KEY";

/// The cluster node, if `--cluster` asks for one (`http` names the node by default; `keys`
/// guard its Flight door; `shared` is the store `--shared-history` opened), and the engine its
/// queries run on: a member of the cluster.
pub(super) fn start(
    st: &Settings<'_>,
    engine: &Engine,
    http: std::net::SocketAddr,
    keys: &KeyStore,
    shared: Option<SharedStore>,
) -> Result<Option<(Node, Engine)>, String> {
    let Some(brokers) = st.string("cluster")? else {
        for k in &KEYS[1..] {
            if st.string(k)?.is_some() {
                return Err(format!("--{k} needs --cluster BROKERS"));
            }
        }
        return Ok(None);
    };
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let host = if host.is_empty() { http.ip().to_string() } else { host };
    let node_id = st.string("node-id")?.unwrap_or_else(|| format!("{host}:{}", http.port()));
    let topic = st.string("cluster-topic")?.unwrap_or_else(|| "zepto".into());
    let group = st.string("cluster-group")?.unwrap_or_else(|| "zepto".into());
    let key = std::env::var(CLUSTER_KEY_ENV).ok().filter(|k| !k.is_empty());
    if !keys.is_empty() && key.is_none() {
        return Err(format!(
            "a cluster node with API keys needs {CLUSTER_KEY_ENV}: an admin key every node accepts, for queries between nodes"
        ));
    }
    let (listener, flight) = flight_door(st, http, keys)?;
    let mut config = Config::new(&brokers, &topic, &group, &node_id).map_err(|e| e.to_string())?.with_flight(&flight);
    if let Some(sh) = shared_history(st, shared, super::tiering(st)?.after_ns)? {
        config = config.with_shared_history(sh);
    }
    let mut node = Node::start(engine.clone(), &config).map_err(|e| e.to_string())?;
    node.serve_flight(listener, Arc::new(keys.clone())).map_err(|e| e.to_string())?;
    let member = engine.with_cluster(node.cluster(key).map_err(|e| e.to_string())?);
    eprintln!("zeptodb: cluster node {node_id}: group {group}, topic {topic}, brokers {brokers}, Flight {flight}");
    Ok(Some((node, member)))
}

/// The Flight door's listener and the address the other nodes reach it at: `--flight`, or
/// the HTTP door's host on a free port. A door off loopback needs API keys, as HTTP does.
fn flight_door(
    st: &Settings<'_>,
    http: std::net::SocketAddr,
    keys: &KeyStore,
) -> Result<(TcpListener, String), String> {
    let want = st.string("flight")?.unwrap_or_else(|| format!("{}:0", http.ip()));
    let listener = TcpListener::bind(&want).map_err(|e| format!("--flight {want}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| format!("--flight {want}: {e}"))?;
    if !bound.ip().is_loopback() && keys.is_empty() {
        return Err(format!("refusing a Flight door on {bound} without authentication: configure API keys"));
    }
    let host = if bound.ip().is_unspecified() {
        std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
    } else {
        bound.ip().to_string()
    };
    Ok((listener, format!("{host}:{}", bound.port())))
}
