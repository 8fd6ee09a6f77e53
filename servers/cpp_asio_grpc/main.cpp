// cpp_asio_grpc is the asio-grpc server of the benchmark: a unary
// helloworld.Greeter/SayHello that echoes the request's inner message,
// written as a C++20 coroutine registered with
// agrpc::register_awaitable_rpc_handler, as in asio-grpc's
// example/hello-world-server.cpp, and run on one agrpc::GrpcContext (one
// completion queue) per thread, as in its example/multi-threaded-server.cpp,
// with ceil(GRPC_SERVER_CPUS) threads.

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include <agrpc/grpc_context.hpp>
#include <agrpc/register_awaitable_rpc_handler.hpp>
#include <agrpc/server_rpc.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <grpcpp/grpcpp.h>

#include "helloworld.grpc.pb.h"

namespace asio = boost::asio;

namespace {

const char kAddress[] = "0.0.0.0:50051";

// How long Shutdown lets in-flight calls finish before cancelling them.
constexpr auto kShutdownGrace = std::chrono::seconds(5);

using SayHelloRPC = agrpc::ServerRPC<&helloworld::Greeter::AsyncService::RequestSayHello>;

// ThreadCount is the worker count by the benchmark's rule
// (docs/adding-a-server.md#workers): GRPC_SERVER_CPUS rounded up, at most
// the CPUs the process may run on, 1 when unset or empty; an invalid value
// ends the server with status 2.
int ThreadCount() {
  const char* env = std::getenv("GRPC_SERVER_CPUS");
  if (env == nullptr || *env == '\0') return 1;
  char* end = nullptr;
  double cpus = std::strtod(env, &end);
  if (end == env || *end != '\0' || !std::isfinite(cpus) || cpus <= 0) {
    std::cerr << "grpcbench-server: GRPC_SERVER_CPUS=\"" << env
              << "\" is not a positive number" << std::endl;
    std::exit(2);
  }
  cpu_set_t visible;
  int n = sched_getaffinity(0, sizeof visible, &visible) == 0 ? CPU_COUNT(&visible) : 1;
  return static_cast<int>(std::min(std::ceil(cpus), static_cast<double>(n)));
}

// RethrowError is the handlers' completion token: an exception a handler
// threw comes out of GrpcContext::run rather than vanishing.
struct RethrowError {
  void operator()(std::exception_ptr error) const {
    if (error) std::rethrow_exception(error);
  }
};

// Serve answers SayHello calls on one GrpcContext until the server shuts
// down.
void Serve(agrpc::GrpcContext& grpc_context,
           helloworld::Greeter::AsyncService& service) {
  agrpc::register_awaitable_rpc_handler<SayHelloRPC>(
      grpc_context, service,
      [](SayHelloRPC& rpc,
         SayHelloRPC::Request& request) -> asio::awaitable<void> {
        // SayHello returns the request's inner message unchanged.
        helloworld::HelloReply reply;
        *reply.mutable_response() = request.request();
        // Boost 1.83's default completion token is none: name it.
        co_await rpc.finish(reply, grpc::Status::OK, asio::use_awaitable);
      },
      RethrowError{});
  grpc_context.run();
}

}  // namespace

int main() {
  // Block SIGTERM and SIGINT before any thread starts, gRPC's included, so
  // that only the sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const int threads = ThreadCount();
  std::cout << "asio-grpc over gRPC C++ " << grpc::Version()
            << ", one GrpcContext per thread" << std::endl;
  std::cout << "grpcbench-server: workers=" << threads << std::endl;

  helloworld::Greeter::AsyncService service;
  grpc::ServerBuilder builder;
  std::vector<std::unique_ptr<agrpc::GrpcContext>> grpc_contexts;
  for (int i = 0; i < threads; i++) {
    grpc_contexts.push_back(
        std::make_unique<agrpc::GrpcContext>(builder.AddCompletionQueue()));
  }
  builder.AddListeningPort(kAddress, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server(builder.BuildAndStart());
  if (!server) {
    std::cerr << "failed to listen on " << kAddress << std::endl;
    return 1;
  }

  std::vector<std::thread> workers;
  for (auto& grpc_context : grpc_contexts) {
    workers.emplace_back(Serve, std::ref(*grpc_context), std::ref(service));
  }
  std::cout << "Server listening on " << kAddress << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "received signal " << sig << ", shutting down" << std::endl;
  // Drain in-flight calls, cancelling those still running after the grace
  // period; the handlers end with the server, and each run() with them.
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  for (auto& w : workers) w.join();
  std::cout << "server stopped" << std::endl;
  return 0;
}
