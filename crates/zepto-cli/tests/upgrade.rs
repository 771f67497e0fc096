//! Upgrades: today's build starts on a data directory the first on-disk format wrote
//! (`tests/data/format1`: a format 1 checkpoint with a materialized view, and log records
//! after it) and answers exactly what that build answered; its next checkpoint is written in
//! today's format and reads back after a restart.

mod common;

use common::{fresh_dir, post, Server};
use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("dir");
    for e in std::fs::read_dir(from).expect("fixture") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

fn csv(addr: &str, q: &str) -> String {
    let r = post(addr, "/?format=csv", q);
    assert_eq!(r.status, 200, "{q}: {}", r.text());
    r.text()
}

const QUERIES: [(&str, &str); 3] = [
    ("trades", "SELECT * FROM trades ORDER BY ts"),
    ("notes", "SELECT * FROM notes ORDER BY id"),
    ("bars", "SELECT * FROM bars ORDER BY sym"),
];

fn manifests(data: &Path) -> Vec<String> {
    let mut m: Vec<String> = std::fs::read_dir(data.join("checkpoint"))
        .expect("checkpoint dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "manifest"))
        .map(|p| std::fs::read_to_string(p).expect("manifest"))
        .collect();
    m.sort();
    m
}

#[test]
fn a_data_directory_of_the_first_format_reads_and_moves_to_the_current_one() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format1");
    let data = fresh_dir("upgrade").join("data");
    copy_dir(&fixture.join("data"), &data);
    std::fs::create_dir_all(data.join("history")).expect("history dir");
    assert!(manifests(&data).iter().all(|m| m.starts_with("zeptodb-checkpoint 1\n")));
    let s = Server::start(&["--data-dir", data.to_str().expect("path")]);
    for (name, q) in QUERIES {
        let want = std::fs::read_to_string(fixture.join("expect").join(format!("{name}.csv"))).expect("expected");
        assert_eq!(csv(&s.addr, q), want, "{name}");
    }
    // Written on in today's format: a change, a checkpoint, a restart.
    let r = post(&s.addr, "/", "INSERT INTO notes VALUES (4, 'after the upgrade')");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(&s.addr, "/", "CHECKPOINT");
    assert_eq!(r.status, 200, "{}", r.text());
    let before: Vec<String> = QUERIES.iter().map(|(_, q)| csv(&s.addr, q)).collect();
    assert!(s.stop().success());
    let now = manifests(&data);
    assert_eq!(now.len(), 1, "one checkpoint is kept");
    assert!(now[0].starts_with("zeptodb-checkpoint 2\n"), "{}", now[0]);
    let s = Server::start(&["--data-dir", data.to_str().expect("path")]);
    let after: Vec<String> = QUERIES.iter().map(|(_, q)| csv(&s.addr, q)).collect();
    assert_eq!(after, before);
    assert!(after[1].contains("after the upgrade"));
    assert!(s.stop().success());
}
