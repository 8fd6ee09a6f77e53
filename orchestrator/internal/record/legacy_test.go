package record_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// TestLoadLegacyLayout reads a results.json of the older layout as one
// cell with one round per measured server.
func TestLoadLegacyLayout(t *testing.T) {
	run, err := record.Load(filepath.Join("testdata", "legacy"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Cells) != 1 {
		t.Fatalf("%d cells, want 1", len(run.Cells))
	}
	c := run.Cells[0]
	want := config.Cell{Scenario: "complex_proto", ServerCPUs: 1, ClientCPUs: 1, Connections: 50, Concurrency: 1000}
	if c.Cell != want {
		t.Errorf("cell = %+v, want %+v", c.Cell, want)
	}
	if len(c.Settings) != 9 || c.Placement.Shared != true {
		t.Errorf("settings %v, placement %+v: want the run's", c.Settings, c.Placement)
	}
	var ranked []string
	for _, s := range c.Servers {
		if s.Ranked() {
			ranked = append(ranked, s.Name)
		}
	}
	if !slices.Equal(ranked, []string{"go_grpc", "python_grpc"}) {
		t.Errorf("ranked servers = %v, want go_grpc and python_grpc", ranked)
	}
	g := c.Servers[0]
	if len(g.Rounds) != 1 || g.Rounds[0].Round != 1 || !g.Rounds[0].ClientBound || len(g.Rounds[0].Phases) != 3 ||
		g.Rounds[0].Load.RPS != 21560.1 || g.Rounds[0].Server.CPUAvgPercent != 61.2 {
		t.Errorf("go_grpc = %+v, want one round with the old measurement", g)
	}
	if !g.Rounds[0].Start.Equal(time.Date(2026, 11, 28, 9, 14, 30, 0, time.UTC)) {
		t.Errorf("round start = %v, want the first phase's", g.Rounds[0].Start)
	}
	if j := c.Servers[2]; j.Failure == nil || j.Failure.Phase != "build" || len(j.Rounds) != 0 {
		t.Errorf("java_grpc = %+v, want its build failure and no round", j)
	}
}
