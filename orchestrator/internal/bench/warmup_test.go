package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/catalog"
	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/steady"
	"github.com/grpcbench/grpcbench/orchestrator/internal/testfiles"
)

// TestAutoWarmupIsSeededByEarlierRounds: under GRPC_BENCHMARK_WARMUP=auto
// each ghz load gets the steady-state rule and the cap; a server whose
// rounds warmed up for 20 s does not end a later round's warm-up before
// 10 s, one steady at once keeps the rule's own least, and one whose
// server.json declares a warmup_min of 12 s has it from its first round;
// the record keeps how long each warmed up.
func TestAutoWarmupIsSeededByEarlierRounds(t *testing.T) {
	eng := &script{warmup: func(server string, _ int) time.Duration {
		if server == "jvm" {
			return 20 * time.Second
		}
		return steady.Default.Min
	}}
	s := newTestBench(t, eng, "jvm", "native", "declared")
	testfiles.Write(t, filepath.Join(s.Kit.Catalog.Root, "servers", "declared", catalog.ManifestFile),
		`{"stack": "Java", "library": "a", "version": "1", "pinned": {"unchecked": "a test"}, "warmup_min": "12s"}`)
	cat, err := catalog.Open(s.Kit.Catalog.Root)
	if err != nil {
		t.Fatal(err)
	}
	s.Kit.Catalog = cat
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "test", "GRPC_BENCHMARK_DURATION": "3ms", "GRPC_BENCHMARK_ROUNDS": "3",
		"GRPC_BENCHMARK_WARMUP_MAX": "45s"}, config.Offered(load.Runners()))
	if err != nil {
		t.Fatal(err)
	}
	s.Kit.Config = cfg
	if err := s.bench(t, context.Background(), []string{"jvm", "native", "declared"}); err != nil {
		t.Fatal(err)
	}
	mins := map[string][]time.Duration{}
	i := 0
	for _, spec := range eng.specs {
		if spec.Tool != "ghz" {
			if spec.Steady != nil || spec.Warmup != capacityWarmup {
				t.Errorf("a capacity load warms up %s, rule %+v; want %s, no rule: the server is warm", spec.Warmup, spec.Steady, capacityWarmup)
			}
			continue
		}
		if spec.Steady == nil || spec.Warmup != 45*time.Second {
			t.Fatalf("load %d: warm-up %s, rule %+v; want the rule, capped at 45s", i, spec.Warmup, spec.Steady)
		}
		server := ghzLoads(eng.loads())[i]
		mins[server] = append(mins[server], spec.Steady.Min)
		i++
	}
	least := steady.Default.Min
	if got := mins["jvm"]; len(got) != 3 || got[0] != least || got[1] != 10*time.Second || got[2] != 10*time.Second {
		t.Errorf("jvm's least warm-ups %v, want %s then 10s", got, least)
	}
	if got := mins["native"]; len(got) != 3 || got[1] != least || got[2] != least {
		t.Errorf("native's least warm-ups %v, want %s throughout", got, least)
	}
	if got := mins["declared"]; len(got) != 3 || got[0] != 12*time.Second || got[1] != 12*time.Second || got[2] != 12*time.Second {
		t.Errorf("declared's least warm-ups %v, want its server.json's 12s throughout", got)
	}
	srv, _ := s.Run.Cells[0].Server("jvm")
	if r := srv.Rounds[0].Load; r.Warmup != 20*time.Second || r.WarmupEnd != record.WarmupSteady {
		t.Errorf("jvm's first round warmed up %s, ended %q", r.Warmup, r.WarmupEnd)
	}
}

// seededMin never passes half the cap, which leaves the rule room.
func TestSeededMinLeavesTheRuleRoom(t *testing.T) {
	rule := steady.Default
	spec := load.Spec{Warmup: 30 * time.Second, Steady: &rule}
	srv := record.Server{Rounds: []record.Round{{Measurement: record.Measurement{Load: &record.Result{Warmup: 50 * time.Second, WarmupEnd: record.WarmupSteady}}}}}
	if got := seededMin(srv, spec, 0); got != 15*time.Second {
		t.Errorf("seeded least warm-up %s, want half the 30s cap", got)
	}
	capped := record.Server{Rounds: []record.Round{{Measurement: record.Measurement{Load: &record.Result{Warmup: 30 * time.Second, WarmupEnd: record.WarmupCapped}}}}}
	if got := seededMin(capped, spec, 0); got != rule.Min {
		t.Errorf("a round that reached the cap seeds %s, want the rule's own %s", got, rule.Min)
	}
}

// TestRateCellsWarmUpAsTheirSaturationCell: at a set rate every interval
// completes the rate's calls, so a rate cell's round has no rule: it
// warms up for the longest warm-up its server needed in its saturation
// cell.
func TestRateCellsWarmUpAsTheirSaturationCell(t *testing.T) {
	eng := &script{warmup: func(_ string, n int) time.Duration { return time.Duration(10+n) * time.Second }}
	s := newTestBench(t, eng, "x")
	cfg, err := config.Parse(map[string]string{"GRPC_IMAGE_NAME": "test", "GRPC_BENCHMARK_DURATION": "3ms", "GRPC_BENCHMARK_ROUNDS": "2",
		"GRPC_LOAD_RATES": "50%"}, config.Offered(load.Runners()))
	if err != nil {
		t.Fatal(err)
	}
	s.Kit.Config = cfg
	s.Run.Cells = plan.Cells(cfg, 2, 2)
	if err := s.bench(t, context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	var rated []time.Duration
	for _, spec := range eng.specs {
		if spec.QPS > 0 {
			if spec.Steady != nil {
				t.Errorf("a rate cell's load has a rule: %+v", spec.Steady)
			}
			rated = append(rated, spec.Warmup)
		}
	}
	// Round 1's rate cell follows the saturation cell's round 1 (11 s);
	// round 2's, in an order drawn for the round, one or both (11 s or
	// 12 s).
	if len(rated) != 2 || rated[0] != 11*time.Second || rated[1] != 11*time.Second && rated[1] != 12*time.Second {
		t.Errorf("the rate cells' warm-ups %v, want 11s, then 11s or 12s", rated)
	}
}

// TestWarmupTextIsRounded: a rate cell's warm-up, its saturation cell's
// as measured, is said to a tenth of a second.
func TestWarmupTextIsRounded(t *testing.T) {
	if got := warmupText(load.Spec{Warmup: 7513232154 * time.Nanosecond}); got != "7.5s" {
		t.Errorf("warm-up said %q, want 7.5s", got)
	}
}

// TestRateTextIsInTheCellsUnit: a streaming cell's target is said in
// messages, as its rounds' rates are.
func TestRateTextIsInTheCellsUnit(t *testing.T) {
	if got := rateText(100645, scenario.BidiStreaming.RateUnit()); got != " at 100645 msg/s" {
		t.Errorf("target said %q, want in msg/s", got)
	}
}
