//! The FIX door: a hand-written tag=value parser, the session layer (acceptor and initiators), and
//! the mapping of market data (`W`, `X`) and execution reports (`8`) to table rows, which
//! `zeptodb serve --fix` starts (`docs/fix.md`). Hand-written because the parser is FIX
//! ingest's hot path and the known crate (`fefix`) has had no release for years; it borrows
//! every value from the input and allocates nothing per field or repeating-group entry.
//!
//! # What it owns
//!
//! * [`mod@parse`] — [`frame`] and [`parse()`]: untrusted bytes to a [`Message`] whose values
//!   borrow the input. [`time`] reads FIX times as nanoseconds.
//! * [`encode`] — [`Encoder`]: the session messages ZeptoDB sends, and MarketDataRequest.
//! * [`map`] — [`map::Batch`]: `W`/`X` entries to rows of `quotes` and `trades`, `8` to
//!   `executions`, the session's sequence numbers to `fix_sessions`. [`extra`] adds tags as
//!   columns; [`map::TableNames`] renames tables and columns.
//! * [`session`] — [`session::Session`]: one connection's state machine, with no network.
//! * [`server`] — [`server::FixDoor`]: the tokio loops of the acceptor (TCP or TLS) and of the
//!   reconnecting initiators ([`tls`] for theirs; busy-polling in `busy.rs`).
//! * [`config`] — the settings. [`registry`] — sessions logged on, and their counters.
//!
//! # Entry points
//!
//! zepto-cli's `serve/fix.rs` reads `--fix-config` into a [`session::SessionConfig`] and calls
//! [`server::FixDoor::start`]; `/metrics` reads [`server::FixDoor::sessions`]. Tests drive a
//! [`session::Session`] by `receive` and `commit`; the `fix` fuzz target, [`map::Batch::add`].
//!
//! # Invariants
//!
//! * Exactly once: [`session::Session::commit`] stores a read's rows and the session's sequence
//!   numbers as one WAL record ([`map::Batch::apply`]), and only then hands out the responses.
//!   If that fails, the sequence numbers roll back and the session closes.
//! * A message maps whole or not at all: [`map::Batch::add`] fails and leaves the batch as is.
//! * The parser allocates nothing per field or group entry. `parse.rs`, `map.rs`, `extra.rs`,
//!   `session.rs` and `time.rs` deny indexing and unwraps outside tests.
//! * A session is logged on once at a time; its newest `fix_sessions` row is where it resumes.
//!
//! # When you change …
//!
//! * A message mapping: [`map::Batch::add`], the columns ([`map::MD_COLUMNS`],
//!   [`map::EXEC_COLUMNS`]), `map.rs`'s doc, `docs/fix.md`, `tests/map.rs`, the `fix` seeds in
//!   `zepto-fuzz/src/seeds.rs`. An older table gains new columns only if its own are a prefix of
//!   the new list (`ensure_table`); otherwise `check_schema` refuses every batch.
//! * A message ZeptoDB sends: an [`Encoder`] method, its caller in `session.rs`, and
//!   `tests/session.rs`.
//! * A type for added tags: [`extra::TYPES`], and `value` and `push` in `extra.rs`.
//! * A `--fix-config` key: [`config`], `setting` in zepto-cli's `serve/fix.rs`, `docs/fix.md`.
//! * [`registry::Stats`]: `FixMetrics` in zepto-cli's `serve/fix.rs`, and the `zepto_fix_*`
//!   metrics in zepto-server's `metrics.rs`.
#![warn(missing_docs)]

mod busy;
pub mod config;
pub mod encode;
pub mod extra;
pub mod map;
pub mod parse;
pub mod registry;
pub mod server;
pub mod session;
pub mod time;
pub mod tls;

pub use encode::Encoder;
pub use parse::{frame, parse, Entry, Field, Fields, FixError, Groups, Header, Message};
