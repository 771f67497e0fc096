//! `serve` flags for a cluster node (docs/cluster.md): join a Kafka consumer group and apply
//! the records of the topic partitions Kafka assigns this node.

use super::Settings;
use clap::Arg;
use zepto_cluster::{Config, Node};
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
    ]
}

/// The setting names the config file may give.
pub(super) const KEYS: [&str; 4] = ["cluster", "cluster-topic", "cluster-group", "node-id"];

/// The cluster node, if `--cluster` asks for one; `http` names the node by default.
pub(super) fn start(st: &Settings<'_>, engine: &Engine, http: std::net::SocketAddr) -> Result<Option<Node>, String> {
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
    let config = Config::new(&brokers, &topic, &group, &node_id).map_err(|e| e.to_string())?;
    let node = Node::start(engine.clone(), &config).map_err(|e| e.to_string())?;
    eprintln!("zeptodb: cluster node {node_id}: group {group}, topic {topic}, brokers {brokers}");
    Ok(Some(node))
}
