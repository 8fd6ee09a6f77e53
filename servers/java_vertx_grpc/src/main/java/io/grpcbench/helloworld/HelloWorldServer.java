package io.grpcbench.helloworld;

import helloworld.GreeterGrpcService;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import helloworld.StreamingGreeterGrpcService;
import io.vertx.core.DeploymentOptions;
import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.net.PemKeyCertOptions;
import io.vertx.grpc.server.GrpcServer;
import io.vertx.grpc.server.GrpcServerResponse;
import java.util.logging.Logger;

/**
 * The Vert.x gRPC server of the benchmark: a generated GreeterGrpcService on a Vert.x HTTP server, a
 * unary helloworld.Greeter/SayHello that echoes the request's inner message, and
 * helloworld.StreamingGreeter on GrpcServerRequest handlers, as Vert.x gRPC's streaming examples.
 */
public final class HelloWorldServer extends VerticleBase {
  private static final Logger logger = Logger.getLogger(HelloWorldServer.class.getName());
  private static final int PORT = 50051;

  private final HttpServerOptions options;

  private HelloWorldServer(HttpServerOptions options) {
    this.options = options;
  }

  /**
   * The HTTP server's options: TLS with ALPN (h2) from the PEM files when GRPC_TLS_CERT and
   * GRPC_TLS_KEY are set (docs/adding-a-server.md#tls), the defaults (h2c) when neither is; one
   * without the other ends the server with status 2.
   */
  static HttpServerOptions serverOptions() {
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
    HttpServerOptions options = new HttpServerOptions();
    if (hasCert) {
      options
          .setSsl(true)
          .setUseAlpn(true)
          .setKeyCertOptions(new PemKeyCertOptions().setCertPath(cert).setKeyPath(key));
    }
    return options;
  }

  private static HelloReply echo(HelloRequest request) {
    return HelloReply.newBuilder().setResponse(request.getRequest()).build();
  }

  /** helloworld.StreamingGreeter's three methods, each a handler of the call's request stream. */
  private static void addStreaming(GrpcServer grpcServer) {
    grpcServer.callHandler(
        StreamingGreeterGrpcService.PingPong,
        request -> {
          GrpcServerResponse<HelloRequest, HelloReply> response = request.response();
          request.handler(msg -> response.write(echo(msg)));
          request.endHandler(v -> response.end());
        });
    grpcServer.callHandler(
        StreamingGreeterGrpcService.ServerStream,
        request ->
            request.handler(
                msg -> {
                  HelloReply reply = HelloReply.newBuilder().setResponse(msg.getRequest()).build();
                  for (int i = 0; i < msg.getReplies(); i++) {
                    request.response().write(reply);
                  }
                  request.response().end();
                }));
    grpcServer.callHandler(
        StreamingGreeterGrpcService.ClientStream,
        request -> {
          HelloRequest[] last = {null};
          request.handler(msg -> last[0] = msg);
          request.endHandler(
              v ->
                  request
                      .response()
                      .end(last[0] == null ? HelloReply.getDefaultInstance() : echo(last[0])));
        });
  }

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
    addStreaming(grpcServer);
    // Without TLS, the default options serve h2c (prior knowledge and upgrade) on a plaintext port.
    return vertx.createHttpServer(options).requestHandler(grpcServer).listen(PORT, "0.0.0.0");
  }

  public static void main(String[] args) {
    int threads = threads();
    HttpServerOptions options = serverOptions();
    logger.info("grpcbench-server: workers=" + threads);
    Vertx vertx = Vertx.vertx(new VertxOptions().setEventLoopPoolSize(threads));
    // Vert.x scales a server by deploying several instances of its verticle: the instances
    // share the port and Vert.x hands connections to them in turn, one event loop each.
    vertx
        .deployVerticle(
            () -> new HelloWorldServer(options), new DeploymentOptions().setInstances(threads))
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
