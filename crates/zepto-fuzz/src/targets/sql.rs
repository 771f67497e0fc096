//! Any text through the whole SQL front end and executor over small tables.

use std::sync::OnceLock;
use std::time::Duration;
use zepto_sql::interrupt::{QueryControl, RunContext};
use zepto_sql::Engine;

/// The tables every SQL input runs against.
pub const SETUP: &str =
    "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, s VARCHAR, b BOOLEAN, d DATE, i INT);
INSERT INTO t VALUES ('2024-01-02 09:30:00', 'A', 1.5, 10, 'x', true, '2024-01-02', 1),
 ('2024-01-02 09:31:00', 'B', NULL, -3, '', false, NULL, NULL), (NULL, NULL, 2.25, NULL, NULL, NULL, '2023-12-31', 7);
CREATE TABLE u (id INT, sym SYMBOL, v DOUBLE); INSERT INTO u VALUES (1, 'A', 0.5), (7, 'C', NULL)";

fn base() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| {
        let e = Engine::new();
        e.execute(SETUP).expect("the fuzz tables are created");
        e
    })
}

/// Each input runs under a 256 MiB memory limit and a 2 s deadline, as a server's queries
/// do: `range(1e10)` is an error to return, not a machine to fill. The deadline sits well
/// under libFuzzer's 10 s timeout: `SELECT min(range) FROM range(9863198)` takes 3.6 s in the
/// instrumented build and passed 10 s on a loaded machine, reported as a hang.
fn limits() -> RunContext {
    RunContext::new(Some(QueryControl::new(Some(Duration::from_secs(2)), Some(256 << 20))))
}

/// Parse, bind and run `data` (if UTF-8 and at most 4 KiB). Inputs that could write run on a
/// fresh engine, so no input changes what the next one sees.
pub fn run(data: &[u8]) {
    let Ok(sql) = std::str::from_utf8(data) else { return };
    if sql.len() > 4096 {
        return;
    }
    let lower = sql.to_ascii_lowercase();
    if ["insert", "create", "drop", "alter", "copy", "update", "delete", "checkpoint", "refresh"]
        .iter()
        .any(|w| lower.contains(w))
    {
        let e = Engine::new();
        e.execute(SETUP).expect("the fuzz tables are created");
        let _ = e.execute_in(&limits(), sql);
    } else {
        let _ = base().execute_in(&limits(), sql);
    }
}
