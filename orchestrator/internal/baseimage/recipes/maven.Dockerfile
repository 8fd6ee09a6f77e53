# Stand-in for the official maven:3-eclipse-temurin-<java> image, for
# machines that cannot pull it: Debian's OpenJDK and Maven, with the host's
# trust store in Java's keystore (ca-certificates-java), so that Maven reaches
# Maven Central through an intercepting HTTPS proxy.
FROM debian:bookworm-slim
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates ca-certificates-java openjdk-17-jdk-headless maven \
 && rm -rf /var/lib/apt/lists/*
# One certificate a file: update-ca-certificates, and Java's keystore hook
# above all, read only the first of a bundle.
COPY host-trust-store.crt /tmp/host-trust-store.crt
RUN csplit -s -z -f /usr/local/share/ca-certificates/host- -b '%03d.crt' /tmp/host-trust-store.crt '/-----BEGIN CERTIFICATE-----/' '{*}' \
 && rm /tmp/host-trust-store.crt \
 && update-ca-certificates
ARG VERSION
ENV JAVA_VERSION=${VERSION} JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 MAVEN_HOME=/usr/share/maven
CMD ["mvn"]
