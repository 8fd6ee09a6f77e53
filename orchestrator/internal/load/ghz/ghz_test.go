package ghz

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// TestTailLoadsPastTheWindow: with a tail, ghz goes on loading the server
// after the window, and those calls are not in it.
func TestTailLoadsPastTheWindow(t *testing.T) {
	res, after := loadtest.CallsAfterWindow(t, Run)
	if res.OK == 0 || after <= 8 {
		t.Errorf("%d OK calls in the window, %d calls after it; want some, and more than the 8 in flight", res.OK, after)
	}
}

// With a rate, ghz is labelled closed-loop-paced in a note; without, it
// says nothing of pacing.
func TestRateIsLabelledClosedLoopPaced(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo)
	for _, qps := range []int{0, 200} {
		res, err := Run(context.Background(), load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Kind: scenario.Unary,
			Connections: 1, Concurrency: 2, QPS: qps, Warmup: 500 * time.Millisecond, Duration: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		labelled := strings.Contains(strings.Join(res.Notes, "\n"), "ghz at 200 req/s is closed-loop-paced")
		if labelled != (qps > 0) {
			t.Errorf("at %d req/s: notes %q", qps, res.Notes)
		}
	}
}
