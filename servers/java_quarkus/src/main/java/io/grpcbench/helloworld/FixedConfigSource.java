package io.grpcbench.helloworld;

import java.util.Map;
import java.util.Set;
import org.eclipse.microprofile.config.spi.ConfigSource;

/**
 * A MicroProfile ConfigSource of properties fixed at start. Its ordinal puts it above
 * application.properties and below environment variables and system properties, so either can
 * still set a property.
 */
abstract class FixedConfigSource implements ConfigSource {
  private final String name;
  private final Map<String, String> properties;

  FixedConfigSource(String name, Map<String, String> properties) {
    this.name = name;
    this.properties = properties;
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
    return name;
  }

  @Override
  public int getOrdinal() {
    return 275;
  }
}
