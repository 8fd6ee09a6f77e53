package sweep_test

import (
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// TestARateWithoutItsCapacityFails: a server whose first saturation round
// failed has no capacity to take a share of; its rate cells fail, with why,
// and the others go on.
func TestARateWithoutItsCapacityFails(t *testing.T) {
	run := record.Run{Cells: []record.Cell{{}, {Rate: record.Rate{Share: 0.5}}}}
	run.Cells[0].Servers = []record.Server{{Name: "a", Rounds: []record.Round{{Round: 1, Failure: &record.Failure{Phase: "load"}}}}}
	if _, err := sweep.Target(run, 1, "a", config.SLO{}); err == nil {
		t.Error("a share of an unknown capacity has a target")
	}
	run.Cells[1].Rate = record.Rate{PerSecond: 700}
	if got, err := sweep.Target(run, 1, "a", config.SLO{}); err != nil || got != 700 {
		t.Errorf("an absolute rate = %v, %v; want 700 whatever the capacity", got, err)
	}
}

// TestUnsustained: a rate is unsustained when the achieved rate falls
// short of it by more than the shortfall or when calls failed; late
// starts alone do not make it so.
func TestUnsustained(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    record.Result
		want bool
	}{
		{"kept up", record.Result{RPS: 990, Requests: 1000, OK: 1000}, false},
		{"short", record.Result{RPS: 970, Requests: 1000, OK: 1000}, true},
		{"late", record.Result{RPS: 1000, Requests: 1000, OK: 1000, Late: 200}, false},
		{"failing", record.Result{RPS: 1000, Requests: 1000, OK: 990}, true},
	} {
		if got := sweep.Unsustained(1000, tc.r) != ""; got != tc.want {
			t.Errorf("%s: unsustained %v, want %v (%q)", tc.name, got, tc.want, sweep.Unsustained(1000, tc.r))
		}
	}
}
