//! The Flight SQL service: what each command does.
//!
//! - `GetFlightInfo(CommandStatementQuery)` checks the SQL for the caller, binds a read to
//!   learn its schema, and answers one endpoint whose ticket carries the SQL
//!   (`TicketStatementQuery`): the door keeps no state between calls, so any client (and any
//!   cluster node) can redeem it. `DoGet` runs it and streams one record batch per result
//!   chunk, dictionary columns sent as their values. SQL that changes data runs at once,
//!   its ticket holding the outcome (clients need not redeem it for the change to happen).
//! - `DoPut(CommandStatementUpdate)` runs DDL and DML and answers the rows changed.
//! - Prepared statements hold the SQL as their handle (no parameters yet): create answers the
//!   dataset schema, query and update run as above, close has nothing to free.
//! - `GetSqlInfo` names the server; `GetTables`, `GetTableTypes`, `GetCatalogs` and
//!   `GetDbSchemas` list the tables the caller may see (one unnamed catalog and schema).
//!
//! Statements take the server's query slots, placed as the HTTP door places them
//! (`Door::early`): a short text is parsed here, and a query that door binds on its async
//! thread is bound here, then run here, on the quick lane or on a query slot by the rows its
//! scans read.
//!
//! Every call authenticates its `authorization` header (`Bearer KEY`, as `/` takes it); a
//! handshake with `Basic user:KEY` answers the key back as the bearer token.

use crate::run::{self, Limits};
use arrow_array::RecordBatch;
use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::flight_service_server::FlightService;
use arrow_flight::sql::metadata::{SqlInfoData, SqlInfoDataBuilder};
use arrow_flight::sql::server::{FlightSqlService, PeekableFlightDataStream};
use arrow_flight::sql::{
    ActionClosePreparedStatementRequest, ActionCreatePreparedStatementRequest, ActionCreatePreparedStatementResult,
    Any, CommandGetCatalogs, CommandGetDbSchemas, CommandGetSqlInfo, CommandGetTableTypes, CommandGetTables,
    CommandPreparedStatementQuery, CommandPreparedStatementUpdate, CommandStatementQuery, CommandStatementUpdate,
    ProstMessageExt, SqlInfo, TicketStatementQuery,
};
use arrow_flight::{
    FlightDescriptor, FlightEndpoint, FlightInfo, HandshakeRequest, HandshakeResponse, IpcMessage, SchemaAsIpc, Ticket,
};
use arrow_schema::SchemaRef;
use base64::Engine as _;
use futures::stream::{self, BoxStream, StreamExt};
use prost::Message;
use std::sync::{Arc, LazyLock};
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status, Streaming};
use zepto_server::admission::{Admission, Refused};
use zepto_server::auth::{KeyStore, Principal};
use zepto_sql::interrupt::{QueryControl, RunContext};
use zepto_sql::parser::ast::Statement;
use zepto_sql::{Engine, Prepared};

/// A statement the server's admission did not run, as gRPC says so.
fn refused(r: Refused) -> Status {
    match r {
        Refused::Busy { .. } | Refused::Stopping => Status::unavailable(r.to_string()),
        Refused::Lost => Status::internal(r.to_string()),
    }
}

/// The service: the engine every caller's queries run on, the keys, the limits, the query
/// slots.
#[derive(Clone)]
pub struct Door {
    engine: Engine,
    keys: Arc<KeyStore>,
    limits: Limits,
    gate: Arc<Admission>,
}

impl Door {
    /// A door onto `engine`, for the callers `keys` admits (everyone when it has none), every
    /// statement under `limits` on one of the server's query slots (`gate`, shared with its
    /// other doors).
    pub fn new(engine: Engine, keys: Arc<KeyStore>, limits: Limits, gate: Arc<Admission>) -> Door {
        Door { engine, keys, limits, gate }
    }

    /// The caller of a request, from its `authorization` header.
    fn caller(&self, meta: &MetadataMap) -> Result<Principal, Status> {
        let header = meta.get("authorization").and_then(|v| v.to_str().ok());
        self.keys.authenticate(header).map_err(|e| Status::unauthenticated(e.message))
    }

