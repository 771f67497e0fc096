//! InfluxDB line protocol over TCP (QuestDB's port 9009 door, `serve --ilp-tcp`): clients
//! that stream points on a plain socket (QuestDB's `tcp::` senders, Telegraf's
//! `socket_writer`) without an HTTP request per batch.
//!
//! Why a door of its own: over TCP there is no request to answer, so a connection is one
//! endless body whose lines are committed as they arrive, and a bad line can only be told by
//! closing the connection (as QuestDB does). The lines are parsed, typed and stored exactly as
//! `POST /write` stores line protocol ([`crate::ingest`]; in a cluster through
//! [`crate::cluster::ClusterHandle::write`], so spread tables work), text only (protocol
//! version 1: lines are split at every `\n` byte, which a binary value may hold).
//!
//! Per connection:
//! * [`Pending`] splits what is read into lines (`\n`, a `\r` before it dropped by the
//!   parser) and holds the complete ones as the next batch; a line longer than
//!   [`Limits::max_line_bytes`] is an error (a client sending no newline cannot make the
//!   server buffer without limit).
//! * A batch is committed when it reaches [`Limits::batch_bytes`] or [`Limits::batch_lines`],
//!   or [`Limits::flush_after`] after its first line arrived, on the blocking pool (holding an
//!   ingest slot as `/write` does), under the WAL's sync mode. A commit decodes its lines
//!   first, then waits for the connection's commit before it, then stores them under the
//!   tables' locks ([`commit_in_turn`]): so one batch is decoded while the one before it is
//!   stored (its fsync included), and at most two are in flight. While a batch is
//!   decoded, the next one gathers (up to [`Limits::max_batch_bytes`]; then the socket is not
//!   read: backpressure) and is taken the moment the decode ends (with fewer than two in
//!   flight). So a trickle is committed within milliseconds, and a stream in batches as large
//!   as a decode's time lets them grow (a commit's fixed costs, such as the WAL's fsync, are
//!   paid per batch). Measured
//!   (`bench/questdb.py`, 4,000 hosts, `--sync always`): 0.98-1.08M rows/s one batch at a
//!   time, 1.16-1.21M with the overlap.
//! * A bad line (syntax, type, or too long) commits every line before it, is logged and
//!   counted (`zepto_ilp_tcp_bad_lines_total`), and closes the connection; nothing after it
//!   is stored. Line numbers count from the connection's first line.
//! * At EOF a last line without `\n` is committed if it parses (as QuestDB does); when the
//!   connection breaks (reset) or the server stops, only complete lines are.
//!
//! Identity: a TCP client cannot present a key, so every connection writes as one writer
//! principal ([`IlpTcpConfig::who`]); `zeptodb serve` refuses the door when API keys are
//! configured unless the operator says unauthenticated writes are acceptable there.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

use crate::access_log::now_ns;
use crate::auth::Principal;
use crate::cluster::ClusterHandle;
use crate::error::ApiError;
use crate::ingest::{self, ilp, IngestFormat, WriteRequest};
use crate::state::State;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::{oneshot, watch, Semaphore};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use zepto_sql::Engine;

pub use crate::config::{IlpTcpConfig, Limits};

/// A run of complete lines of one connection, committed together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The lines, each ending in `\n` but perhaps the last one at EOF.
    pub bytes: Vec<u8>,
    /// The connection's 1-based number of the batch's first line.
    pub first_line: usize,
    /// How many lines it holds.
    pub lines: usize,
}

/// A line longer than the limit: its 1-based number in the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    /// The line's number.
    pub line: usize,
}

/// What one connection has read and not yet handed to a commit: complete lines, then the
/// start of the next one.
#[derive(Debug)]
pub struct Pending {
    buf: Vec<u8>,
    /// Bytes of `buf` that are complete lines (up to and with their `\n`).
    complete: usize,
    /// Complete lines in `buf`.
    lines: usize,
    /// The connection's number of the first line in `buf`.
    first_line: usize,
    max_line: usize,
    /// The size of the last batch taken: the buffer grows to it at once when it fills again.
    grow_to: usize,
}

impl Pending {
    /// Nothing read yet; lines may be `max_line` bytes long, line end not counted.
    pub fn new(max_line: usize) -> Pending {
        Pending { buf: Vec::new(), complete: 0, lines: 0, first_line: 1, max_line, grow_to: 0 }
    }

