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
COPY host-trust-store.crt /usr/local/share/ca-certificates/host-trust-store.crt
RUN update-ca-certificates
ARG VERSION
ENV PYTHON_VERSION=${VERSION} PIP_CERT=/etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
