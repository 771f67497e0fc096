//! Hostile and unlucky input against the real server: each case once crashed it, destroyed its
//! data or answered 500. The server must stay up, refuse with a clear 4xx that names the limit
//! or the file, and keep every acknowledged row.

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zepto-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("reads dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn copy_never_touches_the_data_directory() {
    let d = tmp_dir("copy-data-dir");
    let data = d.join("data");
    let data_s = data.to_str().expect("utf8").to_string();
    let s = Server::start(&["--data-dir", &data_s]);
    let a = s.addr.as_str();
    sql(a, "CREATE TABLE t (ts TIMESTAMP, v BIGINT)");
    sql(a, "INSERT INTO t VALUES ('2024-01-01', 1), ('2024-01-02', 2)");
    sql(a, "CHECKPOINT");
    sql(a, "INSERT INTO t VALUES ('2024-01-03', 3)");
    let before: Vec<(PathBuf, Vec<u8>)> =
        files_under(&data).into_iter().map(|p| (p.clone(), std::fs::read(&p).expect("reads"))).collect();
    assert!(before.iter().any(|(p, _)| p.starts_with(data.join("wal"))), "a WAL segment exists");
    for (p, _) in &before {
        for ext in ["csv", "parquet"] {
            let q = format!("COPY (SELECT * FROM t) TO '{}' (FORMAT {ext})", p.display());
            let r = post(a, "/", &q);
            assert_eq!((r.status, r.error_code().as_str()), (403, "FILE_ACCESS_DENIED"), "{q}: {}", r.text());
            assert!(r.text().contains("data directory"), "{}", r.text());
        }
        let r = post(a, "/", &format!("COPY t FROM '{}' (FORMAT csv)", p.display()));
        assert_eq!(r.status, 403, "{}", r.text());
    }
    // A new name inside the data directory, or a path that walks into it, is refused too.
    for q in [
        format!("COPY (SELECT 1) TO '{data_s}/wal/new.csv'"),
        format!("COPY (SELECT 1) TO '{}/../data/checkpoint/x.parquet'", data_s),
    ] {
        assert_eq!(post(a, "/", &q).status, 403, "{q}");
    }
    for (p, bytes) in &before {
        assert_eq!(&std::fs::read(p).expect("still there"), bytes, "{} unchanged", p.display());
    }
    // COPY outside the data directory still works.
    let out = d.join("out.csv");
    sql(a, &format!("COPY (SELECT * FROM t) TO '{}'", out.display()));
    assert!(std::fs::read_to_string(&out).expect("written").lines().count() == 4);
    drop(s);
    let s = Server::start(&["--data-dir", &data_s]);
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 3, "recovers every row");
}

#[test]
fn copy_files_are_checked_and_errors_are_4xx() {
    let d = tmp_dir("copy-files");
    let root = d.join("root");
    std::fs::create_dir_all(&root).expect("root");
    let s = Server::start(&["--copy-root", root.to_str().expect("utf8"), "--query-memory-mb", "1"]);
    let a = s.addr.as_str();
    sql(a, "CREATE TABLE t (v BIGINT, s VARCHAR)");
    let cases = [
        // A device would be read until memory runs out.
        ("COPY t FROM '/dev/zero' (FORMAT csv)".to_string(), 403, "FILE_ACCESS_DENIED", "outside the COPY root"),
        (format!("COPY t FROM '{}/missing.csv'", root.display()), 404, "FILE_NOT_FOUND", "missing.csv"),
        (format!("COPY (SELECT 1) TO '{}/x.csv'", d.display()), 403, "FILE_ACCESS_DENIED", "outside the COPY root"),
        (format!("COPY (SELECT 1) TO '{}/no/such/dir/x.csv'", root.display()), 404, "FILE_NOT_FOUND", "x.csv"),
    ];
    for (q, status, code, says) in cases {
        let r = post(a, "/", &q);
        assert_eq!((r.status, r.error_code().as_str()), (status, code), "{q}: {}", r.text());
        assert!(r.text().contains(says), "{q}: {}", r.text());
    }
    std::fs::write(root.join("bad.csv"), "v,s\n1,a\nnot-a-number,b\n").expect("file");
    std::fs::write(root.join("bad.parquet"), "this is not parquet").expect("file");
    std::fs::write(root.join("big.csv"), "v,s\n".to_string() + &"1,abcdefgh\n".repeat(300_000)).expect("file");
    for (name, status, code) in
        [("bad.csv", 400, "BAD_FILE"), ("bad.parquet", 400, "BAD_FILE"), ("big.csv", 429, "RESOURCES_EXHAUSTED")]
    {
        let r = post(a, "/", &format!("COPY t FROM '{}'", root.join(name).display()));
        assert_eq!((r.status, r.error_code().as_str()), (status, code), "{name}: {}", r.text());
    }
    assert_eq!(sql(a, "SELECT count(*) FROM t")["data"][0][0], 0, "nothing applied");
    std::fs::write(root.join("good.csv"), "v,s\n1,a\n2,b\n").expect("file");
    sql(a, &format!("COPY t FROM '{}'", root.join("good.csv").display()));
    assert_eq!(sql(a, "SELECT count(*) FROM t")["data"][0][0], 2);
}

