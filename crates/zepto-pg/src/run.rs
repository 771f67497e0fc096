//! Statements run for one connection: parsed (with the Bind's parameters), checked against the
//! key's role as the HTTP door checks them, run one by one on the connection's engine (a `SET`
//! of an engine setting lasts for the connection) under the server's time and memory limits,
//! on the server's query slots (shared with its other doors, `zepto_server::admission`), or
//! on the async thread when small, as the HTTP door decides. Dropping the run (the client's
//! CancelRequest drops it) cancels the statement, waiting or running. Each statement of a
//! script takes a slot of its own: a script may stop at a busy slot (SQLSTATE 53000) after
//! its earlier statements were applied, as at any other error.
//!
//! Results stream to the client as rows are encoded, one chunk at a time, in the text or
//! binary format asked for each column.

use crate::error::{pg_error, user_error};
use crate::types::{field_type, RowWriter};
use futures::stream;
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zepto_server::admission::{Admission, Refused};
use zepto_server::auth::Principal;
use zepto_sql::interrupt::{QueryControl, RunContext};
use zepto_sql::parser::ast::{Query, Statement};
use zepto_sql::parser::{parse_script, ParamValue, ParseLimits};
use zepto_sql::result::QueryResult;
use zepto_sql::{Engine, Prepared};

/// The limits every statement runs under (the server's `--query-timeout`,
/// `--query-memory-mb` and SQL text limits).
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// The longest a statement may run.
    pub timeout: Option<Duration>,
    /// The most memory a statement may hold.
    pub memory: Option<usize>,
    /// How much SQL text, how many statements, how deep an expression.
    pub parse: ParseLimits,
}

impl Limits {
    /// A statement's control under these limits.
    pub fn control(&self) -> Arc<QueryControl> {
        QueryControl::new(self.timeout, self.memory)
    }
}

/// The engine a connection's statements run on (its key's table access, and the engine
/// settings its `SET`s changed).
pub struct ConnEngine(pub Mutex<Engine>);

/// The plan a portal's Describe made, kept for its Execute (which follows at once, with the
/// same statement and parameters), so a query is planned once.
pub struct Planned {
    sql: Arc<str>,
    params: Vec<ParamValue>,
    plan: Prepared,
}

/// The connection's last plan made by a Describe.
#[derive(Default)]
pub struct LastPlan(Mutex<Option<Planned>>);

impl LastPlan {
    /// Keep `plan` of `sql` with `params`.
    pub fn keep(&self, sql: &Arc<str>, params: &[ParamValue], plan: Prepared) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(Planned { sql: sql.clone(), params: params.to_vec(), plan });
        }
    }

    /// The plan kept for `sql` with `params`, if it is that one (taken: a plan runs once).
    /// The slot is emptied either way: a plan is only good for the Execute right after its
    /// Describe.
    pub fn take(&self, sql: &str, params: &[ParamValue]) -> Option<Prepared> {
        let kept = self.0.lock().ok()?.take()?;
        (&*kept.sql == sql && kept.params == params).then_some(kept.plan)
    }
}

/// `sql`'s statements with `params` bound (within `limits`), each one `who` may run.
pub fn statements(
    sql: &str,
    params: &[ParamValue],
    who: &Principal,
    limits: &ParseLimits,
) -> PgWireResult<Vec<Statement>> {
    let stmts = parse_script(sql, params, limits, &|| Ok(())).map_err(|e| pg_error(&e, sql))?;
    zepto_server::sql::check_statements(&stmts, who, false).map_err(|e| user_error("42501", e.message))?;
    Ok(stmts)
}

/// Run `s` on `conn`'s engine under `limits`, on a query slot of the server's (`gate`, shared
/// with the other doors); the engine moves past a `SET`. `sql` is the text, for error
/// positions. A query the HTTP door would bind on its async thread
/// ([`zepto_server::sql::binds_inline`]) is planned here first, so that one reading few rows
/// takes the quick lane (or runs here), as over HTTP. The statement is cancelled if the
/// future is dropped (the client's CancelRequest).
pub async fn execute(
    conn: &Arc<ConnEngine>,
    gate: &Admission,
    s: Statement,
    sql: &str,
    limits: Limits,
) -> PgWireResult<QueryResult> {
    let s = match s {
        Statement::Query(q) if zepto_server::sql::binds_inline(&q, sql.len()) => {
            let plan = plan_query(conn, gate, *q, sql, limits, true).await?;
            return run_prepared(conn, gate, plan, sql, limits).await;
        }
        s => s,
    };
    let conn = conn.clone();
    in_slot(gate, limits, false, sql, move |run| run_in_session(&conn, run, &s)).await
}

/// `job` on a query slot (`quick`: the quick lane's) under a control of `limits`, cancelled
/// if the future is dropped; a refusal or an error as PostgreSQL says it (positions in `sql`).
pub async fn in_slot<T: Send + 'static>(
    gate: &Admission,
    limits: Limits,
    quick: bool,
    sql: &str,
    job: impl FnOnce(&RunContext) -> Result<T, zepto_sql::SqlError> + Send + 'static,
) -> PgWireResult<T> {
    gate.run_controlled(&limits.control(), quick, job).await.map_err(refused)?.map_err(|e| pg_error(&e, sql))
}

