//! Bulk ingest (`POST /write`): CSV, JSONL and Arrow IPC into an existing table, InfluxDB line
//! protocol into tables it creates and widens as needed.
//!
//! A batch is all-or-nothing: the whole body is parsed, typed and checked against the current
//! schemas before anything is stored, and the first bad row (CSV/JSONL/Arrow, 1-based, header
//! not counted) or line (ILP) is named in the error. For ILP the checks cover every table the
//! body touches before any is created, widened or appended to; the final schema changes and
//! appends then happen under each table's write lock, re-checked there against concurrent
//! writers.
//!
//! A key bound to a tenant may not write here to a table with a `tenant_id` column, nor give
//! a table one through ILP (403, nothing stored): ingest stores rows as they come, without
//! the per-row tenant check SQL INSERT makes (see `zepto_sql::access`). The check is made
//! again under the tables' write locks, against their schemas then.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used))]

mod check;
mod fast;
pub mod ilp;
mod jsonl;
pub(crate) mod lines;

pub use check::{check, Checked, CheckedLine};

use crate::auth::Principal;
use crate::error::{storage_error, ApiError};
use ilp::Precision;
use zepto_io::csv::{read_csv, CsvOptions};
use zepto_sql::access::tenant_column;
use zepto_sql::Engine;
use zepto_storage::{
    Catalog, Change, Column, ColumnBuilder, ColumnDef, DataType, Schema, StorageError, Table, TableOptions, Value,
};

/// The body format of a `/write` request (`format=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestFormat {
    /// CSV with a header row, into an existing table.
    Csv,
    /// One JSON object per line, into an existing table.
    Jsonl,
    /// An Arrow IPC stream, into an existing table.
    Arrow,
    /// InfluxDB line protocol, into tables it creates and widens as needed.
    Ilp,
}

impl IngestFormat {
    /// The format a `format=` parameter names (any case; aliases such as `ndjson` and `influx`
    /// accepted); `None` if unknown.
    pub fn from_name(s: &str) -> Option<IngestFormat> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Some(IngestFormat::Csv),
            "jsonl" | "ndjson" | "json" => Some(IngestFormat::Jsonl),
            "arrow" | "arrows" | "ipc" => Some(IngestFormat::Arrow),
            "ilp" | "influx" | "line" | "lp" => Some(IngestFormat::Ilp),
            _ => None,
        }
    }

    /// The canonical name (`csv`, `jsonl`, `arrow`, `ilp`), as in metrics and messages.
    pub fn name(self) -> &'static str {
        match self {
            IngestFormat::Csv => "csv",
            IngestFormat::Jsonl => "jsonl",
            IngestFormat::Arrow => "arrow",
            IngestFormat::Ilp => "ilp",
        }
    }
}

/// What one `/write` asks for.
#[derive(Debug, Clone)]
pub struct WriteRequest {
    /// How the body is written.
    pub format: IngestFormat,
    /// The target table (`table=`): required for CSV, JSONL and Arrow; ILP names tables by
    /// measurement.
    pub table: Option<String>,
    /// Unit of ILP timestamps (`precision=`).
    pub precision: Precision,
    /// Server time for ILP points without a timestamp.
    pub now_ns: i64,
}

/// Store one batch; returns the rows written.
pub fn write(engine: &Engine, who: &Principal, req: &WriteRequest, body: &[u8]) -> Result<usize, ApiError> {
    write_marked(engine, who, req, body, &[])
}

/// Store one batch together with the rows of `marks` (of one mark table or more), in one logged
/// change: after a crash both are there or neither (the cluster's consumer records the Kafka
/// offsets a batch holds so). Returns the rows of the batch written, the marks' not counted.
/// A bad batch stores nothing, marks included.
pub fn write_marked(
    engine: &Engine,
    who: &Principal,
    req: &WriteRequest,
    body: &[u8],
    marks: &[Mark],
) -> Result<usize, ApiError> {
    let catalog = engine.catalog();
    match req.format {
        IngestFormat::Ilp => apply_ilp(catalog, who, req, body, marks),
        format => write_table(catalog, who, format, req.table.as_deref(), body, marks),
    }
}

/// One row of bookkeeping stored atomically with a batch ([`write_marked`]), in a table
/// created on first use with the mark's columns (the first is its designated timestamp).
#[derive(Debug, Clone)]
pub struct Mark {
    table: String,
    defs: Vec<ColumnDef>,
    row: Vec<Value>,
}

impl Mark {
    /// A row of `table`: one value per column of `defs`, of its type; the first column is a
    /// TIMESTAMP.
    pub fn new(table: &str, defs: Vec<ColumnDef>, row: Vec<Value>) -> Result<Mark, String> {
        if defs.first().map(|d| d.data_type) != Some(DataType::Timestamp) {
            return Err(format!("mark table '{table}': the first column must be a TIMESTAMP"));
        }
        if defs.len() != row.len() {
            return Err(format!("mark table '{table}': {} columns but {} values", defs.len(), row.len()));
        }
        Ok(Mark { table: table.to_string(), defs, row })
    }

    /// The rows of `marks` as one plan per mark table, in order of each table's first mark.
    fn plans(catalog: &Catalog, marks: &[Mark]) -> Result<Vec<TablePlan>, ApiError> {
        let mut tables: Vec<&str> = Vec::new();
        for m in marks {
            if !tables.contains(&m.table.as_str()) {
                tables.push(&m.table);
            }
        }
        tables.into_iter().map(|t| Mark::plan(catalog, marks.iter().filter(|m| m.table == t))).collect()
    }

