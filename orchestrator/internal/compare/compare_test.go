package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
)

func run(cpus config.CPUs, servers map[string][]float64, order ...string) report.Run {
	cell := report.Cell{Cell: config.Cell{Scenario: "complex_proto", ServerCPUs: cpus, ClientCPUs: 1, Connections: 50, Concurrency: 1000}}
	for _, name := range order {
		s := report.Server{Name: name}
		for i, rps := range servers[name] {
			s.Rounds = append(s.Rounds, report.Round{Round: i + 1, Measurement: report.Measurement{
				// p99 as a server that keeps its calls in flight would show it
				Load: &load.Result{Engine: "ghz", RPS: rps, Requests: 10, OK: 10, Latency: load.Latency{P99: time.Duration(float64(time.Second) * 10 / rps)}}}})
		}
		cell.Servers = append(cell.Servers, s)
	}
	return report.Run{ID: "x", Cells: []report.Cell{cell}}
}

func TestARunAgainstItselfShowsNoChange(t *testing.T) {
	a := run(1, map[string][]float64{"go_grpc": {100, 104, 98}, "rust_tonic_st": {200, 190, 210}}, "go_grpc", "rust_tonic_st")
	changes := Runs(a, a)
	if len(changes) != 2 {
		t.Fatalf("%d changes", len(changes))
	}
	var b bytes.Buffer
	if err := WriteTable(&b, "a", "a", changes); err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if c.RPS.Diff.Significant || c.RPS.Diff.Change != 0 || c.P99.Diff.Significant || c.P99.Diff.Change != 0 {
			t.Errorf("%s changed against itself: %+v %+v", c.Server, c.RPS.Diff, c.P99.Diff)
		}
	}
	out := b.String()
	if strings.Count(out, "~ (+0.0%)") != 4 || !strings.Contains(out, "fewer than 4 rounds a side") {
		t.Errorf("table:\n%s", out)
	}
}

func TestASignificantChange(t *testing.T) {
	a := run(1, map[string][]float64{"rust_tonic_mt": {100, 101, 99, 102, 98, 100}}, "rust_tonic_mt")
	b := run(1, map[string][]float64{"rust_tonic_mt": {150, 152, 149, 151, 148, 150}}, "rust_tonic_mt")
	changes := Runs(a, b)
	if len(changes) != 1 || !changes[0].RPS.Diff.Significant || changes[0].RPS.Diff.Change != 0.5 {
		t.Fatalf("changes %+v", changes)
	}
	if p99 := changes[0].P99; !p99.Diff.Significant || math.Abs(p99.Diff.Change-(100.0/150-1)) > 1e-6 || p99.A.Median != float64(100*time.Millisecond) {
		t.Errorf("p99 %+v", p99)
	}
	var out bytes.Buffer
	if err := WriteTable(&out, "one", "two", changes); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "+50.0%") || !strings.Contains(out.String(), "100.00 ms ±2%  66.67 ms ±1%  -33.3%") || strings.Contains(out.String(), "fewer than 4") {
		t.Errorf("table:\n%s", out.String())
	}
	// Runs of one cell each are compared whatever their settings, and say
	// which differ.
	a.Cells[0].Settings = []config.Setting{{Name: "GRPC_SERVER_CPUS", Value: "1"}, {Name: "GRPC_BENCHMARK_ROUNDS", Value: "6"}, {Name: "GRPC_RESULTS_DIR", Value: "one"}}
	two := run(2, map[string][]float64{"rust_tonic_mt": {150, 152, 149, 151, 148, 150}}, "rust_tonic_mt")
	two.Cells[0].Settings = []config.Setting{{Name: "GRPC_SERVER_CPUS", Value: "2"}, {Name: "GRPC_BENCHMARK_ROUNDS", Value: "6"}, {Name: "GRPC_RESULTS_DIR", Value: "two"}}
	got := Runs(a, two)
	if len(got) != 1 || got[0].Differs != "GRPC_SERVER_CPUS=1→2" || !got[0].RPS.Diff.Significant {
		t.Errorf("1 CPU against 2: %+v", got)
	}
	// In a matrix, only cells of the same settings are compared.
	a.Cells = append(a.Cells, run(4, map[string][]float64{"rust_tonic_mt": {1}}, "rust_tonic_mt").Cells[0])
	if got := Runs(a, two); len(got) != 0 {
		t.Errorf("cells of other settings compared: %+v", got)
	}
}
