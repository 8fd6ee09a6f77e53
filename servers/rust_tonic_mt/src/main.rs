//! rust_tonic_mt: tonic's helloworld server on a multi-threaded tokio
//! runtime with ceil(GRPC_SERVER_CPUS) worker threads. Unary
//! helloworld.Greeter/SayHello echoes the request's inner message back as the
//! reply's `response`.

use tonic::{transport::Server, Request, Response, Status};

use hello_world::greeter_server::{Greeter, GreeterServer};
use hello_world::{HelloReply, HelloRequest};

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

/// Number of tokio worker threads: GRPC_SERVER_CPUS rounded up (so 0.5 -> 1,
/// 1.5 -> 2); without a valid value, tokio's default (one per visible core).
fn worker_threads() -> Option<usize> {
    let raw = std::env::var("GRPC_SERVER_CPUS").ok()?;
    match raw.trim().parse::<f64>() {
        Ok(cpus) if cpus.is_finite() && cpus > 0.0 => Some(cpus.ceil() as usize),
        _ => {
            eprintln!("ignoring invalid GRPC_SERVER_CPUS={raw:?}");
            None
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

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let addr = "0.0.0.0:50051".parse()?;
    let greeter = MyGreeter::default();

    eprintln!("rust_tonic_mt listening on {addr}");
    Server::builder()
        .add_service(GreeterServer::new(greeter))
        .serve_with_shutdown(addr, shutdown_signal())
        .await?;
    eprintln!("server stopped");
    Ok(())
}

// The same as #[tokio::main], which only takes a literal worker_threads,
// spelled out with the runtime builder so the count can come from the env.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    let threads = worker_threads();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    eprintln!(
        "tokio multi-thread runtime, worker_threads={} (GRPC_SERVER_CPUS={:?})",
        threads.map_or_else(|| "default".to_string(), |n| n.to_string()),
        std::env::var("GRPC_SERVER_CPUS").ok()
    );
    builder.build()?.block_on(serve())
}
