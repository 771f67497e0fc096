//! `DEDUP UPSERT KEYS` survives restarts: set with the table (one record with its CREATE),
//! changed later (its own record), and kept by checkpoints; recovery replays appends through
//! the same deduplication, so a retried batch stays applied once after a restart too.

use std::sync::Arc;
use zepto_durable::{Durable, Options};
use zepto_storage::{Catalog, Column, ColumnBuilder, ColumnDef, DataType, Schema, Table, TableOptions, Value};
use zepto_wal::{MemStorage, SyncMode};

fn schema() -> Schema {
    let defs = [("ts", DataType::Timestamp), ("sym", DataType::Symbol), ("px", DataType::Float64)];
    Schema { columns: defs.iter().map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t }).collect() }
}

/// Rows at timestamps `ts` for every one of three symbols, priced by `seed`.
fn batch(ts: &[i64], seed: f64) -> Vec<Column> {
    let mut b: Vec<ColumnBuilder> =
        schema().columns.iter().map(|c| ColumnBuilder::new(c.data_type, ts.len() * 3)).collect();
    for &t in ts {
        for s in ["a", "b", "c"] {
            b[0].push_value(&Value::Timestamp(t)).expect("push");
            b[1].push_str(s).expect("push");
            b[2].push_value(&Value::Float64(seed + t as f64)).expect("push");
        }
    }
    b.into_iter().map(ColumnBuilder::finish).collect()
}

fn open(wal: &MemStorage, ck: &MemStorage, cat: &Catalog) -> Arc<Durable> {
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    let s = |m: &MemStorage| -> Arc<dyn zepto_wal::Storage> { Arc::new(m.clone()) };
    Durable::open(s(wal), s(ck), s(&MemStorage::new()), cat, opts, |_| {}).map(|(d, _)| d).expect("open")
}

/// The table's rows as sorted strings, and its dedup keys.
fn dump(c: &Catalog) -> (Vec<String>, Vec<usize>) {
    let t = c.snapshot("t").expect("t");
    let mut rows: Vec<String> = t
        .partitions()
        .iter()
        .flat_map(|p| (0..p.len()).map(move |i| p.columns().iter().map(|c| format!("{:?}", c.get(i))).collect()))
        .map(|cells: Vec<String>| cells.join("|"))
        .collect();
    rows.sort();
    (rows, t.dedup_keys().to_vec())
}

fn create(c: &Catalog) {
    let opts = TableOptions { dedup_keys: vec!["ts".into(), "sym".into()], ..Default::default() };
    c.create(Table::new("t", schema(), &opts).expect("table"), false).expect("create");
}

#[test]
fn dedup_keys_and_their_effect_survive_the_log_and_checkpoints() {
    let (wal, ck) = (MemStorage::new(), MemStorage::new());
    let live = Catalog::new();
    let d = open(&wal, &ck, &live);
    create(&live);
    live.append("t", batch(&[1, 2, 3], 0.0)).expect("append");
    live.append("t", batch(&[1, 2, 3], 0.0)).expect("retried");
    live.append("t", batch(&[3, 2], 10.0)).expect("upsert, out of order");
    let want = dump(&live);
    assert_eq!((want.0.len(), want.1.as_slice()), (9, &[0usize, 1][..]));
    let again = Catalog::new();
    open(&wal, &ck, &again);
    assert_eq!(dump(&again), want, "replayed from the log");

    d.checkpoint(&live).expect("checkpoint");
    drop(d);
    let after = Catalog::new();
    let d = open(&wal, &ck, &after);
    assert_eq!(dump(&after), want, "from the checkpoint");
    after.append("t", batch(&[1], 20.0)).expect("upsert after the restart");
    assert_eq!(dump(&after).0.len(), 9);

    after.set_dedup("t", &[]).expect("off");
    after.append("t", batch(&[1], 30.0)).expect("kept twice");
    let want = dump(&after);
    assert_eq!((want.0.len(), want.1.len()), (12, 0));
    drop(d);
    let last = Catalog::new();
    open(&wal, &ck, &last);
    assert_eq!(dump(&last), want, "turned off through the log");
    let err = last.set_dedup("t", &["sym".into()]).expect_err("no timestamp");
    assert!(err.to_string().contains("designated timestamp 'ts'"), "{err}");
}

/// Rows moved to the Parquet history are not compared (each cluster owner tiers on its own: a
/// row its publisher accepted must be applied): a retried row at or before the newest history
/// row is stored again; later ones are deduplicated as usual.
#[test]
fn rows_moved_to_the_history_are_not_compared() {
    let (wal, ck, hist) = (MemStorage::new(), MemStorage::new(), MemStorage::new());
    let live = Catalog::new();
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    let s = |m: &MemStorage| -> Arc<dyn zepto_wal::Storage> { Arc::new(m.clone()) };
    let d = Durable::open(s(&wal), s(&ck), s(&hist), &live, opts, |_| {}).map(|(d, _)| d).expect("open");
    create(&live);
    live.append("t", batch(&[10, 20, 30], 0.0)).expect("append");
    d.tier(&live, "t", 25).expect("tier");
    assert_eq!(dump(&live).0.len(), 3, "30 in memory");
    live.append("t", batch(&[30, 20], 1.0)).expect("a retry reaching into the history");
    assert_eq!(dump(&live).0.len(), 6, "30 replaced in memory, 20 stored again beside its history copy");
}
