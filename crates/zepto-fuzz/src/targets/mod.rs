//! The targets: each takes any bytes and panics only on a bug.

pub mod durable;
pub mod fix;
pub mod http;
pub mod ingest;
pub mod sql;

/// Run the target called `name` on `data` (the libFuzzer binaries' one line).
pub fn run(name: &str, data: &[u8]) {
    let t = crate::target(name).unwrap_or_else(|| panic!("no fuzz target '{name}'"));
    (t.run)(data);
}
