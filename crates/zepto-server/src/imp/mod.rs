//! QuestDB's CSV import, `POST /imp`, on our HTTP port, for the scripts and tools written
//! against QuestDB (`curl -F data=@file.csv 'http://host:8123/imp?name=t&timestamp=ts'`).
//!
//! A multipart/form-data body with a `data` part (the CSV, its first line the header) and
//! optionally a `schema` part (`[{"name":"px","type":"DOUBLE"},...]`). A table that does not
//! exist is created with the types QuestDB would guess (`infer.rs`); one that exists takes the
//! rows, its columns matched by the header's names; `overwrite=true` replaces it (and so needs
//! the admin role, as DROP TABLE does). Rows that do not read are skipped and counted
//! (`atomicity=skipRow`, QuestDB's way, unlike `/write`'s all-or-nothing) or fail the whole
//! file (`atomicity=abort`) (`load.rs`). The answer is QuestDB's JSON or text table (`reply.rs`).
//!
//! Rows are stored as `/write`'s: one logged change under the table's lock with the same
//! grant and tenant checks (`ingest::store_import`), or on a cluster node through Kafka as an
//! Arrow batch of `/write` (the table created first by a CREATE TABLE every node runs).
//! Failed imports answer as QuestDB's do: status 200 and `{"status":"message"}`; a key without
//! the writer role, a busy server or a full disk answer as on every endpoint of ours.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

mod infer;
mod load;
mod reply;

use crate::auth::{Principal, Role};
use crate::body::ResponseBody;
use crate::cluster::ClusterHandle;
use crate::error::ApiError;
use crate::ingest::{self, ilp::Precision, IngestFormat, WriteRequest};
use crate::request_body::read_body;
use crate::state::State;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use reply::Report;
use std::sync::Arc;
use zepto_io::csv::{parse_records, Field};
use zepto_sql::Engine;
use zepto_storage::{ColumnDef, DataType};

/// The error code of a failed import, answered in QuestDB's shape (status 200).
const IMPORT: &str = "IMPORT";

fn failed(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::OK, IMPORT, message)
}

/// The query parameters of an import.
#[derive(Debug, Clone)]
struct Params {
    name: Option<String>,
    timestamp: Option<String>,
    partition_by: String,
    overwrite: bool,
    abort: bool,
    delimiter: Option<u8>,
    skip_extra: bool,
}

fn flag(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn params(p: &[(String, String)]) -> Result<Params, String> {
    let get = |k: &str| p.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty());
    let partition_by = get("partitionBy").unwrap_or("NONE").to_ascii_uppercase();
    if !matches!(partition_by.as_str(), "NONE" | "DAY" | "MONTH" | "YEAR" | "HOUR" | "WEEK") {
        return Err("invalid partitionBy".into());
    }
    let timestamp = get("timestamp").map(str::to_string);
    if partition_by != "NONE" && timestamp.is_none() {
        return Err("when specifying partitionBy you must also specify timestamp".into());
    }
    let abort = match get("atomicity") {
        None => false,
        Some(a) if a.eq_ignore_ascii_case("skipRow") || a.eq_ignore_ascii_case("skipCol") => false,
        Some(a) if a.eq_ignore_ascii_case("abort") => true,
        Some(a) => return Err(format!("invalid atomicity '{a}': expected skipRow or abort")),
    };
    let delimiter = match get("delimiter") {
        None => None,
        Some("\\t" | "%09") => Some(b'\t'),
        Some(d) => match d.as_bytes() {
            [b] if b.is_ascii() && *b != b'"' && *b != b'\n' && *b != b'\r' => Some(*b),
            _ => return Err(format!("invalid delimiter '{d}': expected one character")),
        },
    };
    Ok(Params {
        name: get("name").map(str::to_string),
        timestamp,
        partition_by,
        overwrite: flag(get("overwrite")),
        abort,
        delimiter,
        skip_extra: flag(get("skipLev")),
    })
}