/// Whether `s` is a COPY with the client's connection at its far end (`crate::copy` runs it).
pub fn is_client_copy(s: &Statement) -> bool {
    use zepto_sql::parser::ast::CopyEnd::Client;
    matches!(s, Statement::CopyFrom { source: Client, .. } | Statement::CopyTo { target: Client, .. })
}

/// What [`execute_long`] did with a long script.
pub enum Long {
    /// Its statements' results in order, and the error that stopped it, if one did (the
    /// statements before it stay applied, as at any error).
    Ran(Vec<QueryResult>, Option<PgWireError>),
    /// It holds a client COPY, which needs the connection: parsed only, to run one by one.
    Parsed(Vec<Statement>),
}

/// A script longer than the HTTP door parses on its async thread
/// ([`zepto_server::sql::INLINE_PARSE_BYTES`]: a 400k-item `IN` list is megabytes of SQL and
/// tens of MB of syntax tree) parsed and run under one query slot, as the HTTP door runs one:
/// the trees waiting for a slot are never more than the slots.
pub async fn execute_long(
    conn: &Arc<ConnEngine>,
    gate: &Admission,
    sql: &str,
    params: &[ParamValue],
    who: Arc<Principal>,
    limits: Limits,
) -> PgWireResult<Long> {
    let conn = conn.clone();
    on_long_text(gate, sql, params, who, limits, move |stmts, run, text| {
        if stmts.iter().any(is_client_copy) {
            return Ok(Long::Parsed(stmts));
        }
        let mut results = Vec::with_capacity(stmts.len());
        for s in &stmts {
            // A cancel between statements stops the next one, even one that never checks.
            let next = run.check().and_then(|()| run_in_session(&conn, run, s));
            match next {
                Ok(r) => results.push(r),
                Err(e) => return Ok(Long::Ran(results, Some(pg_error(&e, text)))),
            }
        }
        Ok(Long::Ran(results, None))
    })
    .await
}

/// A long text (over [`zepto_server::sql::INLINE_PARSE_BYTES`]) parsed and checked for `who`
/// on one query slot, then `then` of its statements on the same slot, under a run context of
/// its own (as HTTP's: the syntax tree is not counted as the statements' memory,
/// `--query-memory-mb`) and the text, for error positions. A cancel stops the parse too.
async fn on_long_text<T: Send + 'static>(
    gate: &Admission,
    sql: &str,
    params: &[ParamValue],
    who: Arc<Principal>,
    limits: Limits,
    then: impl FnOnce(Vec<Statement>, &RunContext, &str) -> PgWireResult<T> + Send + 'static,
) -> PgWireResult<T> {
    let ctl = limits.control();
    let (c, text, params) = (ctl.clone(), sql.to_string(), params.to_vec());
    let job = move |parsing: &RunContext| {
        let stmts =
            parse_script(&text, &params, &limits.parse, &|| parsing.check()).map_err(|e| pg_error(&e, &text))?;
        zepto_server::sql::check_statements(&stmts, &who, false).map_err(|e| user_error("42501", e.message))?;
        then(stmts, &RunContext::new(Some(c)), &text)
    };
    gate.run_controlled(&ctl, false, job).await.map_err(refused)?
}

/// A long text's plan, for a Describe: parsed, checked and planned under one query slot, as
/// [`execute_long`] parses one; `None` unless it is one query.
pub async fn prepare_long(
    conn: &Arc<ConnEngine>,
    gate: &Admission,
    sql: &str,
    params: &[ParamValue],
    who: Arc<Principal>,
    limits: Limits,
) -> PgWireResult<Option<Prepared>> {
    let engine = conn.0.lock().map(|e| e.clone()).map_err(|_| user_error("XX000", "engine lock"))?;
    on_long_text(gate, sql, params, who, limits, move |mut stmts, run, text| {
        let (1, Some(Statement::Query(q))) = (stmts.len(), stmts.pop()) else { return Ok(None) };
        engine.prepare_in(run, &q).map(Some).map_err(|e| pg_error(&e, text))
    })
    .await
}

/// Run `s` on the connection's engine; the engine moves past a `SET`.
fn run_in_session(conn: &ConnEngine, run: &RunContext, s: &Statement) -> Result<QueryResult, zepto_sql::SqlError> {
    let engine = conn.0.lock().map(|e| e.clone()).map_err(|_| zepto_sql::SqlError::Internal("engine lock".into()))?;
    let r = engine.execute_statement_in(run, s)?;
    if let Statement::Set { .. } = s {
        let next = engine.after(s)?;
        if let Ok(mut e) = conn.0.lock() {
            *e = next;
        }
    }
    Ok(r)
}

/// A statement the server's admission did not run, as PostgreSQL says so: busy is
/// `insufficient_resources` (53000), a stopping server `admin_shutdown` (57P01).
pub fn refused(r: Refused) -> PgWireError {
    let code = match r {
        Refused::Busy { .. } => "53000",
        Refused::Stopping => "57P01",
        Refused::Lost => "XX000",
    };
    user_error(code, r.to_string())
}