    /// The rows of `marks` (at least one, all of one table) as one plan.
    fn plan<'m>(catalog: &Catalog, marks: impl Iterator<Item = &'m Mark> + Clone) -> Result<TablePlan, ApiError> {
        let first = marks.clone().next().ok_or_else(|| ApiError::internal("a mark plan of no marks"))?;
        let mut builders: Vec<ColumnBuilder> =
            first.defs.iter().map(|d| ColumnBuilder::new(d.data_type, marks.clone().count())).collect();
        for m in marks {
            if m.defs != first.defs {
                return Err(ApiError::internal(format!("marks of table '{}' with other columns", m.table)));
            }
            for (b, v) in builders.iter_mut().zip(&m.row) {
                b.push_value(v).map_err(|e| ApiError::internal(format!("mark table '{}': {e}", m.table)))?;
            }
        }
        Ok(TablePlan {
            name: first.table.clone(),
            exists: catalog.exists(&first.table),
            defs: first.defs.clone(),
            cols: builders.into_iter().map(ColumnBuilder::finish).collect(),
            ts_name: first.defs.first().map(|d| d.name.clone()).unwrap_or_default(),
        })
    }
}

/// [`write`](fn@write) of a body handed over: a CSV, JSON-lines or Arrow body is dropped once decoded,
/// before its rows are logged and stored. A 480 MB Arrow body was held through both, beside
/// the decoded rows and the log's copy of them.
pub fn write_owned(
    engine: &Engine,
    who: &Principal,
    req: &WriteRequest,
    body: bytes::Bytes,
) -> Result<usize, ApiError> {
    if req.format == IngestFormat::Ilp {
        return write(engine, who, req, &body);
    }
    let decoded = decode_table(engine.catalog(), who, req.format, req.table.as_deref(), &body, Coding::Table)?;
    drop(body);
    store_table(engine.catalog(), who, decoded, &[])
}

/// CSV, JSONL or Arrow into an existing table.
fn write_table(
    catalog: &Catalog,
    who: &Principal,
    format: IngestFormat,
    table: Option<&str>,
    body: &[u8],
    marks: &[Mark],
) -> Result<usize, ApiError> {
    store_table(catalog, who, decode_table(catalog, who, format, table, body, Coding::Table)?, marks)
}

/// Rows decoded by [`decode_table`] into their table, with `marks` in the same logged change.
fn store_table(catalog: &Catalog, who: &Principal, decoded: Decoded, marks: &[Mark]) -> Result<usize, ApiError> {
    let (table, snap, cols) = decoded;
    let table = table.as_str();
    let schema = &snap.schema().columns;
    if !marks.is_empty() {
        let rows = cols.first().map_or(0, Column::len);
        let ts_name = snap.ts_col().and_then(|i| schema.get(i)).map(|c| c.name.clone()).unwrap_or_default();
        let mut plans = vec![TablePlan { name: table.to_string(), exists: true, defs: schema.clone(), cols, ts_name }];
        plans.extend(Mark::plans(catalog, marks)?);
        drop(snap);
        let scoped = who.tables.tenant().is_some();
        return create_and_apply(catalog, plans, scoped).map(|_| rows);
    }
    drop(snap);
    if who.tables.tenant().is_none() {
        return catalog.append(table, cols).map_err(storage_error);
    }
    // Appended as `Catalog::append` does, with the check again under the lock.
    catalog
        .modify(table, |t| {
            if tenant_column(t.schema()).is_some() {
                return Err(TenantWriteError::Tenant(t.name().to_string()));
            }
            t.validate(&cols)?;
            Ok(catalog.log(&[Change::Append { table: t.name(), columns: &cols }])?.apply(|| t.append(cols))?)
        })
        .map_err(|e| e.into_api(who))
}

/// A body's target table, that table's snapshot, and the body's rows as its columns.
type Decoded = (String, std::sync::Arc<Table>, Vec<Column>);

/// How a decoded Arrow body's SYMBOL columns are coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    /// Against the table's dictionary, for rows stored here: the append takes the codes as
    /// they are.
    Table,
    /// In a dictionary of the body's own strings, for rows only checked (or sent on to the
    /// nodes that own them): nothing is added to the table's dictionary.
    Own,
}

/// The rows of a CSV, JSONL or Arrow body, decoded against the schema of the table it names
/// (which must exist, and which `who` may write), with that table's snapshot.
fn decode_table(
    catalog: &Catalog,
    who: &Principal,
    format: IngestFormat,
    table: Option<&str>,
    body: &[u8],
    coding: Coding,
) -> Result<Decoded, ApiError> {
    let table = table.ok_or_else(|| ApiError::bad_request(format!("format={} needs ?table=NAME", format.name())))?;
    who.require_table(table)?;
    let snap = catalog.snapshot(table).map_err(|_| {
        ApiError::new(hyper::StatusCode::NOT_FOUND, "TABLE_NOT_FOUND", format!("table '{table}' does not exist"))
    })?;
    who.require_unscoped_write(table, tenant_column(snap.schema()).is_some())?;
    let schema = &snap.schema().columns;
    let cols = match format {
        IngestFormat::Csv => read_csv(utf8(body, format)?, schema, &CsvOptions::default())?,
        IngestFormat::Jsonl => jsonl::read_jsonl(utf8(body, format)?, schema)?,
        _ => {
            let dict = (coding == Coding::Table).then(|| snap.dict().as_ref());
            zepto_io::ipc::read_ipc_stream_in(body, schema, dict)?
        }
    };
    Ok((table.to_string(), snap, cols))
}

/// Why a tenant-bound key's write failed under the table's lock: the table has (or would
/// get) a `tenant_id` column meanwhile, or what storage said.
enum TenantWriteError {
    Tenant(String),
    Storage(StorageError),
}

impl From<StorageError> for TenantWriteError {
    fn from(e: StorageError) -> Self {
        TenantWriteError::Storage(e)
    }
}

impl TenantWriteError {
    fn into_api(self, who: &Principal) -> ApiError {
        match self {
            TenantWriteError::Tenant(t) => match who.require_unscoped_write(&t, true) {
                Err(e) => e,
                Ok(()) => ApiError::internal("a tenant check failed for a key without a tenant"),
            },
            TenantWriteError::Storage(e) => storage_error(e),
        }
    }
}

/// A CSV or JSON-lines body as text; a non-UTF-8 body names the data row where the bad byte
/// is (CSV counts the header line out). Line protocol checks its text token by token.
fn utf8(body: &[u8], format: IngestFormat) -> Result<&str, ApiError> {
    std::str::from_utf8(body).map_err(|e| {
        let upto = body.get(..e.valid_up_to()).unwrap_or(body);
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        let msg = format!("body is not UTF-8 (line {line}, byte {})", e.valid_up_to());
        match format {
            IngestFormat::Csv => ApiError::ingest(msg).at_row(line.checked_sub(1)),
            _ => ApiError::ingest(msg).at_row(Some(line)),
        }
    })
}

