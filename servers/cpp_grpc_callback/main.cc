// cpp_grpc_callback is the gRPC C++ callback-API server of the benchmark: a
// unary helloworld.Greeter/SayHello that echoes the request's inner message.
// The gRPC library runs the callbacks on threads it sizes itself.
//
// It follows examples/cpp/helloworld/greeter_callback_server.cc.

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "helloworld.grpc.pb.h"

using grpc::CallbackServerContext;
using grpc::Server;
using grpc::ServerBuilder;
using grpc::ServerUnaryReactor;
using grpc::Status;
using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;

namespace {

const char kAddress[] = "0.0.0.0:50051";

// How long Shutdown lets in-flight calls finish before cancelling them.
constexpr auto kShutdownGrace = std::chrono::seconds(5);

// ProcessThreads returns the "Threads:" line of /proc/self/status: how many
// threads the process runs, the library's included.
std::string ProcessThreads() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return line;
  }
  return "Threads: unknown";
}

class GreeterServiceImpl final : public Greeter::CallbackService {
  // SayHello returns the request's inner message unchanged.
  ServerUnaryReactor* SayHello(CallbackServerContext* context,
                               const HelloRequest* request,
                               HelloReply* reply) override {
    reply->mutable_response()->CopyFrom(request->request());
    ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(Status::OK);
    return reactor;
  }
};

}  // namespace

int main() {
  // Block SIGTERM and SIGINT before any thread starts, gRPC's included, so
  // that only the sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::cout << "gRPC C++ " << grpc::Version() << " callback server"
            << std::endl;
  // The callback API has no thread count: gRPC core sizes its threads
  // from the machine's CPU count, which neither the quota nor the cpuset
  // changes.
  std::cout << "grpcbench-server: workers=library" << std::endl;

  GreeterServiceImpl service;
  ServerBuilder builder;
  builder.AddListeningPort(kAddress, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<Server> server(builder.BuildAndStart());
  if (!server) {
    std::cerr << "failed to listen on " << kAddress << std::endl;
    return 1;
  }
  std::cout << "Server listening on " << kAddress << " (process "
            << ProcessThreads() << ")" << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "received signal " << sig << ", shutting down" << std::endl;
  // Drain in-flight calls, cancelling those still running after the grace
  // period.
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server->Wait();
  std::cout << "server stopped" << std::endl;
  return 0;
}
