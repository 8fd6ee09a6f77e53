package compare

import (
	"bytes"
	"strings"
	"testing"

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
				Load: &load.Result{Engine: "ghz", RPS: rps, Requests: 10, OK: 10}}})
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
		if c.Diff.Significant || c.Diff.Change != 0 {
			t.Errorf("%s changed against itself: %+v", c.Server, c.Diff)
		}
	}
	out := b.String()
	if strings.Count(out, "~ (+0.0%)") != 2 || !strings.Contains(out, "fewer than 4 rounds a side") {
		t.Errorf("table:\n%s", out)
	}
}

func TestASignificantChange(t *testing.T) {
	a := run(1, map[string][]float64{"rust_tonic_mt": {100, 101, 99, 102, 98, 100}}, "rust_tonic_mt")
	b := run(1, map[string][]float64{"rust_tonic_mt": {150, 152, 149, 151, 148, 150}}, "rust_tonic_mt")
	changes := Runs(a, b)
	if len(changes) != 1 || !changes[0].Diff.Significant || changes[0].Diff.Change != 0.5 {
		t.Fatalf("changes %+v", changes)
	}
	var out bytes.Buffer
	if err := WriteTable(&out, "one", "two", changes); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "+50.0%") || strings.Contains(out.String(), "fewer than 4") {
		t.Errorf("table:\n%s", out.String())
	}
	// Runs of one cell each are compared whatever their settings, and say
	// which differ.
	a.Cells[0].Settings = []config.Setting{{Name: "GRPC_SERVER_CPUS", Value: "1"}, {Name: "GRPC_BENCHMARK_ROUNDS", Value: "6"}}
	two := run(2, map[string][]float64{"rust_tonic_mt": {150, 152, 149, 151, 148, 150}}, "rust_tonic_mt")
	two.Cells[0].Settings = []config.Setting{{Name: "GRPC_SERVER_CPUS", Value: "2"}, {Name: "GRPC_BENCHMARK_ROUNDS", Value: "6"}}
	got := Runs(a, two)
	if len(got) != 1 || got[0].Differs != "GRPC_SERVER_CPUS=1→2" || !got[0].Diff.Significant {
		t.Errorf("1 CPU against 2: %+v", got)
	}
	// In a matrix, only cells of the same settings are compared.
	a.Cells = append(a.Cells, run(4, map[string][]float64{"rust_tonic_mt": {1}}, "rust_tonic_mt").Cells[0])
	if got := Runs(a, two); len(got) != 0 {
		t.Errorf("cells of other settings compared: %+v", got)
	}
}
