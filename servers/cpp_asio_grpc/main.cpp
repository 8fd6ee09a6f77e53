// cpp_asio_grpc is the asio-grpc server of the benchmark: a unary
// helloworld.Greeter/SayHello that echoes the request's inner message,
// written as a C++20 coroutine registered with
// agrpc::register_awaitable_rpc_handler, as in asio-grpc's
// example/hello-world-server.cpp, and run on one agrpc::GrpcContext (one
// completion queue) per thread, as in its example/multi-threaded-server.cpp,
// with ceil(GRPC_SERVER_CPUS) threads. helloworld.StreamingGreeter's three
// streaming methods are coroutines over agrpc::ServerRPC's read, write and
// finish, as in its example/streaming-server.cpp.

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
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

using StreamingService = helloworld::StreamingGreeter::AsyncService;
using SayHelloRPC = agrpc::ServerRPC<&helloworld::Greeter::AsyncService::RequestSayHello>;
using PingPongRPC = agrpc::ServerRPC<&StreamingService::RequestPingPong>;
using ServerStreamRPC = agrpc::ServerRPC<&StreamingService::RequestServerStream>;
using ClientStreamRPC = agrpc::ServerRPC<&StreamingService::RequestClientStream>;

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

// ReadFile returns the whole content of path, ending the server with status
// 1 when it cannot be read.
std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  if (!in) {
    std::cerr << "failed to read " << path << std::endl;
    std::exit(1);
  }
  return content.str();
}

// Credentials serves TLS when GRPC_TLS_CERT and GRPC_TLS_KEY name a PEM
// certificate chain and key (docs/adding-a-server.md#tls), with gRPC's
// SslServerCredentials, which offers ALPN h2 itself; plaintext when both are
// unset. One without the other ends the server with status 2.
std::shared_ptr<grpc::ServerCredentials> Credentials() {
  const char* cert = std::getenv("GRPC_TLS_CERT");
  const char* key = std::getenv("GRPC_TLS_KEY");
  bool has_cert = cert != nullptr && *cert != '\0';
  bool has_key = key != nullptr && *key != '\0';
  if (!has_cert && !has_key) return grpc::InsecureServerCredentials();
  if (!has_key) {
    std::cerr << "grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not" << std::endl;
    std::exit(2);
  }
  if (!has_cert) {
    std::cerr << "grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not" << std::endl;
    std::exit(2);
  }
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({ReadFile(key), ReadFile(cert)});
  return grpc::SslServerCredentials(options);
}

// RethrowError is the handlers' completion token: an exception a handler
// threw comes out of GrpcContext::run rather than vanishing.
struct RethrowError {
  void operator()(std::exception_ptr error) const {
    if (error) std::rethrow_exception(error);
  }
};

// PingPong reads a request, writes its echo and reads again, until the
// client half-closes.
asio::awaitable<void> PingPong(PingPongRPC& rpc) {
  helloworld::HelloRequest request;
  helloworld::HelloReply reply;
  while (co_await rpc.read(request, asio::use_awaitable)) {
    *reply.mutable_response() = request.request();
    // A failed write means the stream is gone.
    if (!co_await rpc.write(reply, asio::use_awaitable)) co_return;
  }
  co_await rpc.finish(grpc::Status::OK, asio::use_awaitable);
}

// ServerStream writes `replies` echoes of the request.
asio::awaitable<void> ServerStream(ServerStreamRPC& rpc,
                                   ServerStreamRPC::Request& request) {
  helloworld::HelloReply reply;
  *reply.mutable_response() = request.request();
  for (int i = 0; i < request.replies(); i++) {
    // A failed write means the stream is gone.
    if (!co_await rpc.write(reply, asio::use_awaitable)) co_return;
  }
  co_await rpc.finish(grpc::Status::OK, asio::use_awaitable);
}

// ClientStream reads every request until the client half-closes, then
// answers the last one's hello.
asio::awaitable<void> ClientStream(ClientStreamRPC& rpc) {
  helloworld::HelloRequest request;
  helloworld::HelloReply reply;
  while (co_await rpc.read(request, asio::use_awaitable)) {
    *reply.mutable_response() = request.request();
  }
  co_await rpc.finish(reply, grpc::Status::OK, asio::use_awaitable);
}

// Serve answers calls on one GrpcContext until the server shuts down.
void Serve(agrpc::GrpcContext& grpc_context,
           helloworld::Greeter::AsyncService& service,
           StreamingService& streaming) {
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
  agrpc::register_awaitable_rpc_handler<PingPongRPC>(grpc_context, streaming,
                                                     &PingPong, RethrowError{});
  agrpc::register_awaitable_rpc_handler<ServerStreamRPC>(
      grpc_context, streaming, &ServerStream, RethrowError{});
  agrpc::register_awaitable_rpc_handler<ClientStreamRPC>(
      grpc_context, streaming, &ClientStream, RethrowError{});
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
  StreamingService streaming;
  grpc::ServerBuilder builder;
  std::vector<std::unique_ptr<agrpc::GrpcContext>> grpc_contexts;
  for (int i = 0; i < threads; i++) {
    grpc_contexts.push_back(
        std::make_unique<agrpc::GrpcContext>(builder.AddCompletionQueue()));
  }
  builder.AddListeningPort(kAddress, Credentials());
  builder.RegisterService(&service);
  builder.RegisterService(&streaming);
  std::unique_ptr<grpc::Server> server(builder.BuildAndStart());
  if (!server) {
    std::cerr << "failed to listen on " << kAddress << std::endl;
    return 1;
  }

  std::vector<std::thread> workers;
  for (auto& grpc_context : grpc_contexts) {
    workers.emplace_back(Serve, std::ref(*grpc_context), std::ref(service),
                         std::ref(streaming));
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
