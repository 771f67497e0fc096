//! The HTTP side of the web console: its files (served without a key, gzipped, versioned,
//! under a Content-Security-Policy; `--console off` removes them), and kept results paged by
//! `POST /query?keep=1` and `GET /results/{id}`, read only by the key that made them. The
//! console itself, in a browser, is tested in python/tests/test_console.py.

use std::process::Command;

mod common;
use common::*;

/// Two reader keys (named `r1`, `r2`) in a keys file; the keys.
fn two_readers(dir: &std::path::Path) -> (std::path::PathBuf, Vec<String>) {
    std::fs::create_dir_all(dir).expect("dir");
    let (mut entries, mut keys) = (Vec::new(), Vec::new());
    for name in ["r1", "r2"] {
        let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
            .args(["keygen", "--name", name, "--role", "reader"])
            .output()
            .expect("keygen");
        assert!(out.status.success());
        entries.push(String::from_utf8(out.stdout).expect("utf8").trim().to_string());
        let err = String::from_utf8(out.stderr).expect("utf8");
        keys.push(err.rsplit(' ').next().expect("key").trim().to_string());
    }
    let file = dir.join("keys.json");
    std::fs::write(&file, format!("{{\"keys\": [{}]}}", entries.join(","))).expect("write keys");
    (file, keys)
}

fn auth(key: &str) -> String {
    format!("Bearer {key}")
}

