# Stand-in for the official python:<version>-slim-bookworm image, for
# machines that cannot pull it: Debian's own Python (3.11 in bookworm) with
# pip, set up as the official image behaves (pip installs system-wide; python
# and pip on PATH), and the host's trust store for pip behind an
# intercepting HTTPS proxy.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 python3-pip python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && rm -f /usr/lib/python3.*/EXTERNALLY-MANAGED \
 && ln -s /usr/bin/python3 /usr/local/bin/python \
 && ln -s /usr/bin/pip3 /usr/local/bin/pip
# One certificate a file: update-ca-certificates, and Java's keystore hook
# above all, read only the first of a bundle.
COPY host-trust-store.crt /tmp/host-trust-store.crt
RUN csplit -s -z -f /usr/local/share/ca-certificates/host- -b '%03d.crt' /tmp/host-trust-store.crt '/-----BEGIN CERTIFICATE-----/' '{*}' \
 && rm /tmp/host-trust-store.crt \
 && update-ca-certificates
ARG VERSION
ENV PYTHON_VERSION=${VERSION} PIP_CERT=/etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
