// cpp_grpc_callback is the gRPC C++ callback-API server of the benchmark: a
// unary helloworld.Greeter/SayHello that echoes the request's inner message,
// and helloworld.StreamingGreeter's three streaming methods. The gRPC
// library runs the callbacks on threads it sizes itself.
//
// It follows examples/cpp/helloworld/greeter_callback_server.cc, and
// examples/cpp/route_guide/route_guide_callback_server.cc for the streams.

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include <grpcpp/grpcpp.h>

#include "helloworld.grpc.pb.h"

using grpc::CallbackServerContext;
using grpc::Server;
using grpc::ServerBidiReactor;
using grpc::ServerBuilder;
using grpc::ServerReadReactor;
using grpc::ServerUnaryReactor;
using grpc::ServerWriteReactor;
using grpc::Status;
using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;
using helloworld::RepliesRequest;
using helloworld::StreamingGreeter;

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

class StreamingGreeterServiceImpl final : public StreamingGreeter::CallbackService {
  // PingPong writes each request's echo as it is read, reading the next one
  // once the write is done, until the client half-closes.
  ServerBidiReactor<HelloRequest, HelloReply>* PingPong(
      CallbackServerContext* /*context*/) override {
    class Echoer : public ServerBidiReactor<HelloRequest, HelloReply> {
     public:
      Echoer() { StartRead(&request_); }

      void OnReadDone(bool ok) override {
        if (!ok) {  // the client half-closed
          Finish(Status::OK);
          return;
        }
        reply_.mutable_response()->CopyFrom(request_.request());
        StartWrite(&reply_);
      }

      void OnWriteDone(bool ok) override {
        if (!ok) {  // the stream is gone
          Finish(Status::CANCELLED);
          return;
        }
        StartRead(&request_);
      }

      void OnDone() override { delete this; }

     private:
      HelloRequest request_;
      HelloReply reply_;
    };
    return new Echoer();
  }

  // ServerStream writes `replies` echoes of the request, one after another.
  ServerWriteReactor<HelloReply>* ServerStream(
      CallbackServerContext* /*context*/,
      const RepliesRequest* request) override {
    class Repeater : public ServerWriteReactor<HelloReply> {
     public:
      explicit Repeater(const RepliesRequest* request)
          : remaining_(request->replies()) {
        reply_.mutable_response()->CopyFrom(request->request());
        NextWrite();
      }

      void OnWriteDone(bool ok) override {
        if (!ok) {  // the stream is gone
          Finish(Status::CANCELLED);
          return;
        }
        NextWrite();
      }

      void OnDone() override { delete this; }

     private:
      void NextWrite() {
        if (remaining_ > 0) {
          remaining_--;
          StartWrite(&reply_);
        } else {
          Finish(Status::OK);
        }
      }

      HelloReply reply_;
      int remaining_;
    };
    return new Repeater(request);
  }

  // ClientStream reads every request until the client half-closes, then
  // answers the last one's hello.
  ServerReadReactor<HelloRequest>* ClientStream(
      CallbackServerContext* /*context*/, HelloReply* reply) override {
    class Collector : public ServerReadReactor<HelloRequest> {
     public:
      explicit Collector(HelloReply* reply) : reply_(reply) {
        StartRead(&request_);
      }

      void OnReadDone(bool ok) override {
        if (!ok) {  // the client half-closed
          Finish(Status::OK);
          return;
        }
        reply_->mutable_response()->CopyFrom(request_.request());
        StartRead(&request_);
      }

      void OnDone() override { delete this; }

     private:
      HelloRequest request_;
      HelloReply* reply_;
    };
    return new Collector(reply);
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
  StreamingGreeterServiceImpl streaming;
  ServerBuilder builder;
  builder.AddListeningPort(kAddress, Credentials());
  builder.RegisterService(&service);
  builder.RegisterService(&streaming);
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
