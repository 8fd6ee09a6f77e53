package io.grpcbench.helloworld;

import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import java.util.logging.Logger;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** Logs the benchmark's start-up line: the event loops Quarkus runs the calls on. */
@ApplicationScoped
public class StartLine {
  private static final Logger logger = Logger.getLogger(StartLine.class.getName());

  @ConfigProperty(name = "quarkus.vertx.event-loops-pool-size")
  int eventLoops;

  void onStart(@Observes StartupEvent event) {
    logger.info("grpcbench-server: workers=" + eventLoops);
  }
}
