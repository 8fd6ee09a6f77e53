package io.grpcbench.helloworld;

import java.util.Map;
import java.util.Set;
import java.util.logging.Logger;
import org.eclipse.microprofile.config.spi.ConfigSource;

/**
 * Sizes the Vert.x event loops from GRPC_SERVER_CPUS rounded up (at least 1), which plain
 * configuration cannot round; Quarkus deploys one HTTP server instance per event loop, and gRPC
 * calls run on them. A MicroProfile ConfigSource, registered through META-INF/services, which
 * Quarkus reads at start. Its ordinal puts it above application.properties and below environment
 * variables and system properties, so either can still set the property.
 */
public class ThreadsConfigSource implements ConfigSource {
  private static final Logger logger = Logger.getLogger(ThreadsConfigSource.class.getName());
  private static final String EVENT_LOOPS = "quarkus.vertx.event-loops-pool-size";

  private final Map<String, String> properties;

  public ThreadsConfigSource() {
    Integer threads = threads();
    properties = threads == null ? Map.of() : Map.of(EVENT_LOOPS, threads.toString());
  }

  /** GRPC_SERVER_CPUS rounded up, at least 1; null (Quarkus's defaults) when unset or invalid. */
  static Integer threads() {
    String s = System.getenv("GRPC_SERVER_CPUS");
    if (s == null || s.isBlank()) {
      return null;
    }
    try {
      double cpus = Double.parseDouble(s.trim());
      if (cpus > 0 && !Double.isInfinite(cpus)) {
        return (int) Math.max(1, Math.ceil(cpus));
      }
    } catch (NumberFormatException e) {
      // fall through
    }
    logger.warning("ignoring invalid GRPC_SERVER_CPUS=" + s);
    return null;
  }

  @Override
  public Map<String, String> getProperties() {
    return properties;
  }

  @Override
  public Set<String> getPropertyNames() {
    return properties.keySet();
  }

  @Override
  public String getValue(String propertyName) {
    return properties.get(propertyName);
  }

  @Override
  public String getName() {
    return "grpcbench-threads";
  }

  @Override
  public int getOrdinal() {
    return 275;
  }
}
