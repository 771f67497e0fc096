//! Fuzz targets for every decoder of outside bytes, the seed inputs they start from, and a
//! mutator, shared by two runners: cargo-fuzz (`make fuzz`, nightly) and `cargo test` (stable).
//!
//! # What it owns
//!
//! * [`targets`] — one function per decoder: SQL (`sql.rs`); CSV, `COPY` and `/write` bodies
//!   (`ingest.rs`); FIX (`fix.rs`); WAL segments, WAL records, checkpoint table files and
//!   manifests (`durable.rs`); the HTTP door's query string and JSON body (`http.rs`).
//! * [`seeds`] — valid and nearly valid inputs for each target.
//! * [`mutate`] — [`mutate::Mutator`], a deterministic byte mutator for the stable runner.
//! * [`TARGETS`] — every [`Target`]: its name, its run function, its seeds.
//!
//! # Entry points
//!
//! `tests/decoders.rs` (part of `make test`) runs each target over its seeds, the inputs kept in
//! `fuzz/regressions/<target>/`, and `ZEPTO_FUZZ_ITERS` mutations (20,000 by default).
//! `make fuzz` runs `fuzz/run.sh`. It writes the seeds with the `zepto-fuzz-seeds DIR` binary
//! (`DIR/<target>/seed<k>`), adds the statements of `tests/slt/*.slt` to the `sql` corpus, and
//! runs one cargo-fuzz binary per target from the `fuzz/` package (outside the workspace), each
//! calling [`targets::run`]. [`target`] finds a target by name.
//!
//! # Invariants
//!
//! * A target takes any bytes. An error is the expected answer to garbage; a panic is a bug.
//! * Refused input changes nothing: the `ingest` and `fix` targets assert it, and the `wal`
//!   target asserts that strict recovery leaves a log it refuses as it was.
//! * The stable runner is deterministic: a failure names its seed or mutation and writes the
//!   input to `target/fuzz-failures/`.
//! * The `ingest` target keeps one engine across inputs (line protocol creates tables), so a
//!   crash there may need the inputs before it to reproduce.
//!
//! # When you change …
//!
//! * A new target: its function in [`targets`], its seeds in [`seeds`], its entry in [`TARGETS`],
//!   and a `#[test]` calling `fuzz("<name>")` in `tests/decoders.rs` (`every_target_is_tested`
//!   fails without it). For `make fuzz`: a `[[bin]]` in `fuzz/Cargo.toml`, its file in
//!   `fuzz/fuzz_targets/`, and its name in the default list of `fuzz/run.sh`.
//! * A binary format (WAL, records, checkpoint files, Arrow IPC): its seeds are built with the
//!   database's own encoders and follow. The text seeds (`sql`, `csv`, `pgcopy`, `fix`, the
//!   line-protocol, CSV and JSON `ingest` bodies, `http`) are written by hand in `seeds.rs`.
//! * A decoder's signature: the target that calls it, in [`targets`].
//! * A crash a long run found: fix it, then keep the input in `fuzz/regressions/<target>/`.

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
