//! The query handlers pgwire drives: the simple protocol (a script of statements, text
//! results) and the extended one (Parse, Bind with typed parameters, Describe, Execute into a
//! portal that pgwire pages by the client's row limit). Session statements are answered by
//! [`crate::session`]; everything else runs through [`crate::run`].
//!
//! Describe takes a statement's columns from the engine's physical plan ([`Engine::prepare`]),
//! never by running it: a portal's with its bound parameters, a statement's with NULL (or a
//! value of the declared type) in each parameter's place.

use crate::auth::principal;
use crate::run::{execute, response, schema, statements, ConnEngine, LastPlan, Limits, Long};
use crate::session::{self, Answer, Params};
use async_trait::async_trait;
use futures::stream;
use futures::Sink;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::send_describe_response;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{
    DataRowEncoder, DescribePortalResponse, DescribeResponse, DescribeStatementResponse, FieldInfo, QueryResponse,
    Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::Entry;
use pgwire::api::store::PortalStore;
use pgwire::api::DEFAULT_NAME;
use pgwire::api::{ClientInfo, ClientPortalStore};
use pgwire::error::PgWireError;
use pgwire::error::PgWireResult;
use pgwire::messages::extendedquery::{Describe, TARGET_TYPE_BYTE_STATEMENT};
use pgwire::messages::PgWireBackendMessage;
use postgres_types::Type;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use zepto_server::admission::Admission;
use zepto_server::inflight::BodyBudget;
use zepto_sql::parser::ast::Statement;
use zepto_sql::parser::ParamValue;
use zepto_sql::Engine;

/// A statement the client prepared (Parse): its text and how many parameters it takes.
#[derive(Debug, Clone)]
pub struct Prepared {
    sql: Arc<str>,
    params: usize,
}

/// Parse: check the text's size, that it is one statement, and count its parameters; the
/// statement is parsed again at Bind, with their values. Text over
/// [`zepto_server::sql::INLINE_PARSE_BYTES`] is read on a query slot (`gate`), as the HTTP door
/// parses a long script, never on the door's async threads.
pub struct Parser {
    limits: zepto_sql::parser::ParseLimits,
    gate: Arc<Admission>,
}

impl Debug for Parser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parser").field("limits", &self.limits).finish_non_exhaustive()
    }
}

