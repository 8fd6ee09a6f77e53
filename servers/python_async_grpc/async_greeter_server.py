"""The grpcio asyncio (grpc.aio) server of the benchmark: a unary
helloworld.Greeter/SayHello that echoes the request's inner message, after
grpc's Python helloworld async_greeter_server.py, and
helloworld.StreamingGreeter's streaming echoes as async generators, after its
asyncio route_guide_server.py; plaintext h2c, or TLS when given a
certificate."""

import asyncio
import logging
import os
import signal
import sys

import grpc

import helloworld_pb2
import helloworld_pb2_grpc

ADDRESS = "0.0.0.0:50051"
GRACE_SECONDS = 5


class Greeter(helloworld_pb2_grpc.GreeterServicer):
    async def SayHello(self, request, context):
        return helloworld_pb2.HelloReply(response=request.request)


class StreamingGreeter(helloworld_pb2_grpc.StreamingGreeterServicer):
    async def PingPong(self, request_iterator, context):
        # Each reply as its request comes; the call ends, OK, when the client
        # half-closes and the iterator ends.
        async for request in request_iterator:
            yield helloworld_pb2.HelloReply(response=request.request)

    async def ServerStream(self, request, context):
        for _ in range(request.replies):
            yield helloworld_pb2.HelloReply(response=request.request)

    async def ClientStream(self, request_iterator, context):
        # The last request's message; an empty reply when none came.
        reply = helloworld_pb2.HelloReply()
        async for request in request_iterator:
            reply = helloworld_pb2.HelloReply(response=request.request)
        return reply


def server_credentials():
    """TLS credentials from GRPC_TLS_CERT and GRPC_TLS_KEY
    (docs/adding-a-server.md#tls), or None for plaintext; one set without the
    other ends the server with status 2."""
    cert, key = os.environ.get("GRPC_TLS_CERT", ""), os.environ.get("GRPC_TLS_KEY", "")
    if cert and not key:
        logging.error("grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not")
        sys.exit(2)
    if key and not cert:
        logging.error("grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not")
        sys.exit(2)
    if not cert:
        return None
    with open(key, "rb") as f:
        private_key = f.read()
    with open(cert, "rb") as f:
        certificate_chain = f.read()
    return grpc.ssl_server_credentials([(private_key, certificate_chain)])


async def serve():
    credentials = server_credentials()
    server = grpc.aio.server()
    helloworld_pb2_grpc.add_GreeterServicer_to_server(Greeter(), server)
    helloworld_pb2_grpc.add_StreamingGreeterServicer_to_server(StreamingGreeter(), server)
    if credentials is None:
        server.add_insecure_port(ADDRESS)
    else:
        server.add_secure_port(ADDRESS, credentials)
    await server.start()
    logging.info("grpcbench-server: workers=1 (single-threaded)")
    logging.info("server listening at %s (asyncio event loop, TLS: %s)", ADDRESS, credentials is not None)

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
