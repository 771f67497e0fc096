//! Three cluster nodes on three hosts: each in a network namespace of its own (`ip netns`,
//! veth pairs on one bridge), the Kafka broker on the bridge. Rows go in through three doors
//! (Kafka's own producer, `/write` and `/api/v2/write` on the nodes) before and during the
//! faults; a node is killed with `kill -9` (and restarted), another is cut off the network (its
//! link taken down, so its peers see silence, not resets) and mended. Through every fault,
//! every answer holds each acknowledged row at most once and never lacks a row acknowledged
//! before the fault (an error naming the missing partitions instead); after each fault, whole
//! answers are back, and the time that took is printed. The nodes keep shared history (a
//! directory of the host's), sealing every second: partitions move through it, and old rows
//! are answered from its Parquet files.
//!
//! Needs root and iproute2 (and the Kafka broker of `common::kafka`); without them the test
//! says so and passes without running, except under `make test` (ZEPTO_REQUIRE_NETNS=1),
//! where that is a failure. `make soak` runs many rounds (ZEPTO_SOAK_ROUNDS).

mod common;

use common::kafka::{flush, send, trade_lines, wait_for, Broker};
use common::{post_key, request, Server};
use rdkafka::producer::BaseProducer;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const KEY: &str = "netns-test-admin-key-0123456789";
const TOPIC: &str = "hosts";
const NODES: [&str; 3] = ["a", "b", "c"];
const SYMS: usize = 8;

/// Run `ip` with `args`; panics when it fails.
fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("runs ip");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

/// A bridge in this namespace (the broker's host) and one namespace per node, each linked to
/// the bridge by a veth pair; all removed when dropped.
struct Net {
    tag: u32,
    subnet: u32,
    hosts: usize,
}

