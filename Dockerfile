# The orchestrator's image. `docker compose up` runs the suite from it, and the
# suite runs it again, inside each server's network namespace, as the
# readiness probe and the load client.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY orchestrator ./orchestrator
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /grpcbench ./orchestrator/cmd/grpcbench

# bench.txt names the commit that ran: from the history when the context has
# one, else from the COMMIT file of an image built from a checkout.
FROM golang:1.26-bookworm AS commit
COPY . /src
RUN git config --global --add safe.directory /src \
 && { git -C /src log -1 --pretty=format:'%h %cD %cn %s' 2>/dev/null || cat /src/COMMIT 2>/dev/null || echo 'unknown commit'; } > /COMMIT

FROM debian:bookworm-slim
# git checks out the third-party sources some servers pin (sources.json);
# Debian's plain-HTTP mirror needs no CA bundle.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /grpcbench /usr/local/bin/grpcbench
# The repository as the suite needs it when it runs in this container.
WORKDIR /grpcbench
COPY Dockerfile .dockerignore go.mod go.sum ./
COPY orchestrator ./orchestrator
COPY scenarios ./scenarios
COPY servers ./servers
COPY --from=commit /COMMIT ./COMMIT
ENTRYPOINT ["grpcbench"]
CMD ["bench"]
