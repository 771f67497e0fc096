//! The SQL endpoint: statements in (text, or JSON with parameters), results out in the asked
//! format, streamed when large.
//!
//! Statements are parsed and checked against the caller's role on the async thread (a few
//! microseconds), then run on the blocking pool under a [`QueryControl`]: the query stops at
//! its next check when it passes its deadline or memory limit, when the client disconnects
//! (the response body's guard cancels it on drop), or when the server shuts down. The control
//! goes to the engine explicitly, in a [`RunContext`] made on each thread that works on the
//! request (the parse thread, then the query thread: memory is counted per thread), so
//! parsing, binding, execution and the final copy of the result all stop at their next check.

use crate::admission::{CancelOnDrop, Refused, Slot};
use crate::auth::Principal;
use crate::body::ResponseBody;
use crate::encode::{Encoder, Format};
use crate::error::ApiError;
use crate::state::State;
use bytes::Bytes;
use hyper::{Response, StatusCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use zepto_sql::interrupt::{QueryControl, RunContext};
use zepto_sql::parser::ast::Statement;
use zepto_sql::parser::{parse_script, ParamValue};
use zepto_sql::{Access, QueryResult, SqlError};

/// A result smaller than this is sent whole, with a Content-Length; larger ones stream.
const STREAM_THRESHOLD: usize = 1 << 20;
/// Bytes per streamed chunk.
const CHUNK_BYTES: usize = 256 << 10;
/// How long a streamed response may wait for a client that does not read.
const STALL_LIMIT: Duration = Duration::from_secs(60);

/// One SQL request.
pub struct SqlRequest {
    /// The SQL text: one statement or a `;`-separated script.
    pub sql: String,
    /// Values of the parameters (`?` numbered left to right, or `$1`, `$2`, ...).
    pub params: Vec<ParamValue>,
    /// GET requests may only read.
    pub read_only: bool,
    /// How to write the result.
    pub format: Format,
    /// Keep the result on the server and answer its first page of this many rows (JSON; the
    /// console's paging, [`crate::results`]).
    pub keep: Option<usize>,
    /// QuestDB's `/exec`: how its answer is shaped ([`Format::QuestDb`]).
    pub exec: Option<crate::exec_json::ExecShape>,
}

/// `{"sql": "...", "params": [...]}` (params optional; `format` optional too).
pub fn parse_json_body(body: &[u8]) -> Result<(String, Vec<ParamValue>, Option<String>), ApiError> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("request body is not JSON: {e}")))?;
    let obj = v.as_object().ok_or_else(|| ApiError::bad_request("expected a JSON object {\"sql\": ...}"))?;
    let sql = obj
        .get("sql")
        .or_else(|| obj.get("query"))
        .and_then(|s| s.as_str())
        .ok_or_else(|| ApiError::bad_request("missing \"sql\" (a string)"))?
        .to_string();
    let params = match obj.get("params") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json_param(p).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "params[{i}]: {p} is neither a scalar nor a vector (a list of finite numbers)"
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ApiError::bad_request("\"params\" must be a list")),
    };
    let format = obj.get("format").and_then(|f| f.as_str()).map(str::to_string);
    Ok((sql, params, format))
}

fn json_param(v: &serde_json::Value) -> Option<ParamValue> {
    use serde_json::Value as J;
    Some(match v {
        J::Null => ParamValue::Null,
        J::Bool(b) => ParamValue::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => ParamValue::Int(i),
            None => ParamValue::Float(n.as_f64()?),
        },
        J::String(s) => ParamValue::Str(s.clone()),
        // A list of numbers: a vector (FLOAT[n]), e.g. the query of a nearest-neighbour search.
        J::Array(a) if !a.is_empty() => ParamValue::Vector(
            a.iter()
                .map(|x| x.as_f64().filter(|f| f.abs() <= f64::from(f32::MAX)).map(|f| f as f32))
                .collect::<Option<Vec<f32>>>()?,
        ),
        _ => return None,
    })
}

/// A statement in flight: known to shutdown (which cancels it) and counted on `/metrics`;
/// dropped (request finished, or client gone), it cancels the statement and forgets it.
pub(crate) struct Running {
    state: Arc<State>,
    id: u64,
    ctl: Arc<QueryControl>,
}

