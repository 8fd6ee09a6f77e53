# make bench  - benchmark every server (settings: environment, then .env)
# make test   - the tests, against a real Docker engine
# Both start a Docker engine first when none answers (see scripts/ensure-engine).

GO ?= go
BIN := bin/grpcbench

# Third-party sources that servers pin (servers/*/sources.json) come from
# the git bundles beside the repository when their URL cannot be reached.
ifeq ($(origin GRPC_SOURCE_MIRROR),undefined)
ifneq ($(wildcard ../shared/sources),)
export GRPC_SOURCE_MIRROR := ../shared/sources
endif
endif

.PHONY: bench test engine images up compose-plugin bench-engines accuracy matrix check-servers $(BIN)

bench: engine $(BIN)
	./$(BIN) bench

# The end-to-end tests include a `docker compose up`, hence the plugin.
test: engine compose-plugin
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...

engine:
	@scripts/ensure-engine

# Every server (or GRPC_BENCHMARKS) x every scenario through the conformance
# gate: build, start, readiness, echo, concurrency, unknown method.
check-servers: engine $(BIN)
	./$(BIN) check

# The load engines side by side on one server (go_grpc unless SERVER=...);
# the last line is `per-core ratio: engine/ghz=<x> engine/h2load=<y>`.
bench-engines: engine $(BIN)
	./$(BIN) engines --server $(or $(SERVER),go_grpc)

# h2 against h2load on every server (or GRPC_BENCHMARKS) in shapes 1a, 2b
# and 3b, three alternating rounds each: docs/engine-accuracy.md. 18 loads
# per server: with the default 20 s + 5 s about two hours for the catalog,
# 40 minutes with GRPC_BENCHMARK_DURATION=5s GRPC_BENCHMARK_WARMUP=3s.
accuracy: engine $(BIN)
	./$(BIN) accuracy

# The grpcxx matrix (seed 002): every server under the six load shapes,
# one run folder per shape.
matrix: engine $(BIN)
	@for p in 1a 1b 2a 2b 3a 3b; do \
	  echo "== GRPC_LOAD_PROFILE=$$p"; GRPC_LOAD_PROFILE=$$p ./$(BIN) bench || exit $$?; \
	done

# Base images, client image and server images, without a benchmark: run once
# before `docker compose up` on a machine that cannot pull.
images: engine $(BIN)
	./$(BIN) images

# docker compose up, with what it needs on a fresh machine.
up: images compose-plugin
	docker compose up

compose-plugin:
	@scripts/install-compose-plugin

$(BIN):
	$(GO) build -o $(BIN) ./orchestrator/cmd/grpcbench
