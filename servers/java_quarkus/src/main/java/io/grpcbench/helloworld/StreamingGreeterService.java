package io.grpcbench.helloworld;

import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import helloworld.Helloworld.RepliesRequest;
import helloworld.StreamingGreeter;
import io.quarkus.grpc.GrpcService;
import io.smallrye.mutiny.Multi;
import io.smallrye.mutiny.Uni;

/**
 * helloworld.StreamingGreeter on Quarkus's generated Mutiny interface, as its gRPC guide streams:
 * a Multi in, a Multi out, on the Vert.x event loop of the call.
 */
@GrpcService
public class StreamingGreeterService implements StreamingGreeter {
  private static HelloReply echo(HelloRequest request) {
    return HelloReply.newBuilder().setResponse(request.getRequest()).build();
  }

  @Override
  public Multi<HelloReply> pingPong(Multi<HelloRequest> requests) {
    return requests.map(StreamingGreeterService::echo);
  }

  @Override
  public Multi<HelloReply> serverStream(RepliesRequest request) {
    HelloReply reply = HelloReply.newBuilder().setResponse(request.getRequest()).build();
    return Multi.createFrom().range(0, Math.max(0, request.getReplies())).map(i -> reply);
  }

  @Override
  public Uni<HelloReply> clientStream(Multi<HelloRequest> requests) {
    return requests
        .collect()
        .last()
        .map(last -> last == null ? HelloReply.getDefaultInstance() : echo(last));
  }
}
