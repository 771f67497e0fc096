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
//! as they are; others (Arrow IPC) in base64, `payload_base64` says which. Keys likewise
//! (`kafka_key_base64`), and headers as a JSON array in their order, repeated names
//! included, each value as text or (`value_base64`) base64: every byte of the record is kept.

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
        def("kafka_key_base64", DataType::Bool),
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
        let (payload_base64, payload) = kept(self.payload);
        let key = self.key.map(kept);
        let row = vec![
            Value::Timestamp(now_ns),
            Value::Str(topic.to_string()),
            Value::Int64(i64::from(partition)),
            Value::Int64(offset),
            key.as_ref().map_or(Value::Null, |(_, k)| Value::Str(k.clone())),
            key.as_ref().map_or(Value::Null, |(b, _)| Value::Bool(*b)),
            Value::Str(self.headers_json()),
            Value::Str(why.to_string()),
            Value::Bool(payload_base64),
            Value::Str(payload),
        ];
        Mark::new(TABLE, defs(), row).map_err(ClusterError::Storage)
    }

    /// The headers as a JSON array in their order (`[{"name": ..., "value": ...}]`): a value
    /// that is not UTF-8 as `value_base64`, a header without one as `"value": null`.
    fn headers_json(&self) -> String {
        let header = |(name, value): &(&str, Option<&[u8]>)| {
            let mut h = serde_json::Map::new();
            h.insert("name".into(), (*name).into());
            match value.map(kept) {
                None => h.insert("value".into(), serde_json::Value::Null),
                Some((false, text)) => h.insert("value".into(), text.into()),
                Some((true, b64)) => h.insert("value_base64".into(), b64.into()),
            };
            serde_json::Value::Object(h)
        };
        serde_json::Value::Array(self.headers.iter().map(header).collect()).to_string()
    }
}

/// `bytes` as they are when they are UTF-8 (false), else in base64 (true).
fn kept(bytes: &[u8]) -> (bool, String) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (false, s.to_string()),
        Err(_) => (true, base64::engine::general_purpose::STANDARD.encode(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zepto_server::auth::Principal;
    use zepto_server::ingest::{write_marked, IngestFormat, WriteRequest};

    #[test]
    fn a_refused_record_is_kept_whole_text_as_it_is_bytes_in_base64_headers_in_order() {
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
        // A binary key, a repeated header name, a binary header value: all kept exactly.
        let raw = Refused {
            at: ("ticks", 1, 9),
            key: Some(&[0x00, 0xfe]),
            headers: vec![("h", Some(b"one")), ("h", Some(&[0xc3, 0x28])), ("h", Some(b""))],
            payload: b"x",
        };
        let marks = [
            text.mark(5, "table 'quotes' does not exist").expect("mark"),
            binary.mark(6, "not Arrow").expect("mark"),
            raw.mark(7, "raw").expect("mark"),
        ];
        write_marked(&e, &Principal::anonymous_admin(), &req, b"", &marks).expect("stored");
        let r = e
            .execute(&format!(
                "SELECT kafka_partition, kafka_offset, kafka_key, headers, reason, payload_base64, payload, \
                 kafka_key_base64 FROM {TABLE} ORDER BY ts"
            ))
            .expect("read back");
        let b = r.batch();
        let row = |i: usize| b.columns.iter().map(|c| c.get(i)).collect::<Vec<_>>();
        let headers = |v: &Value| serde_json::from_str::<serde_json::Value>(&v.to_string()).expect("JSON");
        let (first, second, third) = (row(0), row(1), row(2));
        assert_eq!(
            headers(&first[3]),
            serde_json::json!([
                {"name": "zepto-format", "value": "jsonl"},
                {"name": "zepto-table", "value": "quotes"},
                {"name": "bare", "value": null}
            ])
        );
        let str = |s: &str| Value::Str(s.into());
        assert_eq!(first[..3], [Value::Int64(3), Value::Int64(17), str("S1")]);
        let want =
            [str("table 'quotes' does not exist"), Value::Bool(false), str("{\"sym\": \"S1\"}\n"), Value::Bool(false)];
        assert_eq!(first[4..], want);
        assert_eq!(headers(&second[3]), serde_json::json!([]));
        assert_eq!(second[..3], [Value::Int64(0), Value::Int64(2), Value::Null]);
        assert_eq!(second[4..], [str("not Arrow"), Value::Bool(true), str("/wBB"), Value::Null]);
        assert_eq!(third[2], str("AP4="), "the key's bytes in base64");
        assert_eq!(third[7], Value::Bool(true));
        assert_eq!(
            headers(&third[3]),
            serde_json::json!([
                {"name": "h", "value": "one"},
                {"name": "h", "value_base64": "wyg="},
                {"name": "h", "value": ""}
            ])
        );
    }

    /// A table kept by an earlier version (no `kafka_key_base64`) takes the new column with
    /// the next refused record, in the same change: the record is kept, not lost.
    #[test]
    fn an_earlier_versions_table_takes_the_new_column() {
        let e = zepto_sql::Engine::new();
        e.execute(&format!(
            "CREATE TABLE {TABLE} (ts TIMESTAMP, topic VARCHAR, kafka_partition BIGINT, kafka_offset BIGINT, \
             kafka_key VARCHAR, headers VARCHAR, reason VARCHAR, payload_base64 BOOLEAN, payload VARCHAR)"
        ))
        .expect("the earlier table");
        let req = WriteRequest {
            format: IngestFormat::Ilp,
            table: None,
            precision: zepto_server::ingest::ilp::Precision::NANOS,
            now_ns: 1,
        };
        let raw = Refused { at: ("ticks", 1, 9), key: Some(&[0xff]), headers: Vec::new(), payload: b"x" };
        write_marked(&e, &Principal::anonymous_admin(), &req, b"", &[raw.mark(7, "raw").expect("mark")]).expect("kept");
        let r = e.execute(&format!("SELECT kafka_key, kafka_key_base64, payload FROM {TABLE}")).expect("read back");
        let b = r.batch();
        let got: Vec<Value> = b.columns.iter().map(|c| c.get(0)).collect();
        assert_eq!(got, [Value::Str("/w==".into()), Value::Bool(true), Value::Str("x".into())]);
    }
}
