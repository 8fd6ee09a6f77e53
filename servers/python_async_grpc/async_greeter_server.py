"""The grpcio asyncio (grpc.aio) server of the benchmark: a unary
helloworld.Greeter/SayHello that echoes the request's inner message, after
grpc's Python helloworld async_greeter_server.py."""

import asyncio
import logging
import signal

import grpc

import helloworld_pb2
import helloworld_pb2_grpc

ADDRESS = "0.0.0.0:50051"
GRACE_SECONDS = 5


class Greeter(helloworld_pb2_grpc.GreeterServicer):
    async def SayHello(self, request, context):
        return helloworld_pb2.HelloReply(response=request.request)


async def serve():
    server = grpc.aio.server()
    helloworld_pb2_grpc.add_GreeterServicer_to_server(Greeter(), server)
    server.add_insecure_port(ADDRESS)
    await server.start()
    logging.info("grpcbench-server: workers=1 (single-threaded)")
    logging.info("server listening at %s (asyncio event loop)", ADDRESS)

    # docker stop sends SIGTERM: reject new RPCs and let in-flight ones
    # finish for up to GRACE_SECONDS, as the sync server does.
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(server.stop(GRACE_SECONDS)))
    await server.wait_for_termination()
    logging.info("server stopped")


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    asyncio.run(serve())
