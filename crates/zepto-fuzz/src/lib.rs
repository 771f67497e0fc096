//! Fuzz targets for every decoder of outside bytes, the seed inputs they start from, and a
//! mutator, shared by two runners:
//!
//! - `make fuzz` runs each target under cargo-fuzz (libFuzzer, nightly) for as long as asked,
//!   seeded by `zepto-fuzz-seeds` (the `fuzz/` directory holds one thin binary per target);
//! - `cargo test` (stable, in `make test`, nothing to download) runs each target over its
//!   seeds and thousands of deterministic mutations of them (`tests/decoders.rs`).
//!
//! A target takes any bytes. Errors are the expected answer to garbage; a panic is a bug, and so
//! is an ingest batch or FIX message that was refused yet changed something (those targets
//! assert it). The ingest target keeps one engine across inputs (line protocol creates tables
//! as it goes), so a crash may need the inputs before it to reproduce.

pub mod mutate;
pub mod seeds;
pub mod targets;

/// One decoder under test.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// Its name (the cargo-fuzz binary and corpus directory).
    pub name: &'static str,
    /// Feed it one input; panics on a bug.
    pub run: fn(&[u8]),
    /// Valid (and some nearly valid) inputs to start mutating from.
    pub seeds: fn() -> Vec<Vec<u8>>,
}

/// Every target.
pub const TARGETS: &[Target] = &[
    Target { name: "sql", run: targets::sql::run, seeds: seeds::sql },
    Target { name: "csv", run: targets::ingest::csv, seeds: seeds::csv },
    Target { name: "pgcopy", run: targets::ingest::pgcopy, seeds: seeds::pgcopy },
    Target { name: "ingest", run: targets::ingest::write, seeds: seeds::ingest },
    Target { name: "fix", run: targets::fix::run, seeds: seeds::fix },
    Target { name: "wal", run: targets::durable::wal, seeds: seeds::wal },
    Target { name: "changes", run: targets::durable::changes, seeds: seeds::changes },
    Target { name: "table_file", run: targets::durable::table_file, seeds: seeds::table_file },
    Target { name: "manifest", run: targets::durable::manifest, seeds: seeds::manifest },
    Target { name: "http", run: targets::http::run, seeds: seeds::http },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