#[test]
fn deep_and_large_requests_are_refused_not_fatal() {
    let s = Server::start(&["--max-query-mb", "1", "--max-statements", "100"]);
    let a = s.addr.as_str();
    sql(a, "CREATE TABLE t (a BIGINT)");
    sql(a, "INSERT INTO t VALUES (1), (2)");
    let chain = |op: &str, term: &str, n: usize| vec![term; n].join(op);
    // 1,000 terms run (ClickHouse and DuckDB accept the same); deeper is refused by name.
    let r = post(a, "/", &format!("SELECT count(*) FROM t WHERE {}", chain(" AND ", "a = 1", 500)));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"][0][0], 1);
    for q in [
        format!("SELECT count(*) FROM t WHERE {}", chain(" AND ", "a = 1", 1_000)),
        format!("SELECT {} FROM t", chain("+", "1", 100_000)),
        format!("SELECT {}1", "(".repeat(5_000)),
    ] {
        let r = post(a, "/", &q);
        assert_eq!((r.status, r.error_code().as_str()), (400, "LIMIT_EXCEEDED"), "{}", r.text());
    }
    // More statements than allowed, and more SQL than allowed (declared, or sent chunked).
    let r = post(a, "/", &"SELECT 1;".repeat(101));
    assert_eq!((r.status, r.error_code().as_str()), (400, "LIMIT_EXCEEDED"), "{}", r.text());
    assert!(r.text().contains("--max-statements"), "{}", r.text());
    assert_eq!(post(a, "/", &"SELECT 1;".repeat(100)).status, 200);
    let big = format!("SELECT 1 WHERE 1 IN ({})", vec!["1"; 600_000].join(","));
    let r = post(a, "/", &big);
    assert_eq!((r.status, r.error_code().as_str()), (413, "QUERY_TOO_LARGE"), "{}", r.text());
    assert!(r.text().contains("--max-query-mb"), "{}", r.text());
    let r = raw(a, format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", 50 << 20).as_bytes());
    assert_eq!((r.status, r.error_code().as_str()), (413, "QUERY_TOO_LARGE"), "{}", r.text());
    // Still up, still right.
    assert_eq!(sql(a, "SELECT sum(a) FROM t")["data"][0][0], 3);
}

/// One byte flipped in the last, complete, fsynced WAL record: that batch was acknowledged, so
/// recovery must call it corruption (never "a torn write"), keep the damaged log aside, say
/// what it dropped (log, /health, /metrics), or refuse to start under `--wal-recovery strict`.
#[test]
fn a_damaged_last_record_is_reported_as_corruption() {
    let d = tmp_dir("wal-corrupt");
    let data = d.join("data");
    let data_s = data.to_str().expect("utf8").to_string();
    {
        let s = Server::start(&["--data-dir", &data_s]);
        sql(&s.addr, "CREATE TABLE t (ts TIMESTAMP, v BIGINT)");
        for i in 0..3 {
            sql(
                &s.addr,
                &format!(
                    "INSERT INTO t VALUES ('2024-01-0{} 00:00:00', {i}), ('2024-01-0{} 00:00:01', {i})",
                    i + 1,
                    i + 1
                ),
            );
        }
    } // killed (SIGKILL): no checkpoint, the rows live in the log only
    let wal = data.join("wal");
    let segment = files_under(&wal).into_iter().find(|p| p.extension().is_some_and(|e| e == "wal")).expect("segment");
    let mut bytes = std::fs::read(&segment).expect("segment");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x10;
    std::fs::write(&segment, &bytes).expect("damage");
    let pristine = std::fs::read(&segment).expect("copy");

    // Strict: refuses to start, naming the file and offset; nothing is changed.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["serve", "--http", "127.0.0.1:0", "--data-dir", &data_s, "--wal-recovery", "strict"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("checksum mismatch in a complete record"), "{err}");
    assert_eq!(std::fs::read(&segment).expect("segment"), pristine, "strict changes nothing");

    // Point in time (the default): starts, drops exactly the damaged batch, and says so.
    let s = Server::start(&["--data-dir", &data_s]);
    let said = s.startup.join("\n");
    assert!(said.contains("ERROR: WAL corruption"), "{said}");
    assert!(!said.contains("never acknowledged"), "not a torn write: {said}");
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 4);
    let health = get(&s.addr, "/health").json();
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["wal_recovery"]["records_dropped"], 1, "{health}");
    assert!(get(&s.addr, "/metrics").text().contains("zepto_wal_recovery_dropped_records 1"));
    let kept = wal.join(format!("{}.damaged", segment.file_name().expect("name").to_string_lossy()));
    assert_eq!(std::fs::read(&kept).expect("kept aside"), pristine, "the damaged segment is kept whole");
    // Writes go on after the cut, and a restart is clean.
    sql(&s.addr, "INSERT INTO t VALUES ('2024-02-01', 9)");
    drop(s);
    let s = Server::start(&["--data-dir", &data_s]);
    assert!(!s.startup.join("\n").contains("ERROR"), "{:?}", s.startup);
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 5);
    assert_eq!(get(&s.addr, "/health").json()["status"], "ok");
}

