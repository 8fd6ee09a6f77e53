package bench

// The load tools the runs of these tests measure with, as the binary
// imports them.
import (
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/ghz"
	_ "github.com/grpcbench/grpcbench/orchestrator/internal/load/h2"
)
