package io.grpcbench.helloworld;

import io.micronaut.runtime.Micronaut;
import java.util.HashMap;
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

  /**
   * TLS from the PEM chain and PKCS#8 key named by GRPC_TLS_CERT and GRPC_TLS_KEY
   * (docs/adding-a-server.md#tls), as micronaut-grpc's grpc.server.ssl settings (resolved as
   * file: resources); none when neither is set; one without the other ends the server with
   * status 2.
   */
  static Map<String, Object> tls() {
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
      return Map.of();
    }
    return Map.of(
        "grpc.server.ssl.cert-chain", "file:" + cert, "grpc.server.ssl.private-key", "file:" + key);
  }

  public static void main(String[] args) {
    Map<String, Object> properties = new HashMap<>(tls());
    int threads = threads();
    logger.info("grpcbench-server: workers={}", threads);
    // micronaut-grpc hands the "io" executor to NettyServerBuilder.executor, so it runs the
    // calls: its type (application.yml: fixed, instead of the default unbounded cached pool)
    // gets the CPU quota as its size, a fixed pool's threads or a work-stealing pool's
    // parallelism. grpcbench.threads sizes the worker event loops (EventLoops).
    properties.put("micronaut.executors.io.n-threads", threads);
    properties.put("micronaut.executors.io.parallelism", threads);
    properties.put(EventLoops.THREADS, threads);
    Micronaut.build(args)
        .mainClass(Application.class)
        .properties(properties)
        .start();
  }
}