impl Running {
    /// The statement under `ctl` starts.
    pub(crate) fn start(state: &Arc<State>, ctl: &Arc<QueryControl>) -> Running {
        let id = state.next_id();
        state.add_running(id, ctl.clone());
        state.metrics.queries_running.inc();
        Running { state: state.clone(), id, ctl: ctl.clone() }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.ctl.cancel();
        self.state.remove_running(self.id);
        self.state.metrics.queries_running.dec();
    }
}

/// What the blocking pool is handed.
enum Work {
    Statements(Vec<Statement>),
    Prepared(zepto_sql::Prepared),
    /// Ran inline, but too large to encode there.
    Done(zepto_sql::QueryResult, f64),
}

/// Reads whose scans cover at most this many rows run on the async thread (here and in the
/// PostgreSQL door).
pub const INLINE_ROWS: usize = 32 << 10;
/// ... and are encoded there too when their result has at most this many rows.
pub const INLINE_ENCODE_ROWS: usize = 4096;

/// Binding a query runs its uncorrelated subqueries; only queries without any bind in
/// microseconds, so only those are considered for the inline path.
pub fn binds_cheaply(q: &zepto_sql::parser::ast::Query) -> bool {
    use zepto_sql::parser::ast::Expr;
    let mut q = q.clone();
    let mut found = false;
    zepto_sql::parser::visit::rewrite_query(&mut q, &mut |e| {
        found |= matches!(e, Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. });
    });
    !found
}

/// Whether query `q`, parsed from `sql_len` bytes of SQL, is bound on the async thread that
/// received it: short SQL ([`INLINE_PARSE_BYTES`]; binding a 400k-item `IN` list would hold a
/// thread every other request needs) without subqueries ([`binds_cheaply`]).
pub fn binds_inline(q: &zepto_sql::parser::ast::Query, sql_len: usize) -> bool {
    sql_len <= INLINE_PARSE_BYTES && binds_cheaply(q)
}

enum Head {
    /// The whole body, its row count, and the DDL/DML status if the result is one.
    Full(Vec<u8>, usize, Option<String>, Partial),
    Stream(usize, Partial),
}

/// The partitions a cluster answer lacks (`SET allow_partial = on`), as the
/// `x-zepto-partial` header says them (`2,5`); `None` for a whole answer.
type Partial = Option<String>;

fn partial(r: &QueryResult) -> Partial {
    let m = &r.missing_partitions;
    (!m.is_empty()).then(|| m.iter().map(i32::to_string).collect::<Vec<_>>().join(","))
}

/// Check every statement against the request: GET may only read, and the key's role must
/// allow what each statement needs.
pub fn check_statements(stmts: &[Statement], who: &Principal, read_only: bool) -> Result<(), ApiError> {
    for s in stmts {
        let need = s.access();
        if read_only && need != Access::Read {
            let mut e = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "READ_ONLY",
                "GET runs read-only statements; send statements that change data with POST",
            );
            e.allow = Some("POST");
            return Err(e);
        }
        if !who.role.allows(need) {
            return Err(ApiError::forbidden(format!(
                "key '{}' has role {}, which may not run {}",
                who.name,
                who.role,
                match need {
                    Access::Read => "reads",
                    Access::Write => "writes (INSERT, CREATE, ALTER)",
                    Access::Admin => "DROP TABLE or COPY of a file",
                }
            )));
        }
    }
    Ok(())
}

/// Where a streamed answer goes, and what sends it: the response's channel, the statement's
/// control, the flag its body reads to tell a complete stream from a cut one, the query slots
/// its encoding runs under, the runtime its waits run on.
#[derive(Clone)]
struct Stream {
    tx: ChunkTx,
    ctl: Arc<QueryControl>,
    done: Arc<AtomicBool>,
    admission: Arc<crate::admission::Admission>,
    rt: tokio::runtime::Handle,
}

/// The rest of a streamed answer, sent at the client's pace (`enc` has more to encode and the
/// stream no room). Encoding runs under a query slot, on the query threads, as the statement
/// did; waiting for the client holds neither a slot nor a thread. Before, the query thread
/// waited on a slow client with its slot, up to [`STALL_LIMIT`] per chunk, so a few clients
/// that stopped reading kept every heavy statement out. A client that takes nothing for
/// [`STALL_LIMIT`] loses its response, as does a cancelled statement (shutdown, the client
/// gone): the body then ends with an error, never as a complete answer.
async fn drain(mut enc: Encoder, s: Stream) {
    loop {
        let Some(room) = room(&s).await else { return };
        let Some(slot) = slot(&s).await else { return };
        let job = {
            let s = s.clone();
            move || fill(enc, room, &s)
        };
        match s.admission.run_in(slot, job).await {
            Ok(Some(back)) => enc = back,
            _ => return,
        }
    }
}