    /// Append `bytes` read from the socket. A line past the length limit fails with its
    /// number; the complete lines before it stay pending and nothing after it is kept.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), TooLong> {
        // One copy of the whole read, then a vectorized walk of its line ends: this runs on
        // every byte a connection sends.
        let start = self.buf.len();
        // A steady stream does not reallocate (and copy) its buffer through every doubling
        // again: the first growth after a batch goes straight to that batch's size.
        if start + bytes.len() > self.buf.capacity() && self.grow_to > self.buf.capacity() {
            self.buf.reserve(self.grow_to.max(start + bytes.len()) - start);
        }
        self.buf.extend_from_slice(bytes);
        for nl in memchr::memchr_iter(b'\n', bytes) {
            let end = start + nl + 1;
            self.check_line(end - 1)?;
            self.complete = end;
            self.lines += 1;
        }
        self.check_line(self.buf.len())
    }

    /// Fail if the line after the complete ones, ending (its `\n` not counted) at `end`, is
    /// too long; then only the complete lines stay.
    fn check_line(&mut self, end: usize) -> Result<(), TooLong> {
        if end - self.complete <= self.max_line {
            return Ok(());
        }
        self.buf.truncate(self.complete);
        Err(TooLong { line: self.first_line + self.lines })
    }

    /// Whether complete lines are pending.
    pub fn has_lines(&self) -> bool {
        self.lines > 0
    }

    /// Whether the complete lines make a full batch under `limits`.
    pub fn is_full(&self, limits: &Limits) -> bool {
        self.complete >= limits.batch_bytes || self.lines >= limits.batch_lines
    }

    /// Whether the complete lines are as many bytes as a batch may gather while another is
    /// committed ([`Limits::max_batch_bytes`]).
    pub fn is_at_max(&self, limits: &Limits) -> bool {
        self.complete >= limits.max_batch_bytes
    }

    /// The complete lines as a batch (`None` if there are none); the open line stays.
    pub fn take(&mut self) -> Option<Batch> {
        if self.lines == 0 {
            return None;
        }
        // The next batch starts with the open line only: an idle connection holds no more.
        // It grows to this batch's size once it fills ([`Pending::push`]).
        let rest = self.buf.get(self.complete..).unwrap_or_default().to_vec();
        self.grow_to = self.complete;
        self.buf.truncate(self.complete);
        let bytes = std::mem::replace(&mut self.buf, rest);
        let batch = Batch { bytes, first_line: self.first_line, lines: self.lines };
        self.first_line += self.lines;
        (self.complete, self.lines) = (0, 0);
        Some(batch)
    }

    /// At EOF: every pending line as a batch, the last one without its `\n` included unless
    /// it is only blanks.
    pub fn finish(mut self) -> Option<Batch> {
        let open = self.buf.get(self.complete..).unwrap_or_default();
        if open.iter().any(|c| !c.is_ascii_whitespace()) {
            self.complete = self.buf.len();
            self.lines += 1;
        }
        self.take()
    }
}

/// Where a door's batches are stored: the engine, or the cluster's write path.
#[derive(Clone)]
pub struct Target {
    /// The engine written.
    pub engine: Engine,
    /// The cluster node, whose writes go through Kafka to the partitions' owners.
    pub cluster: Option<ClusterHandle>,
    /// Who writes.
    pub who: Principal,
}

impl Target {
    fn request() -> WriteRequest {
        WriteRequest { format: IngestFormat::Ilp, table: None, precision: ilp::Precision::NANOS, now_ns: now_ns() }
    }

    /// Store `body` (whole lines) as `POST /write` stores line protocol: all or nothing.
    fn write(&self, body: &[u8]) -> Result<usize, ApiError> {
        let req = Target::request();
        match &self.cluster {
            Some(c) => c.write(&self.engine, &self.who, &req, body),
            None => ingest::write(&self.engine, &self.who, &req, body),
        }
    }

    /// `batch` decoded whole, before its turn to be stored ([`commit_in_turn`]); `None` when it
    /// cannot be: a cluster's write path decodes on its own, a batch that may hold binary
    /// values is checked line by line first, and a bad line is left to [`commit`] to find.
    fn decode_ahead(&self, batch: &Batch) -> Option<ingest::DecodedLines> {
        if self.cluster.is_some() || may_hold_binary(&batch.bytes) {
            return None;
        }
        ingest::decode_ilp(self.engine.catalog(), &self.who, &Target::request(), &batch.bytes).ok()
    }
}

/// Why a connection is closed after a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A bad line: its number in the connection and what is wrong.
    Line(usize, String),
    /// The batch was refused for no line of its own (rights, storage).
    Write(String),
}

/// What committing one batch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Lines stored (blank and comment lines included).
    pub lines: usize,
    /// Rows stored.
    pub rows: usize,
    /// Why nothing after the stored lines may be stored, if so.
    pub refused: Option<Refused>,
}

/// The order of a connection's commits: each batch is decoded as soon as it is taken, and
/// stored once the batch before it settled (and only if that one stored every line).
pub struct Turn {
    /// Told once this batch is decoded: the connection may take its next one.
    pub decoded: oneshot::Sender<()>,
    /// The batch before: whether it stored every line (`None`: there is none in flight).
    pub before: Option<oneshot::Receiver<bool>>,
    /// Tells the batch after whether this one stored every line.
    pub done: oneshot::Sender<bool>,
}

