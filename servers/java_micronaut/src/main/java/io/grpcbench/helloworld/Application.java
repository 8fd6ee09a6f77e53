package io.grpcbench.helloworld;

import io.micronaut.runtime.Micronaut;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Starts Micronaut; micronaut-grpc then starts the gRPC server on grpc.server.port. */
public class Application {
  private static final Logger logger = LoggerFactory.getLogger(Application.class);

  /** GRPC_SERVER_CPUS rounded up, at least 1; the JVM's processor count when unset or invalid. */
  static int threads() {
    String s = System.getenv("GRPC_SERVER_CPUS");
    if (s != null && !s.isBlank()) {
      try {
        double cpus = Double.parseDouble(s.trim());
        if (cpus > 0 && !Double.isInfinite(cpus)) {
          return (int) Math.max(1, Math.ceil(cpus));
        }
      } catch (NumberFormatException e) {
        // fall through
      }
      logger.warn("ignoring invalid GRPC_SERVER_CPUS={}", s);
    }
    return Runtime.getRuntime().availableProcessors();
  }

  public static void main(String[] args) {
    int threads = threads();
    logger.info("executor and worker event loop threads: {}", threads);
    Micronaut.build(args)
        .mainClass(Application.class)
        // micronaut-grpc hands the "io" executor to NettyServerBuilder.executor, so it runs the
        // calls: its type (application.yml: fixed, instead of the default unbounded cached pool)
        // gets the CPU quota as its size, a fixed pool's threads or a work-stealing pool's
        // parallelism. grpcbench.threads sizes the worker event loops (EventLoops).
        .properties(
            Map.of(
                "micronaut.executors.io.n-threads", threads,
                "micronaut.executors.io.parallelism", threads,
                EventLoops.THREADS, threads))
        .start();
  }
}
