package io.grpcbench.helloworld;

import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import helloworld.Helloworld.RepliesRequest;
import helloworld.StreamingGreeterGrpc;
import io.grpc.stub.StreamObserver;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * helloworld.StreamingGreeter as a Micronaut bean, in grpc-java's route_guide StreamObserver
 * style; micronaut-grpc adds it to the server as it does GreeterEndpoint.
 */
@Singleton
public class StreamingGreeterEndpoint extends StreamingGreeterGrpc.StreamingGreeterImplBase {
  private static final Logger logger = LoggerFactory.getLogger(StreamingGreeterEndpoint.class);

  /** A reply echoing each request, as it comes; completed at the client's half-close. */
  @Override
  public StreamObserver<HelloRequest> pingPong(StreamObserver<HelloReply> responseObserver) {
    return new StreamObserver<HelloRequest>() {
      @Override
      public void onNext(HelloRequest req) {
        responseObserver.onNext(HelloReply.newBuilder().setResponse(req.getRequest()).build());
      }

      @Override
      public void onError(Throwable t) {
        logger.debug("pingPong cancelled", t);
      }

      @Override
      public void onCompleted() {
        responseObserver.onCompleted();
      }
    };
  }

  /** `replies` replies echoing the request. */
  @Override
  public void serverStream(RepliesRequest req, StreamObserver<HelloReply> responseObserver) {
    HelloReply reply = HelloReply.newBuilder().setResponse(req.getRequest()).build();
    for (int i = 0; i < req.getReplies(); i++) {
      responseObserver.onNext(reply);
    }
    responseObserver.onCompleted();
  }

  /** One reply echoing the last request (empty when none came), at the client's half-close. */
  @Override
  public StreamObserver<HelloRequest> clientStream(StreamObserver<HelloReply> responseObserver) {
    return new StreamObserver<HelloRequest>() {
      private HelloRequest last = HelloRequest.getDefaultInstance();

      @Override
      public void onNext(HelloRequest req) {
        last = req;
      }

      @Override
      public void onError(Throwable t) {
        logger.debug("clientStream cancelled", t);
      }

      @Override
      public void onCompleted() {
        HelloReply.Builder reply = HelloReply.newBuilder();
        if (last.hasRequest()) {
          reply.setResponse(last.getRequest());
        }
        responseObserver.onNext(reply.build());
        responseObserver.onCompleted();
      }
    };
  }
}
