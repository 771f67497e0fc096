//! The log writes each batch's integers and symbol codes as narrow as the batch allows
//! (`zepto_io::narrow`); replay reads them back in the table's types. Generated batches whose
//! ranges need every width, with NULLs, and dictionaries on both sides of each key width,
//! restart from the log alone into exactly the rows that were acknowledged.

use crate::common;

use common::dump;
use std::sync::Arc;
use zepto_durable::{Durable, Options};
use zepto_storage::rng::XorShift;
use zepto_storage::{Catalog, Column, ColumnBuilder, ColumnDef, DataType, Schema, Table, TableOptions, Value};
use zepto_wal::{MemStorage, SyncMode};

fn schema() -> Schema {
    let defs = [
        ("ts", DataType::Timestamp),
        ("sym", DataType::Symbol),
        ("i", DataType::Int32),
        ("b", DataType::Int64),
        ("n", DataType::Int64),
    ];
    Schema { columns: defs.iter().map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t }).collect() }
}

fn open(wal: &MemStorage, ck: &MemStorage, cat: &Catalog) -> Arc<Durable> {
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    let s = |m: &MemStorage| -> Arc<dyn zepto_wal::Storage> { Arc::new(m.clone()) };
    Durable::open(s(wal), s(ck), s(&MemStorage::new()), cat, opts, |_| {}).map(|(d, _)| d).expect("open")
}

/// A value of `rng` in `-span..=span`, or one of the ends.
fn draw(rng: &mut XorShift, span: i64) -> i64 {
    match rng.below(5) {
        0 => span,
        1 => -span - 1,
        _ => (rng.next_u64() % (span as u64 + 1)) as i64 * if rng.below(2) == 0 { 1 } else { -1 },
    }
}

/// `rows` rows from time `t0`: symbols among `distinct` strings, integers within `span`.
fn batch(rng: &mut XorShift, t0: i64, rows: usize, distinct: usize, span: i64) -> Vec<Column> {
    let mut b: Vec<ColumnBuilder> = schema().columns.iter().map(|c| ColumnBuilder::new(c.data_type, rows)).collect();
    for r in 0..rows {
        b[0].push_value(&Value::Timestamp(t0 + r as i64)).expect("ts");
        b[1].push_symbol(&format!("s{}", rng.index(distinct))).expect("sym");
        b[2].push_value(&Value::Int32(draw(rng, span.min(i32::MAX.into())) as i32)).expect("i");
        b[3].push_value(&Value::Int64(draw(rng, span))).expect("b");
        if rng.below(3) == 0 {
            b[4].push_null();
        } else {
            b[4].push_value(&Value::Int64(draw(rng, span))).expect("n");
        }
    }
    b.into_iter().map(ColumnBuilder::finish).collect()
}

#[test]
fn narrowed_batches_replay_into_the_rows_that_were_written() {
    let (wal, ck) = (MemStorage::new(), MemStorage::new());
    let live = Catalog::new();
    let d = open(&wal, &ck, &live);
    let opts = TableOptions { timestamp: Some("ts".into()), ..Default::default() };
    live.create(Table::new("t", schema(), &opts).expect("table"), false).expect("create");
    let mut rng = XorShift::new(51);
    let mut t0 = 0;
    let spans = [100, 127, 128, 30_000, 32_768, 2_000_000_000, i32::MAX as i64 + 1, i64::MAX - 1];
    for (k, &span) in spans.iter().enumerate() {
        // The two dictionaries past a 16-bit key (every string used: the log keeps only
        // those) with the first spans only: they are slow to build in a debug test.
        let big: &[usize] = if k < 2 { &[32_768, 32_769] } else { &[] };
        for &distinct in [1, 128, 129].iter().chain(big) {
            let rows = (distinct * 2).clamp(50, 70_000) + k;
            live.append("t", batch(&mut rng, t0, rows, distinct, span)).expect("append");
            t0 += rows as i64;
        }
    }
    let written = dump(&live);
    drop(d);
    let back = Catalog::new();
    let _d = open(&wal, &ck, &back);
    assert_eq!(dump(&back), written);
}