/// Commit `batch` in its `turn`: decoded first, while the batch before it may still be being
/// stored (the tables' locks and the log's fsync), then stored as [`commit`] stores it. Lines
/// decoded before the batch before them was stored are checked again under the locks against
/// the tables as they are now; if they no longer fit, the batch is committed again from its
/// text, so a connection stores exactly what committing its batches one after another would.
/// A batch that cannot be decoded ahead (on a cluster's write path, with a binary value, with
/// a bad line) is committed whole before the connection takes its next one.
///
/// The commit keeps its ingest slot while it waits for the batch before: given back, the
/// waiting commit would still hold a thread of the blocking pool, and with enough connections
/// every thread could wait for a slot whose holders wait, queued, for a thread.
pub fn commit_in_turn(target: &Target, batch: &Batch, turn: Turn) -> Committed {
    let Turn { decoded, before, done } = turn;
    let ahead = target.decode_ahead(batch);
    // Decoded: the connection may take its next batch now; else once this one is committed.
    let decoded_later = match ahead {
        Some(_) => {
            let _ = decoded.send(());
            None
        }
        None => Some(decoded),
    };
    let before_ok = before.is_none_or(|rx| rx.blocking_recv().unwrap_or(false));
    let c = match ahead {
        _ if !before_ok => Committed { lines: 0, rows: 0, refused: None },
        Some(lines) => match ingest::store_ilp(target.engine.catalog(), lines) {
            Ok(rows) => Committed { lines: batch.lines, rows, refused: None },
            Err(_) => commit(target, batch),
        },
        None => commit(target, batch),
    };
    let _ = done.send(before_ok && c.refused.is_none());
    if let Some(d) = decoded_later {
        let _ = d.send(());
    }
    c
}

/// Commit `batch` to `target`: all of it, or the lines before its first bad line (then
/// [`Committed::refused`] names that line).
pub fn commit(target: &Target, batch: &Batch) -> Committed {
    let mut refused = None;
    let mut end = batch.bytes.len();
    if may_hold_binary(&batch.bytes) {
        // A binary value cannot be read from lines split at every newline byte.
        if let Err(e) = ilp::check_text(&batch.bytes, ilp::Precision::NANOS) {
            end = line_offset(&batch.bytes, e.line);
            refused = Some(Refused::Line(batch.first_line + e.line - 1, e.message));
        }
    }
    loop {
        let body = batch.bytes.get(..end).unwrap_or_default();
        if body.is_empty() {
            return Committed { lines: 0, rows: 0, refused };
        }
        match target.write(body) {
            Ok(rows) => {
                let lines = if refused.is_some() { newlines(body) } else { batch.lines };
                return Committed { lines, rows, refused };
            }
            Err(e) => match e.line.and_then(|l| usize::try_from(l).ok()).filter(|&l| l >= 1) {
                // Another bad line, earlier than the last one: store the lines before it.
                Some(k) => {
                    end = line_offset(body, k);
                    refused = Some(Refused::Line(batch.first_line + k - 1, strip_line(&e.message, k)));
                }
                None => return Committed { lines: 0, rows: 0, refused: Some(Refused::Write(e.message)) },
            },
        }
    }
}

/// Whether `body` may hold a binary value (protocol version 2's `==`), which only a check
/// line by line tells from text.
fn may_hold_binary(body: &[u8]) -> bool {
    memchr::memmem::find(body, b"==").is_some()
}

/// Where 1-based line `k` of `body` starts.
fn line_offset(body: &[u8], k: usize) -> usize {
    if k <= 1 {
        return 0;
    }
    body.iter().enumerate().filter(|(_, &c)| c == b'\n').nth(k - 2).map_or(body.len(), |(i, _)| i + 1)
}

fn newlines(body: &[u8]) -> usize {
    body.iter().filter(|&&c| c == b'\n').count()
}

/// An ingest message without its `line k: ` prefix (the line is numbered again for the
/// connection).
fn strip_line(message: &str, k: usize) -> String {
    message.strip_prefix(&format!("line {k}: ")).unwrap_or(message).to_string()
}

/// The running door: its accept loop and connections.
pub(crate) struct Door {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// What every connection of a door shares.
#[derive(Clone)]
struct Shared {
    state: Arc<State>,
    target: Target,
    limits: Limits,
    tls: Option<TlsAcceptor>,
    permits: Arc<Semaphore>,
}

impl Door {
    /// Accept connections on the configured socket, TLS-only when `tls` is given.
    pub(crate) fn start(state: &Arc<State>, cfg: &IlpTcpConfig, tls: Option<TlsAcceptor>) -> Result<Door, String> {
        let std = cfg.listener.try_clone().map_err(|e| format!("ILP/TCP listener: {e}"))?;
        std.set_nonblocking(true).map_err(|e| format!("ILP/TCP listener: {e}"))?;
        let listener = tokio::net::TcpListener::from_std(std).map_err(|e| format!("ILP/TCP listener: {e}"))?;
        let target =
            Target { engine: state.engine.clone(), cluster: state.config.cluster.clone(), who: cfg.who.clone() };
        let permits = Arc::new(Semaphore::new(state.config.max_connections));
        let shared = Shared { state: state.clone(), target, limits: cfg.limits, tls, permits };
        let (stop, rx) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, shared, rx));
        Ok(Door { stop, task })
    }

    /// Stop accepting, let every connection commit what it fully received, and wait for them
    /// (at most `grace`).
    pub(crate) async fn stop(self, grace: Duration) {
        let _ = self.stop.send(true);
        if tokio::time::timeout(grace, self.task).await.is_err() {
            eprintln!("zeptodb: ILP/TCP: connections still committing after {} s; leaving them", grace.as_secs());
        }
    }
}