/// A place in the response stream for the next chunk, waited for without a thread: `None`
/// when the stream is over (the client gone, the statement cancelled, or nothing taken for
/// [`STALL_LIMIT`]).
async fn room(s: &Stream) -> Option<Room> {
    let t0 = Instant::now();
    while t0.elapsed() < STALL_LIMIT {
        if s.ctl.is_cancelled() {
            return None;
        }
        // Slices of a second, to see a cancellation while the client takes its time.
        match tokio::time::timeout(Duration::from_secs(1), s.tx.clone().reserve_owned()).await {
            Ok(Ok(p)) => return Some(p),
            Ok(Err(_)) => return None,
            Err(_) => {}
        }
    }
    None
}

/// A query slot to encode the next chunks under, waited for at most [`STALL_LIMIT`] (each
/// wait of the admission's own `--queue-timeout` retried): `None` when the statement was
/// cancelled, the server stops, or every slot stayed busy that long.
async fn slot(s: &Stream) -> Option<crate::admission::Slot> {
    let t0 = Instant::now();
    loop {
        match s.admission.admit().await {
            Ok(slot) => return Some(slot),
            Err(crate::admission::Refused::Busy { .. }) if !s.ctl.is_cancelled() && t0.elapsed() < STALL_LIMIT => {}
            Err(_) => return None,
        }
    }
}

/// A place in the response stream, held.
type Room = mpsc::OwnedPermit<Result<Bytes, std::io::Error>>;

/// Encode and send chunks while the stream has room: the encoder back when the stream is
/// full and more is to come ([`drain`] waits for the client), `None` when the answer is done
/// (marked complete first) or the stream over.
fn fill(mut enc: Encoder, mut room: Room, s: &Stream) -> Option<Encoder> {
    loop {
        let mut chunk = Vec::new();
        let more = match next_chunk(&mut enc, &mut chunk) {
            Ok(more) => more,
            Err(e) => {
                room.send(Err(std::io::Error::other(e.message)));
                return None;
            }
        };
        if !more {
            s.done.store(true, Ordering::Release);
        }
        let tx = if chunk.is_empty() { room.release() } else { room.send(Ok(Bytes::from(chunk))) };
        if !more || s.ctl.is_cancelled() {
            return None;
        }
        room = match tx.try_reserve_owned() {
            Ok(p) => p,
            Err(mpsc::error::TrySendError::Full(_)) => return Some(enc),
            Err(mpsc::error::TrySendError::Closed(_)) => return None,
        };
    }
}

/// Up to [`CHUNK_BYTES`] of the answer appended to `chunk`; `false` once all is written.
fn next_chunk(enc: &mut Encoder, chunk: &mut Vec<u8>) -> Result<bool, ApiError> {
    let mut more = true;
    while more && chunk.len() < CHUNK_BYTES {
        more = enc.next_chunk(chunk)?;
    }
    Ok(more)
}

/// A single read: bind it here (microseconds); if its plan is linear and its scans cover at most
/// INLINE_ROWS rows, run it here too, saving the two thread hand-offs that are most of a point
/// query's latency, and answer at once when the result is small. Otherwise, what is left for
/// the blocking pool.
fn run_small_read(
    state: &State,
    engine: &zepto_sql::Engine,
    q: &zepto_sql::parser::ast::Query,
    format: Format,
    exec: Option<&crate::exec_json::ExecShape>,
    ctl: &Arc<QueryControl>,
) -> Result<Result<(Response<ResponseBody>, u64), Work>, ApiError> {
    let run = RunContext::new(Some(ctl.clone()));
    let p = engine.prepare_in(&run, q)?;
    if !runs_inline(&p) {
        return Ok(Err(Work::Prepared(p)));
    }
    state.metrics.queries.inc();
    let t0 = Instant::now();
    // The encoder walks the result's batches as they are: no concatenated copy.
    let r = engine.run_prepared_in(&run, &p)?;
    let elapsed_us = t0.elapsed().as_secs_f64() * 1e6;
    if r.row_count() > INLINE_ENCODE_ROWS {
        return Ok(Err(Work::Done(r, elapsed_us)));
    }
    let mut enc = encoder(format, exec, &r, elapsed_us)?;
    let mut buf = Vec::new();
    while enc.next_chunk(&mut buf)? {}
    let rows = r.row_count();
    state.metrics.rows_returned.inc_by(rows as u64);
    let resp = Response::builder()
        .status(StatusCode::OK)
        .header("content-type", format.content_type())
        .body(ResponseBody::full(buf))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(Ok((resp, rows as u64)))
}