/// The checked, typed rows of one ILP table.
struct TablePlan {
    name: String,
    exists: bool,
    defs: Vec<ColumnDef>,
    cols: Vec<Column>,
    ts_name: String,
}

impl TablePlan {
    fn rows(&self) -> usize {
        self.cols.first().map_or(0, Column::len)
    }
}

/// A line-protocol body stored, with `marks` in the same logged change.
fn apply_ilp(
    catalog: &Catalog,
    who: &Principal,
    req: &WriteRequest,
    body: &[u8],
    marks: &[Mark],
) -> Result<usize, ApiError> {
    let mut lines = decode_ilp(catalog, who, req, body)?;
    lines.plans.extend(Mark::plans(catalog, marks)?);
    store_ilp(catalog, lines)
}

/// A line-protocol body read, typed and checked against the tables as they were then, not
/// yet stored ([`decode_ilp`], then [`store_ilp`]).
pub struct DecodedLines {
    plans: Vec<TablePlan>,
    rows: usize,
    scoped: bool,
}

/// Decode a line-protocol body as [`write()`] does before it stores anything: every error a
/// line can cause (with its line number) is found here.
pub fn decode_ilp(
    catalog: &Catalog,
    who: &Principal,
    req: &WriteRequest,
    body: &[u8],
) -> Result<DecodedLines, ApiError> {
    let (plans, _) = decode_lines(catalog, who, req, body, false)?;
    let rows = plans.iter().map(TablePlan::rows).sum();
    Ok(DecodedLines { plans, rows, scoped: who.tables.tenant().is_some() })
}

/// Store decoded lines, all or nothing, checked again under the tables' locks against their
/// schemas as they are now (a write since the decode may have changed them): what [`write()`]
/// does after decoding. Returns the rows written.
pub fn store_ilp(catalog: &Catalog, lines: DecodedLines) -> Result<usize, ApiError> {
    create_and_apply(catalog, lines.plans, lines.scoped).map(|_| lines.rows)
}

/// The checked, typed rows of every table a line-protocol body touches, in order of first
/// appearance (see [`lines::Decoder`]); with `track`, where each line went. Nothing is
/// changed yet.
fn decode_lines(
    catalog: &Catalog,
    who: &Principal,
    req: &WriteRequest,
    body: &[u8],
    track: bool,
) -> Result<(Vec<TablePlan>, Vec<lines::LineAt>), ApiError> {
    let lines = memchr::memchr_iter(b'\n', body).count() + 1;
    let mut decoder = lines::Decoder::new(catalog, who, req.now_ns, lines, track);
    ilp::tokenize(body, req.precision, true, &mut decoder)?;
    decoder.finish()
}

/// Create the plans' missing tables, then lock every table of the batch and apply all or
/// nothing; on failure, drop again the tables this batch created (unless someone wrote to
/// them meanwhile). Returns the rows appended.
fn create_and_apply(catalog: &Catalog, plans: Vec<TablePlan>, scoped: bool) -> Result<usize, ApiError> {
    let mut created = Vec::new();
    for p in plans.iter().filter(|p| !p.exists) {
        let table = empty_table(&p.name, p.defs.clone(), &p.ts_name)?;
        // Someone may have created it meanwhile: then the write below widens it as needed.
        if catalog.create(table, true).map_err(storage_error)? {
            created.push(p.name.clone());
        }
    }
    let r = apply_plans(catalog, plans, scoped);
    if r.is_err() {
        for name in created {
            if catalog.snapshot(&name).is_ok_and(|t| t.row_count() == 0) {
                let _ = catalog.drop_table(&name, true);
            }
        }
    }
    r
}

/// `/imp`'s rows of table `name` (columns `defs`, designated timestamp `ts_name`, none when
/// empty), after the grant and tenant checks. Appended: the table created when it does not
/// exist, then the rows appended under its lock with a line-protocol batch's checks (the
/// schema as it is then) and one logged change; a table created here is dropped again if the
/// rows are not stored. With `replace` (`overwrite=true`): the table of that name, if any,
/// replaced by a new one with these columns and rows in one logged change
/// ([`Catalog::replace`]), so readers and a crash see the old table or the new one.
pub(crate) fn store_import(
    catalog: &Catalog,
    who: &Principal,
    (name, defs, ts_name): (&str, Vec<ColumnDef>, &str),
    cols: Vec<Column>,
    replace: bool,
) -> Result<usize, ApiError> {
    import_checks(who, name, &defs)?;
    if replace {
        return catalog.replace(empty_table(name, defs, ts_name)?, cols).map_err(storage_error);
    }
    let exists = catalog.exists(name);
    let plan = TablePlan { name: name.to_string(), exists, defs, cols, ts_name: ts_name.to_string() };
    create_and_apply(catalog, vec![plan], who.tables.tenant().is_some())
}

/// What an import into table `name` with columns `defs` needs of `who`: a grant for the
/// table, and no tenant binding when the table has a `tenant_id` column.
fn import_checks(who: &Principal, name: &str, defs: &[ColumnDef]) -> Result<(), ApiError> {
    who.require_table(name)?;
    let has_tenant_id = defs.iter().any(|d| d.name.eq_ignore_ascii_case(zepto_sql::access::TENANT_COLUMN));
    who.require_unscoped_write(name, has_tenant_id)
}

/// An empty table `name` of columns `defs`, its designated timestamp `ts_name` (none when
/// empty).
fn empty_table(name: &str, defs: Vec<ColumnDef>, ts_name: &str) -> Result<Table, ApiError> {
    let opts = TableOptions { timestamp: Some(ts_name.to_string()).filter(|t| !t.is_empty()), ..Default::default() };
    Table::new(name, Schema { columns: defs }, &opts).map_err(|e| ApiError::ingest(format!("table '{name}': {e}")))
}

