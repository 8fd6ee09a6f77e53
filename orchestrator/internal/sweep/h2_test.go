package sweep_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/h2"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// exactServer answers one call every interval, in turn: a server of
// exact capacity, whose queue builds in it whatever the calls in flight.
type exactServer struct {
	mu    sync.Mutex
	next  time.Time
	every time.Duration
}

func (s *exactServer) handle(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
	s.mu.Lock()
	slot := s.next.Add(s.every)
	if now := time.Now(); now.After(s.next) {
		slot = now.Add(s.every)
	}
	s.next = slot
	s.mu.Unlock()
	time.Sleep(time.Until(slot))
	return loadtest.Echo(sc, req)
}

// TestH2JudgedAgainstAServerOfKnownCapacity (Why 5, with h2 and its test
// server in one process): a server of exact capacity 500 calls a second,
// loaded open-loop at 507 (ρ = 1.014), is unstable and meets no p99
// objective after a warm-up of 1 s or 5 s; at 450 (ρ = 0.9) it is
// sustained and stable.
func TestH2JudgedAgainstAServerOfKnownCapacity(t *testing.T) {
	for _, tc := range []struct {
		rate     int
		warmup   time.Duration
		unstable bool
	}{{507, time.Second, true}, {507, 5 * time.Second, true}, {450, time.Second, false}} {
		srv := &exactServer{every: 2 * time.Millisecond}
		addr := loadtest.StartServer(t, "complex_proto", srv.handle)
		res, err := h2.Run(context.Background(), load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"),
			Connections: 10, Concurrency: 5000, QPS: tc.rate, Arrivals: load.ArrivalsConstant, Warmup: tc.warmup, Duration: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		r := recordOf(res)
		round := record.Round{Round: 1, TargetRPS: float64(tc.rate), Measurement: record.Measurement{Load: &r}}
		unstable := sweep.Unstable(float64(tc.rate), r)
		verdict := sweep.Decide([]record.Round{round}, config.SLO{Percentile: "p99", Bound: 200 * time.Millisecond}, false)
		t.Logf("%d req/s after %s: %.0f achieved, p99 %s, series %v; unsustained %q; unstable %q; p99<200ms met %v",
			tc.rate, tc.warmup, r.RPS, r.Latency.P99, r.Series != nil, sweep.Unsustained(float64(tc.rate), false, r), unstable, verdict.Met)
		if (unstable != "") != tc.unstable {
			t.Errorf("%d req/s after %s: unstable %q, want %v", tc.rate, tc.warmup, unstable, tc.unstable)
		}
		if tc.unstable && verdict.Met {
			t.Errorf("%d req/s after %s: meets p99<200ms, unstable", tc.rate, tc.warmup)
		}
		if !tc.unstable && sweep.Unsustained(float64(tc.rate), false, r) != "" {
			t.Errorf("%d req/s after %s: unsustained", tc.rate, tc.warmup)
		}
	}
}

// recordOf is the figures of an h2 result a verdict reads, as the record
// keeps them.
func recordOf(r load.Result) record.Result {
	out := record.Result{Tool: r.Tool, Start: r.Start, End: r.End, Requests: r.Requests, OK: r.OK, RPS: r.RPS,
		Planned: r.Planned, Unanswered: r.Unanswered, Histogram: r.Histogram,
		Latency: record.Latency{Count: r.Latency.Count, P99: r.Latency.P99}}
	if s := r.Series; s != nil {
		out.Series = &record.Series{Start: s.Start, Interval: s.Interval, OK: s.OK, Failed: s.Failed, Mean: s.Mean, Max: s.Max, InFlight: s.InFlight}
	}
	return out
}
