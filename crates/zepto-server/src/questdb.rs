//! QuestDB's REST query API on our HTTP port, for the scripts, consoles and benchmark tools
//! written against QuestDB: `GET /exp?query=...` answers as a CSV file (names and text
//! quoted), and `GET /exec?query=...` in QuestDB's JSON shape
//!
//! ```text
//! {"query":"...","columns":[{"name":"ts","type":"TIMESTAMP"},...],"timestamp":-1,
//!  "dataset":[["2024-01-02T09:30:00.000000Z",...],...],"count":2}
//! ```
//!
//! with `limit=n` / `limit=lo,hi` (rows lo to hi, from 1), `count=true` (every row counted),
//! `nm=true` (only `dataset` and `count`) and `timings=true`; a statement without rows answers `{"ddl":"OK"}` (or `dml`);
//! an error is `{"query":"...","error":"...","position":n}` with status 400. Type names and
//! values are QuestDB's (`LONG`, `INT`, timestamps to the microsecond with a `Z`, NaN as
//! `null`: [`crate::exec_json`]). The query runs as any other on this door: same limits, roles
//! and streaming.

use crate::auth::Principal;
use crate::encode::Format;
use crate::error::ApiError;
use crate::exec_json::ExecShape;
use crate::sql::{self, SqlRequest};
use crate::state::State;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use std::sync::Arc;
use zepto_io::format::json_escape;

/// QuestDB's two query endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/exec`: JSON; statements of every kind.
    Exec,
    /// `/exp`: CSV, reads only, sent as a file.
    Exp,
}

/// `GET /exec` or `GET /exp`: run `query` and answer as QuestDB does. Errors are QuestDB's
/// shape, not ours.
///
/// A browser's request from another site (`Sec-Fetch-Site: cross-site` or `same-site`, which
/// scripts and QuestDB's clients do not send) may only read: a page cannot make a visitor's
/// browser change data through a loopback server without keys.
pub async fn exec(
    state: &Arc<State>,
    who: &Principal,
    params: &[(String, String)],
    endpoint: Endpoint,
    cross_site: bool,
) -> Result<(Response<crate::body::ResponseBody>, Option<u64>), ApiError> {
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let Some(query) = get("query").filter(|q| !q.trim().is_empty()) else {
        // QuestDB's own answer, its position a string.
        let body = "{\"error\":\"empty query\",\"query\":\"\",\"position\":\"0\"}\n";
        let mut r = Response::new(crate::body::ResponseBody::full(body));
        *r.status_mut() = StatusCode::BAD_REQUEST;
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
        return Ok((r, None));
    };
    let yes = |k: &str| get(k).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let (lo, hi) = match get("limit").map(|v| limit(v, endpoint)).transpose() {
        Ok(l) => l.unwrap_or((0, None)),
        Err(message) => return Ok((error_response(StatusCode::BAD_REQUEST, query, &message, 0), None)),
    };
    let shape = ExecShape {
        query: query.to_string(),
        lo,
        hi,
        count: yes("count"),
        no_meta: yes("nm"),
        timings: yes("timings"),
    };
    let req = SqlRequest {
        sql: query.to_string(),
        params: Vec::new(),
        read_only: cross_site || endpoint == Endpoint::Exp,
        format: if endpoint == Endpoint::Exp { Format::QuestDbCsv } else { Format::QuestDb },
        keep: None,
        exec: Some(shape),
    };
    match sql::run(state, who, req).await {
        Ok((mut resp, rows)) => {
            if endpoint == Endpoint::Exp {
                let name = get("filename").filter(|f| is_file_name(f)).unwrap_or("questdb-query");
                let disposition = format!("attachment; filename=\"{name}.csv\"");
                if let Ok(v) = HeaderValue::from_str(&disposition) {
                    resp.headers_mut().insert(hyper::header::CONTENT_DISPOSITION, v);
                }
            }
            Ok((resp, Some(rows)))
        }
        Err(e) if e.status == StatusCode::UNAUTHORIZED || e.status == StatusCode::FORBIDDEN => Err(e),
        Err(e) => {
            let position = position(query, e.line, e.column);
            // A statement's fault is QuestDB's 400; the server's state (busy, out of memory,
            // timed out, shutting down) keeps its status, so a client knows to retry.
            let status = if e.status.is_server_error() || e.status == StatusCode::TOO_MANY_REQUESTS {
                e.status
            } else {
                StatusCode::BAD_REQUEST
            };
            Ok((error_response(status, query, &e.message, position), None))
        }
    }
}

/// Whether `f` may name the downloaded file: letters, digits, `-`, `_`, `.`, at most 100.
fn is_file_name(f: &str) -> bool {
    !f.is_empty() && f.len() <= 100 && f.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `limit=n` (the first n rows) or `limit=lo,hi`: the rows `skip..end` of the result. `/exec`
/// reads `lo,hi` as the lo-th to the hi-th row counted from 1; `/exp` as SQL's `LIMIT lo,hi`,
/// the rows after the first lo up to the hi-th (so QuestDB answers each).
fn limit(v: &str, endpoint: Endpoint) -> Result<(usize, Option<usize>), String> {
    let num = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("invalid limit '{v}': expected n or lo,hi"));
    match v.split_once(',') {
        Some((lo, hi)) => {
            let lo = num(lo)?;
            let skip = if endpoint == Endpoint::Exec { lo.saturating_sub(1) } else { lo };
            let end = num(hi)?;
            Ok((skip, Some(end.max(skip))))
        }
        None => Ok((0, Some(num(v)?))),
    }
}

/// The 0-based character offset in `sql` of `line`:`column` (1-based), 0 when unknown.
fn position(sql: &str, line: Option<u64>, column: Option<u64>) -> usize {
    let (Some(line), Some(column)) = (line, column) else { return 0 };
    let before: usize = sql.split('\n').take(line.saturating_sub(1) as usize).map(|l| l.chars().count() + 1).sum();
    before + column.saturating_sub(1) as usize
}

fn error_response(
    status: StatusCode,
    query: &str,
    message: &str,
    position: usize,
) -> Response<crate::body::ResponseBody> {
    let mut s = String::from("{\"query\":");
    json_escape(query, &mut s);
    s.push_str(",\"error\":");
    json_escape(message, &mut s);
    s.push_str(&format!(",\"position\":{position}}}\n"));
    let mut r = Response::new(crate::body::ResponseBody::full(s));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json; charset=utf-8"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_positions_read_as_questdb_writes_them() {
        let exec = |v| limit(v, Endpoint::Exec);
        assert_eq!(exec("10"), Ok((0, Some(10))));
        assert_eq!(exec("10,20"), Ok((9, Some(20))), "the 10th to the 20th row");
        assert_eq!(exec("0,2"), Ok((0, Some(2))));
        assert_eq!(exec("20,10"), Ok((19, Some(19))));
        assert!(exec("x").is_err() && exec("-5").is_err());
        assert_eq!(limit("2,3", Endpoint::Exp), Ok((2, Some(3))), "after the first 2, to the 3rd");
        assert!(is_file_name("trades-2024.01") && !is_file_name("a\"b") && !is_file_name("../x"));
        assert_eq!(position("SELECT x\nFROM nope", Some(2), Some(6)), 14);
        assert_eq!(position("SELECT é, y", Some(1), Some(9)), 8);
        assert_eq!(position("q", None, None), 0);
    }
}
