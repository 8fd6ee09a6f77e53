# Stand-in for the official rust:<version>-bookworm image, for machines that
# cannot pull it: this host's Rust toolchain (rustc, cargo, the standard
# library) on a debootstrapped Debian with the C toolchain Rust links with,
# and the host's trust store, so that cargo reaches crates.io through an
# intercepting HTTPS proxy. Same variables and PATH as the official image.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git gcc g++ libc6-dev make pkg-config \
 && rm -rf /var/lib/apt/lists/*
# One certificate a file: update-ca-certificates, and Java's keystore hook
# above all, read only the first of a bundle.
COPY host-trust-store.crt /tmp/host-trust-store.crt
RUN csplit -s -z -f /usr/local/share/ca-certificates/host- -b '%03d.crt' /tmp/host-trust-store.crt '/-----BEGIN CERTIFICATE-----/' '{*}' \
 && rm /tmp/host-trust-store.crt \
 && update-ca-certificates
COPY rust /usr/local/rust
ARG VERSION
ENV RUST_VERSION=${VERSION} RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo
ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /usr/local/cargo/bin && chmod -R a+w /usr/local/cargo && rustc --version && cargo --version
