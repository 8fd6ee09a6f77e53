package loadtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/steady"
)

// EndsWarmupWhenSteady runs a load under the default steady-state rule,
// capped at 30 s, against a server fast from its first call and one slow
// (5 ms a call) for its first 4 s: the first warm-up ends steady before
// the cap, the second steady and only once the server has been fast for
// a while (MSER's half rule, to a batch: more than 5.25 s), and each
// result says how long it lasted, with its window after it.
func EndsWarmupWhenSteady(t *testing.T, run func(context.Context, load.Spec) (load.Result, error)) {
	t.Helper()
	const cap = 30 * time.Second
	rule := steady.Default
	for _, slowFor := range []time.Duration{0, 4 * time.Second} {
		var once sync.Once
		var first time.Time
		addr := StartServer(t, "complex_proto", func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
			once.Do(func() { first = time.Now() })
			if time.Since(first) < slowFor {
				time.Sleep(5 * time.Millisecond)
			}
			return Echo(sc, req)
		})
		begin := time.Now()
		res, err := run(context.Background(), load.Spec{Target: addr, ScenarioDir: ScenarioDir("complex_proto"), Kind: scenario.Unary,
			Connections: 1, Concurrency: 8, Warmup: cap, Steady: &rule, Duration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("slow for %s: warm-up %s (%s)", slowFor, res.Warmup.Round(time.Millisecond), res.WarmupEnd)
		least := max(rule.Min, slowFor+steady.Batch*load.SeriesInterval)
		if res.WarmupEnd != load.WarmupSteady || res.Warmup < least || res.Warmup >= cap {
			t.Errorf("slow for %s: warm-up %s ended %q, want steady from %s and before the %s cap", slowFor, res.Warmup, res.WarmupEnd, least, cap)
		}
		if w := res.Start.Sub(begin); w < res.Warmup || res.End.Sub(res.Start) < time.Second-50*time.Millisecond {
			t.Errorf("slow for %s: the window runs from %s to %s after the start, the warm-up %s", slowFor, w, res.End.Sub(begin), res.Warmup)
		}
	}
}
