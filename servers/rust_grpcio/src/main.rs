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

/// Completion queue count: GRPC_SERVER_CPUS rounded up (0.5 -> 1, 1.5 -> 2);
/// without a valid value, one per visible core.
fn completion_queues() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match std::env::var("GRPC_SERVER_CPUS") {
        Ok(raw) => match raw.trim().parse::<f64>() {
            Ok(cpus) if cpus.is_finite() && cpus > 0.0 => cpus.ceil() as usize,
            _ => {
                eprintln!("ignoring invalid GRPC_SERVER_CPUS={raw:?}");
                cores
            }
        },
        Err(_) => cores,
    }
}

fn main() {
    // Install the handlers before any gRPC thread exists.
    let mut signals = Signals::new([SIGTERM, SIGINT]).expect("install signal handlers");

    let cqs = completion_queues();
    eprintln!(
        "completion queues: {cqs} (GRPC_SERVER_CPUS={:?})",
        std::env::var("GRPC_SERVER_CPUS").ok()
    );
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