    /// The caller of `meta` and the engine its statements run on (its key's table access).
    fn session(&self, meta: &MetadataMap) -> Result<(Principal, Engine), Status> {
        let who = self.caller(meta)?;
        let engine = self.engine.with_access(who.tables.clone());
        Ok((who, engine))
    }

    /// What can be done with `sql` before any slot, as the HTTP door decides it: a text up to
    /// [`zepto_server::sql::INLINE_PARSE_BYTES`] is parsed and checked here, and one query
    /// that door would bind on its async thread ([`zepto_server::sql::binds_inline`]) is
    /// bound here too.
    fn early(&self, who: &Principal, engine: &Engine, sql: &str) -> Result<Early, Status> {
        if sql.len() > zepto_server::sql::INLINE_PARSE_BYTES {
            return Ok(Early::Later(None));
        }
        let stmts = run::statements(sql, who)?;
        match &stmts[..] {
            [Statement::Query(q)] if zepto_server::sql::binds_inline(q, sql.len()) => {
                let ctl = QueryControl::new(self.limits.timeout, self.limits.memory);
                let plan = engine.prepare_in(&RunContext::new(Some(ctl.clone())), q).map_err(|e| run::status(&e))?;
                Ok(Early::Bound(Box::new(plan), ctl))
            }
            _ => Ok(Early::Later(Some(stmts))),
        }
    }

