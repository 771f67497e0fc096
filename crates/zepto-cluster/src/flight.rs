//! The node's Arrow Flight door: other nodes send it plan fragments (`DoGet`, the ticket an
//! encoded `zepto_sql::plan::dist::fragment::Request`) and read back the fragment's rows over
//! the partitions it owns, as Arrow record batches (SYMBOL columns as dictionaries).
//!
//! Only `DoGet` is served; the rest of the Flight protocol answers UNIMPLEMENTED. When the
//! server has API keys, a request must carry an admin key (`authorization: Bearer KEY`): a
//! fragment reads rows below the grants and tenant scopes the asking node already applied.

use crate::status::Shared;
use crate::ClusterError;
use arrow_flight::encode::{DictionaryHandling, FlightDataEncoderBuilder};
use arrow_flight::flight_service_server::{FlightService, FlightServiceServer};
use arrow_flight::{
    Action, ActionType, Criteria, Empty, FlightData, FlightDescriptor, FlightInfo, HandshakeRequest, HandshakeResponse,
    PollInfo, PutResult, SchemaResult, Ticket,
};
use futures::stream::{BoxStream, StreamExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tonic::{Request, Response, Status, Streaming};
use zepto_server::auth::{KeyStore, Role};
use zepto_sql::interrupt::RunContext;
use zepto_sql::Engine;

/// What the door needs: the engine, which partitions the node owns now, and the keys.
#[derive(Clone)]
struct Door {
    engine: Engine,
    shared: Shared,
    keys: Arc<KeyStore>,
}

type Stream<T> = BoxStream<'static, Result<T, Status>>;

/// Serve Flight on `listener` until `stop` is set, on a runtime of its own.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    engine: Engine,
    shared: Shared,
    keys: Arc<KeyStore>,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, ClusterError> {
    let fail = |e: std::io::Error| ClusterError::Config(format!("Flight door: {e}"));
    listener.set_nonblocking(true).map_err(fail)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("zepto-flight")
        .on_thread_start(|| zepto_storage::affinity::pin(zepto_storage::affinity::Role::Ingest))
        .enable_all()
        .build()
        .map_err(fail)?;
    let door = Door { engine, shared, keys };
    std::thread::Builder::new()
        .name("zepto-flight".into())
        .spawn(move || {
            rt.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => return eprintln!("zeptodb: cluster: Flight door: {e}"),
                };
                // No Nagle: a small answer must not wait out the asking node's delayed ACK.
                // Keepalive as every door's connections have it (`zepto_server::net`).
                let incoming = tonic::transport::server::TcpIncoming::from(listener)
                    .with_nodelay(Some(true))
                    .with_keepalive(Some(zepto_server::net::KEEPALIVE_IDLE))
                    .with_keepalive_interval(Some(zepto_server::net::KEEPALIVE_INTERVAL))
                    .with_keepalive_retries(Some(zepto_server::net::KEEPALIVE_PROBES));
                let stopped = async move {
                    while !stop.load(Ordering::Acquire) {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                };
                let server = tonic::transport::Server::builder()
                    .add_service(FlightServiceServer::new(door).max_decoding_message_size(64 << 20));
                if let Err(e) = server.serve_with_incoming_shutdown(incoming, stopped).await {
                    eprintln!("zeptodb: cluster: Flight door stopped: {e}");
                }
            });
        })
        .map_err(fail)
}

impl Door {
    /// The request's key, when the server has keys: an admin's.
    fn authorize<T>(&self, req: &Request<T>) -> Result<(), Status> {
        if self.keys.is_empty() {
            return Ok(());
        }
        let header = req.metadata().get("authorization").and_then(|v| v.to_str().ok());
        let who = self.keys.authenticate(header).map_err(|e| Status::unauthenticated(e.message))?;
        who.require(Role::Admin).map_err(|e| Status::permission_denied(e.message))
    }

    /// Run a fragment request over the partitions this node owns now.
    async fn run(&self, ticket: Vec<u8>) -> Result<arrow_array::RecordBatch, Status> {
        let door = self.clone();
        let work = move || -> Result<arrow_array::RecordBatch, String> {
            let mine = door.shared.update(|s| s.ready_partitions());
            let b = door.engine.run_fragment(&RunContext::new(None), &ticket, &mine).map_err(|e| e.to_string())?;
            let names: Vec<String> = (0..b.columns.len()).map(|i| format!("c{i}")).collect();
            let cols: Vec<&zepto_storage::Column> = b.columns.iter().map(|c| &**c).collect();
            zepto_io::ipc::record_batch(&names, &cols, b.rows).map_err(|e| e.to_string())
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(r) => r.map_err(Status::failed_precondition),
            Err(e) => Err(Status::internal(format!("the fragment's thread failed: {e}"))),
        }
    }
}

#[tonic::async_trait]
impl FlightService for Door {
    type HandshakeStream = Stream<HandshakeResponse>;
    type ListFlightsStream = Stream<FlightInfo>;
    type DoGetStream = Stream<FlightData>;
    type DoPutStream = Stream<PutResult>;
    type DoActionStream = Stream<arrow_flight::Result>;
    type ListActionsStream = Stream<ActionType>;
    type DoExchangeStream = Stream<FlightData>;

    async fn do_get(&self, request: Request<Ticket>) -> Result<Response<Self::DoGetStream>, Status> {
        self.authorize(&request)?;
        let batch = self.run(request.into_inner().ticket.to_vec()).await?;
        let stream = FlightDataEncoderBuilder::new()
            .with_dictionary_handling(DictionaryHandling::Resend)
            .with_schema(batch.schema())
            .build(futures::stream::iter([Ok(batch)]))
            .map(|r| r.map_err(|e| Status::internal(e.to_string())));
        Ok(Response::new(stream.boxed()))
    }

    async fn handshake(
        &self,
        _: Request<Streaming<HandshakeRequest>>,
    ) -> Result<Response<Self::HandshakeStream>, Status> {
        Err(Status::unimplemented("handshake: send the key as authorization: Bearer KEY"))
    }

    async fn list_flights(&self, _: Request<Criteria>) -> Result<Response<Self::ListFlightsStream>, Status> {
        Err(Status::unimplemented("list_flights"))
    }

    async fn get_flight_info(&self, _: Request<FlightDescriptor>) -> Result<Response<FlightInfo>, Status> {
        Err(Status::unimplemented("get_flight_info"))
    }

    async fn poll_flight_info(&self, _: Request<FlightDescriptor>) -> Result<Response<PollInfo>, Status> {
        Err(Status::unimplemented("poll_flight_info"))
    }

    async fn get_schema(&self, _: Request<FlightDescriptor>) -> Result<Response<SchemaResult>, Status> {
        Err(Status::unimplemented("get_schema"))
    }

    async fn do_put(&self, _: Request<Streaming<FlightData>>) -> Result<Response<Self::DoPutStream>, Status> {
        Err(Status::unimplemented("do_put: rows arrive through Kafka (/write on any node)"))
    }

    async fn do_action(&self, _: Request<Action>) -> Result<Response<Self::DoActionStream>, Status> {
        Err(Status::unimplemented("do_action"))
    }

    async fn list_actions(&self, _: Request<Empty>) -> Result<Response<Self::ListActionsStream>, Status> {
        Err(Status::unimplemented("list_actions"))
    }

    async fn do_exchange(&self, _: Request<Streaming<FlightData>>) -> Result<Response<Self::DoExchangeStream>, Status> {
        Err(Status::unimplemented("do_exchange"))
    }
}
