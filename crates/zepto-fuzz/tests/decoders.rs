//! Stable-toolchain fuzzing of every decoder, in `cargo test` with nothing to download: each
//! target runs its seeds, the inputs long fuzz runs found (`fuzz/regressions/<target>/`), and
//! `ZEPTO_FUZZ_ITERS` (default 20,000) deterministic mutations of the seeds. A panic fails the
//! test, names the mutation's seed and writes the input to `target/fuzz-failures/`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use zepto_fuzz::mutate::Mutator;
use zepto_fuzz::{target, Target};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn iterations() -> usize {
    std::env::var("ZEPTO_FUZZ_ITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

/// The inputs kept from earlier fuzz runs for `name`.
fn regressions(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = repo().join("fuzz/regressions").join(name);
    let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .map(|e| (e.path().display().to_string(), std::fs::read(e.path()).expect("a regression input reads")))
        .collect()
}

/// Run `t` on `input`; on a panic keep the input and fail, saying which one it was.
fn check(t: &Target, what: &str, input: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| (t.run)(input))).is_ok() {
        return;
    }
    let dir = repo().join("target/fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!("{}-{}", t.name, what.replace(['/', ' '], "_")));
    let _ = std::fs::write(&file, input);
    let head: String = input.iter().take(64).map(|b| format!("{b:02x}")).collect();
    panic!("target {} panicked on {what} (kept in {}; first bytes {head})", t.name, file.display());
}

fn fuzz(name: &str) {
    let t = target(name).expect("the target exists");
    let seeds = (t.seeds)();
    assert!(!seeds.is_empty(), "target {name} has no seeds");
    for (k, s) in seeds.iter().enumerate() {
        check(t, &format!("seed {k}"), s);
    }
    for (file, input) in regressions(name) {
        check(t, &file, &input);
    }
    let mut m = Mutator::new(0x5eed ^ name.len() as u64);
    for i in 0..iterations() {
        let (a, b) = (&seeds[i % seeds.len()], &seeds[(i / seeds.len()) % seeds.len()]);
        let input = m.mutate(a, b);
        check(t, &format!("mutation {i}"), &input);
    }
}

#[test]
fn sql() {
    fuzz("sql");
}

#[test]
fn csv() {
    fuzz("csv");
}

#[test]
fn pgcopy() {
    fuzz("pgcopy");
}

#[test]
fn ingest() {
    fuzz("ingest");
}

#[test]
fn fix() {
    fuzz("fix");
}

#[test]
fn wal() {
    fuzz("wal");
}

#[test]
fn changes() {
    fuzz("changes");
}

#[test]
fn table_file() {
    fuzz("table_file");
}

#[test]
fn manifest() {
    fuzz("manifest");
}

#[test]
fn http() {
    fuzz("http");
}

#[test]
fn every_target_is_tested() {
    let src = include_str!("decoders.rs");
    for t in zepto_fuzz::TARGETS {
        assert!(src.contains(&format!("fuzz(\"{}\")", t.name)), "no test runs target {}", t.name);
    }
}