/// A prepared statement's parameter count, if `sql` is one statement.
fn one_statement(sql: &str) -> PgWireResult<usize> {
    if session::split(sql).len() > 1 {
        return Err(crate::error::user_error("42601", "cannot insert multiple commands into a prepared statement"));
    }
    zepto_sql::parser::param_count(sql).map_err(|e| crate::error::pg_error(&e, sql))
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(&self, _: &C, sql: &str, _: &[Option<Type>]) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        self.limits.check_size(sql).map_err(|e| crate::error::pg_error(&e, sql))?;
        let sql: Arc<str> = sql.into();
        let params = if sql.len() > zepto_server::sql::INLINE_PARSE_BYTES {
            let text = sql.clone();
            self.gate.run(false, move || one_statement(&text)).await.map_err(crate::run::refused)??
        } else {
            one_statement(&sql)?
        };
        Ok(Some(Prepared { sql, params }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(vec![Type::TEXT; stmt.params])
    }

    fn get_result_schema(&self, _: &Prepared, _: Option<&Format>) -> PgWireResult<Vec<FieldInfo>> {
        // Unused: the describes below plan the statement on the connection's engine.
        Ok(Vec::new())
    }
}

/// The door's handlers, shared by every connection.
pub struct Backend {
    engine: Engine,
    limits: Limits,
    gate: Arc<Admission>,
    parser: Arc<Parser>,
    /// The server's budget of client data in memory, drawn on by COPY FROM STDIN.
    bodies: BodyBudget,
}

impl Backend {
    /// Run statements on `engine` (each connection with its key's access) under `limits`, on
    /// the server's query slots (`gate`), COPY's rows held under `bodies`.
    pub fn new(engine: Engine, limits: Limits, gate: Arc<Admission>, bodies: BodyBudget) -> Backend {
        let parser = Arc::new(Parser { limits: limits.parse, gate: gate.clone() });
        Backend { engine, limits, gate, parser, bodies }
    }

    /// The connection's engine, made at its first statement.
    fn conn<C: ClientInfo + ?Sized>(&self, client: &C) -> PgWireResult<Arc<ConnEngine>> {
        let who = principal(client)?;
        let ext = client.session_extensions();
        Ok(ext.get_or_insert_with(|| {
            ConnEngine(Mutex::new(
                self.engine.with_access(who.tables.clone()).with_column_names(zepto_sql::ColumnNames::Postgres),
            ))
        }))
    }

    /// Run `sql` with `params`, pushing a response per statement onto `out` (the first error
    /// ends it; what ran before it stays applied and answered). A script is cut at its
    /// top-level `;`s, so session statements (`BEGIN`, `SET`) may sit between others.
    async fn run<C>(
        &self,
        client: &C,
        sql: &str,
        params: &[ParamValue],
        formats: &Format,
        out: &mut Vec<Response>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        self.limits.parse.check_size(sql).map_err(|e| crate::error::pg_error(&e, sql))?;
        let pieces = session::split(sql);
        if pieces.len() <= 1 {
            return self.run_one(client, sql, params, formats, false, out).await;
        }
        let last = pieces.len() - 1;
        for (k, (base, piece)) in pieces.into_iter().enumerate() {
            let r = self.run_one(client, piece, params, formats, k < last, out).await;
            r.map_err(|e| crate::error::shifted(e, sql, base))?;
        }
        Ok(())
    }

    /// [`Backend::run`] of one piece of a script (one statement, or several the engine reads).
    async fn run_one<C>(
        &self,
        client: &C,
        sql: &str,
        params: &[ParamValue],
        formats: &Format,
        more: bool,
        out: &mut Vec<Response>,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let share = client.session_extensions().get_or_insert_with(crate::txn::Share::default);
        if let Some(a) = self.local(client, sql)? {
            let a = match a {
                Local::Session(a) => {
                    let door = crate::txn::Door { gate: &self.gate, limits: self.limits, share: &share };
                    Local::Session(crate::txn::act(&self.conn(client)?, door, a, sql).await?)
                }
                rows => rows,
            };
            out.push(local_response(a, formats)?);
            return Ok(());
        }
        let who = principal(client)?;
        let conn = self.conn(client)?;
        crate::txn::refuse_if_failed(&conn)?;
        let stmts = if sql.len() > zepto_server::sql::INLINE_PARSE_BYTES {
            match crate::run::execute_long(&conn, &self.gate, sql, params, who, self.limits).await? {
                Long::Ran(results, error) => {
                    out.extend(results.into_iter().map(|r| response(r, formats)));
                    crate::txn::cover(&conn, &self.bodies, &share)?;
                    return error.map_or(Ok(()), Err);
                }
                Long::Parsed(stmts) => stmts,
            }
        } else {
            statements(sql, params, &who, &self.limits.parse)?
        };
        let last = stmts.len().saturating_sub(1);
        for (k, s) in stmts.into_iter().enumerate() {
            if !crate::run::is_client_copy(&s) {
                let r = execute(&conn, &self.gate, s, sql, self.limits).await?;
                out.push(response(r, formats));
                crate::txn::cover(&conn, &self.bodies, &share)?;
                continue;
            }
            if matches!(s, Statement::CopyFrom { .. }) && (more || k < last) {
                return Err(crate::error::user_error(
                    "0A000",
                    "COPY ... FROM STDIN must be the last statement of a query: the rows follow it",
                ));
            }
            let state = client.session_extensions().get_or_insert_with(crate::copy::CopyState::default);
            let door = crate::copy::Door { gate: &self.gate, limits: self.limits, bodies: &self.bodies };
            out.push(crate::copy::start(&conn, &state, s, sql, door).await?);
        }
        Ok(())
    }

    /// The columns `sql` answers with when run with `params`, from its plan (kept for the
    /// portal's Execute when `keep`).
    async fn describe<C>(
        &self,
        client: &C,
        sql: &Arc<str>,
        params: &[ParamValue],
        formats: &Format,
        keep: bool,
    ) -> PgWireResult<Vec<FieldInfo>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        self.limits.parse.check_size(sql).map_err(|e| crate::error::pg_error(&e, sql))?;
        if let Some(a) = self.local(client, sql)? {
            return Ok(match a {
                Local::Session(_) => Vec::new(),
                Local::Rows(rows) => fields_of(&rows, formats),
            });
        }
        let (who, conn) = (principal(client)?, self.conn(client)?);
        let plan = if sql.len() > zepto_server::sql::INLINE_PARSE_BYTES {
            crate::run::prepare_long(&conn, &self.gate, sql, params, who, self.limits).await?
        } else {
            let stmts = statements(sql, params, &who, &self.limits.parse)?;
            match (stmts.len(), stmts.into_iter().next()) {
                (1, Some(Statement::Query(q))) => {
                    Some(crate::run::prepare(&conn, &self.gate, *q, sql, self.limits).await?)
                }
                _ => None,
            }
        };
        let Some(plan) = plan else { return Ok(Vec::new()) };
        let fields = schema(plan.fields(), formats);
        if keep {
            client.session_extensions().get_or_insert_with(LastPlan::default).keep(sql, params, plan);
        }
        Ok(fields)
    }
}

