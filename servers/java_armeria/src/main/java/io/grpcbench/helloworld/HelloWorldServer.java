package io.grpcbench.helloworld;

import com.linecorp.armeria.server.Server;
import com.linecorp.armeria.server.ServerBuilder;
import com.linecorp.armeria.server.grpc.GrpcService;
import helloworld.GreeterGrpc;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import helloworld.Helloworld.RepliesRequest;
import helloworld.StreamingGreeterGrpc;
import io.grpc.stub.StreamObserver;
import java.io.File;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Armeria server of the benchmark: grpc-java's generated Greeter base served by Armeria's
 * GrpcService, a unary helloworld.Greeter/SayHello that echoes the request's inner message, and
 * helloworld.StreamingGreeter's three streams in grpc-java's route_guide StreamObserver style.
 */
public final class HelloWorldServer {
  private static final Logger logger = LoggerFactory.getLogger(HelloWorldServer.class);
  private static final int PORT = 50051;

  private HelloWorldServer() {}

  /**
   * Worker threads by the benchmark's rule (docs/adding-a-server.md#workers): GRPC_SERVER_CPUS
   * rounded up, at most the JVM's processor count, 1 when unset or empty; an invalid value ends
   * the server with status 2.
   */
  static int threads() {
    String s = System.getenv("GRPC_SERVER_CPUS");
    if (s == null || s.isEmpty()) {
      return 1;
    }
    double cpus = Double.NaN;
    try {
      cpus = Double.parseDouble(s);
    } catch (NumberFormatException e) {
      // refused below
    }
    if (!(cpus > 0) || Double.isInfinite(cpus)) {
      System.err.println(
          "grpcbench-server: GRPC_SERVER_CPUS=\"" + s + "\" is not a positive number");
      System.exit(2);
    }
    return (int) Math.min(Math.ceil(cpus), Runtime.getRuntime().availableProcessors());
  }

  /**
   * An https port with the PEM chain and PKCS#8 key named by GRPC_TLS_CERT and GRPC_TLS_KEY
   * (docs/adding-a-server.md#tls), as Armeria's ServerBuilder.tls documents it (ALPN h2); a
   * plaintext port when neither is set; one without the other ends the server with status 2.
   */
  static ServerBuilder port(ServerBuilder sb) {
    String cert = System.getenv("GRPC_TLS_CERT");
    String key = System.getenv("GRPC_TLS_KEY");
    boolean hasCert = cert != null && !cert.isEmpty();
    boolean hasKey = key != null && !key.isEmpty();
    if (hasCert != hasKey) {
      System.err.println(
          hasCert
              ? "grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not"
              : "grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not");
      System.exit(2);
    }
    if (!hasCert) {
      // Plaintext port: HTTP/1.1 and h2c (prior knowledge or upgrade) alike.
      return sb.http(PORT);
    }
    return sb.https(PORT).tls(new File(cert), new File(key));
  }

  public static void main(String[] args) {
    ServerBuilder sb = port(Server.builder());
    int threads = threads();
    logger.info("grpcbench-server: workers={}", threads);
    Server server =
        sb
            // GrpcService runs unary calls on the event loop that read them (no blocking task
            // executor), so the worker event loops are the server's only busy threads.
            .workerGroup(threads)
            .service(
                GrpcService.builder()
                    .addService(new GreeterService())
                    .addService(new StreamingGreeterService())
                    .build())
            .build();
    server.closeOnJvmShutdown();
    server.start().join();
    logger.info("Server started, listening on 0.0.0.0:{} (worker event loop threads: {})", PORT, threads);
  }

  /** Implements the SayHello RPC method: the inner message, unchanged. */
  static final class GreeterService extends GreeterGrpc.GreeterImplBase {
    @Override
    public void sayHello(HelloRequest req, StreamObserver<HelloReply> responseObserver) {
      responseObserver.onNext(HelloReply.newBuilder().setResponse(req.getRequest()).build());
      responseObserver.onCompleted();
    }
  }

  /** helloworld.StreamingGreeter in route_guide's StreamObserver style. */
  static final class StreamingGreeterService
      extends StreamingGreeterGrpc.StreamingGreeterImplBase {
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
}