/// Apply every table's rows under all their locks: first re-check each plan against the
/// schema as it is now (a concurrent writer may have changed it; for a tenant-bound key,
/// `scoped`, it may have given the table a `tenant_id` column), then widen and append.
fn apply_plans(catalog: &Catalog, plans: Vec<TablePlan>, scoped: bool) -> Result<usize, ApiError> {
    let names: Vec<String> = plans.iter().map(|p| p.name.clone()).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    catalog
        .write_many_deferred(&refs, move |tables| {
            let mut adds = Vec::with_capacity(plans.len());
            for (t, p) in tables.iter().zip(&plans) {
                if scoped && tenant_column(t.schema()).is_some() {
                    return Err(StorageError::Invalid(format!(
                        "table '{}' got a {} column meanwhile; a tenant-bound key may not write to it here",
                        t.name(),
                        zepto_sql::access::TENANT_COLUMN
                    )));
                }
                let mut add = Vec::new();
                for d in &p.defs {
                    match t.schema().index_of(&d.name).and_then(|i| t.schema().columns.get(i)) {
                        Some(col) => {
                            let have = col.data_type;
                            if have != d.data_type && !(have.is_string() && d.data_type.is_string()) {
                                return Err(StorageError::Invalid(format!(
                                    "column '{}' of table '{}' is now {have}, not {}",
                                    d.name,
                                    t.name(),
                                    d.data_type
                                )));
                            }
                        }
                        None => add.push(d.clone()),
                    }
                }
                // Counted when the lines were decoded, but against the table as it was then:
                // a write since may have added columns too.
                if !add.is_empty() && t.schema().len() + add.len() > lines::MAX_COLUMNS {
                    return Err(StorageError::Invalid(lines::too_many_columns(t.name())));
                }
                adds.push(add);
            }
            // Everything checked: build each table's batch as its schema will be, log the
            // whole batch as one record, then apply.
            let mut batches = Vec::with_capacity(plans.len());
            for ((t, p), add) in tables.iter().zip(plans).zip(&adds) {
                let rows = p.cols.first().map_or(0, Column::len);
                let width = t.schema().len() + add.len();
                let mut slots: Vec<Option<Column>> = vec![None; width];
                for (d, c) in p.defs.iter().zip(p.cols) {
                    let i = t.schema().index_of(&d.name).or_else(|| {
                        add.iter().position(|a| a.name.eq_ignore_ascii_case(&d.name)).map(|k| t.schema().len() + k)
                    });
                    if let Some(slot) = i.and_then(|i| slots.get_mut(i)) {
                        *slot = Some(c);
                    }
                }
                let types = t.schema().columns.iter().chain(add.iter()).map(|d| d.data_type);
                let batch: Vec<Column> =
                    slots.into_iter().zip(types).map(|(c, dt)| c.unwrap_or_else(|| Column::nulls(dt, rows))).collect();
                // What the table would refuse is refused before the batch is logged: refused by
                // one table after another took its rows, the batch would be half applied.
                t.validate_widened(add, &batch)?;
                batches.push(batch);
            }
            let mut changes = Vec::new();
            for ((t, add), batch) in tables.iter().zip(&adds).zip(&batches) {
                changes.extend(add.iter().map(|def| Change::AddColumn { table: t.name(), def }));
                changes.push(Change::Append { table: t.name(), columns: batch });
            }
            let logged = catalog.log(&changes)?;
            drop(changes);
            logged.apply(|| {
                let mut total = 0;
                for ((t, add), batch) in tables.iter_mut().zip(adds).zip(batches) {
                    for d in add {
                        t.add_column(d)?;
                    }
                    total += t.append_deferred(batch)?;
                }
                Ok::<_, StorageError>(total)
            })
        })
        .map_err(storage_error)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_full_disk_is_507_and_says_nothing_was_applied() {
        let e = storage_error(StorageError::DiskFull("no space left on device".into()));
        assert_eq!((e.status.as_u16(), e.code), (507, "DISK_FULL"));
        assert!(e.message.contains("nothing was applied"), "{}", e.message);
        let sql: crate::error::ApiError = zepto_sql::SqlError::from(StorageError::DiskFull("full".into())).into();
        assert_eq!((sql.status.as_u16(), sql.code), (507, "DISK_FULL"));
        assert_eq!(storage_error(StorageError::Conflict("moved".into())).status.as_u16(), 409);
    }

    use super::*;
    use crate::auth::Principal;

    fn ilp(engine: &Engine, body: &str) -> Result<usize, ApiError> {
        let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 42 };
        write(engine, &Principal::anonymous_admin(), &req, body.as_bytes())
    }

    fn q(engine: &Engine, sql: &str) -> String {
        let b = engine.execute(sql).expect(sql).into_batch();
        let mut out = String::new();
        for i in 0..b.rows {
            let row: Vec<String> = b.columns.iter().map(|c| c.get(i).to_string()).collect();
            out.push_str(&row.join("|"));
            out.push('\n');
        }
        out
    }

    #[test]
    fn ilp_creates_widens_and_is_all_or_nothing() {
        let e = Engine::new();
        assert_eq!(ilp(&e, "trades,sym=A price=1.5,size=10i 100\ntrades,sym=B price=2 200").expect("ok"), 2);
        let d = q(&e, "DESCRIBE trades");
        assert!(
            d.starts_with("sym|SYMBOL|partition key\nprice|DOUBLE|\nsize|BIGINT|\ntimestamp|TIMESTAMP|designated"),
            "{d}"
        );
        // A new field widens the table; old rows read NULL there.
        assert_eq!(ilp(&e, "trades,sym=A price=3,venue=\"X\",size=5i").expect("widen"), 1);
        assert_eq!(
            q(&e, "SELECT sym, price, size, venue, epoch_ns(timestamp) FROM trades ORDER BY timestamp, sym"),
            "A|3.0|5|X|42\nA|1.5|10|NULL|100\nB|2.0|NULL|NULL|200\n"
        );
        // Bad line 3 of a batch touching two tables: nothing at all changes.
        let err = ilp(&e, "quotes,sym=A bid=1 1\ntrades,sym=C price=9 9\ntrades,sym=C size=1.5 10")
            .expect_err("float into BIGINT");
        assert_eq!((err.code, err.line), ("INGEST", Some(3)));
        assert!(err.message.contains("'size'"), "{}", err.message);
        assert!(!e.catalog().exists("quotes"));
        assert_eq!(q(&e, "SELECT count(*) FROM trades"), "3\n");
        let err = ilp(&e, "trades,sym=A price=1 1\nbroken").expect_err("syntax");
        assert_eq!(err.line, Some(2));
        let err = ilp(&e, "trades,sym=A price=1,price=2 1").expect_err("twice");
        assert!(err.message.contains("twice"), "{}", err.message);
        let err = ilp(&e, "trades,sym=A timestamp=1 1").expect_err("timestamp field");
        assert!(err.message.contains("timestamp column"), "{}", err.message);
        // Names match without regard to case, however each line writes them.
        let err = ilp(&e, "trades,sym=A price=1,PRICE=2 1").expect_err("twice, in two cases");
        assert!(err.message.contains("twice"), "{}", err.message);
        let err = ilp(&e, "trades,sym=A TimeStamp=1 1").expect_err("timestamp field, other case");
        assert!(err.message.contains("timestamp column"), "{}", err.message);
        assert_eq!(q(&e, "SELECT count(*) FROM trades"), "3\n");
        assert_eq!(ilp(&e, "trades,SYM=D Price=4,size=7i 300\ntrades,Sym=D PRICE=5,Size=8i 400").expect("cases"), 2);
        assert_eq!(
            q(&e, "SELECT sym, price, size FROM trades WHERE sym = 'D' ORDER BY timestamp"),
            "D|4.0|7\nD|5.0|8\n"
        );
        assert_eq!(q(&e, "DESCRIBE trades").lines().count(), 5, "no column was added for another case");
    }

    /// An Arrow body stored is coded against the table's dictionary (the append takes its
    /// codes); one only checked (the cluster's door, before producing it to the owners) is
    /// coded in its own and adds nothing to the table's.
    #[test]
    fn arrow_bodies_code_symbols_in_the_table_only_when_stored() {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, v BIGINT)").expect("create");
        let body = |s: &str| {
            let mut b = zepto_storage::ColumnBuilder::new(zepto_storage::DataType::Varchar, 1);
            b.push_value(&zepto_storage::Value::Str(s.into())).expect("push");
            let sym = b.finish();
            let ts = Column::from_data(zepto_storage::ColumnData::Timestamp(vec![5].into()));
            let names = ["ts", "sym"].map(String::from);
            zepto_io::ipc::write_ipc_stream(&names, &[&ts, &sym], 1).expect("a stream")
        };
        let req = WriteRequest {
            format: IngestFormat::Arrow,
            table: Some("t".into()),
            precision: Precision::NANOS,
            now_ns: 0,
        };
        let admin = Principal::anonymous_admin();
        let table_dict = || e.catalog().snapshot("t").expect("t").dict().clone();
        let checked = check::check(&e, &admin, &req, &body("only-checked")).expect("checks");
        let check::Checked::Rows { columns, .. } = checked else { panic!("an Arrow body checks as rows") };
        let lineage = |c: &Column| match c.data() {
            zepto_storage::ColumnData::Symbol { dict, .. } => Some(dict.lineage()),
            _ => None,
        };
        assert_ne!(lineage(&columns[1]), Some(table_dict().lineage()), "checked rows keep a dictionary of their own");
        assert_eq!(table_dict().code("only-checked"), None, "a check adds nothing to the table's dictionary");
        assert_eq!(write(&e, &admin, &req, &body("stored")).expect("stores"), 1);
        assert!(table_dict().code("stored").is_some());
        assert_eq!(q(&e, "SELECT sym, v FROM t"), "stored|NULL\n");
    }

    /// Series a batch introduced into an existing table are known to the next batches by
    /// their text (the catalog's series memo); a table made again under the same name (a new
    /// dictionary, its columns in another order) is not fed the old codes.
    #[test]
    fn series_known_across_batches_fit_their_table() {
        let e = Engine::new();
        let body = |t: i64, v: i64| format!("cpu,host=h1,dc=eu u={v}i {t}\ncpu,host=h2,dc=us u={}i {}", v + 1, t + 1);
        ilp(&e, &body(1, 10)).expect("creates the table");
        assert!(e.catalog().series_memo().read().is_empty(), "a table this batch made is not learned");
        ilp(&e, &body(10, 20)).expect("the table exists");
        assert_eq!(e.catalog().series_memo().read().len(), 2);
        ilp(&e, &(body(20, 30) + "\ncpu,host=h3,dc=eu u=1i 22")).expect("known series and a new one");
        assert_eq!(e.catalog().series_memo().read().len(), 3);
        let all = "SELECT host, dc, u, epoch_ns(timestamp) FROM cpu ORDER BY timestamp";
        assert_eq!(
            q(&e, all),
            "h1|eu|10|1\nh2|us|11|2\nh1|eu|20|10\nh2|us|21|11\nh1|eu|30|20\nh2|us|31|21\nh3|eu|1|22\n"
        );
        e.execute("DROP TABLE cpu").expect("drop");
        e.execute("CREATE TABLE cpu (dc SYMBOL, u BIGINT, zone SYMBOL, host SYMBOL, timestamp TIMESTAMP)")
            .expect("create");
        ilp(&e, &body(30, 40)).expect("the new table");
        assert_eq!(q(&e, "SELECT host, dc, zone, u FROM cpu ORDER BY timestamp"), "h1|eu|NULL|40\nh2|us|NULL|41\n");
        ilp(&e, &body(40, 50)).expect("learned again");
        assert_eq!(
            q(&e, "SELECT host, dc, zone, u FROM cpu WHERE u >= 50 ORDER BY timestamp"),
            "h1|eu|NULL|50\nh2|us|NULL|51\n"
        );
    }

    /// FLOAT[n] through every ingest door (CSV text, JSON arrays, Arrow FixedSizeList) and
    /// back out as JSON and Arrow results; ILP, which has no array type, is refused by name.
    #[test]
    fn vectors_through_the_doors() {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, v FLOAT[3])").expect("ddl");
        e.execute("CREATE TABLE u (ts TIMESTAMP, sym SYMBOL, v FLOAT[3])").expect("ddl");
        let who = Principal::anonymous_admin();
        let req =
            |format, t: &str| WriteRequest { format, table: Some(t.into()), precision: Precision::NANOS, now_ns: 0 };
        let csv = "ts,sym,v\n1,A,\"[1, 2, 3]\"\n2,B,\n";
        assert_eq!(write(&e, &who, &req(IngestFormat::Csv, "t"), csv.as_bytes()).expect("csv"), 2);
        let bad = "ts,sym,v\n1,A,\"[1,2,3]\"\n2,B,\"[1,2]\"\n";
        let err = write(&e, &who, &req(IngestFormat::Csv, "t"), bad.as_bytes()).expect_err("dimension");
        assert!(err.message.contains("FLOAT[3]") && err.message.contains("'v'"), "{}", err.message);
        let jsonl = "{\"ts\":3,\"sym\":\"A\",\"v\":[0.5,-1,4]}\n";
        assert_eq!(write(&e, &who, &req(IngestFormat::Jsonl, "t"), jsonl.as_bytes()).expect("jsonl"), 1);
        let err = ilp(&e, "t,sym=A v=1 9").expect_err("ILP into a vector column");
        assert!(err.message.contains("ILP has no array type"), "{}", err.message);
        assert_eq!(q(&e, "SELECT count(*) FROM t"), "3\n");
        // Arrow out of t, into u: the same rows.
        let r = e.execute("SELECT ts, sym, v FROM t").expect("select");
        let b = r.batch();
        let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
        let cols: Vec<&zepto_storage::Column> = b.columns.iter().map(|c| c.as_ref()).collect();
        let mut w = zepto_io::ipc::IpcResultWriter::new(&names, &cols, b.rows).expect("ipc");
        let mut ipc = Vec::new();
        while let Some(chunk) = w.next_chunk().expect("chunk") {
            ipc.extend_from_slice(&chunk);
        }
        assert_eq!(write(&e, &who, &req(IngestFormat::Arrow, "u"), &ipc).expect("arrow"), 3);
        let want = "1970-01-01 00:00:00.000000001|A|[1.0, 2.0, 3.0]\n1970-01-01 00:00:00.000000002|B|NULL\n1970-01-01 00:00:00.000000003|A|[0.5, -1.0, 4.0]\n";
        assert_eq!(q(&e, "SELECT ts, sym, v FROM u ORDER BY ts"), want);
        // JSON results: a vector is an array of numbers.
        let r = e.execute("SELECT v FROM u ORDER BY ts").expect("select");
        let mut enc = crate::encode::Encoder::new(crate::encode::Format::Json, &r, 0.0).expect("encoder");
        let mut out = Vec::new();
        while enc.next_chunk(&mut out).expect("chunk") {}
        let text = String::from_utf8(out).expect("utf-8");
        assert!(
            text.contains("[[1.0, 2.0, 3.0]],[null],[[0.5, -1.0, 4.0]]") || text.contains("[1.0, 2.0, 3.0]"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert!(json.to_string().contains("[1.0,2.0,3.0]"), "{json}");
    }

    /// An ILP body of two tables whose second line holds an array with a NaN element (found
    /// by `make fuzz`): refused whole at decode, with its line, no table made and no row
    /// stored. (It had made both tables, stored the first line, then refused the second when
    /// its table appended it, after the batch was logged.)
    #[test]
    fn an_array_with_a_nan_refuses_the_whole_ilp_batch() {
        let e = Engine::new();
        let array = |xs: [f64; 3]| {
            let mut b = b"==\x0e\x0a\x01\x03\x00\x00\x00".to_vec();
            xs.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
            b
        };
        let mut body = b"a,doc=x v".to_vec();
        body.extend(array([1.0, 2.0, 3.0]));
        body.extend_from_slice(b" 100\nb,doc=y v");
        body.extend(array([1.0, f64::NAN, 3.0]));
        body.extend_from_slice(b" 200\n");
        let req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 42 };
        let err = write(&e, &Principal::anonymous_admin(), &req, &body).expect_err("a NaN element");
        assert_eq!((err.code, err.line), ("INGEST", Some(2)), "{err:?}");
        assert!(err.message.contains("element 2 of the array is NaN or infinite"), "{}", err.message);
        assert!(e.catalog().table_names().is_empty(), "no table made");
        let mut first = b"a,doc=x v".to_vec();
        first.extend(array([1.0, 2.0, 3.0]));
        first.extend_from_slice(b" 100\n");
        assert_eq!(write(&e, &Principal::anonymous_admin(), &req, &first).expect("the good line alone"), 1);
        assert_eq!(q(&e, "SELECT doc, v FROM a"), "x|[1.0, 2.0, 3.0]\n");
    }

    /// Two tables' rows stored as one batch, the second's vectors holding a NaN (a plan no
    /// decoder made: the check under the tables' locks, before the batch is logged): refused,
    /// nothing stored in either table and the tables the batch made dropped again.
    #[test]
    fn a_plan_the_tables_would_refuse_is_refused_before_it_is_logged() {
        let e = Engine::new();
        let plan = |name: &str, x: f32| {
            let defs = vec![
                ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
                ColumnDef { name: "v".into(), data_type: DataType::vector(2).expect("a width") },
            ];
            let ts = Column::from_data(zepto_storage::ColumnData::Timestamp(vec![1, 2].into()));
            let v =
                Column::from_data(zepto_storage::ColumnData::Vector { dim: 2, values: vec![1.0, 2.0, x, 4.0].into() });
            TablePlan { name: name.into(), exists: false, defs, cols: vec![ts, v], ts_name: "ts".into() }
        };
        let r = create_and_apply(e.catalog(), vec![plan("a", 3.0), plan("b", f32::NAN)], false);
        let err = r.expect_err("b's second row holds a NaN");
        assert!(err.message.contains("column 'v' row 2"), "{}", err.message);
        assert!(e.catalog().table_names().is_empty(), "both tables dropped again, no row stored");
        assert_eq!(create_and_apply(e.catalog(), vec![plan("a", 3.0), plan("b", 3.0)], false).expect("finite"), 4);
    }

    /// A plan that adds a column of a type no column holds to a table that exists (an `/imp`
    /// racing a CREATE TABLE): refused under the table's lock before anything is logged, the
    /// table unchanged.
    #[test]
    fn a_new_column_the_table_would_refuse_is_refused_before_it_is_logged() {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, x BIGINT)").expect("ddl");
        let defs = vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "gap".into(), data_type: DataType::Interval },
        ];
        let ts = Column::from_data(zepto_storage::ColumnData::Timestamp(vec![1].into()));
        let gap = Column::from_data(zepto_storage::ColumnData::Interval(vec![5].into()));
        let plan = TablePlan { name: "t".into(), exists: true, defs, cols: vec![ts, gap], ts_name: "ts".into() };
        let err = create_and_apply(e.catalog(), vec![plan], false).expect_err("INTERVAL is not stored");
        assert!(err.message.contains("cannot have type"), "{}", err.message);
        assert_eq!(q(&e, "SELECT count(*) FROM t"), "0\n");
        assert_eq!(e.catalog().snapshot("t").expect("t").schema().len(), 2, "no column added");
    }

    #[test]
    fn table_formats_reject_whole_batches() {
        let e = Engine::new();
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL, px DOUBLE)").expect("ddl");
        let who = Principal::anonymous_admin();
        let req = |format| WriteRequest { format, table: Some("t".into()), precision: Precision::NANOS, now_ns: 0 };
        let csv = "ts,sym,px\n2024-01-02 09:30:00,A,1.5\n1,B,\n";
        assert_eq!(write(&e, &who, &req(IngestFormat::Csv), csv.as_bytes()).expect("csv"), 2);
        let bad = "ts,sym,px\n1,A,1\n2,B,x\n";
        let err = write(&e, &who, &req(IngestFormat::Csv), bad.as_bytes()).expect_err("bad px");
        assert_eq!((err.code, err.row), ("INGEST", Some(2)));
        let jl = "{\"ts\":3,\"sym\":\"C\",\"px\":2}\n{\"ts\":\"bad\"}";
        assert_eq!(write(&e, &who, &req(IngestFormat::Jsonl), jl.as_bytes()).expect_err("bad ts").row, Some(2));
        assert_eq!(q(&e, "SELECT count(*) FROM t"), "2\n");
        let mut nf = req(IngestFormat::Csv);
        nf.table = Some("nope".into());
        assert_eq!(write(&e, &who, &nf, csv.as_bytes()).expect_err("no table").code, "TABLE_NOT_FOUND");
        let reader = Principal { tables: zepto_sql::TableAccess::only(["other"]), ..Principal::anonymous_admin() };
        assert_eq!(
            write(&e, &reader, &req(IngestFormat::Csv), csv.as_bytes()).expect_err("grant").code,
            "PERMISSION_DENIED"
        );
    }

    /// Line-protocol batches spread thin over 3,000 series are deferred and folded in later
    /// (storage's `table/defer.rs`): every query between batches sees every acknowledged row,
    /// DELETE and a new field between them apply to those rows, and the table ends as the
    /// same lines written as one body (never deferred) leave it.
    #[test]
    fn thin_ilp_batches_are_read_whole_between_writes() {
        let mut rng = zepto_storage::rng::XorShift::new(3);
        let mut next = |n: u64| rng.below(n);
        let line = |h: u64, t: u64, v: u64| format!("m,host=h{h},dc=d{} v={v}i,w={}.5 {t}", h % 7, v % 100);
        let (thin, whole) = (Engine::new(), Engine::new());
        let mut all = Vec::new();
        for t in 0..4u64 {
            let first: Vec<String> = (0..3000).map(|h| line(h, t * 3000 + h, h)).collect();
            all.extend(first.iter().cloned());
            ilp(&thin, &first.join("\n")).expect("first rows");
        }
        for round in 0..40u64 {
            let n = if round < 2 { 1500 } else { 1 + next(3000) };
            let lines: Vec<String> = (0..n).map(|_| line(next(3000), 12_000 + next(20_000), next(1000))).collect();
            all.extend(lines.iter().cloned());
            ilp(&thin, &lines.join("\n")).expect("thin rows");
            if round == 1 {
                // Two thin batches in a row: the second's decoding (the table's layout) did
                // not fold the first in.
                let deferred = thin.catalog().write_many_deferred(&["m"], |t| Ok(t.iter().all(|t| t.has_deferred())));
                assert!(deferred.expect("the table"), "thin rows were not deferred");
            }
            if round % 5 == 4 {
                assert_eq!(q(&thin, "SELECT count(*) FROM m"), format!("{}\n", all.len()), "round {round}");
                let want = all.iter().filter(|l| l.starts_with("m,host=h17,")).count();
                assert_eq!(q(&thin, "SELECT count(*) FROM m WHERE host = 'h17'"), format!("{want}\n"));
            }
            if round == 20 {
                let cut = "m,host=h5,dc=d5 v=1i,w=1.5,x=2i 30000";
                ilp(&thin, cut).expect("a new field");
                all.push(cut.to_string());
            }
        }
        ilp(&whole, &all.join("\n")).expect("one body");
        let every = "SELECT * FROM m ORDER BY ALL";
        assert_eq!(q(&thin, every), q(&whole, every));
        thin.execute("DELETE FROM m WHERE v < 500").expect("delete");
        whole.execute("DELETE FROM m WHERE v < 500").expect("delete");
        ilp(&thin, &(0..100).map(|h| line(h, 40_000 + h, 900)).collect::<Vec<_>>().join("\n")).expect("more");
        ilp(&whole, &(0..100).map(|h| line(h, 40_000 + h, 900)).collect::<Vec<_>>().join("\n")).expect("more");
        assert_eq!(q(&thin, every), q(&whole, every));
    }

    #[test]
    fn tenant_bound_keys_do_not_write_tables_with_tenant_id() {
        let e = Engine::new();
        e.execute("CREATE TABLE mem (ts TIMESTAMP, tenant_id SYMBOL, body VARCHAR)").expect("ddl");
        e.execute("CREATE TABLE t (ts TIMESTAMP, sym SYMBOL)").expect("ddl");
        let agent =
            Principal { tables: zepto_sql::TableAccess::all().with_tenant("a"), ..Principal::anonymous_admin() };
        let req = |format, table: &str| WriteRequest {
            format,
            table: Some(table.into()),
            precision: Precision::NANOS,
            now_ns: 0,
        };
        let csv = "ts,tenant_id,body
1,a,x
";
        let err = write(&e, &agent, &req(IngestFormat::Csv, "mem"), csv.as_bytes()).expect_err("scoped table");
        assert_eq!((err.status.as_u16(), err.code), (403, "PERMISSION_DENIED"));
        let jl = "{\"ts\":1,\"tenant_id\":\"a\",\"body\":\"x\"}";
        let err = write(&e, &agent, &req(IngestFormat::Jsonl, "mem"), jl.as_bytes()).expect_err("scoped table");
        assert_eq!(err.code, "PERMISSION_DENIED");
        let ilp_req = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 1 };
        for body in
            ["mem,tenant_id=a body=\"x\" 1", "t,sym=A v=1 1\nnewt,TENANT_ID=a v=1 2", "t,sym=A tenant_id=\"a\" 1"]
        {
            let err = write(&e, &agent, &ilp_req, body.as_bytes()).expect_err(body);
            assert_eq!((err.status.as_u16(), err.code), (403, "PERMISSION_DENIED"), "{body}");
        }
        assert_eq!(q(&e, "SELECT count(*) FROM mem"), "0\n");
        assert_eq!(q(&e, "SELECT count(*) FROM t"), "0\n");
        assert!(!e.catalog().exists("newt"), "no table created");
        assert!(e.catalog().snapshot("t").expect("t").schema().index_of("tenant_id").is_none(), "not widened");
        // Tables without tenant_id take the key's writes; an unbound key writes anywhere.
        assert_eq!(write(&e, &agent, &ilp_req, b"t,sym=A v=1 1").expect("unscoped table"), 1);
        let csv_t = "ts,sym\n2,B\n";
        assert_eq!(write(&e, &agent, &req(IngestFormat::Csv, "t"), csv_t.as_bytes()).expect("unscoped table"), 1);
        assert_eq!(
            write(&e, &Principal::anonymous_admin(), &req(IngestFormat::Csv, "mem"), csv.as_bytes()).expect("admin"),
            1
        );
    }
}