    /// `work` on `sql`'s statements (`parsed`, or parsed and checked for `who` under the slot
    /// when `None`), on `engine` under the door's limits, on a query slot: `UNAVAILABLE` when
    /// every slot stays busy for `--queue-timeout` (retry later, as HTTP's 503). A call the
    /// client abandons (tonic drops its future) cancels the statements, waiting or running.
    async fn on_statements<T: Send + 'static>(
        &self,
        (who, engine): (Principal, Engine),
        sql: String,
        parsed: Option<Vec<Statement>>,
        work: impl FnOnce(&Engine, String, Vec<Statement>, &RunContext) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let ctl = QueryControl::new(self.limits.timeout, self.limits.memory);
        let job = move |ctx: &RunContext| {
            let stmts = match parsed {
                Some(stmts) => stmts,
                None => run::statements(&sql, &who)?,
            };
            work(&engine, sql, stmts, ctx)
        };
        self.gate.run_controlled(&ctl, false, job).await.map_err(refused)?
    }

    /// Run `sql` for the caller of `meta`, and `finish` its last statement's result (its record
    /// batches, or the rows it changed) where it ran: a large result is never made into
    /// batches on the door's async thread.
    async fn run<T: Send + 'static>(&self, meta: &MetadataMap, sql: String, finish: Finish<T>) -> Result<T, Status> {
        let (who, engine) = self.session(meta)?;
        let parsed = match self.early(&who, &engine, &sql)? {
            Early::Bound(plan, ctl) => return self.run_bound(engine, plan, ctl, finish).await,
            Early::Later(parsed) => parsed,
        };
        let work = move |engine: &Engine, _, stmts: Vec<Statement>, run: &RunContext| {
            finish(&run::execute(engine, &stmts, run)?)
        };
        self.on_statements((who, engine), sql, parsed, work).await
    }

    /// Run a query bound before any slot: here when its scans are tiny
    /// ([`zepto_server::sql::INLINE_ROWS`]), on the quick lane when they read few rows
    /// ([`zepto_server::sql::is_quick`]), else on a query slot, as the HTTP door runs one.
    /// A result run here is finished here when it has at most
    /// [`zepto_server::sql::INLINE_ENCODE_ROWS`] rows, else on the quick lane.
    async fn run_bound<T: Send + 'static>(
        &self,
        engine: Engine,
        plan: Box<Prepared>,
        ctl: Arc<QueryControl>,
        finish: Finish<T>,
    ) -> Result<T, Status> {
        if zepto_server::sql::runs_inline(&plan) {
            let r = engine.run_prepared_in(&RunContext::new(Some(ctl)), &plan).map_err(|e| run::status(&e))?;
            if r.row_count() <= zepto_server::sql::INLINE_ENCODE_ROWS {
                return finish(&r);
            }
            return self.gate.run(true, move || finish(&r)).await.map_err(refused)?;
        }
        let quick = zepto_server::sql::is_quick(&plan);
        let job = move |run: &RunContext| finish(&engine.run_prepared_in(run, &plan).map_err(|e| run::status(&e))?);
        self.gate.run_controlled(&ctl, quick, job).await.map_err(refused)?
    }

    /// A metadata command's FlightInfo, for a caller: one endpoint whose ticket is the command.
    fn listing<T: ProstMessageExt>(
        &self,
        request: Request<FlightDescriptor>,
        cmd: T,
        schema: &arrow_schema::Schema,
    ) -> Result<Response<FlightInfo>, Status> {
        self.caller(request.metadata())?;
        Ok(Response::new(ticket_info(cmd, schema, request.into_inner())?))
    }

    /// A metadata command's rows, for a caller.
    fn listed(
        &self,
        request: &Request<Ticket>,
        batch: Result<RecordBatch, Status>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.caller(request.metadata())?;
        let batch = batch?;
        Ok(send(batch.schema(), vec![batch]))
    }

    /// The schema `sql` answers with, for the caller of `meta`, without running anything.
    async fn schema(&self, meta: &MetadataMap, sql: String) -> Result<SchemaRef, Status> {
        let (who, engine) = self.session(meta)?;
        let parsed = match self.early(&who, &engine, &sql)? {
            Early::Bound(plan, _) => return run::plan_schema(&plan),
            Early::Later(parsed) => parsed,
        };
        self.on_statements((who, engine), sql, parsed, |engine, _, stmts, run| run::schema(engine, &stmts, run)).await
    }

    /// What a ticket for `sql` holds, for the caller of `meta`, with the schema its rows will
    /// have and how many rows statements that changed data changed: a read is only bound
    /// (it runs when the ticket is redeemed), anything else runs now.
    async fn prepare(&self, meta: &MetadataMap, sql: String) -> Result<(run::Handle, SchemaRef, Option<i64>), Status> {
        let (who, engine) = self.session(meta)?;
        let parsed = match self.early(&who, &engine, &sql)? {
            Early::Bound(plan, _) => return Ok((run::Handle::Read(sql), run::plan_schema(&plan)?, None)),
            Early::Later(parsed) => parsed,
        };
        self.on_statements((who, engine), sql, parsed, |engine, sql, stmts, ctx| {
            if run::reads_only(&stmts) {
                return Ok((run::Handle::Read(sql), run::schema(engine, &stmts, ctx)?, None));
            }
            let r = run::execute(engine, &stmts, ctx)?;
            let text = r.status.clone().unwrap_or_default();
            Ok((run::Handle::Done(text), run::status_schema(), Some(run::changed(&r))))
        })
        .await
    }

    /// A FlightInfo for `sql`: its schema, one endpoint whose ticket carries the SQL (or the
    /// outcome of statements that changed data, run now).
    async fn info(&self, meta: &MetadataMap, sql: Vec<u8>, descriptor: FlightDescriptor) -> Result<FlightInfo, Status> {
        let text = String::from_utf8(sql).map_err(|_| Status::invalid_argument("the SQL is not UTF-8"))?;
        let (handle, schema, changed) = self.prepare(meta, text).await?;
        let ticket = TicketStatementQuery { statement_handle: handle.encode().into() };
        let endpoint = FlightEndpoint::new().with_ticket(Ticket::new(ticket.as_any().encode_to_vec()));
        let info = FlightInfo::new()
            .try_with_schema(&schema)
            .map(|i| i.with_endpoint(endpoint).with_descriptor(descriptor).with_ordered(true))
            .map_err(|e| Status::internal(format!("encoding the schema: {e}")))?;
        Ok(match changed {
            Some(n) => info.with_total_records(n),
            None => info,
        })
    }
}

/// What a statement's result is made into where it ran (`run::batches`, the rows changed).
type Finish<T> = fn(&zepto_sql::QueryResult) -> Result<T, Status>;

/// What [`Door::early`] made of a caller's SQL before any slot.
enum Early {
    /// One query, bound, with the control it runs under.
    Bound(Box<Prepared>, Arc<QueryControl>),
    /// Anything else, run under a slot: its statements parsed and checked here, or `None` for
    /// a long text, parsed under the slot.
    Later(Option<Vec<Statement>>),
}

type DoGetStream = <Door as FlightService>::DoGetStream;

