# Stand-in for the official golang:<version>-bookworm image, for machines that
# cannot pull it: the host's own Go toolchain on a debootstrapped Debian, with
# the host's trust store so that builds reach the module proxy through an
# intercepting HTTPS proxy. Same paths and variables as the official image.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git gcc libc6-dev make pkg-config \
 && rm -rf /var/lib/apt/lists/*
# One certificate a file: update-ca-certificates, and Java's keystore hook
# above all, read only the first of a bundle.
COPY host-trust-store.crt /tmp/host-trust-store.crt
RUN csplit -s -z -f /usr/local/share/ca-certificates/host- -b '%03d.crt' /tmp/host-trust-store.crt '/-----BEGIN CERTIFICATE-----/' '{*}' \
 && rm /tmp/host-trust-store.crt \
 && update-ca-certificates
COPY go /usr/local/go
ARG VERSION
ENV GOLANG_VERSION=${VERSION} GOTOOLCHAIN=local GOPATH=/go
ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /go/src /go/bin && chmod -R 1777 /go
WORKDIR /go
