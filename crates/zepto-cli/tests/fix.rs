//! The FIX door end to end: `zeptodb serve --fix` with a durable data directory, a FIX
//! initiator over TCP (messages built by hand with zepto-fix's encoder: no FIX engine is
//! installed here), the rows read back over HTTP SQL, a forced gap filled by a resend, a bad
//! message rejected, and a `kill -9` after which the session resumes with every message once;
//! and the same session over TLS (`--fix-tls`), also busy-polled (`--fix-busy-poll`).

mod common;

use common::{sql, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;
use zepto_fix::encode::Value as V;
use zepto_fix::parse::parse;
use zepto_fix::Encoder;

/// A byte stream both ways: TCP, or TLS over it.
trait Wire: Read + Write {}
impl<T: Read + Write> Wire for T {}

/// A FIX initiator: FEED → ZEPTO, FIX 4.4.
struct Client {
    stream: Box<dyn Wire>,
    enc: Encoder,
    buf: Vec<u8>,
}

impl Client {
    fn tcp(addr: &str) -> TcpStream {
        let stream = TcpStream::connect(addr).expect("connects to the FIX port");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        stream
    }

    fn over(stream: Box<dyn Wire>) -> Client {
        Client { stream, enc: Encoder::new("FIX.4.4", "FEED", "ZEPTO"), buf: Vec::new() }
    }

    fn connect(addr: &str) -> Client {
        Client::over(Box::new(Client::tcp(addr)))
    }

    /// Over TLS, trusting `cfg`'s roots, as `localhost`.
    fn connect_tls(addr: &str, cfg: &Arc<rustls::ClientConfig>) -> Client {
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let conn = rustls::ClientConnection::new(cfg.clone(), name).expect("client");
        Client::over(Box::new(rustls::StreamOwned::new(conn, Client::tcp(addr))))
    }

    /// Send message `t` numbered `seq`; `body` as `tag=value|…`.
    fn send(&mut self, t: &str, seq: u64, poss_dup: bool, body: &str) {
        let fields: Vec<(u32, V<'_>)> = body
            .split('|')
            .filter(|f| !f.is_empty())
            .map(|f| {
                let (k, v) = f.split_once('=').expect("tag=value");
                (k.parse().expect("tag"), V::Bytes(v.as_bytes()))
            })
            .collect();
        let mut out = Vec::new();
        self.enc.message(&mut out, t, seq, 1_704_187_800_000_000_000, poss_dup, &fields);
        self.stream.write_all(&out).expect("send");
    }

    /// The next message from the server: type, seq and the fields asked for.
    fn recv(&mut self, tags: &[u32]) -> String {
        loop {
            if let Ok(m) = parse(&self.buf) {
                let mut s = format!("{}#{}", m.msg_type(), m.header.seq);
                for t in tags {
                    let v = m.get(*t).map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default();
                    s.push_str(&format!(" {t}={v}"));
                }
                let n = m.len();
                self.buf.drain(..n);
                return s;
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).expect("the server answers");
            assert!(n > 0, "the server closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Wait until the server has processed everything sent (its Heartbeat answers a
    /// TestRequest, and responses go out only after the rows are stored).
    fn sync(&mut self, seq: u64, id: &str) {
        self.send("1", seq, false, &format!("112={id}|"));
        let hb = self.recv(&[112]);
        assert!(hb.starts_with("0#") && hb.ends_with(&format!("112={id}")), "{hb}");
    }
}

fn fix_addr(s: &Server) -> String {
    s.printed_addr("accepting FIX sessions on ")
}

fn rows(addr: &str, q: &str) -> Vec<String> {
    let j = sql(addr, q);
    j["data"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .map(|v| v.to_string().trim_matches('"').to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn quote(c: &mut Client, seq: u64, poss_dup: bool, px: &str) {
    c.send("X", seq, poss_dup, &format!("268=1|279=0|269=1|55=GBPUSD|270={px}|271=5|"));
}

#[test]
fn fix_messages_become_rows_exactly_once_through_gaps_bad_input_and_kill_9() {
    let dir = std::env::temp_dir().join(format!("zepto-fix-door-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let data = dir.join("data").to_str().expect("path").to_string();
    let cfg = dir.join("fix.json");
    std::fs::write(&cfg, r#"{"sender_comp_id": "ZEPTO", "target_comp_ids": ["FEED"], "heartbeat_secs": 30}"#)
        .expect("config");
    let cfg = cfg.to_str().expect("path").to_string();
    let args = ["--data-dir", &data, "--fix", "127.0.0.1:0", "--fix-config", &cfg];
    let s = Server::start(&args);
    let mut c = Client::connect(&fix_addr(&s));
    c.send("A", 1, false, "98=0|108=30|");
    assert_eq!(c.recv(&[108]), "A#1 108=30");
    c.send(
        "W",
        2,
        false,
        "262=R1|55=EURUSD|268=3|269=0|270=1.0841|271=1000000|273=09:30:00.120|\
         269=1|270=1.0843|271=2000000|273=09:30:00.121|269=2|270=1.0842|271=500000|272=20240102|273=09:29:59.999|",
    );
    c.send(
        "8",
        3,
        false,
        "11=C1|37=O1|17=E1|150=F|39=2|55=IBM|54=1|31=101.5|32=100|14=100|6=101.5|60=20240102-09:30:01|",
    );
    // A forced gap: 4 is never sent; 5 makes the server ask for 4 onwards, then both come again.
    quote(&mut c, 5, false, "1.30");
    assert_eq!(c.recv(&[7, 16]), "2#2 7=4 16=0");
    quote(&mut c, 4, true, "1.25");
    quote(&mut c, 5, true, "1.30");
    // Bad input: a price that is no number, and a missing Symbol in an execution report.
    quote(&mut c, 6, false, "abc");
    assert_eq!(c.recv(&[45, 371, 373]), "3#3 45=6 371=270 373=6");
    c.send("8", 7, false, "37=O2|17=E2|150=0|39=0|54=2|");
    assert_eq!(c.recv(&[45, 371, 373]), "3#4 45=7 371=55 373=1");
    c.sync(8, "S1");
    let a = s.addr.clone();
    assert_eq!(
        rows(&a, "SELECT sym, side, price, size, epoch_ns(timestamp), md_req_id, seq FROM quotes ORDER BY seq, side"),
        [
            "EURUSD|bid|1.0841|1000000.0|1704187800120000000|R1|2",
            "EURUSD|offer|1.0843|2000000.0|1704187800121000000|R1|2",
            "GBPUSD|offer|1.25|5.0|1704187800000000000|null|4",
            "GBPUSD|offer|1.3|5.0|1704187800000000000|null|5",
        ]
    );
    assert_eq!(
        rows(&a, "SELECT sym, price, size, epoch_ns(timestamp), seq FROM trades"),
        ["EURUSD|1.0842|500000.0|1704187799999000000|2"]
    );
    assert_eq!(
        rows(&a, "SELECT sym, cl_ord_id, order_id, exec_id, exec_type, ord_status, side, last_px, last_qty, cum_qty, avg_px, seq FROM executions"),
        ["IBM|C1|O1|E1|F|2|buy|101.5|100.0|100.0|101.5|3"]
    );
    // Per-session metrics: 6 rows, the gap, the two rejects, the lag of the last batch.
    let m = common::get(&a, "/metrics").text();
    let metric = |name: &str| {
        let at = format!("{name}{{session=\"ZEPTO-FEED\"}} ");
        m.lines().find_map(|l| l.strip_prefix(&at)).map(str::to_string)
    };
    assert_eq!(metric("zepto_fix_rows").as_deref(), Some("6"), "{m}");
    assert_eq!(metric("zepto_fix_gaps").as_deref(), Some("1"));
    assert_eq!(metric("zepto_fix_rejects").as_deref(), Some("2"));
    assert_eq!(metric("zepto_fix_session_connected").as_deref(), Some("1"));
    assert!(metric("zepto_fix_messages").is_some_and(|n| n.parse::<u64>().is_ok_and(|n| n >= 7)), "{m}");
    assert!(metric("zepto_fix_lag_seconds").is_some_and(|s| s.parse::<f64>().is_ok()), "{m}");
    // kill -9 mid-session, after two more quotes were acknowledged (the sync below).
    quote(&mut c, 9, false, "1.40");
    quote(&mut c, 10, false, "1.50");
    c.sync(11, "S2");
    drop(c);
    drop(s); // kill -9
    let s = Server::start(&args);
    let mut c = Client::connect(&fix_addr(&s));
    // The counterparty resumes at 12 with our next number expected at 7: nothing is asked for.
    c.send("A", 12, false, "98=0|108=30|");
    assert_eq!(c.recv(&[]), "A#7");
    // A duplicate with PossDup is dropped; one without it ends the session.
    quote(&mut c, 10, true, "1.50");
    c.sync(13, "S3");
    quote(&mut c, 11, false, "9.99");
    assert_eq!(c.recv(&[58]), "5#9 58=MsgSeqNum too low, expecting 14 but received 11");
    let a = s.addr.clone();
    assert_eq!(
        rows(&a, "SELECT seq, price FROM quotes WHERE sym = 'GBPUSD' ORDER BY seq"),
        ["4|1.25", "5|1.3", "9|1.4", "10|1.5"],
        "every message exactly once"
    );
    assert_eq!(rows(&a, "SELECT max(in_seq), max(out_seq) FROM fix_sessions WHERE session = 'ZEPTO-FEED'"), ["13|9"]);
    // The server is still up and a garbled stream does not stop it.
    let mut junk = TcpStream::connect(fix_addr(&s)).expect("connect");
    junk.write_all(b"GET / HTTP/1.1\r\n\r\n").expect("junk");
    drop(junk);
    assert_eq!(rows(&a, "SELECT count(*) FROM trades"), ["1"]);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A TLS client configuration trusting only `cert`.
fn trusting(cert: &rcgen::Certificate) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).expect("trust the test cert");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(cfg)
}

/// `q` over HTTPS (the server's HTTP door has the certificate too).
fn https_sql(addr: &str, cfg: &Arc<rustls::ClientConfig>, q: &str) -> serde_json::Value {
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let conn = rustls::ClientConnection::new(cfg.clone(), name).expect("client");
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(addr).expect("connects"));
    let req =
        format!("POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{q}", q.len());
    tls.write_all(req.as_bytes()).expect("writes over TLS");
    let mut buf = Vec::new();
    // rustls reports the peer's close without close_notify as an error after the data.
    let _ = tls.read_to_end(&mut buf);
    let r = common::parse_response(&buf);
    assert_eq!(r.status, 200, "{q}: {}", r.text());
    r.json()
}

/// A session over TLS stores its quotes, and a plain Logon gets nothing (`busy`: with
/// `--fix-busy-poll`, each connection, its TLS handshake included, on a thread of its own).
fn over_tls(busy: bool) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("self-signed cert");
    let dir = std::env::temp_dir().join(format!("zepto-fix-tls-{busy}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("cert");
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).expect("key");
    let (c, k) = (cert_path.to_str().expect("path"), key_path.to_str().expect("path"));
    let mut args = vec!["--fix", "127.0.0.1:0", "--fix-tls", "--tls-cert", c, "--tls-key", k];
    // Busy-polled, the reader is pinned to a core of its own (the last this test may use), the
    // query and network threads to the first.
    let cores = common::allowed_cores();
    let (first, last) = (cores[0], cores[cores.len() - 1]);
    let plan = format!("fix={last} query={first} ingest={first}");
    if busy {
        args.extend(["--fix-busy-poll", "--cpu-affinity", &plan]);
    }
    let s = Server::start(&args);
    let line = s.startup.iter().find(|l| l.contains("accepting FIX sessions on")).expect("FIX address printed");
    assert!(line.contains("over TLS"), "{line}");
    let addr = fix_addr(&s);
    let cfg = trusting(&cert.cert);
    let mut c = Client::connect_tls(&addr, &cfg);
    c.send("A", 1, false, "98=0|108=30|");
    assert_eq!(c.recv(&[108]), "A#1 108=30");
    quote(&mut c, 2, false, "1.25");
    quote(&mut c, 3, false, "1.5");
    c.sync(4, "T1");
    let j = https_sql(&s.addr, &cfg, "SELECT count(*), sum(price) FROM quotes");
    assert_eq!(j["data"], serde_json::json!([[2, 2.75]]), "{j}");
    if busy {
        let threads = common::thread_cores(s.child.id());
        let cores_of = |prefix: &str| -> Vec<&str> {
            threads.iter().filter(|(n, _)| n.starts_with(prefix)).map(|(_, c)| c.as_str()).collect()
        };
        assert_eq!(cores_of("zepto-fix-busy"), [last.to_string()], "{threads:?}");
        let (first, query, http) = (first.to_string(), cores_of("zepto-query-"), cores_of("zepto-http"));
        assert!(!query.is_empty() && query.iter().all(|c| *c == first), "{threads:?}");
        assert!(!http.is_empty() && http.iter().all(|c| *c == first), "{threads:?}");
        assert!(s
            .startup
            .iter()
            .any(|l| l.contains(&format!("cpu affinity: query {first}, ingest {first}, fix {last}"))));
    }
    // Plain FIX to the TLS port: no Logon comes back, and nothing is stored.
    let mut plain = Client::connect(&addr);
    plain.send("A", 1, false, "98=0|108=30|");
    let mut out = Vec::new();
    let _ = plain.stream.read_to_end(&mut out);
    assert!(parse(&out).is_err(), "a plain FIX Logon got an answer: {out:?}");
    let j = https_sql(&s.addr, &cfg, "SELECT count(*) FROM quotes");
    assert_eq!(j["data"], serde_json::json!([[2]]), "{j}");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_over_tls_stores_its_messages_and_plain_tcp_gets_nothing() {
    over_tls(false);
    over_tls(true);
}

/// A venue's TLS acceptor on a free port presenting `cert`: it takes one connection, answers
/// the initiator's Logon, waits for its MarketDataRequest and sends one snapshot. The thread
/// returns what happened: the subscription's symbol, or the TLS error.
fn tls_venue(cert: &rcgen::CertifiedKey<rcgen::KeyPair>) -> (u16, std::thread::JoinHandle<Result<String, String>>) {
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).expect("key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .expect("server config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let venue = std::thread::spawn(move || {
        let (tcp, _) = listener.accept().map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(Duration::from_secs(20))).map_err(|e| e.to_string())?;
        let mut tls = rustls::StreamOwned::new(rustls::ServerConnection::new(Arc::new(cfg)).expect("conn"), tcp);
        // The handshake runs on the first read: an initiator that refuses the certificate ends it.
        let mut first = [0u8; 1];
        tls.read_exact(&mut first).map_err(|e| format!("TLS: {e}"))?;
        let mut venue = Client::over(Box::new(tls));
        venue.buf.push(first[0]);
        let logon = venue.recv(&[98, 108]);
        if !logon.starts_with("A#") {
            return Err(format!("expected a Logon, got {logon}"));
        }
        venue.send("A", 1, false, "98=0|108=30|");
        let sub = venue.recv(&[55]);
        venue.send("W", 2, false, "55=EURUSD|262=Z1|268=1|269=0|270=1.0825|271=3|");
        venue.sync(3, "V1");
        Ok(sub)
    });
    (port, venue)
}

#[test]
fn an_initiator_connects_over_tls_and_checks_the_venues_certificate() {
    let trusted = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let stranger = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let dir = std::env::temp_dir().join(format!("zepto-fix-init-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, trusted.cert.pem()).expect("ca");
    let (good_port, good) = tls_venue(&trusted);
    let (bad_port, bad) = tls_venue(&stranger);
    let (misnamed_port, misnamed) = tls_venue(&trusted);
    let cfg = dir.join("fix.json");
    let session = |port: u16, id: &str| {
        format!(
            r#"{{"connect": "127.0.0.1:{port}", "target_comp_id": "FEED", "tls": {{"ca_file": {ca:?},
                "server_name": "localhost"}}, "subscribe": {{"symbols": ["EURUSD"], "md_req_id": "{id}"}}}}"#
        )
    };
    let good_session = session(good_port, "Z1");
    // Two sessions with one counterparty CompID are one session: the untrusted venue is FEED2.
    let bad_session = session(bad_port, "Z2").replace("\"FEED\"", "\"FEED2\"");
    // A trusted certificate for another name than the one checked.
    let misnamed_session =
        session(misnamed_port, "Z3").replace("\"FEED\"", "\"FEED3\"").replace("\"localhost\"", "\"feed.example\"");
    let list = format!(r#"{{"initiators": [{good_session}, {bad_session}, {misnamed_session}]}}"#);
    std::fs::write(&cfg, list).expect("config");
    let s = Server::start(&["--fix-config", cfg.to_str().expect("path")]);
    assert_eq!(good.join().expect("venue thread"), Ok("V#2 55=EURUSD".to_string()));
    assert_eq!(rows(&s.addr, "SELECT sym, price, size, md_req_id FROM quotes"), ["EURUSD|1.0825|3.0|Z1"]);
    let refused = bad.join().expect("venue thread").expect_err("the stranger's certificate is refused");
    assert!(refused.starts_with("TLS: ") && refused.contains("alert"), "{refused}");
    let refused =
        misnamed.join().expect("venue thread").expect_err("a certificate for localhost is not feed.example's");
    assert!(refused.starts_with("TLS: ") && refused.contains("alert"), "{refused}");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