/// Accept until told to stop, then wait for the connections to end.
async fn accept_loop(listener: tokio::net::TcpListener, shared: Shared, mut stop: watch::Receiver<bool>) {
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            r = listener.accept() => match r {
                Ok((stream, remote)) => {
                    let Ok(permit) = shared.permits.clone().try_acquire_owned() else { continue };
                    let _ = stream.set_nodelay(true);
                    crate::net::keep_alive(&stream);
                    let (shared, stop) = (shared.clone(), stop.clone());
                    conns.spawn(async move {
                        let _permit = permit;
                        open(stream, remote, shared, stop).await;
                    });
                }
                Err(e) => {
                    eprintln!("zeptodb: ILP/TCP accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = stopped(&mut stop) => break,
        }
    }
    drop(listener);
    while conns.join_next().await.is_some() {}
}

/// One accepted connection: its TLS handshake if the door has TLS, then its lines.
async fn open(stream: tokio::net::TcpStream, remote: SocketAddr, shared: Shared, mut stop: watch::Receiver<bool>) {
    let m = &shared.state.metrics.ilp_tcp;
    m.connections.inc();
    m.connections_open.inc();
    match shared.tls.clone() {
        None => Conn { shared: &shared, remote }.run(stream, stop).await,
        Some(acceptor) => {
            let handshake = tokio::time::timeout(shared.state.config.header_timeout, acceptor.accept(stream));
            // A client that never finishes its handshake does not hold up the server's stop.
            let hs = tokio::select! {
                hs = handshake => Some(hs),
                _ = stopped(&mut stop) => None,
            };
            match hs {
                Some(Ok(Ok(s))) => Conn { shared: &shared, remote }.run(s, stop).await,
                Some(Ok(Err(e))) => eprintln!("zeptodb: ILP/TCP {remote}: TLS handshake failed: {e}"),
                Some(Err(_)) => eprintln!("zeptodb: ILP/TCP {remote}: TLS handshake timed out"),
                None => {}
            }
        }
    }
    m.connections_open.dec();
}

/// How a connection's reading ended.
enum End {
    /// The client closed it: the last line counts even without its `\n`.
    Eof,
    /// It broke, or the server stops: only complete lines count.
    Cut,
    /// A line too long (its number): the lines before it count, then close it.
    TooLong(usize),
    /// A commit refused a line (or could not be made): close it now, storing nothing more.
    Refused,
}

/// A connection while it is read.
struct Conn<'a> {
    shared: &'a Shared,
    remote: SocketAddr,
}

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 64 << 10;

/// Batches of one connection in flight at most: one stored while the next is decoded.
const DEPTH: usize = 2;

/// A connection's commits in flight, oldest first ([`commit_in_turn`]).
#[derive(Default)]
struct InFlight {
    commits: VecDeque<JoinHandle<Committed>>,
    /// Told when the newest batch is decoded; `None` once it is.
    decoding: Option<oneshot::Receiver<()>>,
    /// Whether the newest batch stored every line: the next batch's turn.
    last: Option<oneshot::Receiver<bool>>,
}

impl InFlight {
    /// Whether another batch may be taken now.
    fn has_room(&self) -> bool {
        self.decoding.is_none() && self.commits.len() < DEPTH
    }
}