impl Net {
    /// The network, or `None` (test skipped) without root or `ip netns`.
    fn up(hosts: usize) -> Option<Net> {
        let required = std::env::var_os("ZEPTO_REQUIRE_NETNS").is_some();
        let root = Command::new("id").arg("-u").output().map(|o| o.stdout == b"0\n").unwrap_or(false);
        let iproute = Command::new("ip").args(["netns", "list"]).output().map(|o| o.status.success()).unwrap_or(false);
        if !root || !iproute {
            assert!(!required, "network namespaces need root and iproute2 (ip netns)");
            eprintln!("skipped: network namespaces need root and iproute2");
            return None;
        }
        let pid = std::process::id();
        let net = Net { tag: pid % 100_000, subnet: 100 + pid % 150, hosts };
        let bridge = net.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"]);
        ip(&["addr", "add", &format!("{}/24", net.gateway()), "dev", &bridge]);
        ip(&["link", "set", &bridge, "up"]);
        for i in 0..hosts {
            let (ns, outer, inner) = (net.ns(i), net.veth(i), format!("zp{}x{i}", net.tag));
            ip(&["netns", "add", &ns]);
            ip(&["link", "add", &outer, "type", "veth", "peer", "name", &inner]);
            ip(&["link", "set", &outer, "master", &bridge]);
            ip(&["link", "set", &outer, "up"]);
            ip(&["link", "set", &inner, "netns", &ns]);
            ip(&["-n", &ns, "addr", "add", &format!("{}/24", net.host(i)), "dev", &inner]);
            ip(&["-n", &ns, "link", "set", &inner, "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        Some(net)
    }

    fn bridge(&self) -> String {
        format!("zb{}", self.tag)
    }

    fn ns(&self, i: usize) -> String {
        format!("zn{}x{i}", self.tag)
    }

    /// The bridge's end of host `i`'s link.
    fn veth(&self, i: usize) -> String {
        format!("zv{}x{i}", self.tag)
    }

    fn gateway(&self) -> String {
        format!("10.77.{}.1", self.subnet)
    }

    fn host(&self, i: usize) -> String {
        format!("10.77.{}.{}", self.subnet, 11 + i)
    }

    /// Take host `i` off the network (`up = false`) or put it back.
    fn link(&self, i: usize, up: bool) {
        ip(&["link", "set", &self.veth(i), if up { "up" } else { "down" }]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for i in 0..self.hosts {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(i)]).output();
        }
        let _ = Command::new("ip").args(["link", "del", &self.bridge()]).output();
    }
}

/// The rows acknowledged so far, per symbol: (count, sum of ids).
#[derive(Clone, Copy, Default, PartialEq, Debug)]
struct Ledger([(i64, i64); SYMS]);

impl Ledger {
    fn add(&mut self, ids: std::ops::Range<usize>) {
        for id in ids {
            let e = &mut self.0[id % SYMS];
            e.0 += 1;
            e.1 += id as i64;
        }
    }

    fn total(&self) -> i64 {
        self.0.iter().map(|e| e.0).sum()
    }

    /// True when `self` (an answer) has every row of `before` and no row beyond `after`:
    /// nothing acknowledged before a fault is missing, nothing is counted twice.
    fn between(&self, before: &Ledger, after: &Ledger) -> bool {
        (0..SYMS).all(|s| before.0[s].0 <= self.0[s].0 && self.0[s].0 <= after.0[s].0)
    }
}

fn get_key(addr: &str, path: &str) -> common::Resp {
    request(addr, "GET", path, &[("Authorization", &format!("Bearer {KEY}"))], b"")
}

/// A node's answer, per symbol, or the error it gave.
fn ask(addr: &str) -> Result<Ledger, String> {
    let r = post_key(addr, "/", KEY, "SELECT sym, count(*), sum(id) FROM trades GROUP BY sym");
    if r.status != 200 {
        return Err(r.text());
    }
    let mut l = Ledger::default();
    for row in r.json()["data"].as_array().ok_or_else(|| r.text())? {
        let bad = || format!("an unexpected row {row}");
        let s: usize =
            row[0].as_str().and_then(|s| s.strip_prefix('S')).and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        l.0[s % SYMS] = (row[1].as_i64().ok_or_else(bad)?, row[2].as_i64().ok_or_else(bad)?);
    }
    Ok(l)
}

/// The cluster under test: the nodes (None while killed) and what was acknowledged.
struct Cluster<'a> {
    net: &'a Net,
    broker: &'a Broker,
    producer: BaseProducer,
    nodes: Vec<Option<Server>>,
    dirs: Vec<PathBuf>,
    /// Shared history, every node's: seals every second, rows older than a day as history.
    shared: PathBuf,
    acked: Ledger,
    next_id: usize,
}

impl Cluster<'_> {
    fn start(&mut self, i: usize) {
        let (host, dir) = (self.net.host(i), self.dirs[i].to_string_lossy().to_string());
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.net.ns(i), env!("CARGO_BIN_EXE_zeptodb"), "serve"])
            .args(["--http", &format!("{host}:8123"), "--flight", &format!("{host}:8124"), "--access-log", "off"])
            .args(["--data-dir", &dir, "--cluster", &self.broker.addr, "--cluster-topic", TOPIC])
            .args(["--node-id", NODES[i]])
            .args(["--shared-history", &self.shared.to_string_lossy(), "--seal-every", "1s", "--tier-after", "1d"])
            .env("ZEPTO_API_KEY", KEY)
            .env("ZEPTO_CLUSTER_KEY", KEY);
        self.nodes[i] = Some(Server::spawn(cmd));
    }

    fn addr(&self, i: usize) -> &str {
        &self.nodes[i].as_ref().expect("a running node").addr
    }

    /// 300 new rows through door `door` (0: Kafka's producer, 1: `/write` on node `via`,
    /// 2: `/api/v2/write` on node `via`), recorded once acknowledged.
    fn ingest(&mut self, door: usize, via: usize) {
        let ids = self.next_id..self.next_id + 300;
        self.next_id += 300;
        let lines = trade_lines(ids.clone());
        match door {
            0 => {
                for s in 0..SYMS {
                    let mine: Vec<&str> = lines.iter().skip(s).step_by(SYMS).map(String::as_str).collect();
                    let sym = format!("S{}", (ids.start + s) % SYMS);
                    send(&self.producer, TOPIC, &sym, mine.join("\n").as_bytes(), &[]);
                }
                flush(&self.producer);
            }
            1 | 2 => {
                let path = if door == 1 { "/write" } else { "/api/v2/write?precision=ns" };
                let r = post_key(self.addr(via), path, KEY, &lines.join("\n"));
                assert!(r.status == 200 || r.status == 204, "{path} on node {}: {}", NODES[via], r.text());
            }
            _ => unreachable!("three doors"),
        }
        self.acked.add(ids);
    }

    /// Wait until every running node in `live` answers exactly what was acknowledged; every
    /// answer meanwhile must lack nothing of `before` and count nothing twice. The time taken.
    fn wait_whole(&self, live: &[usize], before: &Ledger, what: &str) -> Duration {
        let t0 = Instant::now();
        let mut refused = 0;
        loop {
            let mut whole = true;
            for &i in live {
                match ask(self.addr(i)) {
                    Ok(l) => {
                        assert!(l.between(before, &self.acked), "{what}: node {} answered {l:?}", NODES[i]);
                        whole &= l == self.acked;
                    }
                    Err(e) => {
                        assert!(clear_error(&e), "{what}: node {}: an unclear error: {e}", NODES[i]);
                        refused += 1;
                        whole = false;
                    }
                }
            }
            if whole {
                let took = t0.elapsed();
                eprintln!(
                    "netns: {what}: whole answers after {:.1} s ({refused} refused meanwhile)",
                    took.as_secs_f64()
                );
                return took;
            }
            assert!(t0.elapsed() < Duration::from_secs(90), "{what}: no whole answers within 90 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Cluster<'_> {
    /// Wait until node `i` owns partitions again (Kafka's group gives a node that rejoined
    /// its share), so that the next fault hits a node with work.
    fn wait_owning(&self, i: usize) {
        let t0 = Instant::now();
        loop {
            let s = get_key(self.addr(i), "/cluster").json();
            let owned = s["partitions"].as_array().map_or(0, Vec::len);
            if owned > 0 {
                eprintln!(
                    "netns: {} owns {owned} partitions again after {:.1} s",
                    NODES[i],
                    t0.elapsed().as_secs_f64()
                );
                return;
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "node {} got no partitions back: {s}", NODES[i]);
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The errors a node may give while partitions move: they name what is missing.
fn clear_error(e: &str) -> bool {
    ["no owner", "replaying", "no known partitions", "no answer within", "node ", "TABLE_NOT_FOUND"]
        .iter()
        .any(|w| e.contains(w))
}

#[test]
fn every_acknowledged_row_once_through_a_kill_and_a_network_cut() {
    let Some(net) = Net::up(NODES.len()) else { return };
    let Some(broker) = Broker::start("netns", &net.gateway(), 4) else { return };
    let rounds: usize = std::env::var("ZEPTO_SOAK_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let dirs: Vec<PathBuf> =
        NODES.iter().map(|n| std::env::temp_dir().join(format!("zepto-netns-{n}-{}", std::process::id()))).collect();
    dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
    let shared = std::env::temp_dir().join(format!("zepto-netns-shared-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&shared);
    let producer = broker.producer();
    let mut c = Cluster {
        net: &net,
        broker: &broker,
        producer,
        nodes: vec![None, None, None],
        dirs,
        shared,
        acked: Ledger::default(),
        next_id: 0,
    };
    c.ingest(0, 0);
    (0..NODES.len()).for_each(|i| c.start(i));
    c.ingest(1, 0);
    c.ingest(2, 1);
    c.wait_whole(&[0, 1, 2], &Ledger::default(), "start");
    let mut slowest = Duration::ZERO;
    for round in 0..rounds {
        let (killed, cut) = (round % 3, (round + 1) % 3);
        let others = |x: usize| (0..3).filter(move |&i| i != x).collect::<Vec<_>>();
        // kill -9, with rows written meanwhile through a live node and Kafka.
        let before = c.acked;
        drop(c.nodes[killed].take());
        c.ingest(1, others(killed)[0]);
        c.ingest(0, 0);
        slowest =
            slowest.max(c.wait_whole(&others(killed), &before, &format!("round {round}: kill -9 {}", NODES[killed])));
        c.start(killed);
        c.wait_whole(&[0, 1, 2], &before, &format!("round {round}: {} restarted", NODES[killed]));
        // Cut off the network, then mended.
        let before = c.acked;
        net.link(cut, false);
        c.ingest(2, others(cut)[1]);
        slowest = slowest.max(c.wait_whole(&others(cut), &before, &format!("round {round}: {} cut off", NODES[cut])));
        net.link(cut, true);
        c.ingest(0, 0);
        c.wait_whole(&[0, 1, 2], &before, &format!("round {round}: {} back", NODES[cut]));
        c.wait_owning(cut);
    }
    eprintln!("netns: {rounds} rounds, slowest return to whole answers {:.1} s", slowest.as_secs_f64());
    let end = c.acked;
    c.wait_whole(&[0, 1, 2], &end, "the end");
    let want = Some(c.acked.total());
    for i in 0..NODES.len() {
        let q = "SELECT count(*), count(DISTINCT id) FROM trades";
        let mut row = serde_json::Value::Null;
        wait_for("an answer", 30, || {
            row = post_key(c.addr(i), "/", KEY, q).json()["data"][0].clone();
            !row.is_null()
        });
        assert_eq!((row[0].as_i64(), row[1].as_i64()), (want, want), "each row once, on node {}", NODES[i]);
    }
    c.nodes.clear();
    c.dirs.iter().for_each(|d| drop(std::fs::remove_dir_all(d)));
    let _ = std::fs::remove_dir_all(&c.shared);
}