/// Rows the door answers itself: their columns and rows (values as PostgreSQL's text;
/// `None` is NULL).
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Column names and types.
    pub columns: Vec<(String, Type)>,
    /// The rows.
    pub rows: Vec<Vec<Option<String>>>,
}

/// What the door answers itself: a session statement, or a session value's row.
enum Local {
    Session(Answer),
    Rows(Rows),
}

impl Backend {
    /// A portal's statement run: its plan from the Describe when there is one.
    async fn execute_portal<C>(&self, client: &C, portal: &Portal<Prepared>) -> PgWireResult<Response>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let params = bound(portal)?;
        let (sql, formats) = (&portal.statement.statement.sql, &portal.result_column_format);
        let planned = client.session_extensions().get::<LastPlan>().and_then(|l| l.take(sql, &params));
        if let Some(plan) = planned {
            let conn = self.conn(client)?;
            crate::txn::refuse_if_failed(&conn)?;
            let r = crate::run::run_prepared(&conn, &self.gate, plan, sql, self.limits).await?;
            return Ok(response(r, formats));
        }
        let mut out = Vec::new();
        self.run(client, sql, &params, formats, &mut out).await?;
        Ok(out.pop().unwrap_or(Response::EmptyQuery))
    }

    /// A statement failed: the connection's transaction, if any, refuses statements until it
    /// ends (storing nothing) or rolls back to a savepoint.
    fn txn_failed<C: ClientInfo + ?Sized>(&self, client: &C) {
        if let Some(conn) = client.session_extensions().get::<ConnEngine>() {
            crate::txn::failed(&conn);
        }
    }

    /// Before a statement (`sql`) runs: the transaction status pgwire reports after it starts
    /// from the connection's transaction as it is. An error pgwire saw outside our handlers (a
    /// Parse or Bind refused) fails the transaction, as any error in it does; and `ROLLBACK TO
    /// SAVEPOINT` in a failed transaction starts from "in a transaction", which it restores
    /// (pgwire's status would stay failed: it has no answer that leaves that state but ending).
    fn sync_status<C: ClientInfo + ?Sized>(&self, client: &mut C, sql: &str) {
        use pgwire::messages::response::TransactionStatus;
        let Some(mut status) = settled_status(client) else { return };
        let rollback_to = || matches!(session::answer(sql, &Params::default(), ""), Some(Answer::RollbackTo(_)));
        if status == TransactionStatus::Error && sql.len() <= zepto_server::sql::INLINE_PARSE_BYTES && rollback_to() {
            status = TransactionStatus::Transaction;
        }
        client.set_transaction_status(status);
    }

    /// The door's own answer to `sql`, if it has one. A text over
    /// [`zepto_server::sql::INLINE_PARSE_BYTES`] is no session statement, and is not read here
    /// (on the door's async thread) to learn that.
    fn local<C: ClientInfo + ?Sized>(&self, client: &C, sql: &str) -> PgWireResult<Option<Local>> {
        if sql.len() > zepto_server::sql::INLINE_PARSE_BYTES {
            return Ok(None);
        }
        let user = client.metadata().get("user").cloned().unwrap_or_default();
        let session = client.session_extensions().get_or_insert_with(Params::default);
        Ok(match session::answer(sql, &session, &user) {
            Some(Answer::Value { column, value }) => {
                Some(Local::Rows(Rows { columns: vec![(column, Type::TEXT)], rows: vec![vec![Some(value)]] }))
            }
            Some(a) => Some(Local::Session(a)),
            None => None,
        })
    }
}

