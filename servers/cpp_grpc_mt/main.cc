// cpp_grpc_mt is the gRPC C++ async (completion-queue) server of the
// benchmark: a unary helloworld.Greeter/SayHello that echoes the request's
// inner message and helloworld.StreamingGreeter's three streaming methods,
// served by one completion queue per thread, with ceil(GRPC_SERVER_CPUS)
// threads.
//
// It follows examples/cpp/helloworld/greeter_async_server.cc, extended to
// several threads each polling its own completion queue, and to streams
// with the async API's ServerAsyncReaderWriter, ServerAsyncWriter and
// ServerAsyncReader.

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "helloworld.grpc.pb.h"

using grpc::Server;
using grpc::ServerAsyncReader;
using grpc::ServerAsyncReaderWriter;
using grpc::ServerAsyncResponseWriter;
using grpc::ServerAsyncWriter;
using grpc::ServerBuilder;
using grpc::ServerCompletionQueue;
using grpc::ServerContext;
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

// Call is one call in progress on a completion queue; its own address is the
// tag of each of its steps. Proceed moves it on once its last step
// completed; ok is false when that step failed, as a pending request does
// when the server shuts down, or a read does at the client's half-close.
class Call {
 public:
  virtual ~Call() = default;
  virtual void Proceed(bool ok) = 0;
};

// Services are the services every queue's calls are requested from.
struct Services {
  Greeter::AsyncService greeter;
  StreamingGreeter::AsyncService streaming;
};

// SayHelloCall is one SayHello call, from the request for it to the sent
// reply.
class SayHelloCall final : public Call {
 public:
  SayHelloCall(Services* services, ServerCompletionQueue* cq)
      : services_(services), cq_(cq), responder_(&ctx_) {
    services_->greeter.RequestSayHello(&ctx_, &request_, &responder_, cq_, cq_, this);
  }

  void Proceed(bool ok) override {
    if (state_ == REQUESTED && ok) {
      // Be ready for the next call on this queue before serving this one.
      new SayHelloCall(services_, cq_);
      reply_.mutable_response()->CopyFrom(request_.request());
      state_ = FINISHING;
      responder_.Finish(reply_, Status::OK, this);
    } else {
      delete this;
    }
  }

 private:
  Services* services_;
  ServerCompletionQueue* cq_;
  ServerContext ctx_;
  HelloRequest request_;
  HelloReply reply_;
  ServerAsyncResponseWriter<HelloReply> responder_;
  enum { REQUESTED, FINISHING } state_ = REQUESTED;
};

// PingPongCall is one PingPong stream: it reads a request, writes its echo,
// and reads again, until the client half-closes.
class PingPongCall final : public Call {
 public:
  PingPongCall(Services* services, ServerCompletionQueue* cq)
      : services_(services), cq_(cq), stream_(&ctx_) {
    services_->streaming.RequestPingPong(&ctx_, &stream_, cq_, cq_, this);
  }

  void Proceed(bool ok) override {
    switch (state_) {
      case REQUESTED:
        if (!ok) break;
        new PingPongCall(services_, cq_);
        Read();
        return;
      case READING:
        if (!ok) {  // the client half-closed
          state_ = FINISHING;
          stream_.Finish(Status::OK, this);
          return;
        }
        reply_.mutable_response()->CopyFrom(request_.request());
        state_ = WRITING;
        stream_.Write(reply_, this);
        return;
      case WRITING:
        if (!ok) break;  // the stream is gone
        Read();
        return;
      case FINISHING:
        break;
    }
    delete this;
  }

 private:
  void Read() {
    state_ = READING;
    stream_.Read(&request_, this);
  }

  Services* services_;
  ServerCompletionQueue* cq_;
  ServerContext ctx_;
  HelloRequest request_;
  HelloReply reply_;
  ServerAsyncReaderWriter<HelloReply, HelloRequest> stream_;
  enum { REQUESTED, READING, WRITING, FINISHING } state_ = REQUESTED;
};

