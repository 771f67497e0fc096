//! Stable-toolchain fuzzing of the ingest door (`POST /write`): valid InfluxDB line protocol,
//! CSV, JSON lines and Arrow bodies, mutated thousands of ways (bytes flipped, deleted,
//! duplicated, separators and multibyte characters injected, truncation), through
//! `ingest::write` on an in-memory engine. Errors are expected; a panic fails the test and
//! prints the body. And every batch is all or nothing: an error leaves every table's rows and
//! columns as they were, a success adds exactly the rows it reports.

use std::panic::{catch_unwind, AssertUnwindSafe};
use zepto_server::auth::Principal;
use zepto_server::ingest::{self, ilp::Precision, IngestFormat, WriteRequest};
use zepto_sql::Engine;

use zepto_storage::rng::XorShift as Rng;

const ILP: &str = "cpu,host=a,region=eu usage=0.5,idle=99i,ok=t,name=\"x y\" 1700000000000000000\n\
cpu,host=b usage=1.5 1700000000000000001\n\
mem,host=a free=12u,note=\"q\\\"uote\" 1700000000000000002\n\
cpu,host=a\\ b usage=2e3\n";
const CSV: &str =
    "ts,sym,px,n,s,b\n2024-01-02 09:30:00,A,1.5,3,\"x,y\",true\n2024-01-02T09:30:01.5,B,,-7,,false\n,,,,\"\",\n";
const JSONL: &str = "{\"ts\":\"2024-01-02 09:30:00\",\"sym\":\"A\",\"px\":1.5,\"n\":3,\"s\":\"x\",\"b\":true}\n\
{\"ts\":1704187800000000000,\"sym\":null,\"px\":-2,\"n\":null,\"s\":\"é\",\"b\":false}\n";
const INJECT: &[&str] = &[
    ",",
    "=",
    " ",
    "\n",
    "\\",
    "\"",
    "i",
    "u",
    "t",
    "é",
    "日本",
    "\u{0}",
    "-",
    "1e999",
    "9223372036854775808i",
    "{",
    "}",
    "[",
    "]",
    ":",
    "null",
    "NaN",
    "''",
];

fn mutate(rng: &mut Rng, seed: &str) -> Vec<u8> {
    let mut b = seed.as_bytes().to_vec();
    for _ in 0..1 + rng.index(4) {
        let at = rng.index(b.len() + 1);
        match rng.index(6) {
            0 if at < b.len() => b[at] = rng.next_u64() as u8,
            1 if at < b.len() => {
                b.remove(at);
            }
            2 => {
                let t = INJECT[rng.index(INJECT.len())].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            3 if at < b.len() => {
                let end = (at + rng.index(12)).min(b.len());
                let dup: Vec<u8> = b[at..end].to_vec();
                b.splice(at..at, dup);
            }
            4 => b.truncate(at),
            _ => {}
        }
    }
    b
}

/// Every table's name, width and rows.
fn state(e: &Engine) -> Vec<(String, usize, usize)> {
    let c = e.catalog();
    c.table_names()
        .into_iter()
        .filter_map(|n| c.snapshot(&n).ok().map(|t| (n, t.schema().len(), t.row_count())))
        .collect()
}

fn rows(s: &[(String, usize, usize)]) -> usize {
    s.iter().map(|t| t.2).sum()
}

#[test]
fn mutated_bodies_never_panic_and_never_half_apply() {
    let e = Engine::new();
    e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE, n BIGINT, s VARCHAR, b BOOLEAN)").expect("t");
    let who = Principal::anonymous_admin();
    let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
    let seeds: [(IngestFormat, &str); 3] =
        [(IngestFormat::Ilp, ILP), (IngestFormat::Csv, CSV), (IngestFormat::Jsonl, JSONL)];
    let (mut ok, mut refused) = (0, 0);
    for round in 0..12_000 {
        let (format, seed) = seeds[round % seeds.len()];
        let body = if round < seeds.len() { seed.as_bytes().to_vec() } else { mutate(&mut rng, seed) };
        let req = WriteRequest {
            format,
            table: (format != IngestFormat::Ilp).then(|| "t".to_string()),
            precision: Precision::NANOS,
            now_ns: 1_700_000_000_000_000_000,
        };
        let before = state(&e);
        let r = catch_unwind(AssertUnwindSafe(|| ingest::write(&e, &who, &req, &body)));
        let Ok(r) = r else {
            panic!("ingest panicked on a {format:?} body: {:?}", String::from_utf8_lossy(&body));
        };
        let after = state(&e);
        match r {
            Ok(n) => {
                ok += 1;
                assert_eq!(
                    rows(&after),
                    rows(&before) + n,
                    "{format:?} reported {n} rows: {:?}",
                    String::from_utf8_lossy(&body)
                );
            }
            Err(err) => {
                refused += 1;
                assert_eq!(
                    after,
                    before,
                    "a refused {format:?} body changed tables ({err:?}): {:?}",
                    String::from_utf8_lossy(&body)
                );
            }
        }
    }
    // Both outcomes happen, so both checks above ran.
    assert!(ok > 100 && refused > 100, "accepted {ok}, refused {refused}");
}