/// Record batches (all of `schema`) as a DoGet stream, dictionaries sent as their values.
fn send(schema: SchemaRef, batches: Vec<RecordBatch>) -> Response<DoGetStream> {
    let stream = FlightDataEncoderBuilder::new()
        .with_dictionary_handling(DictionaryHandling::Hydrate)
        .with_schema(schema)
        .build(stream::iter(batches.into_iter().map(Ok)))
        .map(|r| r.map_err(|e| Status::internal(e.to_string())));
    Response::new(stream.boxed())
}

/// What `GetSqlInfo` answers.
static SQL_INFO: LazyLock<Result<SqlInfoData, String>> = LazyLock::new(|| {
    let mut b = SqlInfoDataBuilder::new();
    b.append(SqlInfo::FlightSqlServerName, "ZeptoDB");
    b.append(SqlInfo::FlightSqlServerVersion, env!("CARGO_PKG_VERSION"));
    b.append(SqlInfo::FlightSqlServerArrowVersion, "60");
    b.append(SqlInfo::FlightSqlServerReadOnly, false);
    b.append(SqlInfo::FlightSqlServerSql, true);
    b.append(SqlInfo::FlightSqlServerSubstrait, false);
    b.append(SqlInfo::FlightSqlServerTransaction, 0i32);
    b.build().map_err(|e| e.to_string())
});

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

fn sql_info() -> Result<&'static SqlInfoData, Status> {
    SQL_INFO.as_ref().map_err(|e| Status::internal(e.clone()))
}

fn ticket_info<T: ProstMessageExt>(
    cmd: T,
    schema: &arrow_schema::Schema,
    d: FlightDescriptor,
) -> Result<FlightInfo, Status> {
    let endpoint = FlightEndpoint::new().with_ticket(Ticket::new(cmd.as_any().encode_to_vec()));
    FlightInfo::new()
        .try_with_schema(schema)
        .map(|i| i.with_endpoint(endpoint).with_descriptor(d))
        .map_err(|e| Status::internal(format!("encoding the schema: {e}")))
}

#[tonic::async_trait]
impl FlightSqlService for Door {
    type FlightService = Door;

