//! Stable-toolchain fuzzing: every statement of the golden corpus, mutated thousands of ways
//! (deleted/duplicated/swapped characters, injected tokens, truncation), through parse, bind and
//! execute. Errors are expected; a panic fails the test and prints the input.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use zepto_sql::Engine;

use zepto_storage::rng::XorShift as Rng;

const TOKENS: &[&str] = &[
    "?",
    "$1",
    "$0",
    "$99999999999999999999",
    "(",
    ")",
    ",",
    "'",
    "\"",
    "NULL",
    "*",
    "-",
    "--",
    "/*",
    "SELECT",
    "DELETE FROM",
    "UPDATE",
    "SET",
    "CHECKPOINT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "JOIN",
    "ON",
    "IN",
    "(SELECT 1)",
    "EXISTS",
    "CASE",
    "WHEN",
    "END",
    "::INT",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "0",
    "''",
    "INTERVAL '1 minute'",
    "TIMESTAMP '2024-01-02'",
    "UNION",
    "OVER (",
    "OVER ()",
    "PARTITION BY",
    "ROWS BETWEEN",
    "RANGE BETWEEN",
    "UNBOUNDED PRECEDING",
    "PRECEDING",
    "FOLLOWING",
    "CURRENT ROW",
    "QUALIFY",
    "IGNORE NULLS",
    "WINDOW w AS (",
    "SAMPLE BY 1m",
    "SAMPLE BY 1M",
    "FILL(PREV)",
    "FILL(LINEAR)",
    "LATEST ON ts PARTITION BY sym",
    "WINDOW JOIN",
    "SPLICE JOIN",
    "ASOF JOIN",
    "TOLERANCE",
    "nearest(",
    "ema(",
    "mavg(",
    "LIMIT",
    "OFFSET",
    "AND",
    "OR",
    "NOT",
    "//",
    "%",
    "||",
    "count(*)",
    "sum(",
    "avg(DISTINCT ",
    "é",
    "\u{0}",
    ";",
];

fn mutate(s: &str, rng: &mut Rng) -> String {
    let mut c: Vec<char> = s.chars().collect();
    for _ in 0..1 + rng.index(3) {
        let len = c.len();
        match rng.index(6) {
            0 if len > 0 => {
                let a = rng.index(len);
                let b = (a + 1 + rng.index(8)).min(len);
                c.drain(a..b);
            }
            1 if len > 0 => {
                let a = rng.index(len);
                let b = (a + 1 + rng.index(12)).min(len);
                let dup: Vec<char> = c[a..b].to_vec();
                let at = rng.index(len + 1);
                c.splice(at..at, dup);
            }
            2 if len > 1 => {
                let (a, b) = (rng.index(len), rng.index(len));
                c.swap(a, b);
            }
            3 => {
                let t = TOKENS[rng.index(TOKENS.len())];
                let at = rng.index(len + 1);
                c.splice(at..at, format!(" {t} ").chars());
            }
            4 if len > 0 => c.truncate(rng.index(len)),
            _ => {}
        }
    }
    c.into_iter().collect()
}

#[test]
fn mutated_corpus_never_panics() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/slt exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut runs = 0usize;
    for f in files {
        let text = std::fs::read_to_string(&f).expect("readable slt");
        let lines: Vec<&str> = text.lines().collect();
        // Setup statements build the file's tables; queries are what we mutate.
        let engine = Engine::new();
        let mut queries = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if let Some(sql) = lines.get(i + 1) {
                if l.starts_with("statement ok") {
                    let _ = engine.execute(sql);
                } else if l.starts_with("query") || l.starts_with("statement error") {
                    queries.push(sql.to_string());
                }
            }
        }
        for q in &queries {
            for _ in 0..24 {
                let m = mutate(q, &mut rng);
                // A mutation may write (even DROP a table): later inputs then just see other data.
                let r = catch_unwind(AssertUnwindSafe(|| {
                    let _ = engine.execute(&m);
                }));
                assert!(r.is_ok(), "panic on input from {}:\n{m}", f.display());
                runs += 1;
            }
        }
    }
    assert!(runs > 10_000, "expected thousands of mutated inputs, ran {runs}");
}
