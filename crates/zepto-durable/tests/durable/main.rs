//! zepto-durable's integration tests, one test binary: each file below was a binary of its
//! own, each linking the engine again (~70 MB apiece on a CI clone's disk). The tests share
//! no process state; the panic policy's test runs its aborting half in a child process, this
//! binary run again with that test's path.

mod common;

mod backup;
mod dedup;
mod narrow_log;
mod panic_policy;
mod replace;
mod resume;
mod tiering;
mod vectors;
