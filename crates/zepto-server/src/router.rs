//! Request routing (SPEC §2) and the per-request frame around every handler: authentication,
//! `X-Request-Id`, metrics, the access log, and errors rendered as JSON.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::access_log::{now_ns, Entry};
use crate::auth::{Principal, Role};
use crate::body::ResponseBody;
use crate::encode::Format;
use crate::error::ApiError;
use crate::ingest::{self, ilp::Precision, IngestFormat, WriteRequest};
use crate::metrics::Route;
use crate::request_body::read_body;
use crate::sql::{self, SqlRequest};
use crate::state::State;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use zepto_io::ipc::IpcCodec;

/// What a handler reports for the log besides its response.
struct Outcome {
    resp: Response<ResponseBody>,
    rows: Option<u64>,
}

fn ok(resp: Response<ResponseBody>) -> Result<Outcome, ApiError> {
    Ok(Outcome { resp, rows: None })
}

fn text(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Response<ResponseBody> {
    let mut r = Response::new(ResponseBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

fn json(status: StatusCode, body: String) -> Response<ResponseBody> {
    text(status, "application/json", body)
}

/// Serve one request; never fails (errors become JSON responses).
pub async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
    remote: SocketAddr,
) -> Result<Response<ResponseBody>, std::convert::Infallible> {
    let t0 = Instant::now();
    let id =
        req.headers().get("x-request-id").filter(|v| !v.is_empty() && v.len() <= 128).cloned().unwrap_or_else(|| {
            let s = state.request_id();
            HeaderValue::from_str(&s).unwrap_or(HeaderValue::from_static("-"))
        });
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let route = route_of(&path);
    let auth = req.headers().get(hyper::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_string);
    let who = state.config.keys.authenticate(auth.as_deref());
    let key_name = who.as_ref().map(|p| p.name.clone()).unwrap_or_else(|_| "?".into());
    // Probes answer without a key (load balancers and orchestrators do not carry one).
    let result = match who {
        _ if route == Route::Probe || route == Route::Console => {
            dispatch(&state, req, &Principal::anonymous_admin(), route).await
        }
        Ok(who) => dispatch(&state, req, &who, route).await,
        Err(e) => Err(e),
    };
    let (mut resp, rows, error) = match result {
        Ok(o) => (o.resp, o.rows, None),
        Err(e) => {
            state.metrics.error(e.code);
            let mut r = json(e.status, e.body());
            if e.status == StatusCode::UNAUTHORIZED {
                r.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer"));
            }
            if let Some(allow) = e.allow {
                r.headers_mut().insert(hyper::header::ALLOW, HeaderValue::from_static(allow));
            }
            if let Some(secs) = e.retry_after {
                r.headers_mut().insert(hyper::header::RETRY_AFTER, HeaderValue::from(secs));
            }
            (r, None, Some(e.code))
        }
    };
    let status = resp.status().as_u16();
    resp.headers_mut().insert("x-request-id", id.clone());
    // No response of ours is to be sniffed into something else (the console trusts this origin).
    resp.headers_mut().insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    let elapsed = t0.elapsed();
    state.metrics.record(route, status, elapsed);
    if let Some(log) = &state.log {
        log.log(&Entry {
            id: id.to_str().unwrap_or("-"),
            remote,
            method: method.as_str(),
            path: &path,
            status,
            micros: elapsed.as_micros(),
            key: &key_name,
            rows,
            error,
        });
    }
    Ok(resp)
}

fn route_of(path: &str) -> Route {
    match path {
        "/" | "/query" | "/exec" | "/exp" | "/subscribe" => Route::Query,
        "/write" | "/api/v2/write" | "/imp" => Route::Write,
        "/ping" | "/health" | "/ready" | "/settings" => Route::Probe,
        "/metrics" => Route::Metrics,
        "/cluster" => Route::Cluster,
        p if p.starts_with("/results/") => Route::Results,
        p if p == "/console" || p.starts_with("/console/") => Route::Console,
        p if p == "/tables" || p.starts_with("/tables/") => Route::Tables,
        p if p.starts_with("/api/ai/") => Route::Ai,
        _ => Route::Other,
    }
}

async fn dispatch(
    state: &Arc<State>,
    req: Request<Incoming>,
    who: &Principal,
    route: Route,
) -> Result<Outcome, ApiError> {
    let method = req.method().clone();
    let params = query_params(req.uri().query().unwrap_or(""))?;
    let path = req.uri().path();
    // HEAD is GET without the body (hyper drops it).
    let get = method == Method::GET || method == Method::HEAD;
    match (route, &method) {
        (Route::Probe, _) if get => probe(state, path),
        (Route::Metrics, _) if get => metrics(state, who),
        (Route::Cluster, _) if get => cluster(state, who, param(&params, "key")),
        (Route::Tables, _) if get => tables(state, who, path),
        (Route::Console, _) if get && state.config.console => {
            let enc = req.headers().get(hyper::header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok());
            let tag = req.headers().get(hyper::header::IF_NONE_MATCH).and_then(|v| v.to_str().ok());
            ok(crate::console::serve(path, enc.unwrap_or(""), tag)?)
        }
        (Route::Results, _) if get => page(state, who, path, &params).await,
        (Route::Results, &Method::DELETE) => {
            who.require(Role::Reader)?;
            state.results.forget(&who.name, result_id(path))?;
            ok(json(StatusCode::OK, "{\"freed\":true}\n".into()))
        }
        (Route::Query, _) if get && (path == "/exec" || path == "/exp") => {
            let site = req.headers().get("sec-fetch-site").and_then(|v| v.to_str().ok()).unwrap_or("none");
            let cross_site = matches!(site, "cross-site" | "same-site");
            let endpoint = if path == "/exp" { crate::questdb::Endpoint::Exp } else { crate::questdb::Endpoint::Exec };
            let (resp, rows) = crate::questdb::exec(state, who, &params, endpoint, cross_site).await?;
            Ok(Outcome { resp, rows })
        }
        (Route::Query, _) if get && path == "/subscribe" => {
            let mut req = req;
            ok(crate::subscribe::start(state, who, &params, &mut req).await?)
        }
        (Route::Query, _) if get => query_get(state, who, &params, req).await,
        (Route::Query, &Method::POST) => query_post(state, who, &params, req).await,
        (Route::Write, &Method::POST) if path == "/imp" => {
            let (resp, rows) = crate::imp::handle(state, who, &params, req).await?;
            Ok(Outcome { resp, rows })
        }
        (Route::Write, &Method::POST) => {
            let influx_v2 = path == "/api/v2/write";
            write_rows(state, who, &params, influx_v2, req).await
        }
        (Route::Ai, _) => {
            let (status, body) = crate::ai::handle(state, req, who, &params).await?;
            ok(json(status, body))
        }
        (Route::Other | Route::Console, _) => Err(ApiError::not_found(format!("no such endpoint: {method} {path}"))),
        _ => {
            let mut e = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                format!("{method} is not allowed on {path}"),
            );
            e.allow = Some(match route {
                Route::Query => "GET, HEAD, POST",
                Route::Write => "POST",
                Route::Results => "GET, HEAD, DELETE",
                _ => "GET, HEAD",
            });
            Err(e)
        }
    }
}

/// `GET /cluster[?key=K]`: the node's membership, partition ownership, offsets and lag
/// (readers); with a key, also the partition Kafka's partitioner gives it and whether this
/// node owns that partition now.
fn cluster(state: &State, who: &Principal, key: Option<&str>) -> Result<Outcome, ApiError> {
    who.require(Role::Reader)?;
    let Some(c) = &state.config.cluster else {
        return Err(ApiError::not_found("this server is not a cluster node (zeptodb serve --cluster BROKERS)"));
    };
    let status = c.status();
    let mut out = crate::cluster::to_json(&status);
    if let (Some(key), serde_json::Value::Object(fields)) = (key, &mut out) {
        let Some(at) = status.locate(key) else {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "KAFKA",
                "the topic's partitions are not known yet",
            ));
        };
        fields.insert("key".into(), serde_json::json!({"key": key, "partition": at.partition, "here": at.here}));
    }
    ok(json(StatusCode::OK, out.to_string()))
}

