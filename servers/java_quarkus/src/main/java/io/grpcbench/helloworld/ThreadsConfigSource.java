package io.grpcbench.helloworld;

import java.util.Map;

/**
 * Sizes the Vert.x event loops by the benchmark's rule (docs/adding-a-server.md#workers), which
 * plain configuration cannot round; Quarkus deploys one HTTP server instance per event loop, and
 * gRPC calls run on them. A ConfigSource, registered through META-INF/services, which Quarkus
 * reads at start; StartLine logs the value Quarkus uses.
 */
public class ThreadsConfigSource extends FixedConfigSource {
  public ThreadsConfigSource() {
    super(
        "grpcbench-threads",
        Map.of("quarkus.vertx.event-loops-pool-size", Integer.toString(threads())));
  }

  /**
   * GRPC_SERVER_CPUS rounded up, at most the JVM's processor count, 1 when unset or empty; an
   * invalid value ends the server with status 2.
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
      // Not System.exit: Quarkus's shutdown hook waits for the start this config load is part
      // of, and the JVM hangs.
      Runtime.getRuntime().halt(2);
    }
    return (int) Math.min(Math.ceil(cpus), Runtime.getRuntime().availableProcessors());
  }
}
