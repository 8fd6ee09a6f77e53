#!/bin/sh
# ZIO's default scheduler (one worker per processor), grpc-java and Netty size their pools from
# the processors the JVM sees: make that GRPC_SERVER_CPUS rounded up (at least 1). Unset or
# invalid, the JVM's own count (from the container's CPU quota) stays.
cpus=""
if [ -n "${GRPC_SERVER_CPUS:-}" ]; then
  cpus=$(awk -v c="$GRPC_SERVER_CPUS" 'BEGIN {
    if (c !~ /^[ ]*[+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?[ ]*$/ || c + 0 <= 0) exit
    n = int(c + 0); if (n < c + 0) n++; print n }')
  [ -n "$cpus" ] || echo "ignoring invalid GRPC_SERVER_CPUS=$GRPC_SERVER_CPUS" >&2
fi
exec java -XX:MaxRAMPercentage=75 ${cpus:+-XX:ActiveProcessorCount=$cpus} -jar /app/scala-zio.jar