/// The value of URL parameter `k`, if given.
fn param<'a>(params: &'a [(String, String)], k: &str) -> Option<&'a str> {
    params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

/// `GET /metrics`: for keys that may read every table and every row (it counts the rows of
/// every table: not for keys with grants or bound to a tenant).
fn metrics(state: &State, who: &Principal) -> Result<Outcome, ApiError> {
    who.require(Role::Reader)?;
    if !who.tables.is_all() {
        return Err(ApiError::forbidden(format!(
            "key '{}' is limited to some tables; /metrics covers all of them",
            who.name
        )));
    }
    if let Some(tenant) = who.tables.tenant() {
        return Err(ApiError::forbidden(format!(
            "key '{}' is bound to tenant '{tenant}'; /metrics counts every tenant's rows",
            who.name
        )));
    }
    let held = state.bodies.held();
    state.metrics.body_bytes_in_flight.set(i64::try_from(held).unwrap_or(i64::MAX));
    let busy = state.admission.busy();
    state.metrics.query_slots_busy.set(i64::try_from(busy).unwrap_or(i64::MAX));
    if let Some(c) = &state.config.cluster {
        state.metrics.cluster(&c.status());
    }
    if let Some(f) = &state.config.fix {
        state.metrics.fix(&f.reports());
    }
    ok(text(
        StatusCode::OK,
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
        state.metrics.render(
            state.engine.catalog(),
            crate::metrics::IndexUsage {
                bytes: state.engine.indexes().memory_bytes(),
                rows: state.engine.indexes().covered_rows(),
            },
        ),
    ))
}

