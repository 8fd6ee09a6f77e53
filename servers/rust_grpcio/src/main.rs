//! rust_grpcio: grpc-rs (grpcio, the gRPC C core from Rust) greeter server.
//! Unary helloworld.Greeter/SayHello echoes the request's inner message back
//! as the reply's `response`; helloworld.StreamingGreeter's methods are
//! written like grpc-rs's route_guide example. One completion queue (each
//! polled by its own thread) per CPU of GRPC_SERVER_CPUS, rounded up. TLS
//! (the C core's, over OpenSSL) when GRPC_TLS_CERT and GRPC_TLS_KEY name a
//! PEM certificate chain and key.

use std::sync::Arc;

use futures::executor::block_on;
use futures::prelude::*;
use grpcio::{
    ClientStreamingSink, DuplexSink, Environment, RequestStream, RpcContext, ServerBuilder,
    ServerCredentials, ServerCredentialsBuilder, ServerStreamingSink, UnarySink, WriteFlags,
};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

pub mod helloworld {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
}

use helloworld::{
    create_greeter, create_streaming_greeter, Greeter, HelloReply, HelloRequest, RepliesRequest,
    StreamingGreeter,
};

#[derive(Clone)]
struct GreeterService;

impl Greeter for GreeterService {
    fn say_hello(&mut self, ctx: RpcContext<'_>, req: HelloRequest, sink: UnarySink<HelloReply>) {
        let resp = HelloReply {
            response: req.request,
        };
        let f = sink
            .success(resp)
            .map_err(|e| eprintln!("failed to reply: {e:?}"))
            .map(|_| ());
        ctx.spawn(f)
    }
}

#[derive(Clone)]
struct StreamingGreeterService;

impl StreamingGreeter for StreamingGreeterService {
    // As route_guide's route_chat: each request answered as it is read; the
    // sink closed (status OK) when the client half-closes.
    fn ping_pong(
        &mut self,
        ctx: RpcContext<'_>,
        mut requests: RequestStream<HelloRequest>,
        mut sink: DuplexSink<HelloReply>,
    ) {
        let f = async move {
            while let Some(req) = requests.try_next().await? {
                let reply = HelloReply {
                    response: req.request,
                };
                sink.send((reply, WriteFlags::default())).await?;
            }
            sink.close().await?;
            Ok(())
        }
        .map_err(|e: grpcio::Error| eprintln!("failed to ping-pong: {e:?}"))
        .map(|_| ());
        ctx.spawn(f)
    }

    // As route_guide's list_features: the replies sent with send_all.
    fn server_stream(
        &mut self,
        ctx: RpcContext<'_>,
        req: RepliesRequest,
        mut sink: ServerStreamingSink<HelloReply>,
    ) {
        let replies = (0..req.replies).map(move |_| {
            let reply = HelloReply {
                response: req.request.clone(),
            };
            Ok::<_, grpcio::Error>((reply, WriteFlags::default()))
        });
        let f = async move {
            sink.send_all(&mut stream::iter(replies)).await?;
            sink.close().await?;
            Ok(())
        }
        .map_err(|e: grpcio::Error| eprintln!("failed to stream replies: {e:?}"))
        .map(|_| ());
        ctx.spawn(f)
    }

    // As route_guide's record_route: every request read, then one reply.
    fn client_stream(
        &mut self,
        ctx: RpcContext<'_>,
        mut requests: RequestStream<HelloRequest>,
        sink: ClientStreamingSink<HelloReply>,
    ) {
        let f = async move {
            let mut reply = HelloReply::default();
            while let Some(req) = requests.try_next().await? {
                reply.response = req.request;
            }
            sink.success(reply).await?;
            Ok(())
        }
        .map_err(|e: grpcio::Error| eprintln!("failed to answer a client stream: {e:?}"))
        .map(|_| ());
        ctx.spawn(f)
    }
}

/// Completion queues, each polled by its own thread, by the benchmark's rule
/// (docs/adding-a-server.md#workers): GRPC_SERVER_CPUS rounded up, at most
/// the CPUs the process may use, 1 when unset or empty; an invalid value ends
/// the server with status 2.
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

/// The server's credentials: TLS from GRPC_TLS_CERT and GRPC_TLS_KEY (PEM
/// files), insecure when neither is set; one without the other ends the
/// server with status 2.
fn credentials() -> (ServerCredentials, &'static str) {
    let setting = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    let read = |path: String| {
        std::fs::read(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
    };
    match (setting("GRPC_TLS_CERT"), setting("GRPC_TLS_KEY")) {
        (None, None) => (ServerCredentials::insecure(), "plaintext h2c"),
        (Some(cert), Some(key)) => (
            ServerCredentialsBuilder::new()
                .add_cert(read(cert), read(key))
                .build(),
            "TLS",
        ),
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

fn main() {
    // Install the handlers before any gRPC thread exists.
    let mut signals = Signals::new([SIGTERM, SIGINT]).expect("install signal handlers");

    let (creds, scheme) = credentials();
    let cqs = workers();
    eprintln!("grpcbench-server: workers={cqs}");
    let env = Arc::new(Environment::new(cqs));
    let addr = "0.0.0.0:50051";
    let mut server = ServerBuilder::new(env)
        .register_service(create_greeter(GreeterService))
        .register_service(create_streaming_greeter(StreamingGreeterService))
        .build()
        .expect("build server");
    server
        .add_listening_port(addr, creds)
        .expect("bind 0.0.0.0:50051");
    server.start();
    eprintln!("rust_grpcio listening on {addr}, {scheme}");

    if let Some(sig) = signals.forever().next() {
        eprintln!("signal {sig} received, shutting down");
    }
    let _ = block_on(server.shutdown());
    eprintln!("server stopped");
}