#[test]
fn kept_results_page_like_the_whole_answer() {
    let dir = std::env::temp_dir().join(format!("zepto-console-{}", std::process::id()));
    let (file, keys) = two_readers(&dir);
    let s = Server::start(&["--demo", "--rows", "5000", "--keys-file", file.to_str().expect("path")]);
    let a = s.addr.as_str();
    let (k1, k2) = (auth(&keys[0]), auth(&keys[1]));
    let q = "SELECT ts, sym, price FROM trades ORDER BY ts, sym, price";
    let whole = request(a, "POST", "/query", &[("authorization", &k1)], q.as_bytes()).json();
    assert_eq!(whole["rows"], 5000);

    let first = request(a, "POST", "/query?keep=1&limit=700", &[("authorization", &k1)], q.as_bytes()).json();
    assert_eq!(first["columns"], whole["columns"]);
    assert_eq!((first["rows"].as_u64(), first["result"]["total_rows"].as_u64()), (Some(700), Some(5000)));
    let id = first["result"]["id"].as_str().expect("an id").to_string();
    // Every page, read in any order, equals the slice of the whole answer.
    let mut rows: Vec<serde_json::Value> = Vec::new();
    for offset in (0..5000).step_by(1200).rev() {
        let p = request(a, "GET", &format!("/results/{id}?offset={offset}&limit=1200"), &[("authorization", &k1)], b"");
        assert_eq!(p.status, 200, "{}", p.text());
        let p = p.json();
        assert_eq!(p["result"]["offset"], offset);
        let mut page = p["data"].as_array().expect("rows").clone();
        page.extend(rows);
        rows = page;
    }
    assert_eq!(serde_json::Value::Array(rows), whole["data"]);
    let past = request(a, "GET", &format!("/results/{id}?offset=9000"), &[("authorization", &k1)], b"").json();
    assert_eq!((past["rows"].as_u64(), past["result"]["offset"].as_u64()), (Some(0), Some(5000)));

    // Another key does not see it; bad parameters say what is wrong.
    let other = request(a, "GET", &format!("/results/{id}"), &[("authorization", &k2)], b"");
    assert_eq!((other.status, other.error_code().as_str()), (404, "RESULT_NOT_FOUND"));
    assert_eq!(request(a, "DELETE", &format!("/results/{id}"), &[("authorization", &k2)], b"").status, 404);
    assert_eq!(request(a, "GET", &format!("/results/{id}"), &[], b"").status, 401);
    for bad in ["?limit=0", "?limit=100001", "?offset=-1", "?limit=x"] {
        let r = request(a, "GET", &format!("/results/{id}{bad}"), &[("authorization", &k1)], b"");
        assert_eq!((r.status, r.error_code().as_str()), (400, "BAD_REQUEST"), "{bad}");
    }
    let csv = request(a, "POST", "/query?keep=1&format=csv", &[("authorization", &k1)], q.as_bytes());
    assert_eq!(csv.status, 400, "pages are JSON");
    // A status (no rows) is answered as ever, with nothing kept.
    let st = request(a, "POST", "/query?keep=1", &[("authorization", &k1)], b"SET allow_partial = on").json();
    assert!(st.get("result").is_none(), "{st}");

    // Freed by its key, then gone.
    assert_eq!(request(a, "DELETE", &format!("/results/{id}"), &[("authorization", &k1)], b"").status, 200);
    let gone = request(a, "GET", &format!("/results/{id}"), &[("authorization", &k1)], b"");
    assert_eq!((gone.status, gone.error_code().as_str()), (404, "RESULT_NOT_FOUND"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_result_over_the_kept_budget_answers_its_first_page_and_says_why() {
    let s = Server::start(&["--demo", "--rows", "200000", "--console-results-mb", "1"]);
    let a = s.addr.as_str();
    let r = post(a, "/query?keep=1&limit=10", "SELECT ts, price FROM trades").json();
    assert_eq!((r["rows"].as_u64(), r["result"]["total_rows"].as_u64()), (Some(10), Some(200_000)));
    assert!(r["result"]["id"].is_null());
    let why = r["result"]["not_kept"].as_str().expect("a reason");
    assert!(why.contains("--console-results-mb"), "{why}");
    // Results that fit push the oldest out, never past the budget.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = post(a, "/query?keep=1&limit=1", "SELECT ts, price FROM trades LIMIT 20000").json();
        ids.push(r["result"]["id"].as_str().expect("kept").to_string());
    }
    assert_eq!(get(a, &format!("/results/{}", ids[0])).status, 404, "the oldest went first");
    assert_eq!(get(a, &format!("/results/{}", ids[2])).status, 200);
    // A first page that holds the whole answer keeps nothing.
    let whole = post(a, "/query?keep=1&limit=10", "SELECT 1 AS x").json();
    assert!(whole["result"]["id"].is_null() && whole["result"].get("not_kept").is_none(), "{whole}");
}

#[test]
fn a_page_stops_at_its_byte_cap() {
    let s = Server::start(&[]);
    let a = s.addr.as_str();
    let big = "x".repeat(400 << 10);
    assert_eq!(post(a, "/query", "CREATE TABLE s (k VARCHAR)").status, 200);
    assert_eq!(post(a, "/query", &format!("INSERT INTO s VALUES ('{big}')")).status, 200);
    for _ in 0..6 {
        assert_eq!(post(a, "/query", "INSERT INTO s SELECT k FROM s").status, 200);
    }
    // 64 rows of 400 KiB: a page of 100 rows stops after 16 MiB, and says how many it holds.
    let r = post(a, "/query?keep=1&limit=100", "SELECT k FROM s").json();
    let first = r["rows"].as_u64().expect("rows") as usize;
    assert_eq!(
        (first, r["data"].as_array().map(Vec::len), r["result"]["total_rows"].as_u64()),
        (41, Some(41), Some(64))
    );
    let id = r["result"]["id"].as_str().expect("kept");
    let rest = get(a, &format!("/results/{id}?offset={first}&limit=100")).json();
    assert_eq!(rest["rows"].as_u64(), Some(23));
}

#[test]
fn console_files_are_public_compressed_versioned_and_can_be_turned_off() {
    let s = Server::start(&["--api-key", "console-test-key-0123"]);
    let a = s.addr.as_str();
    let page = request(a, "GET", "/console", &[("accept-encoding", "gzip")], b"");
    assert_eq!(page.status, 200, "no key is needed for the page: it holds no data");
    assert_eq!(page.header("content-encoding"), Some("gzip"));
    assert!(page.header("content-security-policy").is_some_and(|c| c.contains("script-src 'self'")));
    let plain = get(a, "/console/");
    assert!(plain.text().contains("<script src=\"/console/app.js\">"));
    assert!(page.body.len() < plain.body.len());
    let tag = plain.header("etag").expect("an ETag").to_string();
    assert_eq!(request(a, "GET", "/console", &[("if-none-match", &tag)], b"").status, 304);
    for f in ["app.js", "app.css", "vendor.js", "vendor.css", "VENDOR-LICENSES.txt"] {
        assert_eq!(get(a, &format!("/console/{f}")).status, 200, "{f}");
    }
    assert_eq!(get(a, "/console/nope.js").status, 404);
    assert_eq!(post(a, "/console", "").status, 404);
    assert_eq!(get(a, "/tables").status, 401, "data still needs the key");
    drop(s);

    let off = Server::start(&["--console", "off"]);
    assert_eq!(get(&off.addr, "/console").status, 404);
}
