//! `FLOAT[n]` columns survive restarts: through the WAL (Arrow IPC batches), through a
//! checkpoint (an Arrow IPC file: `FixedSizeList<Float32, n>`), and through tiering to the
//! Parquet history and back, NULL vectors included.

use std::sync::Arc;
use zepto_durable::{Durable, Options};
use zepto_storage::history::NS_PER_DAY;
use zepto_storage::{Catalog, Column, ColumnBuilder, ColumnDef, DataType, Schema, Table, TableOptions, Value};
use zepto_wal::{MemStorage, SyncMode};

fn schema() -> Schema {
    let defs = [("ts", DataType::Timestamp), ("sym", DataType::Symbol), ("v", DataType::Vector(5))];
    Schema { columns: defs.iter().map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t }).collect() }
}

fn batch(day: i64, n: usize, seed: i64) -> Vec<Column> {
    let mut b: Vec<ColumnBuilder> = schema().columns.iter().map(|c| ColumnBuilder::new(c.data_type, n)).collect();
    for i in 0..n as i64 {
        b[0].push_value(&Value::Timestamp(day * NS_PER_DAY + (i * 7919 + seed * 104_729) % (2 * NS_PER_DAY)))
            .expect("push");
        b[1].push_str(["aa", "b", "ccc"][(i % 3) as usize]).expect("push");
        if i % 5 == 0 {
            b[2].push_null();
        } else {
            let v = (0..5).map(|k| (i * 31 + k * 7 + seed) as f32 / 13.0 - 3.0).collect();
            b[2].push_value(&Value::Vector(v)).expect("push");
        }
    }
    b.into_iter().map(ColumnBuilder::finish).collect()
}

fn open(wal: &MemStorage, ck: &MemStorage, hist: &MemStorage, cat: &Catalog) -> Arc<Durable> {
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    let s = |m: &MemStorage| -> Arc<dyn zepto_wal::Storage> { Arc::new(m.clone()) };
    Durable::open(s(wal), s(ck), s(hist), cat, opts, |_| {}).map(|(d, _)| d).expect("open")
}

/// Every row of `t`, memory and history, as sorted strings.
fn dump(c: &Catalog) -> Vec<String> {
    let t = c.snapshot("t").expect("t");
    let mut rows = Vec::new();
    let mut push = |cols: &[Column]| {
        for i in 0..cols.first().map_or(0, |c| c.len()) {
            rows.push(cols.iter().map(|c| format!("{:?}", c.get(i))).collect::<Vec<_>>().join("|"));
        }
    };
    for p in t.partitions() {
        push(&p.columns().iter().map(|c| Column::clone(c)).collect::<Vec<_>>());
    }
    if !t.history().files.is_empty() {
        let reader = c.history_reader().expect("history reader");
        let h = reader.read(&t, &[0, 1, 2], None, i64::MIN, i64::MAX).expect("history readable");
        for ch in h.chunks {
            push(&ch.columns);
        }
    }
    rows.sort();
    rows
}

#[test]
fn vectors_survive_the_log_checkpoints_and_the_history() {
    // The log alone.
    let (wal, ck, hist) = (MemStorage::new(), MemStorage::new(), MemStorage::new());
    let live = Catalog::new();
    let _d = open(&wal, &ck, &hist, &live);
    live.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
    live.append("t", batch(0, 40, 1)).expect("append");
    let want = dump(&live);
    assert_eq!(want.len(), 40);
    assert!(want.iter().any(|r| r.contains("Vector(")) && want.iter().any(|r| r.ends_with("|Null")));
    let again = Catalog::new();
    open(&wal, &ck, &hist, &again);
    assert_eq!(dump(&again), want);
    assert_eq!(again.snapshot("t").expect("t").schema().columns[2].data_type, DataType::Vector(5));

    // A checkpoint, rows logged after it, and tiering to the Parquet history.
    let (wal, ck, hist) = (MemStorage::new(), MemStorage::new(), MemStorage::new());
    let live = Catalog::new();
    let d = open(&wal, &ck, &hist, &live);
    live.create(Table::new("t", schema(), &TableOptions::default()).expect("table"), false).expect("create");
    live.append("t", batch(0, 40, 1)).expect("append");
    d.checkpoint(&live).expect("checkpoint");
    live.append("t", batch(2, 20, 2)).expect("append");
    let want = dump(&live);
    d.tier(&live, "t", 2 * NS_PER_DAY).expect("tier");
    assert!(!live.snapshot("t").expect("t").history().files.is_empty());
    assert_eq!(dump(&live), want, "tiered rows read back from Parquet");
    // A batch with a NaN element is refused whole.
    let mut bad = batch(3, 3, 3);
    bad[2] = Column::from_data(zepto_storage::ColumnData::Vector { dim: 5, values: vec![f32::NAN; 15].into() });
    let err = live.append("t", bad).expect_err("NaN");
    assert!(err.to_string().contains("'v' row 1"), "{err}");
    assert_eq!(dump(&live), want);
    drop(d);
    let after = Catalog::new();
    open(&wal, &ck, &hist, &after);
    assert_eq!(dump(&after), want, "after a restart");
}
