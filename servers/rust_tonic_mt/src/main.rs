//! rust_tonic_mt: tonic's helloworld server on a multi-threaded tokio
//! runtime with ceil(GRPC_SERVER_CPUS) worker threads (at most the CPUs it
//! may use). Unary
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
    let workers = workers();
    eprintln!("grpcbench-server: workers={workers}");
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?
        .block_on(serve())
}
