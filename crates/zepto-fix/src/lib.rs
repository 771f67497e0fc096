//! The FIX door's protocol half: a hand-written FIX tag=value parser ([`parse`]), the encoder
//! of the session messages ZeptoDB sends ([`encode`]), and the default mapping of market data
//! (`W`, `X`) and execution reports (`8`) to rows of `quotes`, `trades` and `executions`
//! ([`map`]).
//!
//! Why hand-written: the parser is the hot path of FIX ingest, and the one maintained crate
//! (`fefix`) has had no release since 2022; a tag=value reader is small. It borrows every
//! value from the input buffer and allocates nothing per field or per repeating-group entry.
#![warn(missing_docs)]

pub mod encode;
pub mod map;
pub mod parse;
pub mod server;
pub mod session;
pub mod time;

pub use encode::Encoder;
pub use parse::{frame, parse, Entry, Field, Fields, FixError, Groups, Header, Message};
