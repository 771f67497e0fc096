//! `zeptodb backup` of a serving database while a writer keeps appending, and `zeptodb
//! restore` of it: the restored server answers exactly the rows acknowledged before the backup
//! cut them (every batch is all or nothing, so the count is a whole number of batches between
//! what was acknowledged before the backup started and what was after it ended). A backup
//! is an admin's, refused for an in-memory server, and kept out of the data directory.

mod common;

use common::{fresh_dir, post_key, Server};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

const ADMIN: &str = "admin-key-0123456789abcdef";
const BATCH: usize = 500;

fn zeptodb(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(args)
        .env("ZEPTO_API_KEY", ADMIN)
        .output()
        .expect("run zeptodb");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn count(addr: &str) -> usize {
    let r = post_key(addr, "/", ADMIN, "SELECT count(*) FROM t");
    r.json()["data"][0][0].as_u64().expect("a count") as usize
}

#[test]
fn a_backup_taken_during_ingest_restores_what_was_acknowledged_at_its_cut() {
    let work = fresh_dir("backup-cli");
    let (data, dest, restored) = (work.join("data"), work.join("backup"), work.join("restored"));
    let s = Server::start(&["--data-dir", data.to_str().expect("path"), "--api-key", ADMIN]);
    post_key(&s.addr, "/", ADMIN, "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, v BIGINT)");
    let (acked, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let writer = {
        let (addr, acked, stop) = (s.addr.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let rows: Vec<String> =
                    (0..BATCH).map(|i| format!("('2024-01-02 09:30:00', 'S{}', {})", i % 7, n * BATCH + i)).collect();
                let r = post_key(&addr, "/", ADMIN, &format!("INSERT INTO t VALUES {}", rows.join(", ")));
                assert_eq!(r.status, 200, "{}", r.text());
                n += 1;
                acked.store(n * BATCH, Ordering::SeqCst);
            }
        })
    };
    while acked.load(Ordering::SeqCst) < 20 * BATCH {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let before = acked.load(Ordering::SeqCst);
    let url = format!("http://{}", s.addr);
    let (ok, said) = zeptodb(&["backup", dest.to_str().expect("path"), "--url", &url]);
    let after = acked.load(Ordering::SeqCst) + BATCH;
    assert!(ok && said.contains("backup to") && said.contains("LSN"), "{said}");
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer");
    let total = count(&s.addr);
    s.stop();

    let (ok, said) =
        zeptodb(&["restore", dest.to_str().expect("path"), "--data-dir", restored.to_str().expect("path")]);
    assert!(ok, "{said}");
    let r = Server::start(&["--data-dir", restored.to_str().expect("path"), "--api-key", ADMIN]);
    let got = count(&r.addr);
    assert!(
        got.is_multiple_of(BATCH) && got >= before && got <= after.min(total),
        "{before} <= {got} <= {after}, total {total}"
    );
    // Every row it holds is one the original acknowledged, each once.
    let q = post_key(&r.addr, "/", ADMIN, "SELECT count(DISTINCT v), min(v), max(v) FROM t");
    assert_eq!(q.json()["data"][0], serde_json::json!([got, 0, got - 1]), "{}", q.text());
    // A restore never lands in a directory in use, and a backup never in the data directory.
    let (ok, said) =
        zeptodb(&["restore", dest.to_str().expect("path"), "--data-dir", restored.to_str().expect("path")]);
    assert!(!ok && said.contains("not empty"), "{said}");
    let inside = restored.join("copy");
    let (ok, said) = zeptodb(&["backup", inside.to_str().expect("path"), "--url", &format!("http://{}", r.addr)]);
    assert!(!ok && said.contains("data directory"), "{said}");
    r.stop();
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn backups_need_an_admin_and_a_durable_database() {
    let s = Server::start(&["--api-key", ADMIN]);
    let r = post_key(&s.addr, "/", ADMIN, "BACKUP TO '/tmp/zepto-never'");
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(r.text().contains("in memory only"), "{}", r.text());
    s.stop();
}

#[test]
fn a_backup_to_an_object_store_restores_what_it_cut() {
    let Some(s3) = common::s3::FakeS3::start() else { return };
    let env = s3.env();
    let work = fresh_dir("backup-s3");
    let (data, restored) = (work.join("data"), work.join("restored"));
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let s = Server::start_env(&["--data-dir", data.to_str().expect("path"), "--api-key", ADMIN], &env_ref);
    post_key(&s.addr, "/", ADMIN, "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, v BIGINT)");
    post_key(&s.addr, "/", ADMIN, "CREATE TABLE reference (k BIGINT, name VARCHAR)");
    let r = post_key(&s.addr, "/", ADMIN, "INSERT INTO reference VALUES (1, 'one'), (2, 'two')");
    assert_eq!(r.status, 200, "{}", r.text());
    let insert = |from: usize| {
        let rows: Vec<String> =
            (from..from + BATCH).map(|i| format!("('2024-01-02 09:30:00', 'S{}', {i})", i % 5)).collect();
        let r = post_key(&s.addr, "/", ADMIN, &format!("INSERT INTO t VALUES {}", rows.join(", ")));
        assert_eq!(r.status, 200, "{}", r.text());
    };
    insert(0);
    let r = post_key(&s.addr, "/", ADMIN, "BACKUP TO 's3://zepto/backups/one'");
    assert_eq!(r.status, 200, "{}", r.text());
    insert(BATCH);
    let r = post_key(&s.addr, "/", ADMIN, "BACKUP TO 's3://zepto/backups/one'");
    assert_eq!(r.status, 200, "the second backup replaces the first: {}", r.text());
    assert!(r.text().contains("2 tables (1 unchanged, kept)"), "incremental: {}", r.text());
    insert(2 * BATCH);
    s.stop();
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["restore", "s3://zepto/backups/one", "--data-dir", restored.to_str().expect("path")])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .output()
        .expect("restore");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = Server::start(&["--data-dir", restored.to_str().expect("path"), "--api-key", ADMIN]);
    assert_eq!(count(&r.addr), 2 * BATCH, "what the second backup cut, not the rows after it");
    let kept = post_key(&r.addr, "/", ADMIN, "SELECT name FROM reference ORDER BY k");
    assert_eq!(kept.json()["data"], serde_json::json!([["one"], ["two"]]), "the kept table's file restores");
    r.stop();
    let _ = std::fs::remove_dir_all(&work);
}

/// A file larger than a part goes to an object store as a multipart upload (a table file of
/// several GB could not go in one PUT, nor be read into memory whole), and reads back whole.
#[test]
fn a_large_file_goes_to_an_object_store_in_parts() {
    let Some(s3) = common::s3::FakeS3::start() else { return };
    let env = s3.env();
    let options: Vec<(&str, &str)> = vec![
        ("aws_endpoint", env[0].1.as_str()),
        ("aws_allow_http", "true"),
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
    ];
    let store = zepto_history::SharedStore::open_with("s3://zepto/parts", &options).expect("the store");
    let work = fresh_dir("backup-parts");
    let file = work.join("big.bin");
    // Two whole parts and a short last one.
    let len = 2 * zepto_history::shared::PART_BYTES + 12_345;
    let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    std::fs::write(&file, &bytes).expect("written");
    store.put_file("checkpoint/big.bin", &file).expect("uploaded in parts");
    let back = store.get("checkpoint/big.bin").expect("read").expect("there");
    assert!(back == bytes, "{} bytes back of {}", back.len(), bytes.len());
    let copy = work.join("copy.bin");
    assert!(store.get_file("checkpoint/big.bin", &copy).expect("downloaded"), "there");
    assert!(std::fs::read(&copy).expect("read") == bytes, "downloaded whole");
    assert!(store.put_file("checkpoint/none.bin", &work.join("missing")).is_err());
    assert_eq!(store.list("checkpoint").expect("listed"), vec!["checkpoint/big.bin"]);
    let _ = std::fs::remove_dir_all(&work);
}
