package io.grpcbench.helloworld;

import java.util.Map;

/**
 * Serves TLS when GRPC_TLS_CERT and GRPC_TLS_KEY are set (docs/adding-a-server.md#tls): the PEM
 * pair as the default key store of Quarkus's TLS registry, which the HTTP server (and the gRPC
 * services on it) uses on its HTTPS port, moved to the benchmark's port, with the plaintext port
 * closed. One without the other ends the server with status 2; neither leaves the configuration
 * as it is. A ConfigSource, registered through META-INF/services as ThreadsConfigSource is.
 */
public class TlsConfigSource extends FixedConfigSource {
  public TlsConfigSource() {
    super("grpcbench-tls", properties());
  }

  private static Map<String, String> properties() {
    String cert = System.getenv("GRPC_TLS_CERT");
    String key = System.getenv("GRPC_TLS_KEY");
    boolean hasCert = cert != null && !cert.isEmpty();
    boolean hasKey = key != null && !key.isEmpty();
    if (hasCert != hasKey) {
      System.err.println(
          hasCert
              ? "grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not"
              : "grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not");
      // Not System.exit, as in ThreadsConfigSource: the JVM would hang.
      Runtime.getRuntime().halt(2);
    }
    if (!hasCert) {
      return Map.of();
    }
    return Map.of(
        "quarkus.tls.key-store.pem.server.cert", cert,
        "quarkus.tls.key-store.pem.server.key", key,
        "quarkus.http.ssl-port", "50051",
        "quarkus.http.insecure-requests", "disabled");
  }
}
