//! `Catalog::replace` (QuestDB's `/imp?overwrite=true`) is one record: after a restart the
//! table is the new one with its rows, replacing a table or none, and a later append lands on
//! the new layout.

use std::sync::Arc;
use zepto_durable::{Durable, Options};
use zepto_storage::{Catalog, Column, ColumnBuilder, ColumnDef, DataType, Schema, Table, TableOptions, Value};
use zepto_wal::{MemStorage, SyncMode};

fn schema(extra: bool) -> Schema {
    let mut defs = vec![("ts", DataType::Timestamp), ("sym", DataType::Symbol)];
    if extra {
        defs.push(("qty", DataType::Int64));
    }
    Schema { columns: defs.iter().map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t }).collect() }
}

fn rows(extra: bool, ts: &[i64]) -> Vec<Column> {
    let mut b: Vec<ColumnBuilder> = schema(extra).columns.iter().map(|c| ColumnBuilder::new(c.data_type, 4)).collect();
    for &t in ts {
        b[0].push_value(&Value::Timestamp(t)).expect("ts");
        b[1].push_str("a").expect("sym");
        if extra {
            b[2].push_value(&Value::Int64(t * 10)).expect("qty");
        }
    }
    b.into_iter().map(ColumnBuilder::finish).collect()
}

fn table(extra: bool) -> Table {
    let opts = TableOptions { timestamp: Some("ts".into()), ..Default::default() };
    Table::new("t", schema(extra), &opts).expect("table")
}

fn open(wal: &MemStorage, ck: &MemStorage, cat: &Catalog) -> Arc<Durable> {
    let opts = Options { checkpoint_bytes: 0, sync: SyncMode::Always, ..Options::default() };
    let s = |m: &MemStorage| -> Arc<dyn zepto_wal::Storage> { Arc::new(m.clone()) };
    Durable::open(s(wal), s(ck), s(&MemStorage::new()), cat, opts, |_| {}).map(|(d, _)| d).expect("open")
}

fn state(c: &Catalog) -> (usize, usize) {
    let t = c.snapshot("t").expect("t");
    (t.schema().len(), t.row_count())
}

#[test]
fn a_replaced_table_is_the_new_one_after_a_restart() {
    let (wal, ck) = (MemStorage::new(), MemStorage::new());
    let live = Catalog::new();
    let d = open(&wal, &ck, &live);
    assert_eq!(live.replace(table(false), rows(false, &[1, 2, 3])).expect("into nothing"), 3);
    assert_eq!(live.replace(table(true), rows(true, &[7, 8])).expect("over t"), 2);
    assert!(live.replace(table(true), rows(false, &[9])).is_err(), "rows of another layout");
    assert_eq!(state(&live), (3, 2), "a refused replace changes nothing");
    live.append("t", rows(true, &[9])).expect("append");
    drop(d);
    let back = Catalog::new();
    let _d = open(&wal, &ck, &back);
    assert_eq!(state(&back), (3, 3));
    let t = back.snapshot("t").expect("t");
    let ts: Vec<i64> =
        t.partitions().iter().flat_map(|p| p.columns()[0].as_i64_slice().unwrap_or(&[]).to_vec()).collect();
    assert_eq!(ts, [7, 8, 9]);
}
