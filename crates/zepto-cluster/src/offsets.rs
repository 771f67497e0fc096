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

/// The columns of [`TABLE`]: when, and where in Kafka (the first columns of
/// [`crate::rejected::TABLE`] too).
pub(crate) fn defs() -> Vec<ColumnDef> {
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

/// Delete the rows of `topic` below each partition's last applied offset: only the last one
/// says where to resume, and the table would otherwise grow by a row per batch forever. Safe
/// at any time (the row kept is the one a restart reads). Returns the rows deleted.
pub fn compact(engine: &Engine, topic: &str) -> Result<u64, ClusterError> {
    let mut deleted = 0;
    for (p, last) in applied(engine, topic)? {
        debug_assert!(!topic.contains('\''));
        let sql =
            format!("DELETE FROM {TABLE} WHERE topic = '{topic}' AND kafka_partition = {p} AND kafka_offset < {last}");
        let r = engine.execute(&sql).map_err(|e| ClusterError::Storage(format!("{TABLE}: {e}")))?;
        // The status is `DELETE n`.
        let n = r.status.as_deref().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse::<u64>().ok());
        deleted += n.unwrap_or(0);
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_server::auth::Principal;
    use zepto_server::ingest::{ilp::Precision, write_marked, IngestFormat, WriteRequest};

    #[test]
    fn the_last_offset_of_each_partition_survives_compaction() {
        let e = Engine::new();
        let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 1 };
        for (i, (topic, p, o)) in
            [("t", 0, 5), ("t", 1, 2), ("t", 0, 9), ("u", 0, 1), ("t", 1, 3), ("t", 0, 7)].iter().enumerate()
        {
            let m = mark(topic, *p, *o, i as i64).expect("a mark");
            write_marked(&e, &Principal::anonymous_admin(), &req, b"", &[m]).expect("stored");
        }
        let before = applied(&e, "t").expect("offsets");
        assert_eq!(before, HashMap::from([(0, 9), (1, 3)]));
        assert_eq!(compact(&e, "t").expect("compacted"), 3);
        assert_eq!(applied(&e, "t").expect("offsets"), before);
        assert_eq!(applied(&e, "u").expect("offsets"), HashMap::from([(0, 1)]));
        let r = e.execute(&format!("SELECT count(*) FROM {TABLE}")).expect("count");
        assert_eq!(r.batch().columns[0].get(0).as_i64(), Some(3), "t: one row per partition; u untouched");
    }
}