// ServerStreamCall is one ServerStream call: `replies` writes of the
// request's echo, then OK.
class ServerStreamCall final : public Call {
 public:
  ServerStreamCall(Services* services, ServerCompletionQueue* cq)
      : services_(services), cq_(cq), writer_(&ctx_) {
    services_->streaming.RequestServerStream(&ctx_, &request_, &writer_, cq_, cq_, this);
  }

  void Proceed(bool ok) override {
    switch (state_) {
      case REQUESTED:
        if (!ok) break;
        new ServerStreamCall(services_, cq_);
        reply_.mutable_response()->CopyFrom(request_.request());
        state_ = WRITING;
        WriteNext();
        return;
      case WRITING:
        if (!ok) break;  // the stream is gone
        WriteNext();
        return;
      case FINISHING:
        break;
    }
    delete this;
  }

 private:
  void WriteNext() {
    if (sent_ < request_.replies()) {
      sent_++;
      writer_.Write(reply_, this);
    } else {
      state_ = FINISHING;
      writer_.Finish(Status::OK, this);
    }
  }

  Services* services_;
  ServerCompletionQueue* cq_;
  ServerContext ctx_;
  RepliesRequest request_;
  HelloReply reply_;
  ServerAsyncWriter<HelloReply> writer_;
  int sent_ = 0;
  enum { REQUESTED, WRITING, FINISHING } state_ = REQUESTED;
};

// ClientStreamCall is one ClientStream call: it reads every request until
// the client half-closes, then answers the last one's hello.
class ClientStreamCall final : public Call {
 public:
  ClientStreamCall(Services* services, ServerCompletionQueue* cq)
      : services_(services), cq_(cq), reader_(&ctx_) {
    services_->streaming.RequestClientStream(&ctx_, &reader_, cq_, cq_, this);
  }

  void Proceed(bool ok) override {
    switch (state_) {
      case REQUESTED:
        if (!ok) break;
        new ClientStreamCall(services_, cq_);
        state_ = READING;
        reader_.Read(&request_, this);
        return;
      case READING:
        if (!ok) {  // the client half-closed
          state_ = FINISHING;
          reader_.Finish(reply_, Status::OK, this);
          return;
        }
        reply_.mutable_response()->CopyFrom(request_.request());
        reader_.Read(&request_, this);
        return;
      case FINISHING:
        break;
    }
    delete this;
  }

 private:
  Services* services_;
  ServerCompletionQueue* cq_;
  ServerContext ctx_;
  HelloRequest request_;
  HelloReply reply_;
  ServerAsyncReader<HelloReply, HelloRequest> reader_;
  enum { REQUESTED, READING, FINISHING } state_ = REQUESTED;
};

// HandleRpcs serves calls from one completion queue until it is shut down
// and drained.
void HandleRpcs(Services* services, ServerCompletionQueue* cq) {
  new SayHelloCall(services, cq);
  new PingPongCall(services, cq);
  new ServerStreamCall(services, cq);
  new ClientStreamCall(services, cq);
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
    static_cast<Call*>(tag)->Proceed(ok);
  }
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
  std::cout << "gRPC C++ " << grpc::Version()
            << " async server, one completion queue per thread" << std::endl;
  std::cout << "grpcbench-server: workers=" << threads << std::endl;

  Services services;
  ServerBuilder builder;
  builder.AddListeningPort(kAddress, Credentials());
  builder.RegisterService(&services.greeter);
  builder.RegisterService(&services.streaming);
  std::vector<std::unique_ptr<ServerCompletionQueue>> cqs;
  for (int i = 0; i < threads; i++) cqs.push_back(builder.AddCompletionQueue());
  std::unique_ptr<Server> server(builder.BuildAndStart());
  if (!server) {
    std::cerr << "failed to listen on " << kAddress << std::endl;
    return 1;
  }

  std::vector<std::thread> workers;
  for (auto& cq : cqs) workers.emplace_back(HandleRpcs, &services, cq.get());
  std::cout << "Server listening on " << kAddress << std::endl;

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "received signal " << sig << ", shutting down" << std::endl;

  // Drain in-flight calls, cancelling those still running after the grace
  // period; the queues are shut down only after the server is.
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  for (auto& cq : cqs) cq->Shutdown();
  for (auto& w : workers) w.join();
  std::cout << "server stopped" << std::endl;
  return 0;
}