/// Admission control: statements beyond `--max-queries` wait at most `--queue-timeout`, then
/// get 503 with Retry-After; ingest, and statements that read few rows, have slots and
/// threads of their own and are never held up.
#[test]
fn a_query_flood_queues_then_is_refused_and_never_blocks_ingest() {
    use std::io::Write;
    const SLOW: &str = "SELECT count(*) FROM trades a JOIN trades b ON a.price < b.price - 1000000 AND a.size > b.size";
    let s = Server::start(&["--demo", "--rows", "50000", "--max-queries", "1", "--queue-timeout", "0.3"]);
    let a = s.addr.as_str();
    let running = |n: usize| get(a, "/metrics").text().contains(&format!("zepto_queries_running {n}"));
    let mut slow = std::net::TcpStream::connect(a).expect("connects");
    let req = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{SLOW}", SLOW.len());
    slow.write_all(req.as_bytes()).expect("writes");
    let t0 = std::time::Instant::now();
    while !running(1) {
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "the slow query never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let r = post(a, "/", "CREATE TABLE x (a BIGINT)");
    assert_eq!((r.status, r.error_code().as_str()), (503, "SERVER_BUSY"), "{}", r.text());
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.text().contains("--queue-timeout"), "{}", r.text());
    // A statement that reads few rows has a lane of its own: a small join answers while the
    // only query slot is taken (--max-queries does not count that lane).
    let small = "SELECT count(*) FROM (SELECT * FROM trades WHERE sym = 'S090') t \
                 JOIN (SELECT * FROM quotes WHERE sym = 'S090') q ON t.ts <= q.ts";
    let r = post(a, "/", small);
    assert_eq!(r.status, 200, "{}", r.text());
    // Ingest goes through while every query slot is taken.
    let r = post(a, "/write", "cpu,host=a usage=0.5 1700000000000000000");
    assert!(r.status == 204 || r.status == 200, "{}", r.text());
    drop(slow); // cancels the slow query
    let t0 = std::time::Instant::now();
    while !running(0) {
        assert!(t0.elapsed() < std::time::Duration::from_secs(10), "the slow query kept running");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The gauge drops as the query ends; its slot is given back just after: a statement is
    // admitted again within moments (not only after the queue timeout of a later flood).
    let t0 = std::time::Instant::now();
    loop {
        let status = post(a, "/", "CREATE TABLE x (a BIGINT)").status;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "only SERVER_BUSY may precede the slot's return");
        assert!(t0.elapsed() < std::time::Duration::from_secs(5), "the slot never came back");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(sql(a, "SELECT count(*) FROM cpu")["data"][0][0], 1);
}

/// A client that stops reading a large answer holds no query slot: once the head and first
/// chunk are out, the rest is encoded as the client takes it, off the slot, so a heavy
/// statement behind it runs (before, the query thread waited on the reader, up to a minute per
/// chunk, and the statement got 503 after the queue timeout).
#[test]
fn a_client_that_stops_reading_holds_no_query_slot() {
    use std::io::{Read, Write};
    let s = Server::start(&["--demo", "--rows", "300000", "--max-queries", "1", "--queue-timeout", "2"]);
    let a = s.addr.as_str();
    // 300k rows as JSON: tens of MB, past what the sockets' buffers hold.
    let all = "SELECT * FROM trades";
    let mut slow = std::net::TcpStream::connect(a).expect("connects");
    let req = format!("POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{all}", all.len());
    slow.write_all(req.as_bytes()).expect("writes");
    let mut head = [0u8; 64];
    slow.read_exact(&mut head).expect("the answer starts");
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
    std::thread::sleep(std::time::Duration::from_millis(500));
    // A statement scanning more rows than the quick lane takes: it needs the only query slot.
    let heavy = "SELECT count(*) FROM trades WHERE price > 0";
    let r = post(a, "/", heavy);
    assert_eq!(r.status, 200, "the slow reader held the query slot: {}", r.text());
    assert_eq!(r.json()["data"][0][0], 300_000);
    // The slow reader still gets its whole answer when it reads again.
    let mut rest = Vec::new();
    slow.read_to_end(&mut rest).expect("the rest");
    assert!(rest.len() > 10 << 20, "{} bytes", rest.len());
    assert!(rest.ends_with(b"\r\n0\r\n\r\n"), "a whole chunked body");
}

/// Parsing draws on the query's memory budget: a 1M-item IN list (7 MB of SQL, tens of MB of
/// tokens) under an 8 MiB limit is refused with 429 while it is read; without the limit it
/// runs (in linear time: it was quadratic).
#[test]
fn a_huge_in_list_counts_against_the_memory_limit() {
    let list = (0..1_000_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let q = format!("SELECT count(*) FROM t WHERE a IN ({list})");
    let s = Server::start(&["--query-memory-mb", "8"]);
    sql(&s.addr, "CREATE TABLE t (a BIGINT)");
    sql(&s.addr, "INSERT INTO t VALUES (5), (2000000)");
    let r = post(&s.addr, "/", &q);
    assert_eq!((r.status, r.error_code().as_str()), (429, "RESOURCES_EXHAUSTED"), "{}", r.text());
    assert!(r.text().contains("--query-memory-mb"), "the error names the flag: {}", r.text());
    drop(s);
    let s = Server::start(&[]);
    sql(&s.addr, "CREATE TABLE t (a BIGINT)");
    sql(&s.addr, "INSERT INTO t VALUES (5), (2000000)");
    assert_eq!(sql(&s.addr, &q)["data"][0][0], 1);
}

/// `VmRSS` or `VmHWM` (peak) of process `pid`, in bytes.
fn proc_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("reads /proc status");
    let line = status.lines().find(|l| l.starts_with(field)).expect("field in /proc status");
    line.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()).expect("kB") * 1024
}

