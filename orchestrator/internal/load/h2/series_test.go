package h2

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// A run's series covers warm-up and window in 250 ms intervals: in a
// closed loop the window's intervals hold exactly its calls, the
// warm-up's its own, each interval's latencies are within the window's,
// and the histogram holds the window's latencies.
func TestH2Series(t *testing.T) {
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo)
	before := time.Now()
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 2, Concurrency: 8, Warmup: 500 * time.Millisecond, Duration: time.Second, Tail: 300 * time.Millisecond})
	checkAllOK(t, res)
	s := res.Series
	if s == nil {
		t.Fatal("no series")
	}
	if s.Start.Before(before) || !s.Start.Add(500*time.Millisecond).Equal(res.Start) || s.Interval != load.SeriesInterval {
		t.Fatalf("series from %v every %v, want from the warm-up's start (%v before the window) every %v",
			s.Start, s.Interval, res.Start.Sub(s.Start), load.SeriesInterval)
	}
	if len(s.OK) != 6 || len(s.Failed) != 6 || len(s.Mean) != 6 || len(s.Max) != 6 || len(s.InFlight) != 6 {
		t.Fatalf("series of %d, %d, %d, %d, %d intervals, want 6 of each", len(s.OK), len(s.Failed), len(s.Mean), len(s.Max), len(s.InFlight))
	}
	// The window's max is its histogram's, three significant digits of
	// microseconds; the series keeps nanoseconds.
	windowMax := res.Latency.Max + res.Latency.Max/1000 + time.Microsecond
	var warm, window uint64
	for i, n := range s.OK {
		if i < 2 {
			warm += n
		} else {
			window += n
		}
		if s.Failed[i] != 0 {
			t.Errorf("interval %d: %d failed calls", i, s.Failed[i])
		}
		if n > 0 && (s.Mean[i] <= 0 || s.Mean[i] > s.Max[i] || s.Max[i] > windowMax && i >= 2) {
			t.Errorf("interval %d: mean %v, max %v (the window's max %v)", i, s.Mean[i], s.Max[i], res.Latency.Max)
		}
		if s.InFlight[i] < 0 || s.InFlight[i] > 8 {
			t.Errorf("interval %d: %d calls in flight, want 0 to 8", i, s.InFlight[i])
		}
	}
	if warm != res.WarmupRequests || window != res.OK {
		t.Errorf("series counts %d calls in the warm-up and %d in the window, want %d and %d", warm, window, res.WarmupRequests, res.OK)
	}
	h, err := load.DecodeHistogram(res.Histogram)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(h.TotalCount()) != res.Latency.Count || time.Duration(h.ValueAtQuantile(99))*time.Microsecond != res.Latency.P99 {
		t.Errorf("histogram of %d calls, p99 %dµs; want the window's %d, %v", h.TotalCount(), h.ValueAtQuantile(99), res.Latency.Count, res.Latency.P99)
	}
}

// Calls a server holds are in flight at every interval's end: with 8 in
// flight allowed and none answered, 8.
func TestH2SeriesCountsCallsInFlight(t *testing.T) {
	release := make(chan struct{})
	addr := loadtest.StartServer(t, "complex_proto", func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		<-release
		return loadtest.Echo(sc, req)
	})
	t.Cleanup(func() { close(release) }) // before the server stops: its handlers return
	res, _, err := runH2(t, context.Background(), load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
		Connections: 2, Concurrency: 8, Warmup: 250 * time.Millisecond, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Series == nil {
		t.Fatal("no series")
	}
	for i, n := range res.Series.InFlight {
		if n != 8 || res.Series.OK[i] != 0 {
			t.Errorf("interval %d: %d calls in flight, %d answered; want 8, 0", i, n, res.Series.OK[i])
		}
	}
}

// Counting a call, its series included, allocates nothing: the counters
// are sized for the whole run when it starts.
func TestCountingACallAllocatesNothing(t *testing.T) {
	now := time.Now()
	r := newCallCounter(window{start: now, measureStart: now, end: now.Add(time.Minute), open: true, graceEnd: now.Add(time.Minute)}, false)
	if n := testing.AllocsPerRun(1000, func() {
		r.series.Started(now)
		r.count(ended{status: statusOK, planned: now, start: now, sent: now, at: now.Add(time.Second), n: 1})
		r.series.Ended(now.Add(time.Second))
	}); n != 0 {
		t.Errorf("%v allocations a call", n)
	}
}
