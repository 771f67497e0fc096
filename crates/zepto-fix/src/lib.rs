//! The FIX door's protocol half: a hand-written FIX tag=value parser ([`mod@parse`]), the encoder
//! of the session messages ZeptoDB sends ([`encode`]), and the default mapping of market data
//! (`W`, `X`) and execution reports (`8`) to rows of `quotes`, `trades` and `executions`
//! ([`map`]) with tags added as columns ([`extra`]), the acceptor's session state machine ([`session`]), its sessions and their
//! counters ([`registry`]) and its network loop ([`server`], tokio), which `zeptodb serve --fix` starts (`docs/fix.md`).
//!
//! Why hand-written: the parser is the hot path of FIX ingest, and the known crate (`fefix`)
//! has stayed at 0.7.0 for years, with no maintained successor on crates.io; a tag=value
//! reader is small. It borrows every
//! value from the input buffer and allocates nothing per field or per repeating-group entry.
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
