//! The offsets a node has applied, kept in its own tables: one row of [`TABLE`] per applied
//! Kafka record, written in the same logged change as the record's rows
//! (`zepto_server::ingest::write_marked`). After a crash, recovery brings back both or
//! neither, so the table says exactly which records the node's rows include; that, not the
//! group's committed offset, is where a node resumes a partition.

use crate::ClusterError;
use std::collections::HashMap;
use zepto_server::ingest::Mark;
use zepto_sql::Engine;
use zepto_storage::{ColumnDef, DataType, Value};

/// The table of applied offsets.
pub const TABLE: &str = "zepto_kafka_offsets";

fn defs() -> Vec<ColumnDef> {
    let def = |name: &str, data_type| ColumnDef { name: name.to_string(), data_type };
    vec![
        def("ts", DataType::Timestamp),
        def("topic", DataType::Symbol),
        def("kafka_partition", DataType::Int64),
        def("kafka_offset", DataType::Int64),
    ]
}

/// The row recording that the record at `offset` of `topic`'s `partition` was applied at
/// `now_ns`.
pub fn mark(topic: &str, partition: i32, offset: i64, now_ns: i64) -> Result<Mark, ClusterError> {
    let row = vec![
        Value::Timestamp(now_ns),
        Value::Str(topic.to_string()),
        Value::Int64(i64::from(partition)),
        Value::Int64(offset),
    ];
    Mark::new(TABLE, defs(), row).map_err(ClusterError::Storage)
}

/// The last offset applied per partition of `topic` (none before the first record).
pub fn applied(engine: &Engine, topic: &str) -> Result<HashMap<i32, i64>, ClusterError> {
    if !engine.catalog().exists(TABLE) {
        return Ok(HashMap::new());
    }
    // `topic` is a checked Kafka name (letters, digits, '.', '_', '-'): no quote can occur.
    debug_assert!(!topic.contains('\''));
    let sql = format!(
        "SELECT kafka_partition, max(kafka_offset) FROM {TABLE} WHERE topic = '{topic}' GROUP BY kafka_partition"
    );
    let r = engine.execute(&sql).map_err(|e| ClusterError::Storage(format!("{TABLE}: {e}")))?;
    let b = r.batch();
    let mut out = HashMap::new();
    for i in 0..b.rows {
        let (p, o) = (b.columns.first().map(|c| c.get(i)), b.columns.get(1).map(|c| c.get(i)));
        if let (Some(p), Some(o)) = (p.and_then(|v| v.as_i64()), o.and_then(|v| v.as_i64())) {
            out.insert(i32::try_from(p).map_err(|_| ClusterError::Storage(format!("{TABLE}: partition {p}")))?, o);
        }
    }
    Ok(out)
}
