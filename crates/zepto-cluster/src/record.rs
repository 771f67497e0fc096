//! How a Kafka record's bytes become rows: the `/write` request it stands for.
//!
//! A record without headers is InfluxDB line protocol with nanosecond timestamps, as
//! Telegraf's Kafka output and most producers write it. Headers say otherwise:
//! - `zepto-format`: `ilp` (default), `jsonl`, `csv` or `arrow` (an Arrow IPC stream), the
//!   names `/write?format=` takes; or `sql`: a statement every node runs (a `CREATE TABLE`
//!   a node published on every partition), whatever its key;
//! - `zepto-table`: the table of a `jsonl`, `csv` or `arrow` record (required for those);
//! - `zepto-precision`: the unit of ILP timestamps (`n`, `u`, `ms`, `s`, ...), as `/write`'s
//!   `precision=`.

use rdkafka::message::{BorrowedHeaders, Headers};
use zepto_server::ingest::ilp::Precision;
use zepto_server::ingest::{IngestFormat, WriteRequest};

/// Header naming the record's format.
pub const FORMAT: &str = "zepto-format";
/// Header naming the record's table.
pub const TABLE: &str = "zepto-table";
/// Header naming the unit of ILP timestamps.
pub const PRECISION: &str = "zepto-precision";
/// The format of a record holding a statement every node runs (`CREATE TABLE`).
pub const STATEMENT: &str = "sql";

/// What a record holds.
#[derive(Debug, Clone)]
pub enum Body {
    /// Rows, as the write request stands for.
    Write(WriteRequest),
    /// A statement every node runs (a `CREATE TABLE IF NOT EXISTS`), on every partition.
    Statement,
}

/// What a record with `headers` holds ([`request`] for rows); an error naming the header
/// that is wrong.
pub fn body(headers: Option<&BorrowedHeaders>, now_ns: i64) -> Result<Body, String> {
    let statement =
        headers.into_iter().flat_map(|hs| hs.iter()).any(|h| h.key == FORMAT && h.value == Some(STATEMENT.as_bytes()));
    if statement {
        return Ok(Body::Statement);
    }
    request(headers, now_ns).map(Body::Write)
}

/// The write request a record with `headers` stands for, its ILP points without a timestamp
/// stamped `now_ns`; an error naming the header that is wrong.
pub fn request(headers: Option<&BorrowedHeaders>, now_ns: i64) -> Result<WriteRequest, String> {
    let (mut format, mut table, mut precision) = (IngestFormat::Ilp, None, Precision::NANOS);
    for h in headers.into_iter().flat_map(|hs| hs.iter()) {
        let text = || {
            h.value
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .ok_or_else(|| format!("header {} has no value", h.key))
        };
        match h.key {
            FORMAT => {
                let v = text()?;
                format = IngestFormat::from_name(&v).ok_or_else(|| format!("header {FORMAT}: unknown format '{v}'"))?;
            }
            TABLE => table = Some(text()?),
            PRECISION => {
                let v = text()?;
                precision = Precision::parse(&v).ok_or_else(|| format!("header {PRECISION}: unknown unit '{v}'"))?;
            }
            _ => {}
        }
    }
    if format != IngestFormat::Ilp && table.is_none() {
        return Err(format!("a {} record needs the header {TABLE}", format.name()));
    }
    Ok(WriteRequest { format, table, precision, now_ns })
}