/// The row description of the door's own rows.
fn fields_of(rows: &Rows, formats: &Format) -> Vec<FieldInfo> {
    let field = |(i, (name, ty)): (usize, &(String, Type))| {
        FieldInfo::new(name.clone(), None, None, ty.clone(), crate::run::field_format(formats, i))
    };
    rows.columns.iter().enumerate().map(field).collect()
}

/// The door's own answer as a response.
fn local_response(a: Local, formats: &Format) -> PgWireResult<Response> {
    let rows = match a {
        Local::Session(Answer::Begin) => return Ok(Response::TransactionStart(Tag::new("BEGIN"))),
        Local::Session(Answer::End(t)) => return Ok(Response::TransactionEnd(Tag::new(&t))),
        Local::Session(Answer::Done(t)) => return Ok(Response::Execution(Tag::new(&t))),
        Local::Session(Answer::Savepoint(_)) => return Ok(Response::Execution(Tag::new("SAVEPOINT"))),
        Local::Session(Answer::RollbackTo(_)) => return Ok(Response::Execution(Tag::new("ROLLBACK"))),
        Local::Session(Answer::Release(_)) => return Ok(Response::Execution(Tag::new("RELEASE"))),
        Local::Session(Answer::Value { .. }) => return Ok(Response::Execution(Tag::new("SHOW"))),
        Local::Rows(rows) => rows,
    };
    let fields = Arc::new(fields_of(&rows, formats));
    let mut enc = DataRowEncoder::new(fields.clone());
    let mut out = Vec::with_capacity(rows.rows.len());
    for row in &rows.rows {
        for (v, (_, ty)) in row.iter().zip(&rows.columns) {
            encode_text_value(&mut enc, v.as_deref(), ty)?;
        }
        out.push(Ok(enc.take_row()));
    }
    Ok(Response::Query(QueryResponse::new(fields, stream::iter(out))))
}

/// One value given as PostgreSQL's text, encoded as a value of `ty`.
fn encode_text_value(enc: &mut DataRowEncoder, v: Option<&str>, ty: &Type) -> PgWireResult<()> {
    match *ty {
        Type::OID => enc.encode_field(&v.and_then(|v| v.parse::<u32>().ok())),
        Type::INT2 => enc.encode_field(&v.and_then(|v| v.parse::<i16>().ok())),
        Type::INT4 => enc.encode_field(&v.and_then(|v| v.parse::<i32>().ok())),
        Type::BOOL => enc.encode_field(&v.map(|v| v == "t")),
        _ => enc.encode_field(&v),
    }
}

/// A statement's description: no data when it has no columns, whatever its parameters.
struct StatementDescription {
    parameters: Vec<Type>,
    fields: Vec<FieldInfo>,
}

impl DescribeResponse for StatementDescription {
    fn parameters(&self) -> Option<&[Type]> {
        Some(&self.parameters)
    }

    fn fields(&self) -> &[FieldInfo] {
        &self.fields
    }

    fn no_data() -> Self {
        StatementDescription { parameters: Vec::new(), fields: Vec::new() }
    }

    fn is_no_data(&self) -> bool {
        self.fields.is_empty()
    }
}

/// The Bind's parameters as values.
fn bound(portal: &Portal<Prepared>) -> PgWireResult<Vec<ParamValue>> {
    (0..portal.parameter_len())
        .map(|i| {
            let ty = portal.statement.parameter_types.get(i).cloned().flatten().unwrap_or(Type::UNKNOWN);
            let binary = crate::params::is_binary(&portal.parameter_format, i);
            crate::params::decode(i, &ty, portal.parameters.get(i).and_then(|v| v.as_deref()), binary)
        })
        .collect()
}

/// Stand-ins for a statement's parameters before Bind: a value of each declared type, else NULL.
fn stand_ins(stmt: &StoredStatement<Prepared>) -> Vec<ParamValue> {
    (0..stmt.statement.params)
        .map(|i| match stmt.parameter_types.get(i).cloned().flatten() {
            Some(Type::INT2 | Type::INT4 | Type::INT8) => ParamValue::Int(0),
            Some(Type::FLOAT4 | Type::FLOAT8) => ParamValue::Float(0.0),
            Some(Type::BOOL) => ParamValue::Bool(false),
            Some(Type::TIMESTAMP | Type::TIMESTAMPTZ) => ParamValue::Timestamp(0),
            Some(Type::TEXT | Type::VARCHAR) => ParamValue::Str(String::new()),
            _ => ParamValue::Null,
        })
        .collect()
}

