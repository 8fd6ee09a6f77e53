# make bench  - benchmark every server (settings: environment, then .env)
# make test   - every test CI runs: the unit tests, those that need root,
#               the end-to-end ones against a real Docker engine, then the
#               Kubernetes backend's against the real local cluster
# make unit    - the unit tests alone: no root, network or Docker engine
# Both start a Docker engine first when none answers (see scripts/ensure-engine).

GO ?= go
BIN := bin/grpcbench
GOLANGCI_LINT_VERSION := v2.15.0
LINT := bin/golangci-lint-$(GOLANGCI_LINT_VERSION)


# Third-party sources that servers pin (servers/*/sources.json) come from
# the git bundles beside the repository when their URL cannot be reached.
ifeq ($(origin GRPC_SOURCE_MIRROR),undefined)
ifneq ($(wildcard ../shared/sources),)
export GRPC_SOURCE_MIRROR := ../shared/sources
endif
endif

.PHONY: bench test unit unit-root e2e e2e-cluster lint soak engine images up compose-plugin bench-tools accuracy matrix check-servers $(BIN)

bench: engine $(BIN)
	./$(BIN) bench

test: unit unit-root e2e e2e-cluster

# Every unit test, with the race detector; no root, network or Docker
# engine needed (nor does `go test ./...`, which builds no tagged test).
unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 10m ./orchestrator/internal/... ./orchestrator/cmd/...

# The tests behind the `root` build tag, in the packages that have them:
# they need root (they mount tmpfs file systems) and Chromium, which they
# install with apt-get (root and a Debian mirror) when it is missing.
ROOT_TEST_PACKAGES = $(sort $(dir $(shell grep -rl --include='*_test.go' '^//go:build root' orchestrator)))
unit-root:
	$(GO) vet -tags root $(addprefix ./,$(ROOT_TEST_PACKAGES))
	$(GO) test -tags root -race -count=1 -timeout 10m $(addprefix ./,$(ROOT_TEST_PACKAGES))

# The end-to-end tests, behind the `e2e` build tag: the real binary, Docker
# engine, images and traffic (about 40 minutes). They include a `docker
# compose up`, hence the plugin.
e2e: engine compose-plugin
	$(GO) vet -tags e2e ./orchestrator/e2e/
	$(GO) test -tags e2e -count=1 -timeout 40m ./orchestrator/e2e/

# The Kubernetes backend's end-to-end test (build tags e2e and cluster)
# against the real single-node cluster of scripts/local-cluster, which it
# starts when it does not run (as root) and stops after: on a fresh machine
# that first builds the cluster's binaries (about 16 minutes, cached after
# in ~/.cache/grpcbench), see docs/tests.md for the times.
e2e-cluster: engine
	$(GO) vet -tags e2e,cluster ./orchestrator/e2e/
	$(GO) test -tags e2e,cluster -count=1 -timeout 40m -run '^TestCluster$$' ./orchestrator/e2e/

# 50 back-to-back short runs of one server: nothing left on the engine,
# the orchestrator's memory flat (scripts/soak). Not part of `make test`.
soak: engine $(BIN)
	scripts/soak

lint: $(LINT)
	$(LINT) run ./...

$(LINT):
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv bin/golangci-lint $(LINT)

engine:
	@scripts/ensure-engine

# Every server (or GRPC_BENCHMARKS) x every scenario through the conformance
# gate: build, start, readiness, echo, concurrency, unknown method.
check-servers: engine $(BIN)
	./$(BIN) check

# The load tools side by side on one server (go_grpc unless SERVER=...),
# under the settings' shape or each of PROFILES (e.g. PROFILES=1a,2b,3b);
# each shape ends with `per-core ratio[ in <shape>]: h2/ghz=<x> h2/h2load=<y>` (the tool compared, --tool, against each other).
bench-tools: engine $(BIN)
	./$(BIN) tools --server $(or $(SERVER),go_grpc) $(if $(PROFILES),--profiles $(PROFILES))

# h2 against h2load on every server (or GRPC_BENCHMARKS) in shapes 1a, 2b
# and 3b, three alternating rounds each: docs/tool-accuracy.md. 18 loads
# per server: with the default 20 s + 5 s about two hours for the catalog,
# 40 minutes with GRPC_BENCHMARK_DURATION=5s GRPC_BENCHMARK_WARMUP=3s.
accuracy: engine $(BIN)
	./$(BIN) accuracy

# The grpcxx matrix (seed 002): every server under the six load shapes, in
# one run (one bench.txt section per shape).
matrix: engine $(BIN)
	GRPC_LOAD_PROFILE=$(or $(GRPC_LOAD_PROFILE),1a,1b,2a,2b,3a,3b) ./$(BIN) bench

# Base images, client image and server images, without a benchmark: run once
# before `docker compose up` on a machine that cannot pull.
images: engine $(BIN)
	./$(BIN) images

# docker compose up, with what it needs on a fresh machine.
up: images compose-plugin
	docker compose up

compose-plugin:
	@scripts/install-compose-plugin

# Static, so that the load client image can be this very binary.
$(BIN):
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN) ./orchestrator/cmd/grpcbench
