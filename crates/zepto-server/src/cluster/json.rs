//! `GET /cluster` as JSON: the door's rendering of a node's [`Status`].

use super::Status;

/// `status` as JSON, for `GET /cluster`.
pub fn to_json(status: &Status) -> serde_json::Value {
    let partitions: Vec<serde_json::Value> = status
        .partitions
        .iter()
        .map(|(p, s)| {
            serde_json::json!({
                "partition": p,
                "applied_offset": s.applied,
                "high_watermark": s.high_watermark,
                "lag": s.lag(),
                "ready": s.ready(),
                "sealed_offset": s.sealed,
            })
        })
        .collect();
    let members: Vec<serde_json::Value> = status
        .members
        .iter()
        .map(|m| serde_json::json!({"node_id": m.node_id, "flight": m.flight, "host": m.host, "partitions": m.partitions}))
        .collect();
    serde_json::json!({
        "node_id": status.node_id,
        "members": members,
        "partition_count": status.partition_count,
        "group": status.group,
        "topic": status.topic,
        "brokers": status.brokers,
        "partitions": partitions,
        "records_applied": status.records_applied,
        "rows_applied": status.rows_applied,
        "records_rejected": status.records_rejected,
        "rebalances": status.rebalances,
        "last_error": status.last_error,
        "shared_history": status.shared_history,
    })
}
