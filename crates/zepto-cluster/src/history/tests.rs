//! Seal on one node, take over on another: the same answers, from shared storage.

use super::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use zepto_durable::{DataDir, DirOptions};
use zepto_sql::Engine;

const COUNT: i32 = 4;
const DAY: i64 = 86_400_000_000_000;

struct Node {
    engine: Engine,
    _dir: DataDir,
}

fn node(dir: &Path, store: &SharedStore) -> Node {
    let engine = Engine::new();
    let opts = DirOptions { shared: Some(store.clone()), ..DirOptions::default() };
    let log: zepto_durable::dir::Log = Arc::new(|_: &str| {});
    let d = DataDir::open(engine.catalog(), dir, &opts, log).expect("data dir");
    Node { engine, _dir: d }
}

/// Held by each test here that opens data directories or starts a process. A data directory's
/// lock is a `flock` on an open file: a process started by another test of this binary while a
/// node's directory is open holds a copy of that file until it execs, so a node reopened in
/// that moment found its own directory "in use" (seen once in CI).
static DIRS_AND_PROCESSES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    DIRS_AND_PROCESSES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zepto-shared-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Rows of 30 symbols over two old days and today, out of order, some NULL keys, and a table
/// without key or timestamp.
fn load(e: &Engine, now: i64) {
    e.execute("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, px DOUBLE, qty BIGINT)").expect("trades");
    e.execute("CREATE TABLE notes (msg VARCHAR, n BIGINT)").expect("notes");
    let mut rows = Vec::new();
    let mut x: u64 = 7;
    for i in 0..3000i64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let day = [now - 3 * DAY, now - 2 * DAY, now][(x >> 60) as usize % 3];
        let ts = day + ((x >> 20) % 1_000_000) as i64 * 1000;
        let sym = if i % 97 == 0 { "NULL".to_string() } else { format!("'S{}'", (x >> 33) % 30) };
        rows.push(format!("({ts}, {sym}, {}.25, {i})", (x >> 40) % 500));
    }
    e.execute(&format!("INSERT INTO trades VALUES {}", rows.join(","))).expect("rows");
    e.execute("INSERT INTO notes VALUES ('a', 1), ('b', 2), (NULL, 3)").expect("notes");
}

fn answer(e: &Engine, sql: &str) -> String {
    let r = e.execute(sql).unwrap_or_else(|err| panic!("{sql}: {err}"));
    format!(
        "{:?}",
        r.batch().columns.iter().map(|c| (0..c.len()).map(|i| c.get(i)).collect::<Vec<_>>()).collect::<Vec<_>>()
    )
}

const QUERIES: [&str; 3] = [
    "SELECT sym, count(*), sum(px), sum(qty), min(ts), max(ts), first(qty), last(qty) FROM trades GROUP BY sym ORDER BY sym",
    "SELECT count(*), sum(qty) FROM trades WHERE ts < now() - INTERVAL '1' DAY",
    "SELECT msg, n FROM notes ORDER BY n",
];

fn answers(e: &Engine) -> Vec<String> {
    QUERIES.iter().map(|q| answer(e, q)).collect()
}

/// An in-memory S3-compatible server (`make s3` builds it), killed when dropped.
struct FakeS3 {
    child: std::process::Child,
    addr: String,
}

impl Drop for FakeS3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The S3 server, or `None` (the test skipped) when it was not built, except under `make test`
/// (`ZEPTO_REQUIRE_S3=1`), where that is a failure.
fn fake_s3() -> Option<FakeS3> {
    use std::io::BufRead;
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/s3/fakes3");
    if !bin.exists() {
        assert!(std::env::var_os("ZEPTO_REQUIRE_S3").is_none(), "no S3 server: make s3 (needs Go)");
        eprintln!("skipped: no target/s3/fakes3 (make s3)");
        return None;
    }
    let mut child = std::process::Command::new(bin)
        .arg("127.0.0.1:0")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("fakes3 runs");
    let mut line = String::new();
    let out = child.stdout.take().expect("its output");
    std::io::BufReader::new(out).read_line(&mut line).expect("it says where it listens");
    let addr = line.trim().strip_prefix("listening on ").expect("an address").to_string();
    Some(FakeS3 { child, addr })
}

#[test]
fn a_partition_sealed_on_one_node_is_taken_over_by_another_whole() {
    let _alone = one_at_a_time();
    let root = scratch("takeover");
    let store = SharedStore::open(root.join("shared").to_str().expect("utf-8")).expect("store");
    round_trip(&root, store);
}

