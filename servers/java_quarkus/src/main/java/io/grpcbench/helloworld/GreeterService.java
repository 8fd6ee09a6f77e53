package io.grpcbench.helloworld;

import helloworld.Greeter;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import io.quarkus.grpc.GrpcService;
import io.smallrye.mutiny.Uni;

/**
 * helloworld.Greeter on Quarkus's generated Mutiny interface. Returning a Uni keeps the call on
 * the Vert.x event loop that received it. SayHello answers with the inner message, unchanged.
 */
@GrpcService
public class GreeterService implements Greeter {
  @Override
  public Uni<HelloReply> sayHello(HelloRequest request) {
    return Uni.createFrom().item(HelloReply.newBuilder().setResponse(request.getRequest()).build());
  }
}
