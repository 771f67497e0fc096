//! Parse and plan latency of point queries (the part of a ~50 µs point-query budget spent
//! before any data is touched). `cargo bench -p zepto-sql --bench parse`

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use zepto_sql::parser::parse_statement;
use zepto_sql::Engine;

/// 100 characters, the size the ARCHITECTURE.md comparison with `sqlparser` uses.
const SELECT_100: &str =
    "SELECT ts, sym, price, size FROM trades WHERE sym = 'S042' AND ts >= TIMESTAMP '2024-01-02 15:00:00'";

fn bench(c: &mut Criterion) {
    assert_eq!(SELECT_100.len(), 100);
    c.bench_function("parse 100-char SELECT", |b| b.iter(|| parse_statement(black_box(SELECT_100))));
    let engine = Engine::new();
    engine
        .execute("CREATE TABLE trades (ts TIMESTAMP, sym SYMBOL, price DOUBLE, size BIGINT); INSERT INTO trades VALUES ('2024-01-02 15:30:00', 'S042', 1.5, 100)")
        .expect("setup");
    c.bench_function("parse+plan+run point query (1 row)", |b| b.iter(|| engine.execute(black_box(SELECT_100))));
}

criterion_group!(benches, bench);
criterion_main!(benches);
