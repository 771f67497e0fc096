//! The FIX door from the socket to queryable (issue "A FIX door": its benchmark): an acceptor
//! on loopback storing into a catalog, a client sending MarketDataIncrementalRefresh messages
//! of 1, 10 and 100 entries. By default the catalog is in memory (parse, map and store, no
//! write-ahead log); with `--wal DIR` it is durable in a fresh directory under `DIR`, logged
//! with `--sync` (`always`, the server's default: fsync before a batch counts as stored;
//! `interval=<ms>`; `none`).
//!
//! - Throughput: `--messages` messages written as fast as the socket takes them, timed until
//!   the last row is queryable (the catalog holds it).
//! - Latency: `--samples` messages one at a time, each timed from the start of its `write` to
//!   its row being queryable (the client looks at the catalog about every microsecond); p50, p99 and the worst.
//!
//! - `--busy-poll`: the session runs on a thread of its own, spinning on its socket
//!   (`zeptodb serve --fix-busy-poll`).
//! - `--cpu-affinity PLAN` (as `zeptodb serve`'s, e.g. `fix=1`): the busy-polling reader on a
//!   core of its own; `--client-core N`: this client (which spins reading the catalog) on core
//!   `N`.
//!
//! `cargo run --release -p zepto-fix --example socket_bench [-- --messages 1000000 --samples 20000
//! --wal /tmp/fixbench --sync always --busy-poll]`

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zepto_fix::encode::Value;
use zepto_fix::server::FixDoor;
use zepto_fix::session::SessionConfig;
use zepto_fix::Encoder;
use zepto_storage::Catalog;

const NOW: i64 = 1_704_187_800_000_000_000;

/// Message `seq`, of `entries` bids and offers.
fn message(e: &mut Encoder, out: &mut Vec<u8>, seq: u64, entries: usize) {
    let n = entries.to_string();
    let mut f: Vec<(u32, Value<'_>)> = vec![(262, Value::Bytes(b"R1")), (268, Value::Bytes(n.as_bytes()))];
    for i in 0..entries {
        f.extend([
            (279, Value::Bytes(b"0")),
            (269, Value::Bytes(if i % 2 == 0 { b"0" } else { b"1" })),
            (55, Value::Bytes(b"EURUSD")),
            (270, Value::Bytes(b"1.08415")),
            (271, Value::Bytes(b"1000000")),
        ]);
    }
    e.message(out, "X", seq, NOW, false, &f);
}

/// About a microsecond between two looks at the catalog: a reader taking the table's lock
/// ten million times a second would hold back the writer it is waiting for.
fn pause() {
    for _ in 0..32 {
        std::hint::spin_loop();
    }
}

/// The rows queryable now; 0 while the writer holds the table (the probe must not sleep on
/// the lock: being woken would be timed, not the write).
fn rows(c: &Catalog) -> usize {
    c.try_snapshot("quotes").map_or(0, |t| t.row_count())
}

/// Where the catalog is kept: `--wal DIR` and `--sync MODE`, if given.
fn durable(catalog: &Arc<Catalog>, run: &str) -> Option<zepto_durable::DataDir> {
    let dir = std::path::PathBuf::from(value("--wal")?).join(run);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the WAL directory");
    let opts = zepto_durable::DirOptions { sync: value("--sync"), ..Default::default() };
    Some(zepto_durable::DataDir::open(catalog, &dir, &opts, Arc::new(|m: &str| eprintln!("{m}"))).expect("durable"))
}

/// A logged-on client of a fresh acceptor (its own catalog, durable in `run` under `--wal`),
/// and the next sequence number.
fn session(run: &str) -> (FixDoor, Arc<Catalog>, TcpStream, Encoder, Option<zepto_durable::DataDir>) {
    let catalog = Arc::new(Catalog::new());
    let dir = durable(&catalog, run);
    let busy_poll = std::env::args().any(|a| a == "--busy-poll");
    let cfg = SessionConfig { heartbeat_secs: 300, busy_poll, ..SessionConfig::default() };
    let a = FixDoor::start(Some("127.0.0.1:0"), None, catalog.clone(), cfg).expect("an acceptor");
    let mut s = TcpStream::connect(a.addr().expect("it listens")).expect("connects");
    s.set_nodelay(true).expect("nodelay");
    let mut e = Encoder::new("FIX.4.4", "FEED", "ZEPTO");
    let mut out = Vec::new();
    e.logon(&mut out, 1, NOW, 300, true);
    s.write_all(&out).expect("logon sent");
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf).expect("logon answered");
    assert!(n > 0 && buf[..n].windows(5).any(|w| w == b"35=A\x01"), "no Logon back");
    (a, catalog, s, e, dir)
}

fn throughput(entries: usize, messages: usize) -> f64 {
    let (a, catalog, mut s, mut e, _dir) = session(&format!("throughput-{entries}"));
    let mut out = Vec::with_capacity(messages * (60 + 40 * entries));
    for seq in 0..messages as u64 {
        message(&mut e, &mut out, seq + 2, entries);
    }
    let want = messages * entries;
    let t = Instant::now();
    s.write_all(&out).expect("sent");
    while rows(&catalog) < want {
        std::hint::spin_loop();
    }
    let secs = t.elapsed().as_secs_f64();
    drop(s);
    a.stop();
    messages as f64 / secs
}

fn latency(entries: usize, samples: usize) -> Vec<Duration> {
    let (a, catalog, mut s, mut e, _dir) = session(&format!("latency-{entries}"));
    let mut took = Vec::with_capacity(samples);
    let mut out = Vec::new();
    for seq in 0..samples as u64 {
        out.clear();
        message(&mut e, &mut out, seq + 2, entries);
        let want = (seq as usize + 1) * entries;
        let t = Instant::now();
        s.write_all(&out).expect("sent");
        while rows(&catalog) < want {
            pause();
        }
        took.push(t.elapsed());
    }
    drop(s);
    a.stop();
    took.sort();
    took
}

/// The command-line value after `name`, if given.
fn value(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned()
}

fn arg(name: &str, default: usize) -> usize {
    value(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// `--cpu-affinity PLAN` installed for the door's threads, and this thread pinned to
/// `--client-core N`, when given.
fn pin() {
    use zepto_storage::affinity::{self, CpuSet, Plan};
    if let Some(core) = value("--client-core") {
        // This thread only: the door's threads start later, from threads of their own.
        affinity::pin_thread(&CpuSet::parse(&core).expect("--client-core")).expect("the client pinned");
    }
    let plan = Plan::for_this_host(&value("--cpu-affinity").unwrap_or_default()).expect("--cpu-affinity");
    eprintln!("cpu affinity: {plan}");
    affinity::install(plan).expect("the plan");
}

fn main() {
    pin();
    let (messages, samples) = (arg("--messages", 1_000_000), arg("--samples", 20_000));
    for entries in [1, 10, 100] {
        let n = (messages / entries).max(1000);
        let rate = throughput(entries, n);
        let l = latency(entries, (samples / entries.min(10)).max(100));
        let at = |q: f64| l[((l.len() as f64 * q) as usize).min(l.len() - 1)].as_secs_f64() * 1e6;
        println!(
            "{entries:>3} entries/msg: {rate:>10.0} msg/s ({:>6.0} ns/msg, {n} msgs) socket to queryable; latency p50 {:.1} us, p99 {:.1} us, max {:.1} us ({} samples)",
            1e9 / rate,
            at(0.5),
            at(0.99),
            at(1.0),
            l.len()
        );
    }
}
