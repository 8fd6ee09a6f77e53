package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// sweepBench is a run of servers a (capacity 3000 req/s by h2) and b
// (6000) under extra settings, its cells set up from them; warmup, when
// not nil, is how long the steady-state rule warms up a ghz load.
func sweepBench(t *testing.T, extra map[string]string, warmup func(string, int) time.Duration) (*testBench, *script) {
	t.Helper()
	sc := &script{capacity: func(server string, _ int) float64 {
		return map[string]float64{"a": 3000, "b": 6000}[server]
	}, warmup: warmup}
	s := newTestBench(t, sc, "a", "b")
	vars := map[string]string{"GRPC_IMAGE_NAME": "test", "GRPC_BENCHMARK_WARMUP": "1ms", "GRPC_BENCHMARK_DURATION": "3ms", "GRPC_BENCHMARK_ROUNDS": "3"}
	for k, v := range extra {
		vars[k] = v
	}
	cfg, err := config.Parse(vars, config.Offered(load.Runners()))
	if err != nil {
		t.Fatal(err)
	}
	s.Kit.Config, s.Run.Cells = cfg, plan.Cells(cfg, 2, 2)
	if err := s.bench(t, context.Background(), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	return s, sc
}

// targets are each server's target rate in a cell's rounds.
func targets(c record.Cell) map[string][]float64 {
	out := map[string][]float64{}
	for _, srv := range c.Servers {
		for _, r := range srv.Rounds {
			out[srv.Name] = append(out[srv.Name], r.TargetRPS)
		}
	}
	return out
}

// TestSharesOfCapacityFollowTheFirstRound: a share of capacity is of the
// capacity tool's figure in the server's first saturation round, so round
// 1 visits every saturation cell before any rate cell; every round of a
// rate cell loads at that one rate, with h2 and no capacity measurement;
// a rate above what the server can do is marked unsustained.
func TestSharesOfCapacityFollowTheFirstRound(t *testing.T) {
	s, sc := sweepBench(t, map[string]string{"GRPC_LOAD_RATES": "50%,150%"}, nil)
	if len(s.Run.Cells) != 3 {
		t.Fatalf("%d cells, want the saturation cell and two rate cells", len(s.Run.Cells))
	}
	first := s.Run.Order[0]
	for i, v := range first {
		if i < 2 && v.Cell != 0 || i >= 2 && v.Cell == 0 {
			t.Errorf("round 1's order %v: the saturation cell's visits are not first", first)
		}
	}
	want := map[int]map[string]float64{1: {"a": 1500, "b": 3000}, 2: {"a": 4500, "b": 9000}}
	for ci, byServer := range want {
		for name, rates := range targets(s.Run.Cells[ci]) {
			if len(rates) != 3 {
				t.Errorf("cell %d, %s: %d rounds, want 3", ci, name, len(rates))
			}
			for _, r := range rates {
				if r != byServer[name] {
					t.Errorf("cell %d, %s: targets %v, want %v in every round", ci, name, rates, byServer[name])
				}
			}
		}
	}
	for _, srv := range s.Run.Cells[1].Servers {
		for _, r := range srv.Rounds {
			if r.Load.Tool != "h2" || r.Capacity != nil || sweep.Unsustained(r.TargetRPS, false, *r.Load) != "" {
				t.Errorf("%s at 50%%: tool %s, capacity %v, unsustained %q", srv.Name, r.Load.Tool, r.Capacity, sweep.Unsustained(r.TargetRPS, false, *r.Load))
			}
		}
	}
	for _, srv := range s.Run.Cells[2].Servers {
		if why := sweep.Unsustained(srv.Rounds[0].TargetRPS, false, *srv.Rounds[0].Load); why == "" {
			t.Errorf("%s at 150%% of its capacity is sustained", srv.Name)
		}
	}
	if n := len(ghzLoads(sc.loads())); n != 6 {
		t.Errorf("%d ghz loads, want the saturation cell's 6 only", n)
	}
}

// TestRatesWarmUpAsTheirSaturationCell: a rate cell's warm-up is the one
// its server's saturation rounds needed, so round 1 visits the saturation
// cell first for rates in req/s too; before, a rate cell drawn ahead of it
// warmed up for the whole cap (60 s for go_grpc on 2026-12-03, whose
// saturation rounds needed 10 s).
func TestRatesWarmUpAsTheirSaturationCell(t *testing.T) {
	s, sc := sweepBench(t, map[string]string{"GRPC_LOAD_RATES": "1000,2000", "GRPC_BENCHMARK_WARMUP": "auto", "GRPC_BENCHMARK_WARMUP_MAX": "45s",
		"GRPC_BENCHMARK_SEED": "1"}, func(string, int) time.Duration { return 8 * time.Second })
	for i, v := range s.Run.Order[0] {
		if i < 2 && v.Cell != 0 || i >= 2 && v.Cell == 0 {
			t.Errorf("round 1's order %v: the saturation cell's visits are not first", s.Run.Order[0])
		}
	}
	rates := 0
	for _, spec := range sc.specs {
		if spec.QPS == 0 {
			continue
		}
		rates++
		if spec.Warmup != 8*time.Second || spec.Steady != nil {
			t.Errorf("a load at %d req/s warmed up %s (rule %+v); want the saturation cell's 8s", spec.QPS, spec.Warmup, spec.Steady)
		}
	}
	if rates != 2*2*3 {
		t.Errorf("%d loads at a rate, want 12", rates)
	}
}

// TestAnObjectiveBisectsTheShareOfCapacity: with a latency objective and
// no rates, each server's probes bisect the share of its capacity on the
// grid k/15, each steered by every round of the probe before, measured
// after the other cells' rounds: the fake's p99 rises past 60%, so the
// probes are 8/15 (met), 12/15 (not), 10/15 (not), 9/15 = 60% (met), each
// at that rate in every round, and probe k's rounds all come before probe
// k+1's.
func TestAnObjectiveBisectsTheShareOfCapacity(t *testing.T) {
	s, _ := sweepBench(t, map[string]string{"GRPC_LATENCY_SLO": "p99<10ms"}, nil)
	if len(s.Run.Cells) != 1+plan.SLOProbes {
		t.Fatalf("%d cells, want the saturation cell and %d probes", len(s.Run.Cells), plan.SLOProbes)
	}
	shares := []float64{8.0 / 15, 12.0 / 15, 10.0 / 15, 9.0 / 15}
	for k, share := range shares {
		for name, rates := range targets(s.Run.Cells[1+k]) {
			capacity := map[string]float64{"a": 3000, "b": 6000}[name]
			if len(rates) != 3 || math.Abs(rates[0]-share*capacity) > 1e-6 || rates[2] != rates[0] {
				t.Errorf("probe %d, %s: targets %v, want %v (%.4g of %v) in each of 3 rounds", k+1, name, rates, share*capacity, share, capacity)
			}
		}
	}
	if len(s.Run.Order) != 3+plan.SLOProbes*3 {
		t.Fatalf("%d passes, want 3 rounds and then %d of the search", len(s.Run.Order), plan.SLOProbes*3)
	}
	for i, pass := range s.Run.Order {
		want := 0 // the rounds: the saturation cell only
		if i >= 3 {
			want = 1 + (i-3)/3 // then each probe's 3 rounds in turn
		}
		for _, v := range pass {
			if v.Cell != want {
				t.Errorf("pass %d visits cell %d, want %d: %v", i+1, v.Cell, want, pass)
			}
		}
	}
}
