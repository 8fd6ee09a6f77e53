package report_test

// The recorded runs' stats files are Docker's, read by its backend.
import _ "github.com/grpcbench/grpcbench/orchestrator/internal/docker"
