//! Messages per second on one core: parse alone, and parse + map into a batch, for
//! MarketDataIncrementalRefresh messages of 1, 10 and 100 entries (`cargo run --release -p
//! zepto-fix --example parse_speed`). Storing the batch is not included.

use std::time::Instant;
use zepto_fix::encode::Value;
use zepto_fix::map::Batch;
use zepto_fix::parse::parse;
use zepto_fix::Encoder;

fn messages(entries: usize, count: usize) -> Vec<u8> {
    let mut e = Encoder::new("FIX.4.4", "FEED", "ZEPTO");
    let mut out = Vec::new();
    let n = entries.to_string();
    for seq in 1..=count as u64 {
        let mut f: Vec<(u32, Value<'_>)> = vec![(262, Value::Bytes(b"R1")), (268, Value::Bytes(n.as_bytes()))];
        for i in 0..entries {
            f.extend([
                (279, Value::Bytes(b"0")),
                (269, Value::Bytes(if i % 2 == 0 { b"0" } else { b"1" })),
                (55, Value::Bytes(b"EURUSD")),
                (270, Value::Bytes(b"1.08415")),
                (271, Value::Bytes(b"1000000")),
                (273, Value::Bytes(b"09:30:00.123456")),
            ]);
        }
        e.message(&mut out, "X", seq, 1_704_187_800_000_000_000, false, &f);
    }
    out
}

fn main() {
    for entries in [1, 10, 100] {
        let count = 1_000_000 / entries;
        let buf = messages(entries, count);
        let t = Instant::now();
        let mut at = 0;
        let mut n = 0;
        while let Ok(m) = parse(&buf[at..]) {
            at += m.len();
            n += m.fields().count();
        }
        let parse_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut batch = Batch::default();
        let mut at = 0;
        let mut rows = 0;
        while let Ok(m) = parse(&buf[at..]) {
            at += m.len();
            rows += batch.add(&m).unwrap_or(0);
        }
        let map_s = t.elapsed().as_secs_f64();
        println!(
            "{entries:>3} entries/msg: parse {:>10.0} msg/s ({:.0} ns/msg, {n} fields); parse+map {:>10.0} msg/s ({:.0} ns/msg, {rows} rows)",
            count as f64 / parse_s,
            parse_s * 1e9 / count as f64,
            count as f64 / map_s,
            map_s * 1e9 / count as f64,
        );
    }
}