/// SQL up to this size is parsed on the async thread (tens of microseconds); longer scripts
/// wait for a query slot and are parsed on the query pool.
pub const INLINE_PARSE_BYTES: usize = 64 << 10;

/// Wait for a query slot (admission control): at most `--queue-timeout`, then 503 with
/// `Retry-After`, so a flood of heavy statements queues instead of piling up threads.
pub(crate) async fn admit(state: &State) -> Result<Slot, ApiError> {
    state.admission.admit().await.map_err(refused)
}

/// A statement [`crate::admission`] did not run, as the HTTP door answers it.
pub(crate) fn refused(r: Refused) -> ApiError {
    match r {
        Refused::Busy { .. } => {
            let mut e = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "SERVER_BUSY", r.to_string());
            e.retry_after = Some(1);
            e
        }
        Refused::Stopping | Refused::Lost => ApiError::internal(r.to_string()),
    }
}

/// A statement whose scans read at most this many rows ([`zepto_sql::Prepared::scan_rows`]:
/// both sides of a join) takes the quick lane: milliseconds of work at most.
pub const QUICK_ROWS: usize = 256 << 10;

/// A slot for `work`: a small prepared query takes the quick lane's, or a query slot if one
/// frees first; anything else waits for a query slot ([`admit`]).
async fn admit_work(state: &State, work: &Work) -> Result<Slot, ApiError> {
    let quick = matches!(work, Work::Prepared(p) if is_quick(p));
    state.admission.admit_for(quick).await.map_err(refused)
}

/// Whether a prepared read runs on the door's thread that bound it: its plan is linear and its
/// scans cover at most [`INLINE_ROWS`] rows (every door decides the same way).
pub fn runs_inline(p: &zepto_sql::Prepared) -> bool {
    p.linear_scan_rows().is_some_and(|n| n <= INLINE_ROWS)
}

/// Whether a prepared statement takes the quick lane: its scans read at most [`QUICK_ROWS`].
pub fn is_quick(p: &zepto_sql::Prepared) -> bool {
    p.scan_rows().is_some_and(|n| n <= QUICK_ROWS)
}

/// The request's statements, parsed under the server's [`zepto_sql::parser::ParseLimits`]
/// and the query's control (deadline, memory limit, cancellation when the client leaves).
/// A long script first takes a query slot (returned, to run the statements under) and is
/// parsed on the query pool, never on a thread ingest needs.
async fn parse(
    state: &State,
    req: &SqlRequest,
    ctl: &Arc<QueryControl>,
) -> Result<(Vec<Statement>, Option<Slot>), ApiError> {
    let limits = state.config.parse_limits;
    if req.sql.len() > limits.max_bytes {
        return Err(query_too_large(Some(req.sql.len()), limits.max_bytes));
    }
    if req.sql.len() <= INLINE_PARSE_BYTES {
        let run = RunContext::new(Some(ctl.clone()));
        return Ok((parse_script(&req.sql, &req.params, &limits, &|| run.check())?, None));
    }
    // One slot parses, then runs the statements (two could deadlock at one slot).
    let slot = admit(state).await?;
    let (sql, params, c) = (req.sql.clone(), req.params.clone(), ctl.clone());
    let (tx, rx) = oneshot::channel();
    // The client may go away while its request is parsed.
    let armed = CancelOnDrop::new(ctl.clone());
    state
        .admission
        .spawn_held(&slot, move || {
            let run = RunContext::new(Some(c));
            let _ = tx.send(parse_script(&sql, &params, &limits, &|| run.check()));
        })
        .map_err(refused)?;
    let stmts = rx.await.map_err(|_| ApiError::internal("the parse thread ended without an answer"))??;
    armed.disarm();
    Ok((stmts, Some(slot)))
}

/// 413 for SQL text over `--max-query-mb` (`len` when known: a body cut off while read is not).
pub fn query_too_large(len: Option<usize>, max: usize) -> ApiError {
    let size = len.map_or_else(|| "the request body is".to_string(), |n| format!("the SQL text is {n} bytes,"));
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "QUERY_TOO_LARGE",
        format!("{size} over the limit of {max} bytes of SQL (max_query_bytes; --max-query-mb raises it)"),
    )
}