/// Plan query `q` on `conn`'s engine under `limits`: here when the HTTP door would bind it on
/// its async thread ([`zepto_server::sql::binds_inline`]), else on a query slot (cancelled
/// if the future is dropped).
pub async fn prepare(
    conn: &Arc<ConnEngine>,
    gate: &Admission,
    q: Query,
    sql: &str,
    limits: Limits,
) -> PgWireResult<Prepared> {
    let inline = zepto_server::sql::binds_inline(&q, sql.len());
    plan_query(conn, gate, q, sql, limits, inline).await
}

/// [`prepare`], `inline` or on a query slot.
async fn plan_query(
    conn: &Arc<ConnEngine>,
    gate: &Admission,
    q: Query,
    sql: &str,
    limits: Limits,
    inline: bool,
) -> PgWireResult<Prepared> {
    let engine = conn.0.lock().map(|e| e.clone()).map_err(|_| user_error("XX000", "engine lock"))?;
    if inline {
        let run = RunContext::new(Some(limits.control()));
        return engine.prepare_in(&run, &q).map_err(|e| pg_error(&e, sql));
    }
    in_slot(gate, limits, false, sql, move |run| engine.prepare_in(run, &q)).await
}

/// Run a plan made by [`prepare`] under `limits`: here when its scans are small (as the HTTP
/// door decides), else on a slot: the quick lane's when its scans read few rows, as over HTTP.
pub async fn run_prepared(
    conn: &Arc<ConnEngine>,
    gate: &Admission,
    plan: Prepared,
    sql: &str,
    limits: Limits,
) -> PgWireResult<QueryResult> {
    let engine = conn.0.lock().map(|e| e.clone()).map_err(|_| user_error("XX000", "engine lock"))?;
    if zepto_server::sql::runs_inline(&plan) {
        let run = RunContext::new(Some(limits.control()));
        return engine.run_prepared_in(&run, &plan).map_err(|e| pg_error(&e, sql));
    }
    let quick = zepto_server::sql::is_quick(&plan);
    in_slot(gate, limits, quick, sql, move |run| engine.run_prepared_in(run, &plan)).await
}

/// The format of column `i` under the client's format codes (a missing code: text).
pub fn field_format(f: &Format, i: usize) -> FieldFormat {
    if crate::params::is_binary(f, i) {
        FieldFormat::Binary
    } else {
        FieldFormat::Text
    }
}

/// The row description of `fields` in `formats`.
pub fn schema(fields: &[zepto_sql::plan::Field], formats: &Format) -> Vec<FieldInfo> {
    let info = |(i, f): (usize, &zepto_sql::plan::Field)| {
        FieldInfo::new(f.name.clone(), None, None, field_type(f), field_format(formats, i))
    };
    fields.iter().enumerate().map(info).collect()
}

/// A statement's result as the client reads it: rows (streamed) or a command tag.
pub fn response(r: QueryResult, formats: &Format) -> Response {
    if r.fields.is_empty() {
        return Response::Execution(tag(r.status.as_deref().unwrap_or("OK")));
    }
    let fields = Arc::new(schema(&r.fields, formats));
    let rows = Rows { writer: RowWriter::new(&fields), result: r, chunk: 0, row: 0 };
    Response::Query(QueryResponse::new(fields, stream::iter(rows)))
}

/// Our status (`INSERT 3`, `CREATE TABLE`, ...) as PostgreSQL's command tag.
fn tag(status: &str) -> Tag {
    let (word, n) = match status.rsplit_once(' ') {
        Some((w, n)) => (w, n.parse::<usize>().ok()),
        None => (status, None),
    };
    match (word, n) {
        ("INSERT", Some(n)) => Tag::new("INSERT").with_oid(0).with_rows(n),
        (w, Some(n)) if matches!(w, "UPDATE" | "DELETE" | "COPY" | "SELECT") => Tag::new(w).with_rows(n),
        _ => Tag::new(status),
    }
}

/// A result's rows, encoded one at a time as the client reads them.
struct Rows {
    writer: RowWriter,
    result: QueryResult,
    chunk: usize,
    row: usize,
}

impl Iterator for Rows {
    type Item = PgWireResult<DataRow>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let batch = self.result.chunks().get(self.chunk)?;
            if self.row < batch.rows {
                let i = self.row;
                self.row += 1;
                return Some(self.writer.row(&batch.columns, i));
            }
            (self.chunk, self.row) = (self.chunk + 1, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_statuses_are_postgres_command_tags() {
        let t = |s: &str| format!("{:?}", tag(s));
        assert_eq!(t("INSERT 3"), format!("{:?}", Tag::new("INSERT").with_oid(0).with_rows(3)));
        assert_eq!(t("DELETE 2"), format!("{:?}", Tag::new("DELETE").with_rows(2)));
        assert_eq!(t("CREATE TABLE"), format!("{:?}", Tag::new("CREATE TABLE")));
    }
}
