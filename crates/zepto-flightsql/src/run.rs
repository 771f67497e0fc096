//! SQL as a Flight SQL client sends it, run for one caller: parsed, checked against the
//! caller's role (as the HTTP door checks it), run statement by statement (a `SET` changes
//! the engine the statements after it run on) under the server's time and memory limits,
//! the last statement's result as Arrow record batches.

use arrow_array::RecordBatch;
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use std::sync::Arc;
use std::time::Duration;
use tonic::Status;
use zepto_server::auth::Principal;
use zepto_sql::interrupt::RunContext;
use zepto_sql::parser::ast::Statement;
use zepto_sql::result::QueryResult;
use zepto_sql::{Engine, SqlError};
use zepto_storage::Column;

/// The limits every statement runs under (the server's `--query-timeout` and
/// `--query-memory-mb`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// The longest a statement may run.
    pub timeout: Option<Duration>,
    /// The most memory a statement may hold.
    pub memory: Option<usize>,
}

/// An engine error as a gRPC status: the closest code, the message led by the error's code.
pub(crate) fn status(e: &SqlError) -> Status {
    let msg = format!("{}: {e}", e.code());
    match e {
        SqlError::TableNotFound { .. } => Status::not_found(msg),
        SqlError::TableExists(_) => Status::already_exists(msg),
        SqlError::PermissionDenied(_) => Status::permission_denied(msg),
        SqlError::ResourcesExhausted(_) | SqlError::LimitExceeded(_) => Status::resource_exhausted(msg),
        SqlError::Timeout(_) => Status::deadline_exceeded(msg),
        SqlError::Cancelled => Status::cancelled(msg),
        SqlError::NotSupported(_) => Status::unimplemented(msg),
        SqlError::Unavailable(_) => Status::unavailable(msg),
        SqlError::Io(_) | SqlError::DiskFull(_) | SqlError::Internal(_) => Status::internal(msg),
        _ => Status::invalid_argument(msg),
    }
}

/// `sql`'s statements, each one `who` may run.
pub(crate) fn statements(sql: &str, who: &Principal) -> Result<Vec<Statement>, Status> {
    let stmts = zepto_sql::parser::parse_statements(sql).map_err(|e| status(&e))?;
    if stmts.is_empty() {
        return Err(Status::invalid_argument("SQL_PARSE: no SQL statement"));
    }
    zepto_server::sql::check_statements(&stmts, who, false).map_err(|e| Status::permission_denied(e.message))?;
    Ok(stmts)
}

/// Run `stmts` on `engine` (the caller's) under `run` (the call's limits and cancellation):
/// the last one's result.
pub(crate) fn execute(engine: &Engine, stmts: &[Statement], run: &RunContext) -> Result<QueryResult, Status> {
    let mut engine = engine.clone();
    let mut last = None;
    for s in stmts {
        let r = engine.execute_statement_in(run, s).map_err(|e| status(&e))?;
        engine = engine.after(s).map_err(|e| status(&e))?;
        last = Some(r);
    }
    last.ok_or_else(|| Status::invalid_argument("SQL_PARSE: no SQL statement"))
}

/// The schema `stmts`' last statement answers with, without running it (a query is bound;
/// any other statement answers a one-column `status`). Earlier `SET`s apply.
pub(crate) fn schema(engine: &Engine, stmts: &[Statement], run: &RunContext) -> Result<SchemaRef, Status> {
    let mut engine = engine.clone();
    let Some((last, before)) = stmts.split_last() else {
        return Err(Status::invalid_argument("SQL_PARSE: no SQL statement"));
    };
    for s in before.iter().filter(|s| matches!(s, Statement::Set { .. })) {
        engine = engine.after(s).map_err(|e| status(&e))?;
    }
    let Statement::Query(q) = last else { return Ok(status_schema()) };
    plan_schema(&engine.prepare_in(run, q).map_err(|e| status(&e))?)
}

/// The schema a bound query answers with, dictionaries as their values.
pub(crate) fn plan_schema(prepared: &zepto_sql::Prepared) -> Result<SchemaRef, Status> {
    let names: Vec<String> = prepared.fields().iter().map(|f| f.name.clone()).collect();
    let empty: Vec<Column> = prepared.fields().iter().map(|f| Column::nulls(f.data_type, 0)).collect();
    let refs: Vec<&Column> = empty.iter().collect();
    let batch = zepto_io::ipc::record_batch(&names, &refs, 0).map_err(|e| Status::internal(e.to_string()))?;
    Ok(hydrated(&batch.schema()))
}

/// The schema of a statement that answers with a status line.
pub(crate) fn status_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("status", ArrowType::Utf8, true)]))
}