/// The status of the connection's transaction as it stands (`None` without the connection's
/// engine), after failing it if pgwire saw an error outside our handlers (a Parse or Bind
/// refused: pgwire's status says failed), as any error in a transaction does.
fn settled_status<C: ClientInfo + ?Sized>(client: &C) -> Option<pgwire::messages::response::TransactionStatus> {
    let conn = client.session_extensions().get::<ConnEngine>()?;
    if client.transaction_status() == pgwire::messages::response::TransactionStatus::Error {
        crate::txn::failed(&conn);
    }
    Some(crate::txn::status(&conn))
}

#[async_trait]
impl SimpleQueryHandler for Backend {
    async fn on_query<C>(&self, client: &mut C, query: pgwire::messages::simplequery::Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.sync_status(client, &query.query);
        crate::simple::on_query(self, client, query).await
    }

    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
    {
        crate::copy::abandon(client);
        let mut out = Vec::new();
        if let Err(e) = self.run(client, query, &[], &Format::UnifiedText, &mut out).await {
            self.txn_failed(client);
            out.push(Response::Error(Box::new(e.into())));
        }
        if out.is_empty() {
            out.push(Response::EmptyQuery);
        }
        Ok(out)
    }
}

#[async_trait]
impl ExtendedQueryHandler for Backend {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    async fn on_execute<C>(&self, client: &mut C, message: pgwire::messages::extendedquery::Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let sql: Option<Arc<str>> = match client.portal_store().get_portal(name) {
            Some(Entry::Value(p)) => Some(p.statement.statement.sql.clone()),
            _ => None,
        };
        if let Some(sql) = sql {
            self.sync_status(client, &sql);
        }
        self._on_execute(client, message).await
    }

    /// Sync ends an extended-protocol exchange: ReadyForQuery with the status of the
    /// connection's transaction as it stands (pgwire's folds it from the answers, and says
    /// failed after a COMMIT that failed and rolled back). An error pgwire saw outside our
    /// handlers fails the transaction first, as any error in it does.
    async fn on_sync<C>(&self, client: &mut C, _message: pgwire::messages::extendedquery::Sync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        use futures::SinkExt;
        use pgwire::messages::response::ReadyForQuery;
        client.portal_store().rm_portal(DEFAULT_NAME);
        if let Some(status) = settled_status(client) {
            client.set_transaction_status(status);
        }
        let status = client.transaction_status();
        client.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(status))).await?;
        client.flush().await?;
        Ok(())
    }

    async fn do_describe_statement<C>(
        &self,
        client: &mut C,
        target: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
    {
        let fields =
            self.describe(client, &target.statement.sql, &stand_ins(target), &Format::UnifiedText, false).await?;
        let types = (0..target.statement.params)
            .map(|i| target.parameter_types.get(i).cloned().flatten().unwrap_or(Type::TEXT))
            .collect();
        Ok(DescribeStatementResponse::new(types, fields))
    }

    /// Describe of a statement as PostgreSQL answers it: ParameterDescription, then NoData
    /// when the statement returns no rows (pgwire's default sends an empty RowDescription
    /// when there are parameters, which JDBC reads as a result where none is expected).
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if message.target_type != TARGET_TYPE_BYTE_STATEMENT {
            return self._on_describe(client, message).await;
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let Some(Entry::Value(stmt)) = client.portal_store().get_statement(name) else {
            return self._on_describe(client, message).await;
        };
        let d = self.do_describe_statement(client, &stmt).await?;
        send_describe_response(client, &StatementDescription { parameters: d.parameters, fields: d.fields }).await
    }

    async fn do_describe_portal<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
    {
        let params = bound(portal)?;
        let fields =
            self.describe(client, &portal.statement.statement.sql, &params, &portal.result_column_format, true).await?;
        Ok(DescribePortalResponse::new(fields))
    }

    async fn do_query<C>(&self, client: &mut C, portal: &Portal<Prepared>, _max_rows: usize) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Prepared>,
    {
        crate::copy::abandon(client);
        let r = self.execute_portal(client, portal).await;
        if r.is_err() {
            self.txn_failed(client);
        }
        r
    }
}