/// `GET /query?query=...`: read-only SQL from the URL.
async fn query_get(
    state: &Arc<State>,
    who: &Principal,
    params: &[(String, String)],
    req: Request<Incoming>,
) -> Result<Outcome, ApiError> {
    let Some(sql) = param(params, "query").or_else(|| param(params, "sql")) else {
        // `GET /` with no query: a friendly probe (ClickHouse answers the same way).
        return ok(text(StatusCode::OK, "text/plain; charset=utf-8", "Ok.\n"));
    };
    let format = with_compression(response_format(param(params, "format"), &req)?, params)?;
    let keep = keep_param(params, format)?;
    let r = SqlRequest { sql: sql.to_string(), params: Vec::new(), read_only: true, format, keep, exec: None };
    let (resp, rows) = sql::run(state, who, r).await?;
    Ok(Outcome { resp, rows: Some(rows) })
}

/// `POST /query`: SQL from the URL or the body, or a JSON body with parameters and a format.
async fn query_post(
    state: &Arc<State>,
    who: &Principal,
    params: &[(String, String)],
    req: Request<Incoming>,
) -> Result<Outcome, ApiError> {
    let url_params = params;
    let mut format = response_format(param(params, "format"), &req)?;
    let is_json = content_type(&req).is_some_and(|c| c.starts_with("application/json"));
    let url_sql = param(params, "query").or_else(|| param(params, "sql")).map(str::to_string);
    // SQL bodies are held to --max-query-mb (with room for JSON escapes), not to the
    // ingest limit: the text is checked exactly once parsed out.
    let max_sql = state.config.parse_limits.max_bytes;
    let sql_room = max_sql.saturating_mul(2).saturating_add(64 << 10);
    let (body, _held) = read_body(state, req, sql_room.min(state.config.max_body_bytes)).await.map_err(|e| {
        if e.code == "PAYLOAD_TOO_LARGE" && sql_room < state.config.max_body_bytes {
            sql::query_too_large(None, max_sql)
        } else {
            e
        }
    })?;
    let (sql_text, params) = if is_json {
        let (s, p, f) = sql::parse_json_body(&body)?;
        if let Some(f) = f {
            format = Format::from_name(&f).ok_or_else(|| unknown_format(&f))?;
        }
        (s, p)
    } else if let Some(s) = url_sql {
        (s, Vec::new())
    } else {
        let s = std::str::from_utf8(&body).map_err(|_| ApiError::bad_request("SQL body is not UTF-8"))?;
        (s.to_string(), Vec::new())
    };
    let format = with_compression(format, url_params)?;
    let keep = keep_param(url_params, format)?;
    let r = SqlRequest { sql: sql_text, params, read_only: false, format, keep, exec: None };
    let (resp, rows) = sql::run(state, who, r).await?;
    Ok(Outcome { resp, rows: Some(rows) })
}