/// Result encoding holds no unbounded buffer: a JSON result several times the query memory
/// limit leaves as a stream of bounded chunks, so the server's peak RSS while sending it grows
/// by less than the limit plus a documented constant (`ENCODE_SLACK`), not by the result's
/// encoded size.
#[test]
fn a_result_larger_than_the_limit_streams_within_it() {
    const LIMIT_MB: u64 = 8;
    // Allocator and runtime slack beside the query's own budget (docs/http.md, "Limits").
    const ENCODE_SLACK: u64 = 16 << 20;
    let s = Server::start(&["--query-memory-mb", &LIMIT_MB.to_string()]);
    sql(&s.addr, "CREATE TABLE t (ts TIMESTAMP, a BIGINT, b DOUBLE, s VARCHAR)");
    for part in 0..6 {
        let mut csv = String::from("ts,a,b,s\n");
        for i in 0..100_000u64 {
            let k = part * 100_000 + i;
            csv.push_str(&format!("{},{},{}.25,row number {k}\n", 1_700_000_000_000_000_000 + k, k * 7, k));
        }
        let r = post(&s.addr, "/write?table=t&format=csv", &csv);
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let pid = s.child.id();
    let before = proc_kb(pid, "VmRSS:");
    // Reset the peak to the current RSS (Linux clear_refs 5), so VmHWM measures this request.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("resets the peak RSS");
    let r = post(&s.addr, "/?format=json", "SELECT * FROM t");
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.body.len() as u64;
    // Buffered whole, the body alone would break the bound below.
    assert!(body > (LIMIT_MB << 20) + ENCODE_SLACK, "the result ({body} bytes) should dwarf the bound");
    let grew = proc_kb(pid, "VmHWM:").saturating_sub(before);
    eprintln!("peak RSS grew by {} KiB sending {} KiB", grew >> 10, body >> 10);
    assert!(
        grew < (LIMIT_MB << 20) + ENCODE_SLACK,
        "peak RSS grew by {} MiB sending a {} MiB result under a {LIMIT_MB} MiB limit",
        grew >> 20,
        body >> 20
    );
}

/// A multi-statement request draws on one memory budget, parse trees included: 2,000
/// statements whose trees outgrow a 4 MiB limit are refused with 429 while they are parsed,
/// nothing of them applied; under the default (no limit) the same script runs.
#[test]
fn a_multi_statement_script_counts_against_the_memory_limit() {
    let row = format!("({})", vec!["1"; 40].join(","));
    let cols = (0..40).map(|i| format!("c{i} BIGINT")).collect::<Vec<_>>().join(", ");
    let script = vec![format!("INSERT INTO t VALUES {row}, {row}, {row}, {row}, {row};"); 2_000].concat();
    assert!(script.len() < 16 << 20, "under --max-query-mb's default");
    let s = Server::start(&["--query-memory-mb", "4", "--max-statements", "20000"]);
    sql(&s.addr, &format!("CREATE TABLE t ({cols})"));
    let r = post(&s.addr, "/", &script);
    assert_eq!((r.status, r.error_code().as_str()), (429, "RESOURCES_EXHAUSTED"), "{}", r.text());
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 0, "nothing applied");
    drop(s);
    let s = Server::start(&["--max-statements", "20000"]);
    sql(&s.addr, &format!("CREATE TABLE t ({cols})"));
    assert_eq!(post(&s.addr, "/", &script).status, 200);
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 10_000);
}

