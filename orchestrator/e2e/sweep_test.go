//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// TestRateSweep runs go_grpc at 25% and 50% of its capacity, measured in
// the same run, with a lenient latency objective: each rate cell loads
// the server with h2 at its share of the saturation round's req/s, holds
// it, and the files show the points, the curve and the objective's
// ranking.
func TestRateSweep(t *testing.T) {
	api := engine(t)
	env := benchEnv(t, map[string]string{"GRPC_LOAD_RATES": "25%,50%", "GRPC_LATENCY_SLO": "p99<1s", "GRPC_LOAD_TOOL": "h2",
		"GRPC_BENCHMARK_DURATION": "2s", "GRPC_BENCHMARK_WARMUP": "1s"})
	res := runBinary(t, repoRoot(t), env, "bench")
	if res.code != 0 {
		t.Fatalf("exit code %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	dir := runFolder(t, env)
	bench, run := readRun(t, dir)
	if len(run.Cells) != 3 {
		t.Fatalf("%d cells, want the saturation cell and 2 rate cells", len(run.Cells))
	}
	capacity := run.Cells[0].Servers[0].Rounds[0].Load.RPS
	for i, share := range []float64{0.25, 0.5} {
		c := run.Cells[1+i]
		r := c.Servers[0].Rounds[0]
		if c.Rate != (record.Rate{Share: share}) || r.Load == nil {
			t.Fatalf("cell %d: rate %+v, round %+v", 1+i, c.Rate, r)
		}
		if r.TargetRPS != share*capacity || r.Load.Tool != "h2" || r.Capacity != nil {
			t.Errorf("%s: target %.0f (want %.0f of %.0f), tool %s, capacity %v", plan.Of(c).Name(), r.TargetRPS, share*capacity, capacity, r.Load.Tool, r.Capacity)
		}
		// Whether it kept up depends on the machine; that the rate achieved
		// is said beside the target does not.
		if line := fmt.Sprintf("go_grpc: target %.0f req/s, achieved %.0f", r.TargetRPS, r.Load.RPS); !strings.Contains(bench, line) {
			t.Errorf("bench.txt does not say %q:\n%s", line, bench)
		}
		if _, err := os.Stat(filepath.Join(dir, "go_grpc", "complex_proto_cpu1_rate"+[]string{"25", "50"}[i]+"pct", "round-1", "load.json")); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(bench, "== latency objective p99<1s: sustainable throughput") || !strings.Contains(bench, "go_grpc: target ") {
		t.Errorf("bench.txt has no objective's ranking or targets:\n%s", bench)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `data-chart="curve"`) || !strings.Contains(string(page), `data-chart="hdr"`) {
		t.Error("report.html has no latency–throughput chart or percentile plot")
	}
	csv, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), ",25%,") || !strings.Contains(string(csv), ",50%,") {
		t.Errorf("results.csv has no rate rows:\n%s", csv)
	}
	assertNoContainersLeft(t, api)
}
