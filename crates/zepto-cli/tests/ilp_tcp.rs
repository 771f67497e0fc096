//! InfluxDB line protocol over TCP (`serve --ilp-tcp`), end to end on the real binary: lines
//! written on a raw socket in random pieces are stored exactly once and visible without the
//! connection closing; a bad line keeps the lines before it, closes the connection, stores
//! nothing after it and is counted on `/metrics`; a line past the length limit does the same;
//! `off` listens nowhere; API keys keep the door shut unless the operator opens it; TLS with
//! the server's certificate; SIGTERM commits what was received and exits cleanly.

mod common;

use common::{metric, sql, Server};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TS: i64 = 1_700_000_000_000_000_000;

/// The door's address as the server printed it.
fn ilp_addr(s: &Server) -> String {
    s.printed_addr("ILP over TCP on ")
}

/// A small deterministic generator (xorshift), for piece sizes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `body` written in random pieces of 1 to `max` bytes; write errors (the server closed the
/// connection) end the writing.
fn write_pieces(s: &mut TcpStream, body: &[u8], seed: u64, max: u64) {
    let mut rng = Rng(seed);
    let mut rest = body;
    while !rest.is_empty() {
        let n = (1 + rng.below(max) as usize).min(rest.len());
        let (piece, tail) = rest.split_at(n);
        if s.write_all(piece).is_err() {
            return;
        }
        rest = tail;
    }
}

/// The first cell of a one-row query, as i64.
fn int(addr: &str, q: &str) -> i64 {
    let v = sql(addr, q);
    v["data"][0][0].as_i64().unwrap_or_else(|| panic!("{q}: {v}"))
}

