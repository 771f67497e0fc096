//! What the durability tests share: a table schema with every kind of column, generated
//! batches over two days, and a database's every row (memory and history) as text.
#![allow(dead_code)]

use zepto_storage::history::NS_PER_DAY;
use zepto_storage::{Catalog, Column, ColumnBuilder, ColumnDef, DataType, Schema, Value};

pub const DAY: i64 = NS_PER_DAY;

pub fn schema() -> Schema {
    let defs = [
        ("ts", DataType::Timestamp),
        ("sym", DataType::Symbol),
        ("v", DataType::Int64),
        ("note", DataType::Varchar),
        ("ok", DataType::Bool),
    ];
    Schema { columns: defs.iter().map(|(n, t)| ColumnDef { name: n.to_string(), data_type: *t }).collect() }
}

/// `n` rows spread over day `day` and the next one, three symbols, some NULLs.
pub fn batch(day: i64, n: usize, seed: i64) -> Vec<Column> {
    let types = [DataType::Timestamp, DataType::Varchar, DataType::Int64, DataType::Varchar, DataType::Bool];
    let mut b: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t, n)).collect();
    for i in 0..n as i64 {
        b[0].push_value(&Value::Timestamp(day * DAY + (i * 7919 + seed * 104_729) % (2 * DAY))).expect("push");
        b[1].push_str(["aa", "b", "ccc"][(i % 3) as usize]).expect("push");
        b[2].push_value(&Value::Int64(seed * 1000 + i)).expect("push");
        if i % 4 == 0 {
            b[3].push_null();
        } else {
            b[3].push_str(&format!("n{i}-{seed}")).expect("push");
        }
        b[4].push_value(&Value::Bool(i % 2 == 0)).expect("push");
    }
    b.into_iter().map(ColumnBuilder::finish).collect()
}

/// Every row of every table, memory and history, as sorted strings.
pub fn dump(c: &Catalog) -> Vec<String> {
    let mut out = Vec::new();
    for name in c.table_names() {
        let t = c.snapshot(&name).expect("snapshot");
        let mut rows = Vec::new();
        let mut push = |cols: &[Column]| {
            for i in 0..cols.first().map_or(0, |c| c.len()) {
                let r: Vec<String> = cols.iter().map(|c| format!("{:?}", c.get(i))).collect();
                rows.push(format!("{name}: {}", r.join("|")));
            }
        };
        for p in t.partitions() {
            let cols: Vec<Column> = p.columns().iter().map(|c| Column::clone(c)).collect();
            push(&cols);
        }
        if !t.history().files.is_empty() {
            let reader = c.history_reader().expect("a durable catalog has a history reader");
            let all: Vec<usize> = (0..t.schema().len()).collect();
            let h = reader.read(&t, &all, None, i64::MIN, i64::MAX).expect("history readable");
            for ch in h.chunks {
                push(&ch.columns);
            }
        }
        rows.sort();
        out.push(format!("table {name}: {} rows, ttl {:?}", rows.len(), t.history().ttl_ns));
        out.extend(rows);
    }
    out
}
