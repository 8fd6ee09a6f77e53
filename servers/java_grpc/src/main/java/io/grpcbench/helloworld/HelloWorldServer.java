package io.grpcbench.helloworld;

import helloworld.GreeterGrpc;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import helloworld.Helloworld.RepliesRequest;
import helloworld.StreamingGreeterGrpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.stub.StreamObserver;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The grpc-java (Netty) server of the benchmark, after grpc-java's HelloWorldServer: a unary
 * helloworld.Greeter/SayHello that echoes the request's inner message, and
 * helloworld.StreamingGreeter's three streams after grpc-java's route_guide (StreamObserver).
 */
public class HelloWorldServer {
  private static final Logger logger = Logger.getLogger(HelloWorldServer.class.getName());
  private static final int PORT = 50051;
  private static final long GRACE_SECONDS = 5;

  private Server server;
  private ExecutorService executor;
  private EventLoopGroup bossGroup;
  private EventLoopGroup workerGroup;

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
   * TLS from the PEM chain and PKCS#8 key named by GRPC_TLS_CERT and GRPC_TLS_KEY
   * (docs/adding-a-server.md#tls), plaintext when neither is set; one without the other ends the
   * server with status 2.
   */
  static ServerCredentials credentials() throws IOException {
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
      return InsecureServerCredentials.create();
    }
    return TlsServerCredentials.create(new File(cert), new File(key));
  }

  private void start() throws IOException {
    ServerCredentials credentials = credentials();
    int threads = threads();
    logger.info("grpcbench-server: workers=" + threads);
    // Application executor and Netty worker event loops, both sized to the CPU quota; one
    // boss loop accepts connections. Epoll (bundled in grpc-netty-shaded) when available.
    executor = Executors.newFixedThreadPool(threads);
    Class<? extends ServerChannel> channelType;
    if (Epoll.isAvailable()) {
      bossGroup = new EpollEventLoopGroup(1);
      workerGroup = new EpollEventLoopGroup(threads);
      channelType = EpollServerSocketChannel.class;
    } else {
      bossGroup = new NioEventLoopGroup(1);
      workerGroup = new NioEventLoopGroup(threads);
      channelType = NioServerSocketChannel.class;
    }
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("0.0.0.0", PORT), credentials)
            .bossEventLoopGroup(bossGroup)
            .workerEventLoopGroup(workerGroup)
            .channelType(channelType)
            .executor(executor)
            .addService(new GreeterImpl())
            .addService(new StreamingGreeterImpl())
            .build()
            .start();
    logger.info(
        "Server started, listening on 0.0.0.0:" + PORT
            + (credentials instanceof TlsServerCredentials ? " with TLS" : "") + " (executor and worker event loops: "
            + threads + " threads each, " + channelType.getSimpleName() + ")");
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  // Use stderr here since the logger may have been reset by its JVM shutdown hook.
                  System.err.println("*** shutting down gRPC server since JVM is shutting down");
                  try {
                    HelloWorldServer.this.stop();
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  System.err.println("*** server shut down");
                }));
  }

  private void stop() throws InterruptedException {
    if (server != null) {
      // Drain in-flight RPCs, but do not let a stuck client hold the exit.
      if (!server.shutdown().awaitTermination(GRACE_SECONDS, TimeUnit.SECONDS)) {
        server.shutdownNow().awaitTermination(GRACE_SECONDS, TimeUnit.SECONDS);
      }
    }
    executor.shutdown();
    bossGroup.shutdownGracefully(0, GRACE_SECONDS, TimeUnit.SECONDS);
    workerGroup.shutdownGracefully(0, GRACE_SECONDS, TimeUnit.SECONDS).await(GRACE_SECONDS, TimeUnit.SECONDS);
  }

  /** Await termination on the main thread since the grpc library uses daemon threads. */
  private void blockUntilShutdown() throws InterruptedException {
    if (server != null) {
      server.awaitTermination();
    }
  }

  public static void main(String[] args) throws IOException, InterruptedException {
    final HelloWorldServer server = new HelloWorldServer();
    server.start();
    server.blockUntilShutdown();
  }

  /** helloworld.Greeter on the generated base class. */
  static class GreeterImpl extends GreeterGrpc.GreeterImplBase {
    /** The inner message, unchanged. */
    @Override
    public void sayHello(HelloRequest req, StreamObserver<HelloReply> responseObserver) {
      HelloReply reply = HelloReply.newBuilder().setResponse(req.getRequest()).build();
      responseObserver.onNext(reply);
      responseObserver.onCompleted();
    }
  }

  /** helloworld.StreamingGreeter in route_guide's StreamObserver style. */
  static class StreamingGreeterImpl extends StreamingGreeterGrpc.StreamingGreeterImplBase {
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
          logger.fine("pingPong cancelled: " + t);
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
          logger.fine("clientStream cancelled: " + t);
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