/// `q`'s first cell once it equals `want` (the query polled up to 30 s), or a failure.
fn poll(addr: &str, q: &str, want: i64) {
    let t0 = Instant::now();
    loop {
        let exists = sql(addr, "SHOW TABLES").to_string().contains("ticks");
        if exists && int(addr, q) == want {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{q}: never {want}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Line `i` of the generated ticks (CRLF every 7th line).
fn tick(i: i64) -> String {
    let end = if i % 7 == 0 { "\r\n" } else { "\n" };
    format!("ticks,sym=S{} id={i}i,px={}.25,note=\"n {i}\",ok={} {}{end}", i % 5, i % 101, i % 2 == 0, TS + i)
}

/// Whether the server closed `s`: EOF or a reset within 30 s.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut buf = [0u8; 16];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock && e.kind() != std::io::ErrorKind::TimedOut,
    }
}

#[test]
fn ten_thousand_lines_in_random_pieces_are_stored_once() {
    let s = Server::start(&["--ilp-tcp", "127.0.0.1:0"]);
    let a = s.addr.as_str();
    let mut body: String = (0..10_000).map(tick).collect();
    // The last line has no newline: it is committed at EOF since it parses.
    body.truncate(body.trim_end().len());
    let mut c = TcpStream::connect(ilp_addr(&s)).expect("connects");
    write_pieces(&mut c, body.as_bytes(), 42, 3000);
    c.shutdown(Shutdown::Write).expect("EOF");
    assert!(closed_by_server(&mut c), "the server closes after EOF");
    poll(a, "SELECT count(*) FROM ticks", 10_000);
    assert_eq!(int(a, "SELECT count(DISTINCT id) FROM ticks"), 10_000);
    assert_eq!(int(a, "SELECT sum(id) FROM ticks"), (0..10_000).sum::<i64>());
    let px = sql(a, "SELECT sum(px), sum(CASE WHEN ok THEN 1 ELSE 0 END) FROM ticks")["data"][0].clone();
    let want: f64 = (0..10_000).map(|i| (i % 101) as f64 + 0.25).sum();
    assert_eq!((px[0].as_f64(), px[1].as_i64()), (Some(want), Some(5000)), "{px}");
    let v = sql(a, "SELECT sym, count(*), min(note) FROM ticks GROUP BY sym ORDER BY sym");
    assert_eq!(v["data"][3], serde_json::json!(["S3", 2000, "n 1003"]), "{v}");
    let v = sql(a, "SELECT epoch_ns(timestamp) FROM ticks WHERE id = 9999");
    assert_eq!(v["data"][0][0].as_i64(), Some(TS + 9999), "{v}");
    assert_eq!(metric(a, "zepto_ilp_tcp_rows_total"), 10_000);
    assert_eq!(metric(a, "zepto_ilp_tcp_lines_total"), 10_000);
    assert_eq!(metric(a, "zepto_ilp_tcp_bytes_total"), body.len() as i64);
    assert_eq!(metric(a, "zepto_ilp_tcp_connections_total"), 1);
    assert_eq!(metric(a, "zepto_ilp_tcp_bad_lines_total"), 0);
    assert!(metric(a, "zepto_ilp_tcp_batches_total") >= 1);
    s.stop();
}

#[test]
fn lines_are_visible_while_the_connection_stays_open() {
    let s = Server::start(&["--ilp-tcp", "127.0.0.1:0"]);
    let mut c = TcpStream::connect(ilp_addr(&s)).expect("connects");
    c.write_all(tick(1).as_bytes()).expect("writes");
    c.write_all(tick(2).as_bytes()).expect("writes");
    poll(&s.addr, "SELECT count(*) FROM ticks", 2);
    assert_eq!(metric(&s.addr, "zepto_ilp_tcp_connections_open"), 1);
    c.write_all(tick(3).as_bytes()).expect("writes");
    poll(&s.addr, "SELECT count(*) FROM ticks", 3);
    drop(c);
    s.stop();
}

#[test]
fn a_bad_line_keeps_the_lines_before_it_and_closes_the_connection() {
    let s = Server::start(&["--ilp-tcp", "127.0.0.1:0", "--ilp-tcp-max-line-kb", "1"]);
    let a = s.addr.as_str();
    // Line 6000 is not line protocol; 4000 good lines follow it.
    let k = 6000;
    let body: String = (1..=10_000).map(|i| if i == k { "ticks,sym=X px\n".to_string() } else { tick(i) }).collect();
    let mut c = TcpStream::connect(ilp_addr(&s)).expect("connects");
    write_pieces(&mut c, body.as_bytes(), 7, 5000);
    assert!(closed_by_server(&mut c), "a bad line closes the connection");
    // Closed after the lines before it were committed: they are all there, nothing after.
    assert_eq!(int(a, "SELECT count(*) FROM ticks"), k - 1);
    assert_eq!(int(a, "SELECT max(id) FROM ticks"), k - 1);
    assert_eq!(metric(a, "zepto_ilp_tcp_bad_lines_total"), 1);
    assert_eq!(metric(a, "zepto_ilp_tcp_lines_total"), k - 1);
    // A type error (a string into a BIGINT column) on a new connection's line 3.
    let mut c = TcpStream::connect(ilp_addr(&s)).expect("connects");
    let body = format!("{}{}ticks,sym=Y id=\"x\" 1\n{}", tick(20_001), tick(20_002), tick(20_003));
    c.write_all(body.as_bytes()).expect("writes");
    assert!(closed_by_server(&mut c));
    assert_eq!(int(a, "SELECT count(*) FROM ticks"), k + 1);
    assert_eq!(metric(a, "zepto_ilp_tcp_bad_lines_total"), 2);
    // A line past --ilp-tcp-max-line-kb, its newline never sent.
    let mut c = TcpStream::connect(ilp_addr(&s)).expect("connects");
    let long = format!("{}ticks,sym=Z note=\"{}", tick(30_001), "z".repeat(4000));
    write_pieces(&mut c, long.as_bytes(), 9, 100);
    assert!(closed_by_server(&mut c), "a line past the limit closes the connection");
    assert_eq!(int(a, "SELECT count(*) FROM ticks"), k + 2);
    assert_eq!(metric(a, "zepto_ilp_tcp_bad_lines_total"), 3);
    // Each is logged with its line number within its connection.
    let t0 = Instant::now();
    while !(s.log_text().contains(&format!(": line {k}: ")) && s.log_text().contains(": line 2: longer than 1024")) {
        assert!(t0.elapsed() < Duration::from_secs(10), "not logged:\n{}", s.log_text());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(s.log_text().contains(": line 3: "), "{}", s.log_text());
    s.stop();
}

#[test]
fn off_listens_nowhere() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
    let s = Server::start(&["--ilp-tcp", "off"]);
    assert!(!s.startup.iter().any(|l| l.contains("ILP")), "{:?}", s.startup);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    assert_eq!(metric(&s.addr, "zepto_ilp_tcp_connections_total"), 0);
    s.stop();
    // The same server with the door on that port does listen there.
    let addr = format!("127.0.0.1:{port}");
    let s = Server::start(&["--ilp-tcp", &addr]);
    assert_eq!(ilp_addr(&s), addr);
    assert!(TcpStream::connect(&addr).is_ok());
    s.stop();
}

/// What `zeptodb serve` prints when it refuses to start.
fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_zeptodb"))
        .args(["serve", "--in-memory", "--http", "127.0.0.1:0", "--pg", "off"])
        .args(args)
        .env_remove("ZEPTO_API_KEY")
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert!(!out.status.success(), "{args:?} started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn api_keys_keep_the_door_shut_unless_the_operator_opens_it() {
    let key = "ilp-tcp-test-key-0123456789";
    let err = refused(&["--api-key", key, "--ilp-tcp", "127.0.0.1:0"]);
    assert!(err.contains("--ilp-tcp-unauthenticated"), "{err}");
    let err = refused(&["--ilp-tcp", "0.0.0.0:0"]);
    assert!(err.contains("without authentication"), "{err}");
    // The default door with keys: not started, said so (the harness would turn it off).
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeptodb"));
    cmd.args(["serve", "--in-memory", "--http", "127.0.0.1:0", "--pg", "off", "--api-key", key]);
    cmd.env_remove("ZEPTO_API_KEY");
    let s = Server::spawn(cmd);
    assert!(s.startup.iter().any(|l| l.contains("ILP/TCP door not started")), "{:?}", s.startup);
    assert!(!s.startup.iter().any(|l| l.contains("ILP over TCP on")), "{:?}", s.startup);
    s.stop();
    // Opened on purpose: it writes without a key.
    let s = Server::start(&["--api-key", key, "--ilp-tcp", "127.0.0.1:0", "--ilp-tcp-unauthenticated"]);
    let line = s.startup.iter().find(|l| l.contains("ILP over TCP on")).expect("printed");
    assert!(line.contains("unauthenticated"), "{line}");
    let mut c = TcpStream::connect(ilp_addr(&s)).expect("connects");
    c.write_all(tick(1).as_bytes()).expect("writes");
    c.shutdown(Shutdown::Write).expect("EOF");
    assert!(closed_by_server(&mut c));
    let r = common::post_key(&s.addr, "/", key, "SELECT count(*) FROM ticks");
    assert_eq!(r.json()["data"][0][0], 1, "{}", r.text());
    s.stop();
}

/// On SIGTERM with a connection open mid-line, the complete lines it sent are committed, the
/// open line is not, and the server exits 0 without a panic (every door open but the
/// cluster's).
#[test]
fn sigterm_commits_what_was_received_and_stops_cleanly() {
    let dir = common::fresh_dir("ilp-tcp-stop");
    let data = dir.join("data").to_string_lossy().to_string();
    let fix_cfg = dir.join("fix.json");
    std::fs::write(&fix_cfg, r#"{"sender_comp_id": "ZEPTO"}"#).expect("FIX config");
    let fix_cfg = fix_cfg.to_string_lossy().to_string();
    let doors = ["--flight-sql", "127.0.0.1:0", "--fix", "127.0.0.1:0", "--fix-config", &fix_cfg];
    let mut args = vec!["--data-dir", &data, "--ilp-tcp", "127.0.0.1:0"];
    args.extend(doors);
    let s = Server::start(&args);
    let body: String = (0..3000).map(tick).collect::<String>() + "ticks,sym=P id=99999i";
    let mut c = TcpStream::connect(ilp_addr(&s)).expect("connects");
    c.write_all(body.as_bytes()).expect("writes");
    // Every byte received before the stop.
    let t0 = Instant::now();
    while metric(&s.addr, "zepto_ilp_tcp_bytes_total") < body.len() as i64 {
        assert!(t0.elapsed() < Duration::from_secs(30), "the server never read it all");
        std::thread::sleep(Duration::from_millis(10));
    }
    s.stop();
    drop(c);
    let s = Server::start(&["--data-dir", &data, "--ilp-tcp", "off"]);
    assert_eq!(int(&s.addr, "SELECT count(*) FROM ticks"), 3000);
    assert_eq!(int(&s.addr, "SELECT count(*) FROM ticks WHERE id = 99999"), 0, "the open line is not stored");
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// With the server's certificate the door speaks TLS only.
#[test]
fn tls_with_the_servers_certificate() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("self-signed cert");
    let dir = common::fresh_dir("ilp-tcp-tls");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("cert");
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).expect("key");
    let (cp, kp) = (cert_path.to_string_lossy().to_string(), key_path.to_string_lossy().to_string());
    let s = Server::start(&["--ilp-tcp", "127.0.0.1:0", "--tls-cert", &cp, "--tls-key", &kp]);
    let line = s.startup.iter().find(|l| l.contains("ILP over TCP on")).expect("printed");
    assert!(line.contains("over TLS"), "{line}");
    let addr = ilp_addr(&s);
    let cfg = trusting(&cert.cert);
    // Plain line protocol on the TLS door: the connection closed, nothing stored.
    let mut plain = TcpStream::connect(&addr).expect("connects");
    plain.write_all(tick(1).as_bytes()).expect("writes");
    plain.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut alert = Vec::new();
    // A TLS alert, then the close (or a reset).
    if let Err(e) = plain.read_to_end(&mut alert) {
        assert!(!matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut), "not closed");
    }
    assert_eq!(https_metric(&s.addr, &cfg, "zepto_ilp_tcp_rows_total"), 0);
    // Over TLS: stored.
    let mut tls = tls_connect(&addr, &cfg);
    let body: String = (2..102).map(tick).collect();
    tls.write_all(body.as_bytes()).expect("writes over TLS");
    tls.flush().expect("flush");
    let t0 = Instant::now();
    while https_metric(&s.addr, &cfg, "zepto_ilp_tcp_rows_total") < 100 {
        assert!(t0.elapsed() < Duration::from_secs(30), "never stored");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(https_metric(&s.addr, &cfg, "zepto_ilp_tcp_rows_total"), 100);
    drop(tls);
    // A client that never starts its handshake does not hold up the stop (under 10 s).
    let _silent = TcpStream::connect(&addr).expect("connects");
    let t0 = Instant::now();
    while https_metric(&s.addr, &cfg, "zepto_ilp_tcp_connections_total") < 3 {
        assert!(t0.elapsed() < Duration::from_secs(30), "never accepted");
        std::thread::sleep(Duration::from_millis(20));
    }
    s.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TLS client configuration trusting only `cert`.
fn trusting(cert: &rcgen::Certificate) -> std::sync::Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).expect("trust the test cert");
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    std::sync::Arc::new(cfg)
}

fn tls_connect(
    addr: &str,
    cfg: &std::sync::Arc<rustls::ClientConfig>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let conn = rustls::ClientConnection::new(cfg.clone(), name).expect("client");
    rustls::StreamOwned::new(conn, TcpStream::connect(addr).expect("connects"))
}

/// A value on `/metrics` of a server whose HTTP door is HTTPS.
fn https_metric(addr: &str, cfg: &std::sync::Arc<rustls::ClientConfig>, name: &str) -> i64 {
    let mut tls = tls_connect(addr, cfg);
    tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").expect("writes");
    let mut buf = Vec::new();
    // rustls reports the peer's close without close_notify as an error after the data.
    let _ = tls.read_to_end(&mut buf);
    let text = common::parse_response(&buf).text();
    let line = text.lines().find(|l| l.split(' ').next() == Some(name));
    line.and_then(|l| l.split(' ').nth(1)).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{name}: {text}"))
}
