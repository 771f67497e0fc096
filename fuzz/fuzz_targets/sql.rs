//! Any text through the whole SQL front end and executor over small tables: errors are fine,
//! panics and hangs are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use zepto_sql::Engine;

const SETUP: &str = "CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, s VARCHAR, b BOOLEAN, d DATE, i INT);
INSERT INTO t VALUES ('2024-01-02 09:30:00', 'A', 1.5, 10, 'x', true, '2024-01-02', 1),
 ('2024-01-02 09:31:00', 'B', NULL, -3, '', false, NULL, NULL), (NULL, NULL, 2.25, NULL, NULL, NULL, '2023-12-31', 7);
CREATE TABLE u (id INT, sym SYMBOL, v DOUBLE); INSERT INTO u VALUES (1, 'A', 0.5), (7, 'C', NULL)";

fn base() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| {
        let e = Engine::new();
        e.execute(SETUP).expect("fuzz setup");
        e
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(sql) = std::str::from_utf8(data) {
        if sql.len() > 4096 {
            return;
        }
        // Writes must not leak between inputs: run on a fresh engine when the input could write.
        let lower = sql.to_ascii_lowercase();
        if ["insert", "create", "drop", "alter", "copy"].iter().any(|w| lower.contains(w)) {
            let e = Engine::new();
            let _ = e.execute(SETUP);
            let _ = e.execute(sql);
        } else {
            let _ = base().execute(sql);
        }
    }
});
