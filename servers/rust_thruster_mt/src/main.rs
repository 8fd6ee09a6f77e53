//! rust_thruster_mt: thruster (hyper backend) with thruster-grpc, on a
//! multi-threaded tokio runtime with ceil(GRPC_SERVER_CPUS) worker threads. A POST route on /helloworld.Greeter/SayHello
//! decodes the HelloRequest and echoes its inner message back as the reply's
//! `response`; any other path answers grpc-status UNIMPLEMENTED.

use thruster::context::hyper_request::HyperRequest;
use thruster::{m, middleware_fn};
use thruster::{App, Context, ThrusterServer};
use thruster::{MiddlewareNext, MiddlewareResult};
use thruster_grpc::body::ProtoBody;
use thruster_grpc::context::{generate_context, ProtoContext};
use thruster_grpc::server::ProtoServer;
use thruster_grpc::util::{context_to_message, message_to_context};

pub mod hello_world {
    include!(concat!(env!("OUT_DIR"), "/helloworld.rs"));
}

use hello_world::{HelloReply, HelloRequest};

type Ctx = ProtoContext<()>;

/// A body-less gRPC answer with the given status code.
fn grpc_status(mut context: Ctx, code: u16) -> Ctx {
    context.set_http2();
    context.set("content-type", "application/grpc");
    context.set_proto_status(code);
    context.body = Some(ProtoBody::empty());
    context
}

#[middleware_fn]
async fn say_hello(mut context: Ctx, _next: MiddlewareNext<Ctx>) -> MiddlewareResult<Ctx> {
    match context_to_message::<HelloRequest, ()>(&mut context).await {
        Ok(request) => {
            let reply = HelloReply {
                response: request.request,
            };
            Ok(message_to_context(context, reply).await)
        }
        // 13 = INTERNAL: the request could not be decoded.
        Err(_) => Ok(grpc_status(context, 13)),
    }
}

#[middleware_fn]
async fn unimplemented(context: Ctx, _next: MiddlewareNext<Ctx>) -> MiddlewareResult<Ctx> {
    // 12 = UNIMPLEMENTED
    Ok(grpc_status(context, 12))
}

/// Resolves on SIGTERM (docker stop) or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
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

fn main() {
    let app = App::<HyperRequest, Ctx, ()>::create(generate_context, ())
        .post("/helloworld.Greeter/SayHello", m![say_hello])
        .set404(m![unimplemented]);
    let server = ProtoServer::new(app);

    // ThrusterServer::start blocks on tokio's default multi-threaded runtime
    // (one worker per visible core); build the same runtime with the worker
    // count taken from GRPC_SERVER_CPUS.
    let workers = workers();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("build tokio runtime");
    eprintln!("grpcbench-server: workers={workers}");
    eprintln!("rust_thruster_mt listening on 0.0.0.0:50051");
    runtime.block_on(async {
        tokio::select! {
            _ = server.build("0.0.0.0", 50051) => {}
            _ = shutdown_signal() => eprintln!("shutdown signal received"),
        }
    });
    eprintln!("server stopped");
}
