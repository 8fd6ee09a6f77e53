package harness

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/usage"
)

// TestConversionsKeepEveryField: what a load tool, the stats and the gate
// report reads the same in the record, key for key: a field added to one
// side and not to the other, or not copied, fails here.
func TestConversionsKeepEveryField(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	lat := load.Latency{Count: 9, Mean: 1, P50: 2, P90: 3, P95: 4, P99: 5, P999: 6, Max: 7, Percentiles: []load.Percentile{{Q: 0.5, Latency: 2}}}
	res := load.Result{Tool: "h2", Start: at, End: at.Add(time.Second), Requests: 10, OK: 9, Statuses: map[string]uint64{"OK": 9, "Unavailable": 1},
		Errors: map[string]uint64{"x": 1}, RPS: 9, Latency: lat, Late: 1, Service: &lat, WarmupRequests: 3, Planned: 11, Unanswered: 1, Pacer: &lat,
		Series:    &load.Series{Start: at, Interval: time.Second, OK: []uint64{9}, Failed: []uint64{1}, Mean: []time.Duration{1}, Max: []time.Duration{7}, InFlight: []int{2}},
		Histogram: "HISTFAAAAB", Notes: []string{"a note"}}
	same(t, "load result", res, resultOf(res))
	sum := usage.Summary{Samples: 1, CPUAvgPercent: 2, CPUMaxPercent: 3, MemoryAvgBytes: 4, MemoryMaxBytes: 5, CPUSeconds: 6, ThrottledShare: 7, ThrottledSeconds: 8}
	same(t, "usage", sum, usageOf(sum))
	v := probe.Verdict{Passed: true, Checks: []probe.Check{{Name: "echo", Passed: true, Detail: "d"}}, Warnings: []string{"w"}}
	same(t, "conformance", v, *conformanceOf(v))
}

func same(t *testing.T, what string, from, to any) {
	t.Helper()
	a, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(to)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Errorf("%s changed on its way into the record:\n from %s\n   to %s", what, a, b)
	}
}
