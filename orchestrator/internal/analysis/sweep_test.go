package analysis_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// sweepShares are the rate cells of sweepRun.
var sweepShares = []float64{0.25, 0.5, 0.9, 1.2}

// sweepRun is the recorded run with a sweep of three of its servers at
// 25%, 50%, 90% and 120% of their capacity and the objective p99<10ms.
// Their latency follows a queue's, base/(1−ρ), with a base of their own
// (go_grpc 0.2 ms, node_grpcjs_st 0.5 ms, python_grpc 1.2 ms), and 120% is
// more than any sustains: go_grpc meets the objective up to 90%,
// node_grpcjs_st to 50%, python_grpc to 25%.
func sweepRun(t *testing.T) record.Run {
	t.Helper()
	run, err := record.Load(recordedRun)
	if err != nil {
		t.Fatal(err)
	}
	slo := record.Setting{Name: "GRPC_LATENCY_SLO", Value: "p99<10ms", Given: true}
	run.Settings = append(run.Settings, slo, record.Setting{Name: "GRPC_LOAD_RATES", Value: "25%,50%,90%,120%", Given: true})
	base := map[string]time.Duration{"go_grpc": 200 * time.Microsecond, "node_grpcjs_st": 500 * time.Microsecond, "python_grpc": 1200 * time.Microsecond}
	sat := run.Cells[0]
	for _, share := range sweepShares {
		rate := config.Rate{Share: share}
		c := plan.Of(sat).WithRate(rate).Record()
		c.Placement = sat.Placement
		c.Settings = append(slices.Clone(sat.Settings), slo, record.Setting{Name: "GRPC_LOAD_RATES", Value: rate.String(), Given: true})
		for _, s := range sat.Servers {
			b, ok := base[s.Name]
			if !ok {
				continue
			}
			capacity := s.Rounds[0].Load.RPS
			if c := s.Rounds[0].Capacity; c != nil {
				capacity = c.Load.RPS
			}
			srv := record.Server{Name: s.Name, Image: s.Image, Stack: s.Stack, Library: s.Library, Version: s.Version, GRPC: s.GRPC}
			for r := 1; r <= 3; r++ {
				target := share * capacity
				achieved, p50 := target*(1-0.002*float64(r-2)), time.Duration(float64(b)/(1-share))
				if share >= 1 {
					achieved, p50 = 0.97*capacity, 2*time.Second
				}
				p50 = time.Duration(float64(p50) * (1 + 0.02*float64(r-2)))
				n := uint64(achieved * 5)
				tail := func(q float64) time.Duration { return time.Duration(float64(p50) * (1 + math.Log2(0.5/(1-q)))) }
				srv.Rounds = append(srv.Rounds, record.Round{Round: r, TargetRPS: target, Measurement: record.Measurement{
					Load: &record.Result{Tool: "h2", Requests: n, OK: n, Statuses: map[string]uint64{"OK": n}, RPS: achieved,
						Latency: record.Latency{Count: n, Mean: p50, P50: p50, P90: p50 * 23 / 10, P95: p50 * 3, P99: p50 * 46 / 10, P999: p50 * 69 / 10, Max: p50 * 20,
							Percentiles: percentiles(tail)}},
					Server: record.Usage{Samples: 5, CPUAvgPercent: 100 * min(share, 1), MemoryAvgBytes: 30 << 20},
					Client: record.Usage{Samples: 5, CPUAvgPercent: 40 * min(share, 1)},
				}})
			}
			c.Servers = append(c.Servers, srv)
		}
		run.Cells = append(run.Cells, c)
	}
	return run
}

// TestSLORankingTakesTheHighestRateThatMetIt: each server ranks at the
// rate achieved at its highest share that met p99<10ms in every round, an
// unsustained rate is never that, and the rows have groups.
func TestSLORankingTakesTheHighestRateThatMetIt(t *testing.T) {
	run := sweepRun(t)
	sweeps := analysis.Of(run).Sweeps
	if len(sweeps) != 1 || sweeps[0].Cell != 0 || !sweeps[0].SLO.Set() {
		t.Fatalf("sweeps %+v, want one of cell 0 with its objective", sweeps)
	}
	sw := sweeps[0]
	if len(sw.Points) != 3*len(sweepShares) {
		t.Fatalf("%d points, want %d", len(sw.Points), 3*len(sweepShares))
	}
	for _, p := range sw.Points {
		if (p.Unsustained != "") != (p.Rate == "120%") {
			t.Errorf("%s at %s: unsustained %q", p.Server, p.Rate, p.Unsustained)
		}
	}
	rows, at, none := sw.Objective.Rows, sw.Objective.At, sw.Objective.None
	var got []string
	for _, r := range rows {
		got = append(got, r.Name+"@"+at[r.Name].Rate)
		if r.Group == "" || r.RPS.N != 3 {
			t.Errorf("%s: group %q over %d rounds", r.Name, r.Group, r.RPS.N)
		}
	}
	if want := "go_grpc@90%,node_grpcjs_st@50%,python_grpc@25%"; strings.Join(got, ",") != want || len(none) != 0 {
		t.Errorf("ranking %s (none: %v), want %s", strings.Join(got, ","), none, want)
	}
}

// percentiles is the latency at each of the quantiles a histogram keeps.
func percentiles(at func(q float64) time.Duration) []record.Percentile {
	var out []record.Percentile
	for _, p := range load.PercentileList(at) {
		out = append(out, record.Percentile{Q: p.Q, Latency: p.Latency})
	}
	return out
}
