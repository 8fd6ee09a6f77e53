// cpp_grpcxx is the grpcxx server of the benchmark: a unary
// helloworld.Greeter/SayHello that echoes the request's inner message,
// served by grpcxx's libuv server with ceil(GRPC_SERVER_CPUS) workers
// beside its I/O thread.
//
// It follows grpcxx's examples/helloworld/main.cpp: the generated
// ServiceImpl, its call<> specialised for the method, run by grpcxx::server.

#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stop_token>
#include <thread>

#include <grpcxx/server.h>

#include "helloworld.grpcxx.pb.h"

using namespace helloworld::Greeter;

namespace {

const char kHost[] = "0.0.0.0";
constexpr int kPort = 50051;

// WorkerCount is the worker count by the benchmark's rule
// (docs/adding-a-server.md#workers): GRPC_SERVER_CPUS rounded up, at most
// the CPUs the process may run on, 1 when unset or empty; an invalid value
// ends the server with status 2.
std::size_t WorkerCount() {
	const char *env = std::getenv("GRPC_SERVER_CPUS");
	if (env == nullptr || *env == '\0') return 1;
	char  *end  = nullptr;
	double cpus = std::strtod(env, &end);
	if (end == env || *end != '\0' || !std::isfinite(cpus) || cpus <= 0) {
		std::cerr << "grpcbench-server: GRPC_SERVER_CPUS=\"" << env << "\" is not a positive number"
				  << std::endl;
		std::exit(2);
	}
	cpu_set_t visible;
	int       n = sched_getaffinity(0, sizeof visible, &visible) == 0 ? CPU_COUNT(&visible) : 1;
	return static_cast<std::size_t>(std::min(std::ceil(cpus), static_cast<double>(n)));
}

} // namespace

// SayHello returns the request's inner message unchanged.
template <>
rpcSayHello::result_type ServiceImpl::call<rpcSayHello>(
	grpcxx::context &, const helloworld::HelloRequest &req) {
	helloworld::HelloReply res;
	*res.mutable_response() = req.request();
	return {grpcxx::status::code_t::ok, res};
}

int main() {
	// Block SIGTERM and SIGINT before any thread starts, grpcxx's workers
	// included, so that only the sigwait below receives them.
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

	const std::size_t workers = WorkerCount();
	std::cout << "grpcxx server: the workers plus the I/O thread" << std::endl;
	std::cout << "grpcbench-server: workers=" << workers << std::endl;

	ServiceImpl    greeter;
	Service        service(greeter);
	grpcxx::server server(workers);
	server.add(service);

	// A signal requests a stop, which run() sees within grpcxx's shutdown
	// check interval. Detached: it stays in sigwait when no signal comes.
	std::stop_source stop;
	std::thread([&stop, stop_signals] {
		int sig = 0;
		sigwait(&stop_signals, &sig);
		std::cout << "received signal " << sig << ", shutting down" << std::endl;
		stop.request_stop();
	}).detach();

	try {
		server.listen(kHost, kPort);
		std::cout << "Server listening on " << kHost << ":" << kPort << std::endl;
		server.run(stop.get_token());
	} catch (const std::exception &e) {
		std::cerr << "failed to serve on " << kHost << ":" << kPort << ": " << e.what() << std::endl;
		return 1;
	}
	std::cout << "server stopped" << std::endl;
	return 0;
}
