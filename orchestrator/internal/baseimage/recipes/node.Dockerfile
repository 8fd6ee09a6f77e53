# Stand-in for the official node:<major>-bookworm-slim image, for machines
# that cannot pull it: this host's node binary and its npm on a
# debootstrapped Debian. npm is told of the host's trust store, so that it
# reaches the registry through an intercepting HTTPS proxy.
FROM debian:bookworm-slim
COPY host-trust-store.crt /usr/local/share/ca-certificates/host-trust-store.crt
COPY node/node /usr/local/bin/node
COPY node/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && node --version && npm --version
ARG VERSION
ENV NODE_VERSION=${VERSION} NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host-trust-store.crt
CMD ["node"]
