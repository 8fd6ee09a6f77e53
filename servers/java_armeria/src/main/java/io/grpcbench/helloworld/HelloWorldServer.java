package io.grpcbench.helloworld;

import com.linecorp.armeria.server.Server;
import com.linecorp.armeria.server.grpc.GrpcService;
import helloworld.GreeterGrpc;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import io.grpc.stub.StreamObserver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Armeria server of the benchmark: grpc-java's generated Greeter base served by Armeria's
 * GrpcService, a unary helloworld.Greeter/SayHello that echoes the request's inner message.
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

  public static void main(String[] args) {
    int threads = threads();
    logger.info("grpcbench-server: workers={}", threads);
    Server server =
        Server.builder()
            // Plaintext port: HTTP/1.1 and h2c (prior knowledge or upgrade) alike.
            .http(PORT)
            // GrpcService runs unary calls on the event loop that read them (no blocking task
            // executor), so the worker event loops are the server's only busy threads.
            .workerGroup(threads)
            .service(GrpcService.builder().addService(new GreeterService()).build())
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
}