/// Where the query thread sends the head of its answer: an error, a whole body, or the start of a stream.
type HeadTx = oneshot::Sender<Result<Head, ApiError>>;
/// Where the query thread sends a streamed body, chunk by chunk.
type ChunkTx = mpsc::Sender<Result<Bytes, std::io::Error>>;

/// Run what the query thread was handed (on that thread, under `ctl`): the last result and
/// the microseconds it took (`None` when there is nothing to send). A failing statement of a
/// script says which it was.
fn execute_work(
    st: &State,
    engine: &zepto_sql::Engine,
    work: Work,
    ctl: &Arc<QueryControl>,
) -> Result<Option<(QueryResult, f64)>, ApiError> {
    let run = RunContext::new(Some(ctl.clone()));
    match work {
        Work::Done(r, us) => Ok(Some((r, us))),
        Work::Prepared(p) => {
            let t0 = Instant::now();
            st.metrics.queries.inc();
            let r = engine.run_prepared_in(&run, &p);
            Ok(Some((r?, t0.elapsed().as_secs_f64() * 1e6)))
        }
        Work::Statements(stmts) => {
            let t0 = Instant::now();
            let mut last = None;
            let n = stmts.len();
            // A SET changes the engine the statements after it run on.
            let mut engine = engine.clone();
            for (k, s) in stmts.iter().enumerate() {
                st.metrics.queries.inc();
                let r = engine.execute_statement_in(&run, s);
                match r.and_then(|r| Ok((r, engine.after(s)?))) {
                    Ok((r, next)) => {
                        last = Some(r);
                        engine = next;
                    }
                    Err(e) => {
                        let mut e = ApiError::from(e);
                        if n > 1 {
                            // Earlier statements stay applied (each commits on its own).
                            e.message =
                                format!("statement {} of {n}: {} ({k} earlier statement(s) applied)", k + 1, e.message);
                        }
                        return Err(e);
                    }
                }
            }
            Ok(last.map(|r| (r, t0.elapsed().as_secs_f64() * 1e6)))
        }
    }
}

/// Keep `r` for `owner` (unless the first page holds all of it) and answer the page, sending
/// it through `head_tx`; a result whose client left is freed at once.
fn send_first_page(st: &State, owner: &str, r: QueryResult, elapsed_us: f64, limit: usize, head_tx: HeadTx) {
    let r = Arc::new(r);
    let page = page_body(&r, elapsed_us, 0, limit);
    let (head, id) = match page {
        Err(e) => (Err(e), None),
        Ok((body, rows)) => {
            let (id, why) = if rows == r.row_count() {
                (None, None)
            } else {
                match st.results.keep(owner, r.clone(), elapsed_us) {
                    Ok(id) => (Some(id), None),
                    Err(why) => (None, Some(why)),
                }
            };
            let tail = result_member(id.as_deref(), why.as_deref(), r.row_count(), 0);
            (Ok(Head::Full(with_tail(body, &tail), rows, None, partial(&r))), id)
        }
    };
    if head_tx.send(head).is_err() {
        if let Some(id) = id {
            let _ = st.results.forget(owner, &id);
        }
    }
}

/// A page of a kept result, encoded on the query pool under admission control (a page of
/// 100,000 rows takes milliseconds: not for the async threads ingest and every request need).
pub async fn encode_page(
    state: &Arc<State>,
    kept: crate::results::Page,
    offset: usize,
    limit: usize,
    tail: String,
) -> Result<(Vec<u8>, usize), ApiError> {
    // The tail is added once the rows are written.
    let slot = admit(state).await?;
    let page = move || page_body(&kept.result, kept.elapsed_us, offset, limit);
    let (body, rows) = state.admission.run_in(slot, page).await.map_err(refused)??;
    Ok((with_tail(body, &tail), rows))
}

/// A page stops after the row that takes it past this many bytes (the row limit bounds rows,
/// not their size: 100,000 rows of megabyte strings would not fit in memory).
pub const PAGE_BYTES: usize = 16 << 20;

