package io.grpcbench.helloworld;

import helloworld.GreeterGrpc;
import helloworld.Helloworld.HelloReply;
import helloworld.Helloworld.HelloRequest;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.ServerChannel;
import io.grpc.netty.shaded.io.netty.channel.epoll.Epoll;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.nio.NioEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The grpc-java (Netty) server of the benchmark, after grpc-java's HelloWorldServer: a unary
 * helloworld.Greeter/SayHello that echoes the request's inner message.
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

  private void start() throws IOException {
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
        NettyServerBuilder.forAddress(new InetSocketAddress("0.0.0.0", PORT))
            .bossEventLoopGroup(bossGroup)
            .workerEventLoopGroup(workerGroup)
            .channelType(channelType)
            .executor(executor)
            .addService(new GreeterImpl())
            .build()
            .start();
    logger.info(
        "Server started, listening on 0.0.0.0:" + PORT + " (executor and worker event loops: "
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
}
