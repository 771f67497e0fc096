//! Records a node refused, kept whole in its own table ([`TABLE`]), in the same logged change
//! as their offsets.
//!
//! Kafka acknowledged every record before a node applies it: the door that produced it (or a
//! producer of its own, such as Telegraf) has told its client the rows are taken. A record the
//! owner cannot store (a malformed line; a value that does not fit a column another node
//! created with another type in the same moment; a table that does not exist) is therefore
//! never dropped: its key, headers and bytes go to `zepto_kafka_rejected` with the reason,
//! as Kafka Connect's dead-letter queue keeps them, to be read with SQL and sent again once
//! the cause is mended. Text payloads (line protocol, CSV, JSON lines, statements) are kept
//! as they are; others (Arrow IPC) in base64, `payload_base64` says which.

use crate::ClusterError;
use base64::Engine as _;
use rdkafka::message::{BorrowedMessage, Headers, Message};
use zepto_server::ingest::Mark;
use zepto_storage::{ColumnDef, DataType, Value};

/// The table of refused records.
pub const TABLE: &str = "zepto_kafka_rejected";

fn defs() -> Vec<ColumnDef> {
    let def = |name: &str, data_type| ColumnDef { name: name.to_string(), data_type };
    let mut defs = crate::offsets::defs();
    defs.extend([
        def("kafka_key", DataType::Varchar),
        def("headers", DataType::Varchar),
        def("reason", DataType::Varchar),
        def("payload_base64", DataType::Bool),
        def("payload", DataType::Varchar),
    ]);
    defs
}

/// What a refused record holds, as [`TABLE`] keeps it.
pub struct Refused<'a> {
    /// Where it was: topic, partition, offset.
    pub at: (&'a str, i32, i64),
    /// Its key (`None`: it had none).
    pub key: Option<&'a [u8]>,
    /// Its headers, name and value (`None`: a header without a value).
    pub headers: Vec<(&'a str, Option<&'a [u8]>)>,
    /// Its bytes.
    pub payload: &'a [u8],
}

impl<'a> Refused<'a> {
    /// Record `m`'s parts.
    pub fn of(m: &'a BorrowedMessage<'a>) -> Refused<'a> {
        let headers = m.headers().map(|hs| hs.iter().map(|h| (h.key, h.value)).collect()).unwrap_or_default();
        let at = (m.topic(), m.partition(), m.offset());
        Refused { at, key: m.key(), headers, payload: m.payload().unwrap_or_default() }
    }

    /// The row recording that the record was refused at `now_ns` for `why`.
    pub fn mark(&self, now_ns: i64, why: &str) -> Result<Mark, ClusterError> {
        let (topic, partition, offset) = self.at;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let headers: serde_json::Map<String, serde_json::Value> = self
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.map_or(serde_json::Value::Null, |v| text(v).into())))
            .collect();
        let (base64, payload) = match std::str::from_utf8(self.payload) {
            Ok(s) => (false, s.to_string()),
            Err(_) => (true, base64::engine::general_purpose::STANDARD.encode(self.payload)),
        };
        let row = vec![
            Value::Timestamp(now_ns),
            Value::Str(topic.to_string()),
            Value::Int64(i64::from(partition)),
            Value::Int64(offset),
            self.key.map_or(Value::Null, |k| Value::Str(text(k))),
            Value::Str(serde_json::Value::Object(headers).to_string()),
            Value::Str(why.to_string()),
            Value::Bool(base64),
            Value::Str(payload),
        ];
        Mark::new(TABLE, defs(), row).map_err(ClusterError::Storage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_server::auth::Principal;
    use zepto_server::ingest::{write_marked, IngestFormat, WriteRequest};

    #[test]
    fn a_refused_record_is_kept_whole_text_as_it_is_bytes_in_base64() {
        let e = zepto_sql::Engine::new();
        let req = WriteRequest {
            format: IngestFormat::Ilp,
            table: None,
            precision: zepto_server::ingest::ilp::Precision::NANOS,
            now_ns: 1,
        };
        let text = Refused {
            at: ("ticks", 3, 17),
            key: Some(b"S1"),
            headers: vec![("zepto-format", Some(b"jsonl")), ("zepto-table", Some(b"quotes")), ("bare", None)],
            payload: b"{\"sym\": \"S1\"}\n",
        };
        let binary = Refused { at: ("ticks", 0, 2), key: None, headers: Vec::new(), payload: &[0xff, 0x00, 0x41] };
        let marks =
            [text.mark(5, "table 'quotes' does not exist").expect("mark"), binary.mark(6, "not Arrow").expect("mark")];
        write_marked(&e, &Principal::anonymous_admin(), &req, b"", &marks).expect("stored");
        let r = e
            .execute(&format!(
                "SELECT kafka_partition, kafka_offset, kafka_key, headers, reason, payload_base64, payload FROM {TABLE} ORDER BY ts"
            ))
            .expect("read back");
        let b = r.batch();
        let row = |i: usize| b.columns.iter().map(|c| c.get(i)).collect::<Vec<_>>();
        let headers = |v: &Value| serde_json::from_str::<serde_json::Value>(&v.to_string()).expect("JSON");
        let (first, second) = (row(0), row(1));
        assert_eq!(
            headers(&first[3]),
            serde_json::json!({"zepto-format": "jsonl", "zepto-table": "quotes", "bare": null})
        );
        let str = |s: &str| Value::Str(s.into());
        assert_eq!(first[..3], [Value::Int64(3), Value::Int64(17), str("S1")]);
        assert_eq!(first[4..], [str("table 'quotes' does not exist"), Value::Bool(false), str("{\"sym\": \"S1\"}\n")]);
        assert_eq!(headers(&second[3]), serde_json::json!({}));
        assert_eq!(second[..3], [Value::Int64(0), Value::Int64(2), Value::Null]);
        assert_eq!(second[4..], [str("not Arrow"), Value::Bool(true), str("/wBB")]);
    }
}
