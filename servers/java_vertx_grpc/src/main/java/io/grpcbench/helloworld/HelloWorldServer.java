package io.grpcbench.helloworld;

import helloworld.GreeterGrpcService;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.grpc.server.GrpcServer;
import java.util.logging.Logger;

/**
 * The Vert.x gRPC server of the benchmark: a generated GreeterGrpcService on a Vert.x HTTP server, a
 * unary helloworld.Greeter/SayHello that echoes the request's inner message.
 */
public final class HelloWorldServer extends VerticleBase {
  private static final Logger logger = Logger.getLogger(HelloWorldServer.class.getName());
  private static final int PORT = 50051;

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

  /** One instance per event loop: each binds its own HTTP server and gRPC server on the port. */
  @Override
  public Future<?> start() {
    GrpcServer grpcServer = GrpcServer.server(vertx);
    grpcServer.addService(
        new GreeterGrpcService() {
          // Implements the SayHello RPC method: the inner message, unchanged.
          @Override
          public Future<HelloReply> sayHello(HelloRequest request) {
            return Future.succeededFuture(
                HelloReply.newBuilder().setResponse(request.getRequest()).build());
          }
        });
    // The default options serve h2c (prior knowledge and upgrade) on a plaintext port.
    return vertx.createHttpServer().requestHandler(grpcServer).listen(PORT, "0.0.0.0");
  }

  public static void main(String[] args) {
    int threads = threads();
    logger.info("grpcbench-server: workers=" + threads);
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(threads));
    // Vert.x scales a server by deploying several instances of its verticle: the instances
    // share the port and Vert.x hands connections to them in turn, one event loop each.
    vertx
        .deployVerticle(HelloWorldServer::new, new DeploymentOptions().setInstances(threads))
        .onSuccess(
            id ->
                logger.info(
                    "Server started, listening on 0.0.0.0:" + PORT + " (event loops and verticle instances: "
                        + threads + ")"))
        .onFailure(
            err -> {
              logger.severe("deploy failed: " + err);
              vertx.close();
              System.exit(1);
            });
  }
}