impl Conn<'_> {
    /// Read, batch and commit until EOF, a bad line, a broken connection or the server's stop.
    async fn run<S: AsyncRead + Unpin>(&self, mut io: S, mut stop: watch::Receiver<bool>) {
        let limits = self.shared.limits;
        let mut pending = Pending::new(limits.max_line_bytes);
        let mut inflight = InFlight::default();
        let mut due: Option<Instant> = None;
        let mut chunk = vec![0u8; READ_CHUNK];
        let end = loop {
            let due_now = pending.is_full(&limits) || due.is_some_and(|d| d <= Instant::now());
            if inflight.has_room() && pending.has_lines() && due_now {
                due = None;
                if !self.flush(&mut inflight, pending.take()).await {
                    break End::Refused;
                }
                continue;
            }
            // A batch at its largest waits, unread socket and all, for the commit in flight.
            let gathering = !pending.is_at_max(&limits);
            tokio::select! {
                r = io.read(&mut chunk), if gathering => match self.received(r, &chunk, &mut pending, &mut due) {
                    Some(end) => break end,
                    None => continue,
                },
                _ = sleep_until(due), if due.is_some() && inflight.has_room() => continue,
                _ = decoded(&mut inflight.decoding), if inflight.decoding.is_some() => {
                    inflight.decoding = None;
                    if pending.has_lines() {
                        // What gathered meanwhile has waited a decode's time already.
                        due = Some(Instant::now());
                    }
                }
                r = settled(&mut inflight.commits), if !inflight.commits.is_empty() => {
                    inflight.commits.pop_front();
                    if !self.report(r) {
                        break End::Refused;
                    }
                    if pending.has_lines() {
                        due = Some(Instant::now());
                    }
                }
                _ = stopped(&mut stop) => break End::Cut,
            }
        };
        self.close(end, inflight, pending).await;
    }

    /// Take `n` bytes read (or the read's end or error) into `pending`; `Some` when reading
    /// is over.
    fn received(
        &self,
        r: std::io::Result<usize>,
        chunk: &[u8],
        pending: &mut Pending,
        due: &mut Option<Instant>,
    ) -> Option<End> {
        let n = match r {
            Ok(0) => return Some(End::Eof),
            Ok(n) => n,
            Err(_) => return Some(End::Cut),
        };
        self.shared.state.metrics.ilp_tcp.bytes.inc_by(n as u64);
        if let Err(t) = pending.push(chunk.get(..n).unwrap_or_default()) {
            return Some(End::TooLong(t.line));
        }
        if due.is_none() && pending.has_lines() {
            *due = Some(Instant::now() + self.shared.limits.flush_after);
        }
        None
    }

    /// Start committing `batch` in its turn after the batches in flight (with room for one
    /// more: [`InFlight::has_room`]); false if the connection must close (the server stops).
    async fn flush(&self, inflight: &mut InFlight, batch: Option<Batch>) -> bool {
        let Some(batch) = batch else { return true };
        let Some(permit) = self.shared.state.ingest_slot().await else {
            eprintln!("zeptodb: ILP/TCP {}: the server is stopping; {} lines not stored", self.remote, batch.lines);
            return false;
        };
        let (decoded, decoding) = oneshot::channel();
        let (done, last) = oneshot::channel();
        let turn = Turn { decoded, before: inflight.last.replace(last), done };
        inflight.decoding = Some(decoding);
        let target = self.shared.target.clone();
        inflight.commits.push_back(tokio::task::spawn_blocking(move || {
            let _permit = permit;
            commit_in_turn(&target, &batch, turn)
        }));
        true
    }

    /// Count a finished commit; log and count what it refused. False if the connection must
    /// close.
    fn report(&self, r: Result<Committed, tokio::task::JoinError>) -> bool {
        let m = &self.shared.state.metrics.ilp_tcp;
        let c = match r {
            Ok(c) => c,
            Err(e) => {
                m.write_errors.inc();
                eprintln!("zeptodb: ILP/TCP {}: the commit failed: {e}; closing the connection", self.remote);
                return false;
            }
        };
        if c.lines > 0 {
            m.batches.inc();
            m.lines.inc_by(c.lines as u64);
            m.rows.inc_by(c.rows as u64);
        }
        match c.refused {
            None => true,
            Some(Refused::Line(line, msg)) => {
                self.bad_line(line, &msg);
                false
            }
            Some(Refused::Write(msg)) => {
                m.write_errors.inc();
                eprintln!("zeptodb: ILP/TCP {}: write refused: {msg}; closing the connection", self.remote);
                false
            }
        }
    }

    fn bad_line(&self, line: usize, msg: &str) {
        self.shared.state.metrics.ilp_tcp.bad_lines.inc();
        eprintln!("zeptodb: ILP/TCP {}: line {line}: {msg}; closing the connection", self.remote);
    }

    /// Commit what the connection's end leaves: every line at EOF, complete lines otherwise
    /// (after a too-long line, the lines before it, then the line is reported); then wait for
    /// every commit in flight, in order.
    async fn close(&self, end: End, mut inflight: InFlight, mut pending: Pending) {
        let (last, too_long) = match end {
            End::Eof => (pending.finish(), None),
            End::Cut => (pending.take(), None),
            End::TooLong(line) => (pending.take(), Some(line)),
            End::Refused => (None, None),
        };
        let mut stored = self.flush(&mut inflight, last).await;
        while let Some(h) = inflight.commits.pop_front() {
            // After a refusal the later batches store nothing (their turn says so).
            stored = self.report(h.await) && stored;
        }
        if let (true, Some(line)) = (stored, too_long) {
            let max = self.shared.limits.max_line_bytes;
            self.bad_line(line, &format!("longer than {max} bytes"));
        }
    }
}

