//! rust_grpcio: grpc-rs (grpcio, the gRPC C core from Rust) greeter server.
//! Unary helloworld.Greeter/SayHello echoes the request's inner message back
//! as the reply's `response`. One completion queue (each polled by its own
//! thread) per CPU of GRPC_SERVER_CPUS, rounded up.

use std::sync::Arc;

use futures::executor::block_on;
use futures::prelude::*;
use grpcio::{Environment, RpcContext, ServerBuilder, ServerCredentials, UnarySink};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

pub mod helloworld {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
}

use helloworld::{create_greeter, Greeter, HelloReply, HelloRequest};

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

fn main() {
    // Install the handlers before any gRPC thread exists.
    let mut signals = Signals::new([SIGTERM, SIGINT]).expect("install signal handlers");

    let cqs = workers();
    eprintln!("grpcbench-server: workers={cqs}");
    let env = Arc::new(Environment::new(cqs));
    let service = create_greeter(GreeterService);
    let addr = "0.0.0.0:50051";
    let mut server = ServerBuilder::new(env)
        .register_service(service)
        .build()
        .expect("build server");
    server
        .add_listening_port(addr, ServerCredentials::insecure())
        .expect("bind 0.0.0.0:50051");
    server.start();
    eprintln!("rust_grpcio listening on {addr}");

    if let Some(sig) = signals.forever().next() {
        eprintln!("signal {sig} received, shutting down");
    }
    let _ = block_on(server.shutdown());
    eprintln!("server stopped");
}
