package io.grpcbench.helloworld;

import helloworld.GreeterGrpc;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import io.grpc.stub.StreamObserver;
import jakarta.inject.Singleton;

/**
 * helloworld.Greeter as a Micronaut bean: micronaut-grpc adds every BindableService bean to the
 * server. SayHello answers with the request's inner message, unchanged.
 */
@Singleton
public class GreeterEndpoint extends GreeterGrpc.GreeterImplBase {
  @Override
  public void sayHello(HelloRequest request, StreamObserver<HelloReply> responseObserver) {
    responseObserver.onNext(HelloReply.newBuilder().setResponse(request.getRequest()).build());
    responseObserver.onCompleted();
  }
}