/// Rows of a page when `limit=` is not given.
const PAGE_ROWS: usize = 1000;
/// The most rows one page may ask for.
const MAX_PAGE_ROWS: usize = 100_000;

/// `keep=1` (with `limit=N`, default [`PAGE_ROWS`]): keep the result for paging and answer
/// its first page (JSON only).
fn keep_param(params: &[(String, String)], format: Format) -> Result<Option<usize>, ApiError> {
    match param(params, "keep") {
        None | Some("0" | "false") => Ok(None),
        Some("1" | "true") if format == Format::Json => Ok(Some(page_limit(params)?)),
        Some("1" | "true") => Err(ApiError::bad_request("keep=1 answers pages in JSON only (format=json)")),
        Some(v) => Err(ApiError::bad_request(format!("keep={v}: expected 1 or 0"))),
    }
}

/// The `limit=` of a page: 1 to [`MAX_PAGE_ROWS`] rows.
fn page_limit(params: &[(String, String)]) -> Result<usize, ApiError> {
    match param(params, "limit") {
        None => Ok(PAGE_ROWS),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE_ROWS).contains(&n) => Ok(n),
            _ => Err(ApiError::bad_request(format!("limit={v}: expected 1 to {MAX_PAGE_ROWS} rows"))),
        },
    }
}

/// The id in `/results/{id}`.
fn result_id(path: &str) -> &str {
    path.strip_prefix("/results/").unwrap_or("")
}

/// `GET /results/{id}?offset=N&limit=M`: rows N .. N+M of a result kept by `keep=1`, in the
/// JSON of `/query` with `"result":{"id","total_rows","offset"}`.
async fn page(
    state: &Arc<State>,
    who: &Principal,
    path: &str,
    params: &[(String, String)],
) -> Result<Outcome, ApiError> {
    who.require(Role::Reader)?;
    let id = result_id(path);
    let offset = match param(params, "offset") {
        None => 0,
        Some(v) => {
            v.parse::<usize>().map_err(|_| ApiError::bad_request(format!("offset={v}: expected a row number")))?
        }
    };
    let limit = page_limit(params)?;
    let kept = state.results.get(&who.name, id)?;
    let total = kept.result.row_count();
    let tail = sql::result_member(Some(id), None, total, offset.min(total));
    let (body, rows) = sql::encode_page(state, kept, offset, limit, tail).await?;
    Ok(Outcome { resp: text(StatusCode::OK, "application/json", body), rows: Some(rows as u64) })
}

/// The ingest format of a write: `format=`, else line protocol for InfluxDB's path or without
/// `table=`, else what the content type says (CSV by default).
fn ingest_format(
    params: &[(String, String)],
    influx_v2: bool,
    req: &Request<Incoming>,
) -> Result<IngestFormat, ApiError> {
    Ok(match param(params, "format") {
        Some(f) => IngestFormat::from_name(f).ok_or_else(|| unknown_format(f))?,
        None if influx_v2 || param(params, "table").is_none() => IngestFormat::Ilp,
        None => match content_type(req) {
            Some(c) if c.starts_with("application/vnd.apache.arrow") => IngestFormat::Arrow,
            Some(c) if c.contains("ndjson") || c.contains("jsonl") || c.starts_with("application/json") => {
                IngestFormat::Jsonl
            }
            _ => IngestFormat::Csv,
        },
    })
}

