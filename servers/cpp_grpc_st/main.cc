// cpp_grpc_st is the single-threaded gRPC C++ async (completion-queue)
// server of the benchmark: a unary helloworld.Greeter/SayHello that echoes
// the request's inner message, served by one completion queue that the main
// thread polls, whatever GRPC_SERVER_CPUS says.
//
// It follows examples/cpp/helloworld/greeter_async_server.cc.

#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

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

class ServerImpl final {
 public:
  // Run serves calls on the calling thread until SIGTERM or SIGINT, which
  // must already be blocked in every thread.
  int Run(const sigset_t& stop_signals) {
    ServerBuilder builder;
    builder.AddListeningPort(kAddress, grpc::InsecureServerCredentials());
    builder.RegisterService(&service_);
    cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    if (!server_) {
      std::cerr << "failed to listen on " << kAddress << std::endl;
      return 1;
    }
    std::cout << "Server listening on " << kAddress << std::endl;

    // A second thread only waits for the stop signal; it serves no calls.
    std::thread stopper([this, &stop_signals] {
      int sig = 0;
      sigwait(&stop_signals, &sig);
      std::cout << "received signal " << sig << ", shutting down"
                << std::endl;
      // Drain in-flight calls, cancelling those still running after the
      // grace period; the queue is shut down only after the server is.
      server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
      cq_->Shutdown();
    });

    HandleRpcs();
    stopper.join();
    std::cout << "server stopped" << std::endl;
    return 0;
  }

 private:
  // CallData is the state of one SayHello call, from the request for it to
  // the sent reply. Its own address is the completion-queue tag of each step.
  class CallData {
   public:
    CallData(Greeter::AsyncService* service, ServerCompletionQueue* cq)
        : service_(service), cq_(cq), responder_(&ctx_), status_(CREATE) {
      Proceed(true);
    }

    // Proceed moves the call on once its last step completed; ok is false
    // when that step failed, as a pending request does when the server shuts
    // down.
    void Proceed(bool ok) {
      if (status_ == CREATE) {
        status_ = PROCESS;
        service_->RequestSayHello(&ctx_, &request_, &responder_, cq_, cq_,
                                  this);
      } else if (status_ == PROCESS && ok) {
        // Be ready for the next call before serving this one.
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

  // HandleRpcs serves calls until the queue is shut down and drained.
  void HandleRpcs() {
    new CallData(&service_, cq_.get());
    void* tag;
    bool ok;
    while (cq_->Next(&tag, &ok)) {
      static_cast<CallData*>(tag)->Proceed(ok);
    }
  }

  std::unique_ptr<ServerCompletionQueue> cq_;
  Greeter::AsyncService service_;
  std::unique_ptr<Server> server_;
};

}  // namespace

int main() {
  // Block SIGTERM and SIGINT before any thread starts, gRPC's included, so
  // that only the stopper's sigwait receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::cout << "gRPC C++ " << grpc::Version()
            << " async server, one completion queue" << std::endl;
  std::cout << "grpcbench-server: workers=1 (single-threaded)" << std::endl;

  ServerImpl server;
  return server.Run(stop_signals);
}
