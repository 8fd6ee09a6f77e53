// cpp_grpc_mt is the gRPC C++ async (completion-queue) server of the
// benchmark: a unary helloworld.Greeter/SayHello that echoes the request's
// inner message, served by one completion queue per thread, with
// ceil(GRPC_SERVER_CPUS) threads.
//
// It follows examples/cpp/helloworld/greeter_async_server.cc, extended to
// several threads each polling its own completion queue.

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "helloworld.grpc.pb.h"

using grpc::Server;
using grpc::ServerAsyncResponseWriter;
using grpc::ServerBuilder;
using grpc::ServerCompletionQueue;
using grpc::ServerContext;
using grpc::Status;
using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;

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

// CallData is the state of one SayHello call, from the request for it to the
// sent reply. Its own address is the completion-queue tag of each step.
class CallData {
 public:
  CallData(Greeter::AsyncService* service, ServerCompletionQueue* cq)
      : service_(service), cq_(cq), responder_(&ctx_), status_(CREATE) {
    Proceed(true);
  }

  // Proceed moves the call on once its last step completed; ok is false when
  // that step failed, as a pending request does when the server shuts down.
  void Proceed(bool ok) {
    if (status_ == CREATE) {
      status_ = PROCESS;
      service_->RequestSayHello(&ctx_, &request_, &responder_, cq_, cq_, this);
    } else if (status_ == PROCESS && ok) {
      // Be ready for the next call on this queue before serving this one.
      new CallData(service_, cq_);
      reply_.mutable_response()->CopyFrom(request_.request());
      status_ = FINISH;
      responder_.Finish(reply_, Status::OK, this);
    } else {
      delete this;
    }
  }

 private:
  Greeter::AsyncService* service_;
  ServerCompletionQueue* cq_;
  ServerContext ctx_;
  HelloRequest request_;
  HelloReply reply_;
  ServerAsyncResponseWriter<HelloReply> responder_;
  enum CallStatus { CREATE, PROCESS, FINISH };
  CallStatus status_;
};

// HandleRpcs serves calls from one completion queue until it is shut down
// and drained.
void HandleRpcs(Greeter::AsyncService* service, ServerCompletionQueue* cq) {
  new CallData(service, cq);
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
    static_cast<CallData*>(tag)->Proceed(ok);
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

  Greeter::AsyncService service;
  ServerBuilder builder;
  builder.AddListeningPort(kAddress, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::vector<std::unique_ptr<ServerCompletionQueue>> cqs;
  for (int i = 0; i < threads; i++) cqs.push_back(builder.AddCompletionQueue());
  std::unique_ptr<Server> server(builder.BuildAndStart());
  if (!server) {
    std::cerr << "failed to listen on " << kAddress << std::endl;
    return 1;
  }

  std::vector<std::thread> workers;
  for (auto& cq : cqs) workers.emplace_back(HandleRpcs, &service, cq.get());
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
