//! Any bytes as a `/write` body, in every format, onto an in-memory engine: errors are fine,
//! panics are bugs, and a refused batch changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use zepto_server::auth::Principal;
use zepto_server::ingest::{self, ilp::Precision, IngestFormat, WriteRequest};
use zepto_sql::Engine;

fn engine() -> &'static Engine {
    static E: OnceLock<Engine> = OnceLock::new();
    E.get_or_init(|| {
        let e = Engine::new();
        let _ = e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, s VARCHAR, b BOOLEAN)");
        e
    })
}

fn rows(e: &Engine) -> usize {
    let c = e.catalog();
    c.table_names().iter().filter_map(|n| c.snapshot(n).ok()).map(|t| t.row_count()).sum()
}

fuzz_target!(|data: &[u8]| {
    let e = engine();
    let who = Principal::anonymous_admin();
    for format in [IngestFormat::Ilp, IngestFormat::Csv, IngestFormat::Jsonl, IngestFormat::Arrow] {
        let req = WriteRequest {
            format,
            table: (format != IngestFormat::Ilp).then(|| "t".to_string()),
            precision: Precision::NANOS,
            now_ns: 1_700_000_000_000_000_000,
        };
        let before = rows(e);
        let r = ingest::write(e, &who, &req, data);
        let after = rows(e);
        match r {
            Ok(n) => assert_eq!(after, before + n),
            Err(_) => assert_eq!(after, before),
        }
    }
});