/// Rows `offset .. offset + limit` of a kept result (fewer if they pass [`PAGE_BYTES`]) as a
/// JSON document; the rows written.
pub fn page_body(r: &QueryResult, elapsed_us: f64, offset: usize, limit: usize) -> Result<(Vec<u8>, usize), ApiError> {
    let mut enc = Encoder::page(r, elapsed_us, offset, limit, PAGE_BYTES)?;
    let mut buf = Vec::new();
    while enc.next_chunk(&mut buf)? {}
    Ok((buf, enc.rows()))
}

/// The `"result"` member of a page (starting with a comma): the kept result's id (null when
/// nothing is kept, with why when it could not be), its rows in all, and the page's offset.
pub fn result_member(id: Option<&str>, not_kept: Option<&str>, total: usize, offset: usize) -> String {
    let id = id.map_or(serde_json::Value::Null, |i| serde_json::Value::String(i.to_string()));
    let why = not_kept.map(|w| format!(",\"not_kept\":{}", serde_json::Value::String(w.to_string())));
    format!(",\"result\":{{\"id\":{id}{},\"total_rows\":{total},\"offset\":{offset}}}", why.unwrap_or_default())
}

/// A JSON document (`{...}\n`) with `tail` (members, starting with a comma) added at its end.
pub fn with_tail(mut body: Vec<u8>, tail: &str) -> Vec<u8> {
    debug_assert!(body.ends_with(b"}\n"), "a JSON result ends its object and line");
    body.truncate(body.len().saturating_sub(2));
    body.extend_from_slice(tail.as_bytes());
    body.extend_from_slice(b"}\n");
    body
}

/// Encode a result and hand it to the async side: whole through `head_tx` when it is under
/// [`STREAM_THRESHOLD`], else the head there and the body through `tx` in chunks.
/// The encoder of `r` in `format`, shaped as QuestDB's `/exec` asks when it does.
fn encoder(
    format: Format,
    exec: Option<&crate::exec_json::ExecShape>,
    r: &QueryResult,
    elapsed_us: f64,
) -> Result<Encoder, ApiError> {
    let enc = Encoder::new(format, r, elapsed_us)?;
    Ok(match exec {
        Some(shape) => enc.with_exec(shape.clone()),
        None => enc,
    })
}

/// The answer to a statement, sent from the query thread: whole when small, else its head and
/// as many chunks as the stream takes at once, the rest left to [`drain`] (the query thread
/// never waits on the client).
fn send_result(
    (format, exec): (Format, Option<&crate::exec_json::ExecShape>),
    r: &QueryResult,
    elapsed_us: f64,
    s: Stream,
    head_tx: HeadTx,
) {
    let mut enc = match encoder(format, exec, r, elapsed_us) {
        Ok(e) => e,
        Err(e) => {
            let _ = head_tx.send(Err(e));
            return;
        }
    };
    let rows = enc.rows();
    let mut buf = Vec::new();
    let mut more = true;
    while more && buf.len() < STREAM_THRESHOLD {
        match enc.next_chunk(&mut buf) {
            Ok(m) => more = m,
            Err(e) => {
                let _ = head_tx.send(Err(e));
                return;
            }
        }
    }
    if !more {
        let _ = head_tx.send(Ok(Head::Full(buf, rows, r.status.clone(), partial(r))));
        return;
    }
    // The stream is new: its first chunk finds room at once (capacity 2), and so does the next.
    if head_tx.send(Ok(Head::Stream(rows, partial(r)))).is_err() || s.tx.try_send(Ok(Bytes::from(buf))).is_err() {
        return;
    }
    let Ok(room) = s.tx.clone().try_reserve_owned() else { return };
    if let Some(enc) = fill(enc, room, &s) {
        s.rt.clone().spawn(drain(enc, s));
    }
}

/// The answer's head from the query thread. Under `timeout` (none for writes: their outcome
/// must be reported, not guessed) a query that has not answered a little past it is cancelled:
/// the engine stops itself at the deadline, and this is the backstop for a kernel that runs
/// long between checks.
async fn await_head(
    timeout: Option<Duration>,
    head_rx: oneshot::Receiver<Result<Head, ApiError>>,
    guard: &Running,
) -> Result<Head, ApiError> {
    let head = match timeout {
        Some(t) => match tokio::time::timeout(t.saturating_add(Duration::from_millis(250)), head_rx).await {
            Ok(h) => h,
            Err(_) => {
                guard.ctl.cancel();
                return Err(SqlError::Timeout(format!(
                    "query exceeded its time limit of {} ms (--query-timeout raises it)",
                    t.as_millis()
                ))
                .into());
            }
        },
        None => head_rx.await,
    };
    head.map_err(|_| ApiError::internal("the query thread ended without an answer"))?
}