/// A Parquet file whose length on disk bounds nothing: `rows` copies of one BIGINT in each of
/// two columns `v` and `w`, written batch by batch (a few KiB of run-length encoding, `rows` x
/// 16 bytes decoded).
fn write_repetitive_parquet(path: &Path, rows: usize) {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let fields = ["v", "w"].map(|n| Field::new(n, DataType::Int64, false));
    let schema = Arc::new(Schema::new(fields.to_vec()));
    let col: ArrayRef = Arc::new(Int64Array::from(vec![7i64; 1 << 20]));
    let batch = RecordBatch::try_new(schema.clone(), vec![col.clone(), col]).expect("batch");
    let file = std::fs::File::create(path).expect("creates the file");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, None).expect("writer");
    for _ in 0..rows >> 20 {
        w.write(&batch).expect("writes a batch");
    }
    w.close().expect("closes the file");
}

/// COPY FROM counts what it decodes, not only the file's size: a 48M-row Parquet file of a
/// few KiB (384 MiB decoded per column) under a 64 MiB limit is refused with 429 while it is
/// read, the server's peak RSS grows by less than the limit plus the documented slack, and
/// nothing is applied. Before, the file's size was reserved and the decode ran to the end. A
/// table of both columns decodes them on two threads at once: what both hold counts.
#[test]
fn a_copy_that_decodes_past_the_limit_stops_while_it_reads() {
    const LIMIT_MB: u64 = 64;
    const SLACK: u64 = 16 << 20;
    let d = tmp_dir("copy-decode");
    let file = d.join("ones.parquet");
    write_repetitive_parquet(&file, 48 << 20);
    let on_disk = std::fs::metadata(&file).expect("file").len();
    assert!(on_disk < 1 << 20, "the file is small ({on_disk} bytes)");
    let s = Server::start(&["--copy-root", d.to_str().expect("utf8"), "--query-memory-mb", &LIMIT_MB.to_string()]);
    sql(&s.addr, "CREATE TABLE t (v BIGINT)");
    sql(&s.addr, "CREATE TABLE t2 (v BIGINT, w BIGINT)");
    let pid = s.child.id();
    for table in ["t", "t2"] {
        let before = proc_kb(pid, "VmRSS:");
        std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("resets the peak RSS");
        let r = post(&s.addr, "/", &format!("COPY {table} FROM '{}'", file.display()));
        assert_eq!((r.status, r.error_code().as_str()), (429, "RESOURCES_EXHAUSTED"), "{table}: {}", r.text());
        let grew = proc_kb(pid, "VmHWM:").saturating_sub(before);
        let mib = grew >> 20;
        assert!(grew < (LIMIT_MB << 20) + SLACK, "{table}: peak RSS grew by {mib} MiB under a {LIMIT_MB} MiB limit");
        assert_eq!(sql(&s.addr, &format!("SELECT count(*) FROM {table}"))["data"][0][0], 0, "nothing applied");
    }
    // 6M rows: one column decoded (48 MiB) fits the limit; two decoded at once on two threads
    // (96 MiB) do not, as they would not on one.
    let six = d.join("six.parquet");
    write_repetitive_parquet(&six, 6 << 20);
    let r = post(&s.addr, "/", &format!("COPY t FROM '{}'", six.display()));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 6 << 20);
    let r = post(&s.addr, "/", &format!("COPY t2 FROM '{}'", six.display()));
    assert_eq!((r.status, r.error_code().as_str()), (429, "RESOURCES_EXHAUSTED"), "{}", r.text());
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t2")["data"][0][0], 0, "nothing applied");
    sql(&s.addr, "DELETE FROM t");
    // A CSV file under the limit whose records are not: refused, nothing applied.
    std::fs::write(d.join("narrow.csv"), "v\n".to_string() + &"1\n".repeat(4 << 20)).expect("file");
    let r = post(&s.addr, "/", &format!("COPY t FROM '{}'", d.join("narrow.csv").display()));
    assert_eq!((r.status, r.error_code().as_str()), (429, "RESOURCES_EXHAUSTED"), "{}", r.text());
    assert_eq!(sql(&s.addr, "SELECT count(*) FROM t")["data"][0][0], 0, "nothing applied");
}