/// Until the door is told to stop (at once if it was; a dropped sender counts as told).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The oldest commit's outcome (never ready when there is none); it stays in the queue.
async fn settled(h: &mut VecDeque<JoinHandle<Committed>>) -> Result<Committed, tokio::task::JoinError> {
    match h.front_mut() {
        Some(h) => h.await,
        None => std::future::pending().await,
    }
}

/// When the newest batch is decoded (never, when none is decoding). A commit that ended
/// without telling counts as decoded.
async fn decoded(rx: &mut Option<oneshot::Receiver<()>>) {
    match rx {
        Some(rx) => {
            let _ = rx.await;
        }
        None => std::future::pending().await,
    }
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(engine: &Engine) -> Target {
        Target { engine: engine.clone(), cluster: None, who: IlpTcpConfig::writer() }
    }

    fn rows(engine: &Engine, sql: &str) -> String {
        let b = engine.execute(sql).expect(sql).into_batch();
        (0..b.rows)
            .map(|i| b.columns.iter().map(|c| c.get(i).to_string()).collect::<Vec<_>>().join("|") + "\n")
            .collect()
    }

    /// Every batch `pending` gives while `body` is pushed in pieces of the given sizes
    /// (cycled), then what `finish` gives.
    fn split(body: &[u8], sizes: &[usize], max_line: usize) -> (Vec<Batch>, Result<(), TooLong>) {
        let mut p = Pending::new(max_line);
        let mut out = Vec::new();
        let mut rest = body;
        for &n in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (piece, tail) = rest.split_at(n.min(rest.len()));
            rest = tail;
            if let Err(e) = p.push(piece) {
                out.extend(p.take());
                return (out, Err(e));
            }
            out.extend(p.take());
        }
        out.extend(p.finish());
        (out, Ok(()))
    }

    #[test]
    fn lines_cut_across_reads_come_out_whole_and_numbered() {
        let body = b"t,s=A x=1i 1\r\nt,s=B x=2i 2\n\n# note\nt,s=C x=3i 3\nt,s=D x=4i 4";
        for sizes in [&[1][..], &[2, 5], &[7, 1, 13], &[1000]] {
            let (batches, r) = split(body, sizes, 100);
            assert_eq!(r, Ok(()));
            let joined: Vec<u8> = batches.iter().flat_map(|b| b.bytes.clone()).collect();
            assert_eq!(joined, body, "{sizes:?}");
            for b in &batches {
                // A batch is whole lines, numbered on from the one before.
                assert!(b.bytes.ends_with(b"\n") || b.bytes.ends_with(b"x=4i 4"), "{sizes:?}: {b:?}");
                assert_eq!(b.lines, newlines(&b.bytes) + usize::from(!b.bytes.ends_with(b"\n")));
            }
            let firsts: Vec<usize> = batches.iter().map(|b| b.first_line).collect();
            let mut want = 1;
            for (b, f) in batches.iter().zip(&firsts) {
                assert_eq!(*f, want, "{sizes:?}");
                want += b.lines;
            }
            assert_eq!(want, 7, "six lines, the last without its newline");
        }
    }

    #[test]
    fn a_blank_open_line_at_eof_is_no_line() {
        let mut p = Pending::new(100);
        p.push(b"t x=1 1\n  \r").expect("push");
        let b = p.finish().expect("a batch");
        assert_eq!((b.lines, b.bytes.as_slice()), (1, &b"t x=1 1\n"[..]));
        assert_eq!(Pending::new(10).finish(), None);
    }

    #[test]
    fn a_line_past_the_limit_fails_with_its_number_and_keeps_the_lines_before() {
        let ok = "t x=1 1\n"; // 7 bytes and its newline
                              // The long line arrives whole with its newline, or cut without one.
        for sizes in [&[1][..], &[3], &[1000]] {
            let body = format!("{ok}{ok}t x=12345678 1\n{ok}");
            let (batches, r) = split(body.as_bytes(), sizes, 10);
            assert_eq!(r, Err(TooLong { line: 3 }), "{sizes:?}");
            let joined: Vec<u8> = batches.iter().flat_map(|b| b.bytes.clone()).collect();
            assert_eq!(joined, format!("{ok}{ok}").as_bytes(), "{sizes:?}");
        }
        // Exactly the limit is fine, a CR before the newline included in the length.
        let (batches, r) = split(b"t x=1 1234\nt x=1 123\r\n", &[4], 10);
        assert_eq!((r, batches.iter().map(|b| b.lines).sum::<usize>()), (Ok(()), 2));
        // No newline at all: refused once past the limit, not buffered on.
        let mut p = Pending::new(10);
        assert_eq!(p.push(b"t x=1 12345"), Err(TooLong { line: 1 }));
        assert!(p.buf.is_empty(), "nothing of the long line is kept");
    }

    #[test]
    fn a_full_batch_is_told() {
        let limits = Limits { batch_bytes: 20, batch_lines: 3, ..Limits::default() };
        let mut p = Pending::new(100);
        p.push(b"t x=1 1\nt x=2 2\n").expect("push");
        assert!(!p.is_full(&limits));
        p.push(b"t x=3 3").expect("push");
        assert!(!p.is_full(&limits), "the open line does not count");
        p.push(b"\n").expect("push");
        assert!(p.is_full(&limits), "three lines");
        p.take();
        p.push(b"t x=123456789012345 1\n").expect("push");
        assert!(p.is_full(&limits), "20 bytes");
    }

    /// After a large batch the connection holds only its open line (an idle one keeps no
    /// megabytes), and the next batch grows straight to the last one's size.
    #[test]
    fn an_idle_connection_keeps_no_batch_sized_buffer() {
        let mut p = Pending::new(1 << 20);
        let line = b"cpu,host=h1 usage=1i 1\n";
        for _ in 0..40_000 {
            p.push(line).expect("push");
        }
        p.push(b"cpu,host=h1 us").expect("push");
        let taken = p.take().expect("lines").bytes.len();
        assert_eq!(taken, 40_000 * line.len());
        assert!(p.buf.capacity() < 1024, "an idle buffer of {} bytes", p.buf.capacity());
        p.push(b"age=2i 2\n").expect("push");
        p.push(&vec![b'x'; 2048]).expect("push");
        assert!(p.buf.capacity() >= taken, "grown to {} at once, not by doubling", p.buf.capacity());
        assert_eq!(&p.buf[..23], b"cpu,host=h1 usage=2i 2\n", "the open line kept");
    }

    #[test]
    fn crlf_lines_are_stored() {
        let e = Engine::new();
        let b = Batch { bytes: b"t,s=A x=1i 1\r\nt,s=B x=2i 2\r\n".to_vec(), first_line: 1, lines: 2 };
        assert_eq!(commit(&target(&e), &b), Committed { lines: 2, rows: 2, refused: None });
        assert_eq!(rows(&e, "SELECT s, x FROM t ORDER BY timestamp"), "A|1\nB|2\n");
    }

    #[test]
    fn a_bad_line_keeps_the_lines_before_it() {
        let e = Engine::new();
        let t = target(&e);
        // A syntax error on the batch's line 3, the connection's line 103.
        let b = Batch { bytes: b"t,s=A x=1i 1\n\nt,s=B x=\nt,s=C x=3i 3\n".to_vec(), first_line: 101, lines: 4 };
        let c = commit(&t, &b);
        assert_eq!((c.lines, c.rows), (2, 1));
        let Some(Refused::Line(103, msg)) = &c.refused else { panic!("{c:?}") };
        assert!(msg.contains("'x'") && !msg.starts_with("line"), "{msg}");
        // A type error (float into BIGINT) on line 2: line 1 is stored.
        let b = Batch { bytes: b"t,s=D x=4i 4\nt,s=E x=5.5 5\nt,s=F x=6i 6".to_vec(), first_line: 7, lines: 3 };
        let c = commit(&t, &b);
        assert_eq!((c.lines, c.rows), (1, 1));
        assert!(matches!(&c.refused, Some(Refused::Line(8, m)) if m.contains("'x'")), "{c:?}");
        // A bad first line stores nothing.
        let b = Batch { bytes: b"nonsense\nt,s=G x=7i 7\n".to_vec(), first_line: 1, lines: 2 };
        assert_eq!(commit(&t, &b).lines, 0);
        assert_eq!(rows(&e, "SELECT s, x FROM t ORDER BY timestamp"), "A|1\nD|4\n");
    }

    #[test]
    fn binary_values_are_bad_lines_over_tcp() {
        let e = Engine::new();
        let mut bytes = b"t x=1 1\nt y=\"a==b\" 2\nt x==\x10".to_vec();
        bytes.extend_from_slice(&1.5f64.to_le_bytes());
        bytes.extend_from_slice(b" 3\nt x=4 4\n");
        let c = commit(&target(&e), &Batch { bytes, first_line: 1, lines: 4 });
        assert_eq!((c.lines, c.rows), (2, 2), "'==' inside a string is text");
        assert!(matches!(&c.refused, Some(Refused::Line(3, m)) if m.contains("binary")), "{c:?}");
    }

    #[test]
    fn a_write_refused_for_no_line_stores_nothing() {
        let e = Engine::new();
        e.execute("CREATE TABLE mem (ts TIMESTAMP, tenant_id SYMBOL, v DOUBLE)").expect("ddl");
        let who = Principal { tables: zepto_sql::TableAccess::all().with_tenant("a"), ..IlpTcpConfig::writer() };
        let t = Target { who, ..target(&e) };
        let c = commit(&t, &Batch { bytes: b"mem,tenant_id=a v=1 1\n".to_vec(), first_line: 1, lines: 1 });
        assert!(matches!(&c.refused, Some(Refused::Write(_))) && c.lines == 0, "{c:?}");
    }

    /// `batch` committed in a turn after a batch whose outcome the test gives once `batch`
    /// is decoded (`before`, run then): what a connection does with two batches in flight.
    fn in_turn_after(t: &Target, batch: Batch, before: impl FnOnce() -> bool) -> Committed {
        let (decoded, decoded_rx) = oneshot::channel();
        let (before_tx, before_rx) = oneshot::channel();
        let (done, _) = oneshot::channel();
        let turn = Turn { decoded, before: Some(before_rx), done };
        let t2 = t.clone();
        let h = std::thread::spawn(move || commit_in_turn(&t2, &batch, turn));
        decoded_rx.blocking_recv().expect("decoded");
        let _ = before_tx.send(before());
        h.join().expect("commit")
    }

    /// A batch decoded while the batch before it was still to be stored stores what storing
    /// them one after the other stores: here the batch before gives `x` a type that a line of
    /// the later batch no longer fits, so that line is the bad one and the line before it is
    /// kept, as without the overlap.
    #[test]
    fn a_batch_decoded_ahead_stores_what_one_after_the_other_would() {
        let first = || Batch { bytes: b"m,k=a x=1i 1000\n".to_vec(), first_line: 1, lines: 1 };
        let second = || Batch { bytes: b"m,k=a y=2i 2000\nm,k=a x=\"s\" 3000\n".to_vec(), first_line: 2, lines: 2 };
        let mut outcomes = Vec::new();
        for ahead in [false, true] {
            let e = Engine::new();
            let t = target(&e);
            let c = if ahead {
                in_turn_after(&t, second(), || commit(&t, &first()).refused.is_none())
            } else {
                assert_eq!(commit(&t, &first()).rows, 1);
                commit(&t, &second())
            };
            assert_eq!((c.lines, c.rows), (1, 1), "ahead: {ahead}");
            assert!(matches!(&c.refused, Some(Refused::Line(3, m)) if m.contains("'x'")), "{c:?}");
            outcomes.push(rows(&e, "SELECT k, x, y FROM m ORDER BY timestamp"));
        }
        assert_eq!(outcomes[0], "a|1|NULL\na|NULL|2\n");
        assert_eq!(outcomes[0], outcomes[1]);
    }

    /// After a batch that refused a line, or failed, the batches already taken store nothing.
    #[test]
    fn nothing_is_stored_after_a_refused_batch() {
        let e = Engine::new();
        let t = target(&e);
        let c = in_turn_after(&t, Batch { bytes: b"m,k=a x=1i 1\n".to_vec(), first_line: 5, lines: 1 }, || false);
        assert_eq!(c, Committed { lines: 0, rows: 0, refused: None });
        assert!(!e.catalog().exists("m"));
        let c = in_turn_after(&t, Batch { bytes: b"m,k=a x=1i 1\n".to_vec(), first_line: 5, lines: 1 }, || true);
        assert_eq!(c, Committed { lines: 1, rows: 1, refused: None });
    }

    /// The column limit holds for a batch decoded before the batch ahead of it added columns:
    /// counted again under the table's lock, the line that passes it is the bad one, as one
    /// batch after the other would have it.
    #[test]
    fn a_batch_decoded_ahead_keeps_to_the_column_limit() {
        let max = ingest::lines::MAX_COLUMNS;
        // `m` with the timestamp and `max - 3` fields, then a batch adding two more (the
        // limit), then one decoded before those two exist, adding one more.
        let fields = |from: usize, to: usize| (from..to).map(|i| format!("f{i}=1i")).collect::<Vec<_>>().join(",");
        let line = |from, to, ts| format!("m {} {ts}\n", fields(from, to)).into_bytes();
        let mut outcomes = Vec::new();
        for ahead in [false, true] {
            let e = Engine::new();
            let t = target(&e);
            let made = commit(&t, &Batch { bytes: line(0, max - 3, 1), first_line: 1, lines: 1 });
            assert_eq!(made.rows, 1);
            let second = || Batch { bytes: line(max - 3, max - 1, 2), first_line: 2, lines: 1 };
            let third = Batch { bytes: [line(0, 1, 3), line(max - 1, max, 4)].concat(), first_line: 3, lines: 2 };
            let c = if ahead {
                in_turn_after(&t, third, || commit(&t, &second()).refused.is_none())
            } else {
                assert!(commit(&t, &second()).refused.is_none());
                commit(&t, &third)
            };
            assert_eq!((c.lines, c.rows), (1, 1), "ahead: {ahead}");
            assert!(matches!(&c.refused, Some(Refused::Line(4, m)) if m.contains("columns")), "{c:?}");
            let cols = e.catalog().snapshot("m").expect("m").schema().len();
            outcomes.push((cols, rows(&e, "SELECT count(*) FROM m")));
        }
        assert_eq!(outcomes[0], (max, "3\n".to_string()));
        assert_eq!(outcomes[0], outcomes[1]);
    }
}
