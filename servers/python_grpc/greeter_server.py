"""The grpcio (sync) server of the benchmark: a unary helloworld.Greeter/SayHello
that echoes the request's inner message, after grpc's Python helloworld
greeter_server.py."""

import logging
import signal
import threading
from concurrent import futures

import grpc

import helloworld_pb2
import helloworld_pb2_grpc

ADDRESS = "0.0.0.0:50051"
MAX_WORKERS = 1
GRACE_SECONDS = 5


class Greeter(helloworld_pb2_grpc.GreeterServicer):
    def SayHello(self, request, context):
        return helloworld_pb2.HelloReply(response=request.request)


def serve():
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_WORKERS))
    helloworld_pb2_grpc.add_GreeterServicer_to_server(Greeter(), server)
    server.add_insecure_port(ADDRESS)
    server.start()
    logging.info("grpcbench-server: workers=1 (single-threaded)")
    logging.info("server listening at %s (max_workers=%d)", ADDRESS, MAX_WORKERS)

    stopped = threading.Event()

    def handle_signal(signum, _frame):
        logging.info("received %s, stopping", signal.Signals(signum).name)
        # Reject new RPCs, let in-flight ones finish for up to GRACE_SECONDS.
        server.stop(GRACE_SECONDS).wait()
        stopped.set()

    signal.signal(signal.SIGTERM, handle_signal)
    signal.signal(signal.SIGINT, handle_signal)
    server.wait_for_termination()
    stopped.wait()
    logging.info("server stopped")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    serve()