#[cfg(test)]
mod mark_tests {
    use super::*;
    use crate::auth::Principal;

    fn mark(n: i64) -> Mark {
        let defs = vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "n".into(), data_type: DataType::Int64 },
        ];
        Mark::new("marks", defs, vec![Value::Timestamp(n), Value::Int64(n)]).expect("a mark")
    }

    fn count(e: &Engine, table: &str) -> String {
        let r = e.execute(&format!("SELECT count(*) FROM {table}")).expect("count");
        r.batch().columns[0].get(0).to_string()
    }

    /// A batch and its mark are stored together (the mark's table created on first use), in
    /// every format; a bad batch stores neither.
    #[test]
    fn a_mark_is_stored_with_its_batch_or_not_at_all() {
        let e = Engine::new();
        let who = Principal::anonymous_admin();
        let ilp = WriteRequest { format: IngestFormat::Ilp, table: None, precision: Precision::NANOS, now_ns: 7 };
        let err = write_marked(&e, &who, &ilp, b"t,sym=A x=1 1\nbroken", &[mark(1)]).expect_err("bad line");
        assert_eq!(err.line, Some(2));
        assert!(!e.catalog().exists("marks") && !e.catalog().exists("t"), "nothing created");
        assert_eq!(write_marked(&e, &who, &ilp, b"t,sym=A x=1 1\nt,sym=B x=2 2", &[mark(2)]).expect("ok"), 2);
        assert_eq!((count(&e, "t"), count(&e, "marks")), ("2".into(), "1".into()));
        assert_eq!(write_marked(&e, &who, &ilp, b"", &[mark(3), mark(33)]).expect("a mark alone"), 0);
        let jsonl = WriteRequest { format: IngestFormat::Jsonl, table: Some("t".into()), ..ilp.clone() };
        let body = b"{\"sym\": \"C\", \"x\": 3, \"timestamp\": 3}\n{\"sym\": \"D\", \"x\": \"no\", \"timestamp\": 4}";
        assert!(write_marked(&e, &who, &jsonl, body, &[mark(4)]).is_err(), "a bad row");
        assert_eq!((count(&e, "t"), count(&e, "marks")), ("2".into(), "3".into()));
        let body = b"{\"sym\": \"C\", \"x\": 3, \"timestamp\": 3}";
        assert_eq!(write_marked(&e, &who, &jsonl, body, &[mark(5)]).expect("jsonl"), 1);
        assert_eq!((count(&e, "t"), count(&e, "marks")), ("3".into(), "4".into()));
        // Marks of two tables in one change, each table made on first use.
        let defs = vec![
            ColumnDef { name: "ts".into(), data_type: DataType::Timestamp },
            ColumnDef { name: "why".into(), data_type: DataType::Varchar },
        ];
        let other = Mark::new("other_marks", defs, vec![Value::Timestamp(6), Value::Str("x".into())]).expect("mark");
        let marks = [mark(6), other, mark(66)];
        assert_eq!(write_marked(&e, &who, &ilp, b"t,sym=E x=6 6", &marks).expect("two mark tables"), 1);
        assert_eq!(
            (count(&e, "t"), count(&e, "marks"), count(&e, "other_marks")),
            ("4".into(), "6".into(), "1".into())
        );
        assert!(Mark::new(
            "m",
            vec![ColumnDef { name: "n".into(), data_type: DataType::Int64 }],
            vec![Value::Int64(1)]
        )
        .is_err());
    }
}
