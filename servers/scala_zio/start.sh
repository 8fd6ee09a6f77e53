#!/bin/sh
# ZIO's default scheduler (one worker per processor), grpc-java and Netty size their pools from
# the processors the JVM sees: make that the benchmark's worker count
# (docs/adding-a-server.md#workers): GRPC_SERVER_CPUS rounded up, at most the processors the
# container sees, 1 when unset or empty; an invalid value ends the server with status 2.
workers=1
if [ -n "${GRPC_SERVER_CPUS:-}" ]; then
  workers=$(awk -v c="$GRPC_SERVER_CPUS" -v max="$(nproc)" 'BEGIN {
    if (c !~ /^[+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$/ || c + 0 <= 0) exit
    n = int(c + 0); if (n < c + 0) n++; if (n > max) n = max; print n }')
  if [ -z "$workers" ]; then
    echo "grpcbench-server: GRPC_SERVER_CPUS=\"$GRPC_SERVER_CPUS\" is not a positive number" >&2
    exit 2
  fi
fi
# TLS needs both the certificate chain and its key (docs/adding-a-server.md#tls); the server reads
# them from these paths.
if [ -n "${GRPC_TLS_CERT:-}" ] && [ -z "${GRPC_TLS_KEY:-}" ]; then
  echo "grpcbench-server: GRPC_TLS_CERT is set but GRPC_TLS_KEY is not" >&2
  exit 2
fi
if [ -z "${GRPC_TLS_CERT:-}" ] && [ -n "${GRPC_TLS_KEY:-}" ]; then
  echo "grpcbench-server: GRPC_TLS_KEY is set but GRPC_TLS_CERT is not" >&2
  exit 2
fi
exec java -XX:MaxRAMPercentage=75 -XX:ActiveProcessorCount="$workers" -jar /app/scala-zio.jar