/// Request bodies draw on one server-wide budget: with `--max-inflight-body-mb 2`, two
/// clients holding 900 KiB of unfinished bodies each leave no room for a third body, which is
/// refused at once with 503 and `Retry-After` (nothing written); once they hang up, the same
/// body is accepted. Before, every connection could hold a whole `--max-body-mb` body, so
/// memory grew with the number of connections.
#[test]
fn request_bodies_share_one_budget() {
    use std::io::Write;
    use std::net::TcpStream;
    let s = Server::start(&["--max-body-mb", "1", "--max-inflight-body-mb", "2"]);
    let a = s.addr.as_str();
    sql(a, "CREATE TABLE t (v BIGINT)");
    let part = "v\n".to_string() + &"1\n".repeat(450 << 10);
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(a).expect("connects");
        let head = format!("POST /write?table=t&format=csv HTTP/1.1\r\nHost: {a}\r\nContent-Length: 1000000\r\n\r\n");
        c.write_all(head.as_bytes()).expect("head");
        c.write_all(part.as_bytes()).expect("most of the body");
        slow.push(c);
    }
    // The server reads the slow bodies as they arrive: wait until it holds them.
    let t0 = std::time::Instant::now();
    let held = || {
        let m = get(a, "/metrics").text();
        let line = m.lines().find(|l| l.starts_with("zepto_request_body_bytes_in_flight ")).map(str::to_string);
        line.and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok())).expect("the gauge")
    };
    while held() < 2 * (900 << 10) {
        assert!(t0.elapsed() < std::time::Duration::from_secs(60), "the server never held the bodies: {}", held());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let body = "v\n".to_string() + &"2\n".repeat(300 << 10);
    let r = post(a, "/write?table=t&format=csv", &body);
    assert_eq!((r.status, r.error_code().as_str()), (503, "BODIES_IN_FLIGHT"), "{}", r.text());
    assert_eq!(r.header("Retry-After"), Some("1"));
    assert!(r.text().contains("--max-inflight-body-mb"), "{}", r.text());
    assert_eq!(sql(a, "SELECT count(*) FROM t")["data"][0][0], 0, "nothing written");
    drop(slow);
    let t0 = std::time::Instant::now();
    let r = loop {
        let r = post(a, "/write?table=t&format=csv", &body);
        if r.status == 200 || t0.elapsed() > std::time::Duration::from_secs(20) {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(sql(a, "SELECT count(*) FROM t")["data"][0][0], 300 << 10);
}

/// The server-wide memory guard: with no per-query limit, a cross join that would hold
/// hundreds of MiB is stopped with 429 once the process passes `--max-server-memory-mb`
/// (its message names the flag), the metric counts it, and the server goes on answering.
/// Before, nothing bounded the process but the machine (the kernel's OOM killer).
#[test]
fn the_memory_guard_stops_the_heaviest_query() {
    let s = Server::start(&[]);
    let base = proc_kb(s.child.id(), "VmRSS:");
    drop(s);
    let limit_mb = (base >> 20) + 96;
    let s = Server::start(&["--max-server-memory-mb", &limit_mb.to_string()]);
    let a = s.addr.as_str();
    sql(a, "CREATE TABLE t (v BIGINT)");
    let csv = "v\n".to_string() + &(0..6000).map(|i| format!("{i}\n")).collect::<String>();
    assert_eq!(post(a, "/write?table=t&format=csv", &csv).status, 200);
    // 36M rows: about 600 MiB of join indexes and sums if it ran to the end.
    let r = post(a, "/", "SELECT count(*), sum(s) FROM (SELECT x.v + y.v AS s FROM t x, t y) j");
    assert_eq!((r.status, r.error_code().as_str()), (429, "RESOURCES_EXHAUSTED"), "{}", r.text());
    assert!(r.text().contains("--max-server-memory-mb"), "{}", r.text());
    let metrics = get(a, "/metrics").text();
    assert!(metrics.contains("zepto_queries_stopped_for_memory_total 1"), "{metrics}");
    assert_eq!(sql(a, "SELECT count(*) FROM t")["data"][0][0], 6000, "the server goes on");
}

/// A client that leaves while the server binds its statement stops the binding, and its query
/// slot frees at once: binding checks the query's control, which the server cancels when the
/// connection closes. The statement parses in milliseconds but binds for seconds (each of its
/// IN items is coerced against its 300-term left side). It is first run to the end, to learn
/// how long it holds the slot; then a client sends it again and disconnects as soon as the
/// server hands it to a query thread (`zepto_queries_running 1`: parsing is over), and a
/// statement that needs the only slot must get it in a fraction of that time. Before, binding
/// never checked, and the slot stayed taken until binding finished.
#[test]
fn a_client_that_leaves_while_its_statement_binds_frees_the_query_slot() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let lhs = vec!["a"; 300].join(" + ");
    // About 2.5 s on a quiet 2-core machine; a loaded CI machine has taken 16x as long, and an
    // answer must come within the client's 60 s read timeout.
    let list = (0..100_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let q = format!("SELECT count(*) FROM t WHERE {lhs} IN ({list})");
    let s = Server::start(&["--max-queries", "1", "--queue-timeout", "300"]);
    let a = s.addr.as_str();
    sql(a, "CREATE TABLE t (a BIGINT)");
    sql(a, "INSERT INTO t VALUES (1), (1000)");
    let t0 = Instant::now();
    assert_eq!(sql(a, &q)["data"][0][0], 1, "a = 1 gives 300, in the list; a = 1000 does not");
    let full = t0.elapsed();
    assert!(full > Duration::from_millis(800), "the statement must bind for long enough to test: {full:?}");

    let running = |n: usize| get(a, "/metrics").text().contains(&format!("zepto_queries_running {n}"));
    let mut client = std::net::TcpStream::connect(a).expect("connects");
    let req = format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{q}", q.len());
    client.write_all(req.as_bytes()).expect("writes");
    let t0 = Instant::now();
    while !running(1) {
        assert!(t0.elapsed() < full, "the statement never reached a query thread");
        std::thread::sleep(Duration::from_millis(5));
    }
    let left = Instant::now();
    drop(client);
    let r = post(a, "/", "CREATE TABLE u (a BIGINT)");
    let freed = left.elapsed();
    eprintln!("the statement runs {full:?}; its slot freed {freed:?} after its client left");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        freed * 4 < full,
        "the query slot stayed taken {freed:?} after the client left (the statement runs {full:?})"
    );
}