fn answer(status: StatusCode, body: String, as_json: bool) -> Response<ResponseBody> {
    let ctype = if as_json { "application/json; charset=utf-8" } else { "text/plain; charset=utf-8" };
    let mut r = Response::new(ResponseBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// `POST /imp`: the answer and the rows stored.
pub async fn handle(
    state: &Arc<State>,
    who: &Principal,
    query: &[(String, String)],
    req: Request<Incoming>,
) -> Result<(Response<ResponseBody>, Option<u64>), ApiError> {
    who.require(Role::Writer)?;
    let as_json = query.iter().any(|(k, v)| k == "fmt" && v.eq_ignore_ascii_case("json"));
    let fail = |status, m: &str| Ok((answer(status, reply::failure(m, as_json), as_json), None));
    let p = match params(query) {
        Ok(p) => p,
        Err(m) => return fail(StatusCode::OK, &m),
    };
    let ctype = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let Ok(boundary) = multer::parse_boundary(ctype) else {
        return Ok((answer(StatusCode::BAD_REQUEST, "Non-multipart POST not supported\r\n".into(), false), None));
    };
    let (body, held) = match read_body(state, req, state.config.max_body_bytes).await {
        // Nothing was read into a table: QuestDB's shape, the limit's status.
        Err(e) if e.code == "PAYLOAD_TOO_LARGE" => return fail(e.status, &e.message),
        r => r?,
    };
    let parts = match Parts::read(body, boundary).await {
        Ok(parts) => parts,
        Err(m) => return fail(StatusCode::OK, &m),
    };
    let (engine, who2, cluster) = (state.engine.clone(), who.clone(), state.config.cluster.clone());
    let done = state
        .run_ingest(move || {
            let _held = held;
            import(&engine, cluster.as_ref(), &who2, &p, parts)
        })
        .await?;
    match done {
        Ok(r) => {
            state.metrics.ingested("csv", r.imported);
            let body = if as_json { reply::json(&r) } else { reply::table(&r) };
            Ok((answer(StatusCode::OK, body, as_json), Some(r.imported)))
        }
        Err(e) if e.code == IMPORT => fail(StatusCode::OK, &e.message),
        Err(e) => Err(e),
    }
}

/// The parts of an `/imp` body.
struct Parts {
    data: Bytes,
    file_name: Option<String>,
    schema: Option<String>,
}

impl Parts {
    /// The `data` and `schema` parts of a multipart body (others are ignored).
    async fn read(body: Bytes, boundary: String) -> Result<Parts, String> {
        let stream = futures_util::stream::once(async move { Ok::<Bytes, std::convert::Infallible>(body) });
        let mut mp = multer::Multipart::new(stream, boundary);
        let (mut data, mut file_name, mut schema) = (None, None, None);
        while let Some(field) = mp.next_field().await.map_err(|e| format!("bad multipart body: {e}"))? {
            match field.name() {
                Some("data") => {
                    file_name = field.file_name().map(str::to_string);
                    data = Some(field.bytes().await.map_err(|e| format!("bad multipart body: {e}"))?);
                }
                Some("schema") => schema = Some(field.text().await.map_err(|e| format!("bad schema part: {e}"))?),
                _ => {}
            }
        }
        let data = data.ok_or("the body has no 'data' part (curl -F data=@file.csv)")?;
        Ok(Parts { data, file_name, schema })
    }
}

/// The delimiter the header line uses most of `,`, tab, `;` and `|` (`,` when none).
fn guess_delimiter(text: &str) -> u8 {
    let head = text.lines().next().unwrap_or("");
    let count = |d: char| head.matches(d).count();
    [',', '\t', ';', '|'].into_iter().max_by_key(|&d| (count(d), d == ',')).map_or(b',', |d| d as u8)
}

/// What the file is read into: the table's columns, which field feeds each, its timestamp.
struct Target {
    defs: Vec<ColumnDef>,
    mapping: Vec<Option<usize>>,
    ts: Option<usize>,
    exists: bool,
}

/// Read the file, then store it: the report of what was done.
fn import(
    engine: &Engine,
    cluster: Option<&ClusterHandle>,
    who: &Principal,
    p: &Params,
    parts: Parts,
) -> Result<Report, ApiError> {
    let name = p.name.clone().or(parts.file_name.clone()).filter(|n| !n.is_empty());
    let name = name.ok_or_else(|| failed("no table name: give name= or a file name on the data part"))?;
    who.require_table(&name)?;
    let text = std::str::from_utf8(&parts.data)
        .map_err(|e| failed(format!("the data is not UTF-8 (byte {})", e.valid_up_to())))?;
    let delimiter = p.delimiter.unwrap_or_else(|| guess_delimiter(text));
    let recs = parse_records(text, delimiter).map_err(|e| failed(e.to_string()))?;
    let header: Vec<String> = recs
        .get(0)
        .iter()
        .enumerate()
        .map(|(k, f)| if f.text.trim().is_empty() { format!("f{k}") } else { f.text.trim().to_string() })
        .collect();
    let rows: Vec<&[Field]> = recs.iter().skip(1).collect();
    let catalog = engine.catalog();
    let existing = catalog.snapshot(&name).ok().filter(|_| !p.overwrite);
    let target = match &existing {
        Some(t) => into_existing(t, &header)?,
        None => new_table(&rows, &header, p, parts.schema.as_deref())?,
    };
    let rules = load::Rules { abort: p.abort, skip_extra: p.skip_extra, ts_col: target.ts };
    let loaded = load::load(&rows, header.len(), &target.defs, &target.mapping, rules)
        .map_err(|a| failed(format!("row {}: {}; nothing was imported (atomicity=abort)", a.row, a.message)))?;
    drop(rows);
    let ts_name = target.ts.and_then(|i| target.defs.get(i)).map(|d| d.name.clone());
    let columns =
        target.defs.iter().zip(&loaded.errors).map(|(d, &e)| (d.name.clone(), d.data_type, e)).collect::<Vec<_>>();
    let replace = p.overwrite && catalog.exists(&name);
    if replace {
        who.require(Role::Admin).map_err(|_| {
            ApiError::forbidden(format!(
                "key '{}': overwrite=true drops table '{name}', which needs the admin role",
                who.name
            ))
        })?;
    }
    store(engine, cluster, who, &name, target, loaded.cols, replace)?;
    Ok(Report {
        location: name,
        rejected: loaded.rejected,
        imported: loaded.imported,
        partition_by: p.partition_by.clone(),
        timestamp: ts_name,
        columns,
    })
}

/// The rows into an existing table: its columns, each fed by the header's field of its name.
fn into_existing(t: &zepto_storage::Table, header: &[String]) -> Result<Target, ApiError> {
    let defs = t.schema().columns.clone();
    if header.len() > defs.len() {
        return Err(failed(format!(
            "column count mismatch [textColumnCount={}, tableColumnCount={}, table={}]",
            header.len(),
            defs.len(),
            t.name()
        )));
    }
    let mut mapping = vec![None; defs.len()];
    for (k, h) in header.iter().enumerate() {
        let i = t.schema().index_of(h).ok_or_else(|| failed(format!("column '{h}' is not in table '{}'", t.name())))?;
        match mapping.get_mut(i) {
            Some(slot @ None) => *slot = Some(k),
            _ => return Err(failed(format!("the header names column '{h}' twice"))),
        }
    }
    Ok(Target { defs, mapping, ts: t.ts_col(), exists: true })
}

/// A new table's columns: the header's names, typed as QuestDB would guess them but where the
/// `schema` part says otherwise; `timestamp=` names its designated timestamp, whose values
/// must all read as timestamps.
fn new_table(rows: &[&[Field]], header: &[String], p: &Params, schema: Option<&str>) -> Result<Target, ApiError> {
    for (k, h) in header.iter().enumerate() {
        if header.iter().take(k).any(|o| o.eq_ignore_ascii_case(h)) {
            return Err(failed(format!("the header names column '{h}' twice")));
        }
    }
    let mut types = infer::infer(rows, header.len());
    let mut forced = vec![false; header.len()];
    for (name, dt) in schema.map(schema_part).transpose()?.unwrap_or_default() {
        if let Some(k) = header.iter().position(|h| h.eq_ignore_ascii_case(&name)) {
            if let (Some(t), Some(f)) = (types.get_mut(k), forced.get_mut(k)) {
                (*t, *f) = (dt, true);
            }
        }
    }
    let ts = match &p.timestamp {
        None => None,
        Some(ts) => {
            let invalid = || failed(format!("invalid timestamp column '{ts}'"));
            let k = header.iter().position(|h| h.eq_ignore_ascii_case(ts)).ok_or_else(invalid)?;
            let t = types.get_mut(k).ok_or_else(invalid)?;
            let forced = forced.get(k).copied().unwrap_or(false);
            match *t {
                DataType::Timestamp => {}
                DataType::Date | DataType::Varchar if !forced && infer::all_timestamps(rows, k) => {
                    *t = DataType::Timestamp;
                }
                _ => return Err(invalid()),
            }
            Some(k)
        }
    };
    let defs = header.iter().zip(types).map(|(n, dt)| ColumnDef { name: n.clone(), data_type: dt }).collect();
    Ok(Target { defs, mapping: (0..header.len()).map(Some).collect(), ts, exists: false })
}

/// The `schema` part: `[{"name":"px","type":"DOUBLE"},...]` (a `pattern` is not used: our
/// timestamp parser reads the ISO 8601 layouts).
fn schema_part(s: &str) -> Result<Vec<(String, DataType)>, ApiError> {
    let bad = |m: String| failed(format!("bad schema part: {m}"));
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| bad(e.to_string()))?;
    let items = v.as_array().ok_or_else(|| bad("expected a JSON list of {\"name\",\"type\"}".into()))?;
    items
        .iter()
        .map(|c| {
            let name = c.get("name").and_then(|n| n.as_str()).ok_or_else(|| bad("a column without a name".into()))?;
            let ty =
                c.get("type").and_then(|t| t.as_str()).ok_or_else(|| bad(format!("column '{name}' has no type")))?;
            let dt = match ty.to_ascii_uppercase().as_str() {
                "SHORT" | "BYTE" => Some(DataType::Int32),
                "CHAR" => Some(DataType::Varchar),
                other => DataType::from_sql(other),
            };
            Ok((name.to_string(), dt.ok_or_else(|| bad(format!("type '{ty}' of column '{name}' is not one we hold")))?))
        })
        .collect()
}

/// Store the rows: here (the table dropped first when `replace`), or on a cluster node through
/// Kafka as `/write` does, the table created first by a CREATE TABLE every node runs.
fn store(
    engine: &Engine,
    cluster: Option<&ClusterHandle>,
    who: &Principal,
    name: &str,
    target: Target,
    cols: Vec<zepto_storage::Column>,
    replace: bool,
) -> Result<usize, ApiError> {
    let catalog = engine.catalog();
    let ts_name = target.ts.and_then(|i| target.defs.get(i)).map(|d| d.name.clone()).unwrap_or_default();
    let Some(c) = cluster else {
        return ingest::store_import(catalog, who, (name, target.defs, &ts_name), cols, replace);
    };
    if replace {
        return Err(failed("overwrite=true is not supported on a cluster node: DROP TABLE, then import"));
    }
    if !target.exists && !catalog.exists(name) {
        engine.with_access(who.tables.clone()).execute(&create_sql(name, &target.defs, &ts_name))?;
    }
    let rows = cols.first().map_or(0, zepto_storage::Column::len);
    if rows == 0 {
        return Ok(0);
    }
    let names: Vec<String> = target.defs.iter().map(|d| d.name.clone()).collect();
    let refs: Vec<&zepto_storage::Column> = cols.iter().collect();
    let mut w = zepto_io::ipc::IpcResultWriter::new(&names, &refs, rows)?;
    let mut ipc = Vec::new();
    while let Some(chunk) = w.next_chunk()? {
        ipc.extend_from_slice(&chunk);
    }
    drop(cols);
    let wr = WriteRequest {
        format: IngestFormat::Arrow,
        table: Some(name.to_string()),
        precision: Precision::NANOS,
        now_ns: 0,
    };
    c.write(engine, who, &wr, &ipc)
}

/// `CREATE TABLE "name" ("c" TYPE, ...) TIMESTAMP("ts")`, every name quoted.
fn create_sql(name: &str, defs: &[ColumnDef], ts: &str) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let cols: Vec<String> = defs.iter().map(|d| format!("{} {}", q(&d.name), d.data_type.sql_name())).collect();
    let mut sql = format!("CREATE TABLE {} ({})", q(name), cols.join(", "));
    if !ts.is_empty() {
        sql.push_str(&format!(" TIMESTAMP({})", q(ts)));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(q: &str) -> Result<Params, String> {
        params(&crate::router::query_params(q).expect("query"))
    }

    #[test]
    fn reads_questdbs_parameters() {
        let x = p("name=t&timestamp=ts&partitionBy=day&overwrite=true&atomicity=abort&delimiter=%3B&skipLev=true")
            .expect("ok");
        assert_eq!(
            (x.partition_by.as_str(), x.overwrite, x.abort, x.delimiter, x.skip_extra),
            ("DAY", true, true, Some(b';'), true)
        );
        assert_eq!(p("partitionBy=FOO").expect_err("bad"), "invalid partitionBy");
        assert_eq!(
            p("partitionBy=DAY").expect_err("no ts"),
            "when specifying partitionBy you must also specify timestamp"
        );
        assert!(!p("atomicity=skipRow").expect("skipRow").abort);
        assert_eq!(guess_delimiter("a;b;c\n1;2;3"), b';');
        assert_eq!(guess_delimiter("a\tb\n"), b'\t');
        assert_eq!(guess_delimiter("a\n"), b',');
        assert_eq!(
            create_sql("t\"x", &[ColumnDef { name: "ts".into(), data_type: DataType::Timestamp }], "ts"),
            "CREATE TABLE \"t\"\"x\" (\"ts\" TIMESTAMP) TIMESTAMP(\"ts\")"
        );
        assert!(schema_part("[{\"name\":\"a\",\"type\":\"nope\"}]").is_err());
        assert_eq!(
            schema_part("[{\"name\":\"a\",\"type\":\"short\"}]").expect("ok"),
            vec![("a".into(), DataType::Int32)]
        );
    }
}