    async fn do_handshake(
        &self,
        request: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<BoxStream<'static, Result<HandshakeResponse, Status>>>, Status> {
        let header = request.metadata().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
        let key = match header.strip_prefix("Basic ") {
            Some(b64) => {
                // Padded or not: Go's Flight client sends it unpadded.
                let config = base64::engine::GeneralPurposeConfig::new()
                    .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent);
                let raw = base64::engine::GeneralPurpose::new(&base64::alphabet::STANDARD, config)
                    .decode(b64.trim())
                    .map_err(|_| Status::unauthenticated("authorization: Basic needs base64 of user:key"))?;
                let text = String::from_utf8(raw).map_err(|_| Status::unauthenticated("user:key is not UTF-8"))?;
                text.split_once(':').map(|(_, k)| k.to_string()).unwrap_or(text)
            }
            None => header.strip_prefix("Bearer ").unwrap_or("").to_string(),
        };
        let bearer = format!("Bearer {key}");
        self.keys.authenticate(Some(&bearer)).map_err(|e| Status::unauthenticated(e.message))?;
        let reply = HandshakeResponse { protocol_version: 0, payload: key.clone().into_bytes().into() };
        let mut resp = Response::new(stream::iter([Ok(reply)]).boxed());
        if let Ok(v) = bearer.parse() {
            resp.metadata_mut().insert("authorization", v);
        }
        Ok(resp)
    }

    async fn get_flight_info_statement(
        &self,
        query: CommandStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let d = request.get_ref().clone();
        Ok(Response::new(self.info(request.metadata(), query.query.into_bytes(), d).await?))
    }

    async fn get_flight_info_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let d = request.get_ref().clone();
        Ok(Response::new(self.info(request.metadata(), query.prepared_statement_handle.to_vec(), d).await?))
    }

    async fn do_get_statement(
        &self,
        ticket: TicketStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let batches = match run::Handle::decode(&ticket.statement_handle)? {
            run::Handle::Read(sql) => self.run(request.metadata(), sql, run::batches).await?,
            run::Handle::Done(status) => {
                self.caller(request.metadata())?;
                run::status_result(&status)?
            }
        };
        let schema =
            batches.first().map(RecordBatch::schema).ok_or_else(|| Status::internal("a result without a batch"))?;
        Ok(send(schema, batches))
    }

    async fn do_get_prepared_statement(
        &self,
        query: CommandPreparedStatementQuery,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let sql = String::from_utf8(query.prepared_statement_handle.to_vec())
            .map_err(|_| Status::invalid_argument("the prepared statement's SQL is not UTF-8"))?;
        let handle = run::Handle::Read(sql).encode();
        self.do_get_statement(TicketStatementQuery { statement_handle: handle.into() }, request).await
    }

    async fn do_put_statement_update(
        &self,
        cmd: CommandStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        self.run(request.metadata(), cmd.query, |r| Ok(run::changed(r))).await
    }

    async fn do_put_prepared_statement_update(
        &self,
        cmd: CommandPreparedStatementUpdate,
        request: Request<PeekableFlightDataStream>,
    ) -> Result<i64, Status> {
        let sql = String::from_utf8(cmd.prepared_statement_handle.to_vec())
            .map_err(|_| Status::invalid_argument("the prepared statement's SQL is not UTF-8"))?;
        self.run(request.metadata(), sql, |r| Ok(run::changed(r))).await
    }

    async fn do_action_create_prepared_statement(
        &self,
        query: ActionCreatePreparedStatementRequest,
        request: Request<arrow_flight::Action>,
    ) -> Result<ActionCreatePreparedStatementResult, Status> {
        let schema = self.schema(request.metadata(), query.query.clone()).await?;
        let IpcMessage(dataset_schema) = SchemaAsIpc::new(&schema, &Default::default())
            .try_into()
            .map_err(|e: arrow_schema::ArrowError| Status::internal(format!("encoding the schema: {e}")))?;
        Ok(ActionCreatePreparedStatementResult {
            prepared_statement_handle: query.query.into_bytes().into(),
            dataset_schema,
            parameter_schema: Default::default(),
        })
    }

    async fn do_action_close_prepared_statement(
        &self,
        _query: ActionClosePreparedStatementRequest,
        request: Request<arrow_flight::Action>,
    ) -> Result<(), Status> {
        self.caller(request.metadata()).map(drop)
    }

    async fn get_flight_info_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder(sql_info()?).schema();
        self.listing(request, query, &schema)
    }

    async fn do_get_sql_info(
        &self,
        query: CommandGetSqlInfo,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let batch = sql_info().and_then(|i| query.into_builder(i).build().map_err(internal));
        self.listed(&request, batch)
    }

    async fn get_flight_info_tables(
        &self,
        query: CommandGetTables,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        self.listing(request, query, &schema)
    }

    async fn do_get_tables(
        &self,
        query: CommandGetTables,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let who = self.caller(request.metadata())?;
        let batch = crate::catalog::tables(&self.engine.with_access(who.tables), query);
        self.listed(&request, batch)
    }

    async fn get_flight_info_table_types(
        &self,
        query: CommandGetTableTypes,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = crate::catalog::table_types()?.schema();
        self.listing(request, query, &schema)
    }

    async fn do_get_table_types(
        &self,
        _: CommandGetTableTypes,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        self.listed(&request, crate::catalog::table_types())
    }

    async fn get_flight_info_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.into_builder().schema();
        self.listing(request, query, &schema)
    }

    async fn do_get_catalogs(
        &self,
        query: CommandGetCatalogs,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let mut builder = query.into_builder();
        builder.append("");
        self.listed(&request, builder.build().map_err(internal))
    }

    async fn get_flight_info_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<FlightDescriptor>,
    ) -> Result<Response<FlightInfo>, Status> {
        let schema = query.clone().into_builder().schema();
        self.listing(request, query, &schema)
    }

    async fn do_get_schemas(
        &self,
        query: CommandGetDbSchemas,
        request: Request<Ticket>,
    ) -> Result<Response<DoGetStream>, Status> {
        let mut builder = query.into_builder();
        builder.append("", "");
        self.listed(&request, builder.build().map_err(internal))
    }

    async fn do_get_fallback(&self, _request: Request<Ticket>, message: Any) -> Result<Response<DoGetStream>, Status> {
        Err(Status::unimplemented(format!("DoGet of {}: not served", message.type_url)))
    }

    async fn register_sql_info(&self, _id: i32, _result: &SqlInfo) {}
}
