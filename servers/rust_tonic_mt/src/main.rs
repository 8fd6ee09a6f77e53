//! rust_tonic_mt: tonic's helloworld server on a multi-threaded tokio
//! runtime with ceil(GRPC_SERVER_CPUS) worker threads (at most the CPUs it
//! may use). Unary helloworld.Greeter/SayHello echoes the request's inner
//! message back as the reply's `response`; helloworld.StreamingGreeter's
//! methods are written like tonic's routeguide example. TLS (rustls) when
//! GRPC_TLS_CERT and GRPC_TLS_KEY name a PEM certificate chain and key.

use std::pin::Pin;

use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream, StreamExt};
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic::{Request, Response, Status, Streaming};

use hello_world::greeter_server::{Greeter, GreeterServer};
use hello_world::streaming_greeter_server::{StreamingGreeter, StreamingGreeterServer};
use hello_world::{HelloReply, HelloRequest, RepliesRequest};

pub mod hello_world {
    tonic::include_proto!("helloworld");
}

#[derive(Debug, Default)]
pub struct MyGreeter {}

#[tonic::async_trait]
impl Greeter for MyGreeter {
    async fn say_hello(
        &self,
        request: Request<HelloRequest>,
    ) -> Result<Response<HelloReply>, Status> {
        let reply = HelloReply {
            response: request.into_inner().request,
        };
        Ok(Response::new(reply))
    }
}

#[derive(Debug, Default)]
pub struct MyStreamingGreeter {}

#[tonic::async_trait]
impl StreamingGreeter for MyStreamingGreeter {
    type PingPongStream = Pin<Box<dyn Stream<Item = Result<HelloReply, Status>> + Send + 'static>>;

    // As routeguide's route_chat: a reply yielded for each request as it is
    // read; the stream, and the call with OK, ends at the client's half-close.
    async fn ping_pong(
        &self,
        request: Request<Streaming<HelloRequest>>,
    ) -> Result<Response<Self::PingPongStream>, Status> {
        let mut stream = request.into_inner();
        let output = async_stream::try_stream! {
            while let Some(request) = stream.next().await {
                yield HelloReply { response: request?.request };
            }
        };
        Ok(Response::new(Box::pin(output) as Self::PingPongStream))
    }

    type ServerStreamStream = ReceiverStream<Result<HelloReply, Status>>;

    // As routeguide's list_features: a task sends the replies into a channel
    // whose receiver is the response stream.
    async fn server_stream(
        &self,
        request: Request<RepliesRequest>,
    ) -> Result<Response<Self::ServerStreamStream>, Status> {
        let request = request.into_inner();
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            for _ in 0..request.replies {
                let reply = HelloReply {
                    response: request.request.clone(),
                };
                if tx.send(Ok(reply)).await.is_err() {
                    break; // the client went away
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    // As routeguide's record_route: every request read until the half-close.
    async fn client_stream(
        &self,
        request: Request<Streaming<HelloRequest>>,
    ) -> Result<Response<HelloReply>, Status> {
        let mut stream = request.into_inner();
        let mut reply = HelloReply::default();
        while let Some(request) = stream.next().await {
            reply.response = request?.request;
        }
        Ok(Response::new(reply))
    }
}

/// Worker threads by the benchmark's rule (docs/adding-a-server.md#workers):
/// GRPC_SERVER_CPUS rounded up, at most the CPUs the process may use, 1 when
/// unset or empty; an invalid value ends the server with status 2.
fn workers() -> usize {
    let raw = std::env::var("GRPC_SERVER_CPUS").unwrap_or_default();
    if raw.is_empty() {
        return 1;
    }
    match raw.trim().parse::<f64>() {
        Ok(cpus) if cpus.is_finite() && cpus > 0.0 => {
            let visible = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cpus.ceil() as usize).min(visible)
        }
        _ => {
            eprintln!("grpcbench-server: GRPC_SERVER_CPUS={raw:?} is not a positive number");
            std::process::exit(2);
        }
    }
}

/// The TLS identity from GRPC_TLS_CERT and GRPC_TLS_KEY (PEM files), None
/// when neither is set; one without the other ends the server with status 2.
fn tls_identity() -> Result<Option<Identity>, std::io::Error> {
    let setting = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    match (setting("GRPC_TLS_CERT"), setting("GRPC_TLS_KEY")) {
        (None, None) => Ok(None),
        (Some(cert), Some(key)) => Ok(Some(Identity::from_pem(
            std::fs::read(cert)?,
            std::fs::read(key)?,
        ))),
        (cert, _) => {
            let (set, unset) = if cert.is_some() {
                ("GRPC_TLS_CERT", "GRPC_TLS_KEY")
            } else {
                ("GRPC_TLS_KEY", "GRPC_TLS_CERT")
            };
            eprintln!("grpcbench-server: {set} is set but {unset} is not");
            std::process::exit(2);
        }
    }
}

/// Resolves on SIGTERM (docker stop) or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    eprintln!("shutdown signal received, draining");
}

async fn serve(identity: Option<Identity>) -> Result<(), Box<dyn std::error::Error>> {
    let addr = "0.0.0.0:50051".parse()?;
    let mut builder = Server::builder();
    let scheme = match identity {
        // tonic's ServerTlsConfig advertises ALPN h2.
        Some(identity) => {
            builder = builder.tls_config(ServerTlsConfig::new().identity(identity))?;
            "TLS"
        }
        None => "plaintext h2c",
    };
    eprintln!("rust_tonic_mt listening on {addr}, {scheme}");
    builder
        .add_service(GreeterServer::new(MyGreeter::default()))
        .add_service(StreamingGreeterServer::new(MyStreamingGreeter::default()))
        .serve_with_shutdown(addr, shutdown_signal())
        .await?;
    eprintln!("server stopped");
    Ok(())
}

// The same as #[tokio::main], which only takes a literal worker_threads,
// spelled out with the runtime builder so the count can come from the env.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let identity = tls_identity()?;
    let workers = workers();
    eprintln!("grpcbench-server: workers={workers}");
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?
        .block_on(serve(identity))
}
