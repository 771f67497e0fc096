//! The end-to-end test harness: the real `zeptodb serve` binary on an ephemeral loopback
//! port, spoken to over raw TCP (so malformed HTTP can be sent too).
#![allow(dead_code)] // each test file uses its own part of it

pub mod kafka;
pub mod s3;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    /// What the server printed before it listened (recovery messages).
    pub startup: Vec<String>,
    pub child: Child,
    pub addr: String,
    /// What it printed after it listened: the last [`LOG_LINES`] lines, for a failure's message.
    pub log: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<String>>>,
    /// The thread draining stderr; it ends when the server's stderr closes.
    drain: Option<std::thread::JoinHandle<()>>,
    /// Every line after it listened that tells of a panic (kept whole, unlike `log`).
    panics: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// How many of a server's latest stderr lines [`Server::log`] keeps.
pub const LOG_LINES: usize = 2000;

impl Server {
    pub fn start(args: &[&str]) -> Server {
        Server::start_env(args, &[])
    }

    pub fn start_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeptodb"));
        cmd.arg("serve").args(["--http", "127.0.0.1:0", "--access-log", "off"]).args(args);
        if !args.contains(&"--data-dir") {
            cmd.arg("--in-memory");
        }
        // The PostgreSQL door's default port would be shared by servers started in parallel.
        if !args.contains(&"--pg") {
            cmd.args(["--pg", "127.0.0.1:0"]);
        }
        // So would line protocol over TCP's; a test that wants it says where.
        if !args.contains(&"--ilp-tcp") {
            cmd.args(["--ilp-tcp", "off"]);
        }
        cmd.env_remove("ZEPTO_API_KEY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        Server::spawn(cmd)
    }

    /// Start `cmd` (a `zeptodb serve`, however launched) and wait until it listens.
    pub fn spawn(mut cmd: Command) -> Server {
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("starts zeptodb serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let mut startup = Vec::new();
        let addr = loop {
            let Some(line) = lines.next() else { panic!("the server ended before it listened: {startup:?}") };
            let line = line.expect("reads stderr");
            if let Some(rest) =
                line.split("listening on http://").nth(1).or_else(|| line.split("listening on https://").nth(1))
            {
                break rest.split_whitespace().next().expect("address").to_string();
            }
            startup.push(line);
        };
        // Keep draining stderr so the server never blocks on a full pipe; keep the latest lines.
        let log = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let keep = log.clone();
        let panics = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let keep_panics = panics.clone();
        let drain = std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if line.contains("panicked") || line.contains("FATAL") {
                    keep_panics.lock().unwrap_or_else(|e| e.into_inner()).push(line.clone());
                }
                let mut log = keep.lock().unwrap_or_else(|e| e.into_inner());
                if log.len() == LOG_LINES {
                    log.pop_front();
                }
                log.push_back(line);
            }
        });
        Server { startup, child, addr, log, drain: Some(drain), panics }
    }

    /// The address a door printed at startup: the word after `what` (`"PostgreSQL wire
    /// protocol on "`, `"accepting FIX sessions on "`).
    pub fn printed_addr(&self, what: &str) -> String {
        let line = self
            .startup
            .iter()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no '{what}' in {:?}", self.startup));
        let rest = line.split(what).nth(1).expect("address after the name");
        rest.trim().split([' ', ',']).next().expect("address").to_string()
    }

    /// The lines printed since it listened (the latest [`LOG_LINES`]), one string.
    pub fn log_text(&self) -> String {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.iter().map(String::as_str).collect::<Vec<_>>().join("\n")
    }

    /// SIGTERM, then wait for the exit: a clean stop exits 0 and prints no panic (a test
    /// failure otherwise, with what it printed). Returns the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        if let Some(d) = self.drain.take() {
            let _ = d.join();
        }
        let panics = self.panics.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert!(panics.is_empty(), "the server panicked while it stopped: {panics:?}\n{}", self.log_text());
        assert!(status.success(), "SIGTERM ends the server with exit 0, not {status:?}:\n{}", self.log_text());
        status
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each thread of process `pid` as (name, the cores it may run on in the kernel's list
/// syntax), from `/proc/<pid>/task`.
pub fn thread_cores(pid: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the server's threads") {
        let t = t.expect("a thread").path();
        let (Ok(comm), Ok(status)) =
            (std::fs::read_to_string(t.join("comm")), std::fs::read_to_string(t.join("status")))
        else {
            continue; // ended meanwhile
        };
        let cores = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("Cpus_allowed_list");
        out.push((comm.trim().to_string(), cores.trim().to_string()));
    }
    out
}

/// The cores this test process may run on, ascending (`Cpus_allowed_list`).
pub fn allowed_cores() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").expect("own status");
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).expect("Cpus_allowed_list");
    let mut cores = Vec::new();
    for item in list.trim().split(',') {
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        cores.extend(lo.parse::<usize>().expect("core")..=hi.parse::<usize>().expect("core"));
    }
    cores
}

/// An empty directory of this test process's own under the system's temporary directory.
pub fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zepto-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    pub fn error_code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or("").to_string()
    }
}

/// Send raw bytes, read the response to EOF (`Connection: close`), de-chunk the body.
pub fn raw(addr: &str, request: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    s.write_all(request).expect("writes");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("reads");
    parse_response(&buf)
}

pub fn parse_response(buf: &[u8]) -> Resp {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("header end");
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status");
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))).collect();
    let mut body = buf[end + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let nl = body[i..].windows(2).position(|w| w == b"\r\n").expect("chunk size line") + i;
            let size = usize::from_str_radix(std::str::from_utf8(&body[i..nl]).expect("hex").trim(), 16).expect("size");
            if size == 0 {
                break;
            }
            out.extend_from_slice(&body[nl + 2..nl + 2 + size]);
            i = nl + 2 + size + 2;
        }
        body = out;
    }
    Resp { status, headers, body }
}

pub fn request(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    raw(addr, &bytes)
}

pub fn get(addr: &str, path: &str) -> Resp {
    request(addr, "GET", path, &[], b"")
}

pub fn post(addr: &str, path: &str, body: &str) -> Resp {
    request(addr, "POST", path, &[], body.as_bytes())
}

pub fn post_key(addr: &str, path: &str, key: &str, body: &str) -> Resp {
    request(addr, "POST", path, &[("Authorization", &format!("Bearer {key}"))], body.as_bytes())
}

pub fn sql(addr: &str, q: &str) -> serde_json::Value {
    let r = post(addr, "/", q);
    assert_eq!(r.status, 200, "{q}: {}", r.text());
    r.json()
}

pub fn enc(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// The value of series `name` (without labels) on the server's `/metrics`.
pub fn metric(addr: &str, name: &str) -> i64 {
    let text = get(addr, "/metrics").text();
    let line = text.lines().find(|l| l.split(' ').next() == Some(name));
    let value = line.and_then(|l| l.split(' ').nth(1)).unwrap_or_else(|| panic!("no {name} in\n{text}"));
    value.parse::<f64>().map(|v| v as i64).unwrap_or_else(|_| panic!("{name}: {value}"))
}
