//! `--data-dir DIR [--sync MODE] [--checkpoint-mb N] [--tier-after AGE] [--memory-budget-mb N]`:
//! the data directory opened through [`zepto_durable::DataDir`], with its progress on stderr.

use std::path::Path;
use std::sync::Arc;
use zepto_durable::{DataDir, DirOptions};
use zepto_sql::Engine;

pub use zepto_durable::dir::corruption_message;
pub use zepto_durable::Tiering;

/// Progress lines on stderr, as every other line the binary prints.
fn stderr_log() -> zepto_durable::dir::Log {
    Arc::new(|m: &str| eprintln!("zeptodb: {m}"))
}

/// Make `engine` durable in `dir`: recover what is there, then log to it.
pub fn open(engine: &Engine, dir: &str, opts: DirOptions) -> Result<DataDir, String> {
    let d = DataDir::open(engine.catalog(), Path::new(dir), &opts, stderr_log())?;
    // Recovered tables may have vector indexes: their graphs are built in the background.
    engine.start_index_maintainer();
    Ok(d)
}

/// At a clean exit: checkpoint what changed, so the next start loads it instead of replaying.
pub fn close(dir: &DataDir, catalog: &zepto_storage::Catalog) {
    dir.close(catalog, &|m| eprintln!("zeptodb: {m}"));
}
