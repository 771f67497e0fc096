//! `zeptodb sql --url http://host:port`: the same shell and one-shot runs against a server.
//!
//! Results travel as Arrow IPC (`?format=arrow`) and are rendered locally exactly as local
//! results are; DDL/DML statuses come back in the `X-Zepto-Status` header. A small blocking
//! HTTP/1.1 client over one keep-alive connection: the shell sends one request at a time, so
//! nothing more is needed. `https://` is not supported by the CLI yet (put it behind a local
//! TLS terminator, or use curl).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use zepto_sql::exec::Batch;
use zepto_sql::plan::Field;
use zepto_sql::QueryResult;

/// An error as the server reported it (or a transport failure, code `IO`).
#[derive(Debug)]
pub struct RemoteError {
    pub code: String,
    pub message: String,
}

pub struct Remote {
    host: String,
    key: Option<String>,
    conn: Option<BufReader<TcpStream>>,
}

fn io_err(e: impl std::fmt::Display) -> RemoteError {
    RemoteError { code: "IO".into(), message: e.to_string() }
}

impl Remote {
    pub fn new(url: &str) -> Result<Remote, String> {
        let rest = if let Some(r) = url.strip_prefix("http://") {
            r
        } else if url.starts_with("https://") {
            return Err("--url: https is not supported by the CLI yet; use http:// (loopback) or curl".into());
        } else {
            url
        };
        let host = rest.trim_end_matches('/').to_string();
        if host.is_empty() || host.contains('/') {
            return Err(format!("--url: '{url}' is not like http://127.0.0.1:8123"));
        }
        let key = std::env::var("ZEPTO_API_KEY").ok().filter(|k| !k.is_empty());
        Ok(Remote { host, key, conn: None })
    }

    fn connect(&mut self) -> Result<&mut BufReader<TcpStream>, RemoteError> {
        if self.conn.is_none() {
            let s =
                TcpStream::connect(&self.host).map_err(|e| io_err(format!("cannot connect to {}: {e}", self.host)))?;
            s.set_read_timeout(Some(Duration::from_secs(3600))).map_err(io_err)?;
            let _ = s.set_nodelay(true);
            self.conn = Some(BufReader::new(s));
        }
        self.conn.as_mut().ok_or_else(|| io_err("no connection"))
    }

    /// Run a script on the server; the last statement's result.
    pub fn execute(&mut self, sql: &str) -> Result<QueryResult, RemoteError> {
        // One retry on a fresh connection: the server may have closed an idle keep-alive one.
        match self.round_trip(sql) {
            Ok(r) => Ok(r),
            Err(e) if e.code == "IO" => {
                self.conn = None;
                self.round_trip(sql)
            }
            Err(e) => Err(e),
        }
    }

    fn round_trip(&mut self, sql: &str) -> Result<QueryResult, RemoteError> {
        let mut head = format!(
            "POST /?format=arrow HTTP/1.1\r\nHost: {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n",
            self.host,
            sql.len()
        );
        if let Some(k) = &self.key {
            head.push_str(&format!("Authorization: Bearer {k}\r\n"));
        }
        head.push_str("\r\n");
        let conn = self.connect()?;
        let s = conn.get_mut();
        s.write_all(head.as_bytes()).and_then(|_| s.write_all(sql.as_bytes())).map_err(io_err)?;
        let (status, headers, body) = read_response(conn).map_err(|e| {
            self.conn = None;
            io_err(e)
        })?;
        let header = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
        if header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close")) {
            self.conn = None;
        }
        if status >= 300 {
            return Err(parse_error(status, &body));
        }
        if let Some(st) = header("x-zepto-status") {
            return Ok(QueryResult::status(st));
        }
        let (defs, cols, rows) = zepto_io::ipc::read_ipc_stream_any(&body).map_err(io_err)?;
        let fields = defs.into_iter().map(|d| Field::new(d.name, d.data_type)).collect();
        Ok(QueryResult::rows(fields, Batch::new(cols, rows)))
    }
}

fn parse_error(status: u16, body: &[u8]) -> RemoteError {
    let fallback =
        || RemoteError { code: format!("HTTP_{status}"), message: String::from_utf8_lossy(body).into_owned() };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else { return fallback() };
    match (v["error"]["code"].as_str(), v["error"]["message"].as_str()) {
        (Some(c), Some(m)) => RemoteError { code: c.into(), message: m.into() },
        _ => fallback(),
    }
}

type Response = (u16, Vec<(String, String)>, Vec<u8>);

/// One HTTP/1.1 response: status line, headers, and a Content-Length or chunked body.
fn read_response(r: &mut BufReader<TcpStream>) -> std::io::Result<Response> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(bad("the server closed the connection"));
    }
    let status: u16 = line.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| bad("bad status line"))?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line)?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let get = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            line.clear();
            r.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                line.clear();
                r.read_line(&mut line)?; // the empty line after the last chunk
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..])?;
            line.clear();
            r.read_line(&mut line)?;
        }
    } else if let Some(n) = get("content-length") {
        let n: usize = n.parse().map_err(|_| bad("bad Content-Length"))?;
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    } else {
        r.read_to_end(&mut body)?;
    }
    Ok((status, headers, body))
}
