package harness_test

// The suite's tests measure with h2, which registers itself.
import _ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2"