/// `schema` with dictionary columns as their values' type, as the door sends them (clients
/// such as JDBC read no dictionaries).
pub(crate) fn hydrated(schema: &Schema) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            ArrowType::Dictionary(_, values) => f.as_ref().clone().with_data_type(values.as_ref().clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// A result as record batches, one per chunk (a status as a one-row `status` column).
pub(crate) fn batches(r: &QueryResult) -> Result<Vec<RecordBatch>, Status> {
    let internal = |e: zepto_io::IoError| Status::internal(format!("encoding the result: {e}"));
    if r.fields.is_empty() {
        return status_result(r.status.as_deref().unwrap_or_default());
    }
    let names: Vec<String> = r.fields.iter().map(|f| f.name.clone()).collect();
    let mut out = Vec::with_capacity(r.chunks().len());
    for chunk in r.chunks() {
        let cols: Vec<&Column> = chunk.columns.iter().map(|c| &**c).collect();
        out.push(zepto_io::ipc::record_batch(&names, &cols, chunk.rows).map_err(internal)?);
    }
    if out.is_empty() {
        let empty: Vec<Column> = r.fields.iter().map(|f| Column::nulls(f.data_type, 0)).collect();
        let refs: Vec<&Column> = empty.iter().collect();
        out.push(zepto_io::ipc::record_batch(&names, &refs, 0).map_err(internal)?);
    }
    Ok(out)
}

/// What a statement ticket carries: a read to run when the ticket is redeemed, or the status
/// of statements that changed data, run when the client asked for the ticket (clients such
/// as ADBC's DB-API never redeem the ticket of an INSERT, so it must not wait for DoGet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Handle {
    /// SQL that only reads.
    Read(String),
    /// The status line of statements already run.
    Done(String),
}

impl Handle {
    /// The ticket's bytes: a tag byte, then the SQL or the status.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (tag, text) = match self {
            Handle::Read(sql) => (b'R', sql),
            Handle::Done(status) => (b'D', status),
        };
        let mut out = Vec::with_capacity(text.len() + 1);
        out.push(tag);
        out.extend_from_slice(text.as_bytes());
        out
    }

    /// A ticket's handle.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Handle, Status> {
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec()).map_err(|_| Status::invalid_argument("a ticket that is not UTF-8"))
        };
        match bytes.split_first() {
            Some((b'R', rest)) => Ok(Handle::Read(text(rest)?)),
            Some((b'D', rest)) => Ok(Handle::Done(text(rest)?)),
            _ => Err(Status::invalid_argument("not a ticket this server made")),
        }
    }
}

/// Whether every statement only reads (a SET only changes the session).
pub(crate) fn reads_only(stmts: &[Statement]) -> bool {
    stmts.iter().all(|s| s.access() == zepto_sql::Access::Read)
}

/// A status line as a result.
pub(crate) fn status_result(text: &str) -> Result<Vec<RecordBatch>, Status> {
    let col = Arc::new(arrow_array::StringArray::from(vec![text.to_string()]));
    let b = RecordBatch::try_new(status_schema(), vec![col]).map_err(|e| Status::internal(e.to_string()))?;
    Ok(vec![b])
}

/// The rows a statement changed, from its status (`INSERT 3`, `DELETE 2`); 0 for DDL.
pub(crate) fn changed(r: &QueryResult) -> i64 {
    r.status.as_deref().and_then(|s| s.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_carry_a_read_or_an_outcome_and_nothing_else() {
        for h in
            [Handle::Read("SELECT 'é' FROM t".into()), Handle::Done("INSERT 3".into()), Handle::Read(String::new())]
        {
            assert_eq!(Handle::decode(&h.encode()).expect("decodes"), h);
        }
        assert!(Handle::decode(b"").is_err());
        assert!(Handle::decode(b"XSELECT 1").is_err());
        assert!(Handle::decode(&[b'R', 0xff, 0xfe]).is_err());
    }

    #[test]
    fn statements_say_what_they_changed_and_only_reads_wait_for_the_ticket() {
        let e = Engine::new();
        let run = |sql: &str| {
            let stmts = statements(sql, &Principal::anonymous_admin()).expect("parses");
            (reads_only(&stmts), changed(&execute(&e, &stmts, &RunContext::new(None)).expect("runs")))
        };
        assert_eq!(run("CREATE TABLE t (ts TIMESTAMP, v BIGINT)"), (false, 0));
        assert_eq!(run("INSERT INTO t VALUES (1, 2), (3, 4)"), (false, 2));
        assert_eq!(run("SET ann = off; SELECT count(*) FROM t"), (true, 0));
        let stmts = statements("SELECT v, ts FROM t", &Principal::anonymous_admin()).expect("parses");
        let schema = schema(&e, &stmts, &RunContext::new(None)).expect("binds");
        assert_eq!(schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(), ["v", "ts"]);
        let missing = statements("SELECT * FROM nowhere", &Principal::anonymous_admin()).expect("parses");
        let err = schema_err(&e, &missing);
        assert_eq!(err.code(), tonic::Code::NotFound, "{err}");
        assert!(err.message().starts_with("TABLE_NOT_FOUND"), "{err}");
    }

    fn schema_err(e: &Engine, stmts: &[Statement]) -> Status {
        schema(e, stmts, &RunContext::new(None)).expect_err("fails")
    }
}
