# Stand-in for the official eclipse-temurin:<java>-jre image, for machines
# that cannot pull it: Debian's OpenJDK runtime.
FROM debian:bookworm-slim
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
ARG VERSION
ENV JAVA_VERSION=${VERSION} JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
