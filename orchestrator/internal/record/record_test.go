package record_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

func measured(n int) record.Round {
	return record.Round{Round: n, Measurement: record.Measurement{Load: &record.Result{RPS: 1000}}}
}

// TestResumeDropsWhatTheInterruptionCutShort: rounds and server failures
// the run cut short go, to run again; measured rounds and a server's own
// failures stay.
func TestResumeDropsWhatTheInterruptionCutShort(t *testing.T) {
	cut := &record.Failure{Phase: "load", Reason: "interrupted", CutShort: true}
	own := &record.Failure{Phase: "load", Reason: "server crashed"}
	crashed := measured(2)
	crashed.Failure = own
	interrupted := measured(2)
	interrupted.Failure = cut
	run := record.Run{State: record.Interrupted, Ended: time.Now(), Cells: []record.Cell{{Servers: []record.Server{
		{Name: "a", Rounds: []record.Round{measured(1), interrupted}},
		{Name: "b", Rounds: []record.Round{measured(1), crashed}},
		{Name: "c", Failure: cut},
		{Name: "d", Failure: own},
	}}}}
	run.Resume()
	want := []record.Server{
		{Name: "a", Rounds: []record.Round{measured(1)}},
		{Name: "b", Rounds: []record.Round{measured(1), crashed}},
		{Name: "c"},
		{Name: "d", Failure: own},
	}
	if run.State != record.Running || !run.Ended.IsZero() || !reflect.DeepEqual(run.Cells[0].Servers, want) {
		t.Errorf("resumed: state %q ended %v, servers\n%+v\nwant\n%+v", run.State, run.Ended, run.Cells[0].Servers, want)
	}
}

// TestRankedNeedsEveryRoundMeasured: a server is ranked with every round
// measured and no failure; its first failure is its own or its first failed
// round's, numbered, without changing the round's.
func TestRankedNeedsEveryRoundMeasured(t *testing.T) {
	failed := measured(2)
	failed.Failure = &record.Failure{Phase: "load", Reason: "refused"}
	unmeasured := record.Round{Round: 2}
	for _, tc := range []struct {
		name   string
		server record.Server
		ranked bool
		first  *record.Failure
	}{
		{"every round measured", record.Server{Rounds: []record.Round{measured(1), measured(2)}}, true, nil},
		{"no rounds", record.Server{}, false, nil},
		{"a round without load", record.Server{Rounds: []record.Round{measured(1), unmeasured}}, false, nil},
		{"a failed round", record.Server{Rounds: []record.Round{measured(1), failed}}, false, &record.Failure{Phase: "load", Reason: "refused", Round: 2}},
		{"its own failure", record.Server{Failure: &record.Failure{Phase: "build", Reason: "exit status 1"}}, false, &record.Failure{Phase: "build", Reason: "exit status 1"}},
	} {
		if got := tc.server.Ranked(); got != tc.ranked {
			t.Errorf("%s: Ranked() = %v, want %v", tc.name, got, tc.ranked)
		}
		if got := tc.server.FirstFailure(); !reflect.DeepEqual(got, tc.first) {
			t.Errorf("%s: FirstFailure() = %+v, want %+v", tc.name, got, tc.first)
		}
	}
	if failed.Failure.Round != 0 {
		t.Errorf("FirstFailure numbered the round's own failure: %+v", failed.Failure)
	}
}

// TestClientSaturatedAtNinetyPercentOrThrottled: a client that used 90% of
// the CPUs it was given, or was throttled in 10% of its periods, set the
// pace.
func TestClientSaturatedAtNinetyPercentOrThrottled(t *testing.T) {
	for _, tc := range []struct {
		cpu, throttled float64
		want           bool
	}{{179, 0, false}, {180, 0, true}, {50, 0.09, false}, {50, 0.1, true}} {
		m := record.Measurement{Client: record.Usage{CPUAvgPercent: tc.cpu, ThrottledShare: tc.throttled}}
		if got := m.ClientSaturated(2); got != tc.want {
			t.Errorf("client at %v%% of 2 CPUs, throttled %v: saturated %v, want %v", tc.cpu, tc.throttled, got, tc.want)
		}
	}
}
