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
		Errors: map[string]uint64{"x": 1}, RPS: 9, Latency: lat, Late: 1, Service: &lat, WarmupRequests: 3, Warmup: 5 * time.Second, WarmupEnd: load.WarmupSteady, Planned: 11, Unanswered: 1, Pacer: &lat,
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

// TestWindowOf: the window's steadiness comes from the intervals of the
// series inside the window alone: a warm-up that climbs before it does
// not count, a climb inside it does; at a set rate, where every interval
// completes the rate's calls, the latency's climb or fall is what moves.
func TestWindowOf(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	series := func(ok []uint64, mean []time.Duration) *load.Series {
		return &load.Series{Start: at, Interval: 250 * time.Millisecond, OK: ok, Mean: mean}
	}
	flat := make([]uint64, 40)
	climbing := make([]uint64, 40)
	for i := range flat {
		flat[i] = 1000 + uint64(i%2)
		climbing[i] = 500 + 25*uint64(i)
	}
	// The first 20 intervals (5 s) climb, the window's 20 are flat.
	warm := append(append([]uint64(nil), climbing[:20]...), flat[20:]...)
	window := load.Result{Start: at.Add(5 * time.Second), End: at.Add(10 * time.Second)}
	window.Series = series(warm, nil)
	if w := windowOf(window, false); w == nil || !w.Steady || w.Intervals != 20 {
		t.Errorf("a warm-up that climbed before the window: %+v", w)
	}
	window.Series = series(climbing, nil)
	if w := windowOf(window, false); w == nil || w.Steady || w.Change <= 0.05 || w.Intervals != 20 {
		t.Errorf("a window that climbs: %+v", w)
	}
	// At a set rate: flat counts, a mean latency that falls by half,
	// ±2% from interval to interval.
	mean := make([]time.Duration, 40)
	for i := range mean {
		mean[i] = time.Duration(float64(2000-25*i)*(1+0.02*float64(1-2*(i%2)))) * time.Microsecond
	}
	window.Series = series(flat, mean)
	if w := windowOf(window, false); !w.Steady {
		t.Errorf("counts at a set rate read as the speed: %+v", w)
	}
	if w := windowOf(window, true); w.Steady || w.Change <= 0 {
		t.Errorf("a latency that falls at a set rate: %+v", w)
	}
	if w := windowOf(load.Result{Start: at, End: at.Add(time.Second)}, false); w != nil {
		t.Errorf("no series: %+v", w)
	}
}
