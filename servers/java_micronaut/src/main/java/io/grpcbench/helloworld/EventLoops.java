package io.grpcbench.helloworld;

import io.grpc.ServerBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.micronaut.context.annotation.Value;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.executor.ExecutorConfiguration;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import jakarta.annotation.PreDestroy;
import jakarta.inject.Named;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sizes the Netty event loops of the server builder that micronaut-grpc creates (its documented
 * extension point is a BeanCreatedEventListener for ServerBuilder): one boss loop that accepts,
 * and grpcbench.threads worker loops instead of grpc-java's shared default of twice the cores.
 */
@Singleton
public class EventLoops implements BeanCreatedEventListener<ServerBuilder<?>> {
  static final String THREADS = "grpcbench.threads";

  private static final Logger logger = LoggerFactory.getLogger(EventLoops.class);

  private final int threads;
  private final ExecutorConfiguration calls;
  private EventLoopGroup boss;
  private EventLoopGroup workers;

  /** calls: the configuration of the "io" executor, which micronaut-grpc gives to the builder. */
  public EventLoops(
      @Value("${" + THREADS + "}") int threads,
      @Named(TaskExecutors.IO) ExecutorConfiguration calls) {
    this.threads = threads;
    this.calls = calls;
  }

  @Override
  public ServerBuilder<?> onCreated(BeanCreatedEvent<ServerBuilder<?>> event) {
    ServerBuilder<?> builder = event.getBean();
    if (builder instanceof NettyServerBuilder netty) {
      // NIO, the transport grpc-netty uses by default when no native transport is on the
      // classpath; groups and channel type must be given together.
      boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
      workers = new MultiThreadIoEventLoopGroup(threads, NioIoHandler.newFactory());
      netty
          .bossEventLoopGroup(boss)
          .workerEventLoopGroup(workers)
          .channelType(NioServerSocketChannel.class);
      // Micronaut.start() blocks while the server runs: the executor's kind is said here.
      logger.info(
          "io executor: {} (threads {}, parallelism {})",
          calls.getType(),
          calls.getNumberOfThreads(),
          calls.getParallelism());
    }
    return builder;
  }

  /** Groups given to the builder are the caller's to shut down. */
  @PreDestroy
  void close() {
    if (boss != null) {
      boss.shutdownGracefully();
      workers.shutdownGracefully();
    }
  }
}