/// The response for `head` in `format`: whole, or streaming the rest of the answer from `rx`
/// (`done` and `guard` held until it is sent); with the rows it holds.
fn respond(
    head: Head,
    format: Format,
    rx: mpsc::Receiver<Result<Bytes, std::io::Error>>,
    done: Arc<AtomicBool>,
    guard: Running,
) -> (Result<Response<ResponseBody>, hyper::http::Error>, usize) {
    let builder = Response::builder().status(StatusCode::OK).header("content-type", format.content_type());
    // A cluster answer without some partitions' rows says which (SET allow_partial = on).
    let lacking = match &head {
        Head::Full(.., p) | Head::Stream(_, p) => p.clone(),
    };
    let builder = match lacking {
        Some(p) => builder.header("x-zepto-partial", p),
        None => builder,
    };
    match head {
        Head::Full(bytes, rows, status, _) => {
            // DDL/DML say what they did in a header too (the CLI's --url mode reads it).
            let builder = match status.as_deref().map(hyper::header::HeaderValue::from_str) {
                Some(Ok(v)) => builder.header("x-zepto-status", v),
                _ => builder,
            };
            (builder.body(ResponseBody::full(bytes)), rows)
        }
        Head::Stream(rows, _) => (builder.body(ResponseBody::answer(rx, done, Box::new(guard))), rows),
    }
}

/// Run a request; on success the response and the number of result rows.
pub async fn run(
    state: &Arc<State>,
    who: &Principal,
    req: SqlRequest,
) -> Result<(Response<ResponseBody>, u64), ApiError> {
    let cfg = &state.config;
    // One control from the first byte parsed to the last sent: parsing counts too.
    let ctl = QueryControl::new(cfg.query_timeout, cfg.query_memory_limit);
    let (stmts, parsed_under) = parse(state, &req, &ctl).await?;
    if stmts.is_empty() {
        return Err(ApiError::bad_request("no SQL statement in the request"));
    }
    check_statements(&stmts, who, req.read_only)?;
    let writes = stmts.iter().any(|s| s.access() != Access::Read);
    let engine = state.engine.with_access(who.tables.clone());
    let format = req.format;
    let exec = req.exec;

    let keep = req.keep.map(|limit| (who.name.clone(), limit));
    let work = match stmts.as_slice() {
        // Only short SQL is bound here: binding a long script (a 400k-item IN list) would hold
        // an async thread that ingest and every other request need.
        [Statement::Query(q)] if keep.is_none() && binds_inline(q, req.sql.len()) => {
            match run_small_read(state, &engine, q, format, exec.as_ref(), &ctl)? {
                Ok(done) => return Ok(done),
                Err(work) => work,
            }
        }
        _ => Work::Statements(stmts),
    };

    // Wait (without holding a thread) for a slot, unless parsing took one already.
    let slot = match parsed_under {
        Some(s) => s,
        None => admit_work(state, &work).await?,
    };
    let guard = Running::start(state, &ctl);

    let (head_tx, head_rx) = oneshot::channel::<Result<Head, ApiError>>();
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(2);
    let st = state.clone();
    let done = Arc::new(AtomicBool::new(false));
    let stream = Stream {
        tx,
        ctl: ctl.clone(),
        done: done.clone(),
        admission: state.admission.clone(),
        rt: tokio::runtime::Handle::current(),
    };
    let job = move || match execute_work(&st, &engine, work, &ctl) {
        Ok(Some((r, elapsed_us))) => match keep {
            Some((owner, limit)) if !r.fields.is_empty() => send_first_page(&st, &owner, r, elapsed_us, limit, head_tx),
            _ => send_result((format, exec.as_ref()), &r, elapsed_us, stream, head_tx),
        },
        Ok(None) => {}
        Err(e) => {
            let _ = head_tx.send(Err(e));
        }
    };
    state.admission.spawn(slot, job).map_err(refused)?;

    let head = await_head(cfg.query_timeout.filter(|_| !writes), head_rx, &guard).await?;
    let (resp, rows) = respond(head, format, rx, done, guard);
    state.metrics.rows_returned.inc_by(rows as u64);
    Ok((resp.map_err(|e| ApiError::internal(e.to_string()))?, rows as u64))
}