#[test]
fn a_partition_sealed_to_s3_is_taken_over_whole() {
    let _alone = one_at_a_time();
    let Some(s3) = fake_s3() else { return };
    let endpoint = format!("http://{}", s3.addr);
    let options = [
        ("aws_endpoint", endpoint.as_str()),
        ("aws_allow_http", "true"),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
    ];
    let store = SharedStore::open_with("s3://zepto/cluster", &options).expect("store");
    store.put("probe", b"x".to_vec()).expect("a bucket made on first use");
    round_trip(&scratch("takeover-s3"), store);
}

/// Seal every partition on one node, take them over on a second (with stale rows of its own),
/// restart it, seal again there, take over on a third: the same answers each time.
fn round_trip(root: &Path, store: SharedStore) {
    let sh = SharedHistory::new(store.clone(), std::time::Duration::from_secs(1), Some(DAY)).expect("settings");
    let now = zepto_storage::time::now_ns();
    let a = node(&root.join("a"), &store);
    load(&a.engine, now);
    let want = answers(&a.engine);
    for p in 0..COUNT {
        let m = seal(&a.engine, &sh, "tp", "a", p, COUNT, 100 + i64::from(p), now).expect("sealed");
        assert_eq!(m.offset, 100 + i64::from(p));
    }
    let t = a.engine.catalog().snapshot("trades").expect("trades");
    assert!(!t.history().files.is_empty(), "old days moved to shared history");
    assert!(t.history().files.iter().all(|f| f.shared_path().is_some()));
    assert!(t.row_count() < 3000, "and left memory");
    assert_eq!(answers(&a.engine), want, "the owner answers the same from shared history");

    // A node holding stale rows of the same keys takes every partition over.
    let b = node(&root.join("b"), &store);
    b.engine.execute("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, px DOUBLE, qty BIGINT)").expect("stale");
    b.engine.execute("INSERT INTO trades VALUES (1, 'S1', 1.0, -1), (2, NULL, 2.0, -2)").expect("stale rows");
    for p in 0..COUNT {
        let at = take_over(&b.engine, &sh, "tp", p, COUNT, Some(3), now).expect("taken over");
        assert_eq!(at, Some(100 + i64::from(p)));
        let again = take_over(&b.engine, &sh, "tp", p, COUNT, at, now).expect("nothing newer");
        assert_eq!(again, at, "a node at the manifest keeps its own rows");
    }
    assert_eq!(answers(&b.engine), want, "the new owner answers exactly what the old one did");
    let applied = crate::offsets::applied(&b.engine, "tp").expect("offsets");
    assert_eq!(applied.len(), COUNT as usize);

    // Its changes are logged: a restart answers the same.
    drop(b);
    let b = node(&root.join("b"), &store);
    assert_eq!(answers(&b.engine), want, "after a restart");

    // The new owner goes on: more rows (old and new), sealed again; a third node takes over.
    b.engine
        .execute(&format!("INSERT INTO trades VALUES ({}, 'S3', 9.5, 1), ({now}, 'S4', 1.5, 2)", now - 3 * DAY))
        .expect("more");
    let want = answers(&b.engine);
    for round in 0..4 {
        for p in 0..COUNT {
            seal(&b.engine, &sh, "tp", "b", p, COUNT, 200 + round + i64::from(p), now).expect("sealed again");
        }
    }
    let manifests = store.list("tp/p0000/manifest").expect("listed");
    assert_eq!(manifests.len(), manifest::KEEP, "older manifests are dropped: {manifests:?}");
    let c = node(&root.join("c"), &store);
    for p in 0..COUNT {
        take_over(&c.engine, &sh, "tp", p, COUNT, None, now).expect("taken over");
    }
    assert_eq!(answers(&c.engine), want, "a third node answers what the second did");
    assert_eq!(answers(&b.engine), want);
    drop((a, b, c));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_manifest_of_another_partition_count_is_refused() {
    let _alone = one_at_a_time();
    let root = scratch("count");
    let store = SharedStore::open(root.join("shared").to_str().expect("utf-8")).expect("store");
    let sh = SharedHistory::new(store, std::time::Duration::from_secs(1), None).expect("settings");
    let a = node(&root.join("a"), sh.store());
    let now = zepto_storage::time::now_ns();
    load(&a.engine, now);
    seal(&a.engine, &sh, "tp", "a", 0, COUNT, 5, now).expect("sealed");
    let b = node(&root.join("b"), sh.store());
    let e = take_over(&b.engine, &sh, "tp", 0, COUNT + 1, None, now).expect_err("refused");
    assert!(e.to_string().contains("partitions"), "{e}");
    drop((a, b));
    let _ = std::fs::remove_dir_all(&root);
}
