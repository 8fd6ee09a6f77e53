# Stand-in for the official maven:3-eclipse-temurin-<java> image, for
# machines that cannot pull it: Debian's OpenJDK and Maven, with the host's
# trust store in Java's keystore (ca-certificates-java), so that Maven reaches
# Maven Central through an intercepting HTTPS proxy.
FROM debian:bookworm-slim
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates ca-certificates-java openjdk-17-jdk-headless maven \
 && rm -rf /var/lib/apt/lists/*
COPY host-trust-store.crt /usr/local/share/ca-certificates/host-trust-store.crt
RUN update-ca-certificates
ARG VERSION
ENV JAVA_VERSION=${VERSION} JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64 MAVEN_HOME=/usr/share/maven
CMD ["mvn"]