/// `POST /write` and `POST /api/v2/write`: rows in one of the ingest formats.
async fn write_rows(
    state: &Arc<State>,
    who: &Principal,
    params: &[(String, String)],
    influx_v2: bool,
    req: Request<Incoming>,
) -> Result<Outcome, ApiError> {
    who.require(Role::Writer)?;
    let table = param(params, "table").map(str::to_string);
    let format = ingest_format(params, influx_v2, &req)?;
    let precision = match param(params, "precision") {
        Some(p) => Precision::parse(p)
            .ok_or_else(|| ApiError::bad_request(format!("precision '{p}' is not one of ns, us, ms, s, m, h")))?,
        None => Precision::NANOS,
    };
    let (body, held) = read_body(state, req, state.config.max_body_bytes).await?;
    let wr = WriteRequest { format, table, precision, now_ns: now_ns() };
    let (engine, who2, cluster) = (state.engine.clone(), who.clone(), state.config.cluster.clone());
    let n = state
        .run_ingest(move || {
            let _held = held;
            match cluster {
                // A cluster node's batches go through Kafka to the nodes owning their partitions.
                Some(c) => c.write(&engine, &who2, &wr, &body),
                None => ingest::write_owned(&engine, &who2, &wr, body),
            }
        })
        .await??;
    state.metrics.ingested(format.name(), n as u64);
    let resp = if influx_v2 {
        // InfluxDB clients expect 204 No Content.
        let mut r = Response::new(ResponseBody::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        r
    } else {
        json(StatusCode::OK, format!("{{\"rows_written\":{n}}}\n"))
    };
    Ok(Outcome { resp, rows: Some(n as u64) })
}

fn unknown_format(f: &str) -> ApiError {
    ApiError::bad_request(format!("unknown format '{f}'"))
}

fn content_type(req: &Request<Incoming>) -> Option<String> {
    req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(|s| s.to_ascii_lowercase())
}

fn response_format(param: Option<&str>, req: &Request<Incoming>) -> Result<Format, ApiError> {
    if let Some(f) = param {
        return Format::from_name(f).ok_or_else(|| unknown_format(f));
    }
    let accept = req.headers().get(hyper::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    Ok(Format::from_accept(accept).unwrap_or(Format::Json))
}

/// `compression=lz4|zstd|none` on an Arrow answer: its buffers compressed (the IPC format's
/// own compression); any other format takes `none` only.
fn with_compression(format: Format, params: &[(String, String)]) -> Result<Format, ApiError> {
    let Some(c) = param(params, "compression") else { return Ok(format) };
    let codec = match c.to_ascii_lowercase().as_str() {
        "none" | "" if matches!(format, Format::Arrow(_)) => return Ok(Format::Arrow(None)),
        "none" | "" => return Ok(format),
        name => Some(
            IpcCodec::from_name(name)
                .ok_or_else(|| ApiError::bad_request(format!("compression={c}: expected lz4, zstd or none")))?,
        ),
    };
    match format {
        Format::Arrow(_) => Ok(Format::Arrow(codec)),
        _ => Err(ApiError::bad_request(format!("compression={c} compresses Arrow answers (format=arrow) only"))),
    }
}

/// `GET /settings` as QuestDB's ILP clients read it to pick a line-protocol version: at the
/// top level (older clients) and under `config` (newer ones). Versions 1 (text) and 2 (binary
/// doubles and double arrays) are what we take; the clients pick 2.
fn settings(state: &State) -> String {
    let config = format!(
        "\"release.type\":\"OSS\",\"release.version\":\"zeptodb {}\",\"acl.enabled\":{},\
         \"line.proto.support.versions\":[1,2],\"line.proto.default.version\":2,\
         \"ilp.proto.transports\":[\"http\"],\"cairo.max.file.name.length\":127",
        env!("CARGO_PKG_VERSION"),
        !state.config.keys.is_empty()
    );
    format!("{{{config},\"config\":{{{config}}}}}\n")
}

fn probe(state: &State, path: &str) -> Result<Outcome, ApiError> {
    match path {
        "/ping" => ok(text(StatusCode::OK, "text/plain; charset=utf-8", "Ok")),
        "/settings" => ok(json(StatusCode::OK, settings(state))),
        "/health" => {
            // Serving, but with data dropped at start: say so (a probe still gets its 200).
            let recovery = match &state.config.recovery {
                None => String::new(),
                Some(r) => format!(
                    ",\"wal_recovery\":{{\"corruption\":true,\"records_dropped\":{},\"intact_rows_dropped\":{},\"message\":{}}}",
                    r.records_dropped,
                    r.intact_rows_dropped,
                    serde_json::Value::String(r.message.clone())
                ),
            };
            ok(json(
                StatusCode::OK,
                format!(
                    "{{\"status\":\"{}\",\"version\":\"{}\",\"uptime_s\":{:.3}{recovery}}}\n",
                    if recovery.is_empty() { "ok" } else { "degraded" },
                    env!("CARGO_PKG_VERSION"),
                    state.started.elapsed().as_secs_f64()
                ),
            ))
        }
        _ => {
            if state.ready.load(Ordering::Relaxed) {
                ok(json(StatusCode::OK, "{\"ready\":true}\n".into()))
            } else {
                ok(json(StatusCode::SERVICE_UNAVAILABLE, "{\"ready\":false}\n".into()))
            }
        }
    }
}

/// `GET /tables` (catalog) and `GET /tables/{name}` (schema).
fn tables(state: &State, who: &Principal, path: &str) -> Result<Outcome, ApiError> {
    who.require(Role::Reader)?;
    let catalog = state.engine.catalog();
    let describe = |name: &str| -> Option<String> {
        let t = catalog.snapshot(name).ok()?;
        let mut s = String::from("{\"name\":");
        zepto_io::format::json_escape(t.name(), &mut s);
        // A tenant's key is told its own rows, never the table's (`visible_extent`).
        // A view it may not read (every tenant's aggregates): null.
        let seen = zepto_sql::system::extent::visible_extent(catalog, &t, &who.tables);
        let (rows, partitions) =
            seen.map_or(("null".into(), "null".into()), |e| (e.rows.to_string(), e.partitions.to_string()));
        s.push_str(&format!(",\"rows\":{rows},\"partitions\":{partitions},\"columns\":["));
        for (i, c) in t.schema().columns.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str("{\"name\":");
            zepto_io::format::json_escape(&c.name, &mut s);
            s.push_str(&format!(",\"type\":\"{}\"", c.data_type.sql_name()));
            if t.key_col() == Some(i) {
                s.push_str(",\"role\":\"partition key\"");
            } else if t.ts_col() == Some(i) {
                s.push_str(",\"role\":\"designated timestamp\"");
            }
            s.push('}');
        }
        s.push_str("]}");
        Some(s)
    };
    match path.strip_prefix("/tables/") {
        None | Some("") => {
            let list: Vec<String> = catalog
                .table_names()
                .into_iter()
                .filter(|n| who.tables.allows(n))
                .filter_map(|n| describe(&n))
                .collect();
            ok(json(StatusCode::OK, format!("{{\"tables\":[{}]}}\n", list.join(","))))
        }
        Some(name) => {
            let name = percent_decode(name)?;
            who.require_table(&name)?;
            match describe(&name) {
                Some(s) => ok(json(StatusCode::OK, s + "\n")),
                None => Err(ApiError::new(
                    StatusCode::NOT_FOUND,
                    "TABLE_NOT_FOUND",
                    format!("table '{name}' does not exist"),
                )),
            }
        }
    }
}

/// `a=1&b=x%20y` → pairs, percent-decoded (`+` is a space, as in HTML forms).
pub fn query_params(q: &str) -> Result<Vec<(String, String)>, ApiError> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Ok((percent_decode(&k.replace('+', " "))?, percent_decode(&v.replace('+', " "))?))
        })
        .collect()
}

fn percent_decode(s: &str) -> Result<String, ApiError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let v = hex
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| ApiError::bad_request(format!("bad percent-escape at byte {i} of the URL query")))?;
            out.push(v);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ApiError::bad_request("URL query is not UTF-8 after decoding"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_query_strings() {
        let p = query_params("query=SELECT+1%2C%202&format=csv&x").expect("decodes");
        assert_eq!(p[0], ("query".to_string(), "SELECT 1, 2".to_string()));
        assert_eq!(p[1], ("format".to_string(), "csv".to_string()));
        assert_eq!(p[2], ("x".to_string(), String::new()));
        assert!(query_params("q=%zz").is_err());
        assert!(query_params("q=%c3").is_err(), "invalid UTF-8");
        assert_eq!(query_params("q=%C3%A9").expect("é")[0].1, "é");
    }
}
