package io.grpcbench.helloworld;

import io.micronaut.runtime.Micronaut;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Starts Micronaut; micronaut-grpc then starts the gRPC server on grpc.server.port. */
public class Application {
  private static final Logger logger = LoggerFactory.getLogger(Application.class);

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
