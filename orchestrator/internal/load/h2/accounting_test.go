package h2

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// hangEvery is a server that never answers every nth call (until the test
// ends) and echoes the others.
func hangEvery(t *testing.T, n int64) string {
	t.Helper()
	release := make(chan struct{})
	var calls atomic.Int64
	addr := loadtest.StartServer(t, "complex_proto", func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		if calls.Add(1)%n == 0 {
			<-release
		}
		return loadtest.Echo(sc, req)
	})
	t.Cleanup(func() { close(release) }) // before the server stops: its handlers return
	return addr
}

// checkAccounted fails unless every call the window planned is in the
// result: answered, failed or unanswered.
func checkAccounted(t *testing.T, res load.Result, planned uint64) {
	t.Helper()
	if res.Planned != planned || res.Requests != planned {
		t.Errorf("planned %d, requests %d; want %d of each: every call the window planned accounted for", res.Planned, res.Requests, planned)
	}
	var sum uint64
	for _, n := range res.Statuses {
		sum += n
	}
	if sum != res.Requests || res.Statuses["OK"] != res.OK {
		t.Errorf("statuses %v sum to %d of %d requests (%d OK)", res.Statuses, sum, res.Requests, res.OK)
	}
	if res.Latency.Count != res.OK+res.Unanswered {
		t.Errorf("latency of %d calls, want the %d OK and %d unanswered", res.Latency.Count, res.OK, res.Unanswered)
	}
}

// Why 1 of issue 28: a server that never answers every 67th call, at 1000
// calls a second over 10 connections. Those calls are unanswered (about
// 1.5% of the window's), count as failed, and their latency, counted as
// their deadline, is the p99; before, they were dropped at the window's
// end: no error, a p99 of 3 ms.
func TestUnansweredCallsCount(t *testing.T) {
	addr := hangEvery(t, 67)
	spec := load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 10, Concurrency: 200,
		QPS: 1000, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second, Grace: 200 * time.Millisecond}
	for _, deadline := range []time.Duration{0, 500 * time.Millisecond} {
		spec.Deadline = deadline
		t.Run("deadline "+spec.CallDeadline().String(), func(t *testing.T) {
			res := mustRun(t, spec)
			t.Logf("planned %d, unanswered %d, late %d, statuses %v, p99 %v", res.Planned, res.Unanswered, res.Late, res.Statuses, res.Latency.P99)
			checkAccounted(t, res, 2000)
			// A client that fell behind (under the race detector, on a busy
			// machine) leaves calls of its own unanswered too.
			share := float64(res.Unanswered) / float64(res.Planned)
			if share < 0.01 || share > 0.02 && res.Late*100 <= res.Planned {
				t.Errorf("%d of %d calls unanswered (%.2f%%, %d late), want about 1.5%%", res.Unanswered, res.Planned, 100*share, res.Late)
			}
			// Past its deadline a call is cancelled (those of the window's
			// first 1.7 s here); one still in flight when the grace ended
			// is unanswered.
			cancelled := res.Statuses["DeadlineExceeded"]
			if cancelled+res.Statuses[load.StatusUnanswered] != res.Unanswered || res.Requests-res.OK != res.Unanswered || deadline > 0 && cancelled == 0 {
				t.Errorf("statuses %v, want the %d unanswered calls as DeadlineExceeded (with a deadline shorter than the window) or Unanswered, and no other failure", res.Statuses, res.Unanswered)
			}
			if d := spec.CallDeadline(); res.Latency.P99 < d*99/100 || res.Latency.Max < d*99/100 {
				t.Errorf("p99 %v, max %v; want the deadline %v", res.Latency.P99, res.Latency.Max, d)
			}
		})
	}
}

// stallAt is a server that answers no call arriving in [from, from+d)
// before from+d.
func stallAt(t *testing.T, from time.Time, d time.Duration) string {
	t.Helper()
	return loadtest.StartServer(t, "complex_proto", func(sc *scenario.Scenario, req *dynamicpb.Message) (*dynamicpb.Message, error) {
		if now := time.Now(); !now.Before(from) && now.Before(from.Add(d)) {
			time.Sleep(from.Add(d).Sub(now))
		}
		return loadtest.Echo(sc, req)
	})
}

// Why 1 of issue 28: a 70 ms stall of the server shows in the p99
// wherever it falls: inside the window, or straddling its end, where its
// calls are answered after the window (within the grace). Before, those
// answers were dropped, and the stall at the end left the p99 at 3 ms.
func TestStallAtTheWindowsEndCounts(t *testing.T) {
	const warmup, window, stall = 300 * time.Millisecond, time.Second, 70 * time.Millisecond
	for _, tc := range []struct {
		name string
		at   time.Duration // from the window's start
	}{
		{"mid-window", window / 2},
		{"straddling the end", window - stall/2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			addr := stallAt(t, start.Add(warmup+tc.at), stall)
			res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 10, Concurrency: 200,
				QPS: 1000, Warmup: warmup, Duration: window, Grace: 500 * time.Millisecond})
			checkAccounted(t, res, 1000)
			// 35 calls or more (3.5%) wait 35 to 70 ms; a client that fell
			// behind (under the race detector) leaves some unanswered.
			if res.Latency.P99 < 20*time.Millisecond || res.OK+res.Unanswered != res.Planned {
				t.Errorf("p99 %v, %d of %d OK, %d unanswered; want at least 20ms, the others OK", res.Latency.P99, res.OK, res.Planned, res.Unanswered)
			}
		})
	}
}

// A call of the window that never started counts as unanswered too, at
// its deadline: one call in flight allowed, held by a server that never
// answers it, and the window's other calls never start.
func TestCallsNeverStartedCount(t *testing.T) {
	addr := hangEvery(t, 1)
	spec := load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 1, Concurrency: 1,
		QPS: 100, Duration: 500 * time.Millisecond, Grace: 100 * time.Millisecond}
	res := mustRun(t, spec)
	checkAccounted(t, res, 50)
	// The first call may start late too: the connection opens at the
	// window's start. Its deadline, the window plus the grace, falls when
	// the run stops waiting: it is cancelled, or unanswered at the end.
	if res.Unanswered != 50 || res.Statuses[load.StatusUnanswered]+res.Statuses["DeadlineExceeded"] != 50 || res.Late < 49 {
		t.Errorf("unanswered %d, statuses %v, late %d; want 50 unanswered, 49 of them never started", res.Unanswered, res.Statuses, res.Late)
	}
	if d := spec.CallDeadline(); res.Latency.P50 < d*99/100 {
		t.Errorf("p50 %v, want the deadline %v", res.Latency.P50, d)
	}
}

// An open loop's calls carry their deadline to the server as
// grpc-timeout; a closed loop's carry none.
func TestDeadlineIsSent(t *testing.T) {
	var with, without atomic.Int64
	addr := loadtest.StartServer(t, "complex_proto", loadtest.Echo, grpc.InTapHandle(
		func(ctx context.Context, _ *tap.Info) (context.Context, error) {
			if d, ok := ctx.Deadline(); ok && time.Until(d) > 2*time.Second && time.Until(d) <= 3*time.Second {
				with.Add(1)
			} else if !ok {
				without.Add(1)
			}
			return ctx, nil
		}))
	spec := load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 1, Concurrency: 4,
		// The warm-up opens the connection: on a busy machine the window
		// alone can end before it is ready, every call unanswered.
		Warmup: 300 * time.Millisecond, Duration: 200 * time.Millisecond, Grace: time.Second, Deadline: 3 * time.Second}
	checkAllOK(t, mustRun(t, spec))
	spec.QPS = 200
	checkAllOK(t, mustRun(t, spec))
	if with.Load() < 40 || without.Load() == 0 {
		t.Errorf("%d calls with a deadline of 2 to 3 s, %d without: want the open loop's 40 and the closed loop's", with.Load(), without.Load())
	}
}

// The reader, waiting for a server that answers nothing and ignores
// grpc-timeout, is woken to cancel each call at its deadline: the slot it
// frees lets the next one start, where a reader left waiting would hold
// the first one to the end.
func TestDeadlineFreesTheSlot(t *testing.T) {
	addr, srv := startRawServer(t)
	srv.silent.Store(true)
	res := mustRun(t, load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 1, Concurrency: 1,
		QPS: 100, Duration: time.Second, Grace: 100 * time.Millisecond, Deadline: 50 * time.Millisecond})
	checkAccounted(t, res, 100)
	// One call every 50 ms or so over the second.
	if srv.received.Load() < 5 || res.Statuses["DeadlineExceeded"] < 5 {
		t.Errorf("the server got %d calls, %d were cancelled at their deadline; want 5 or more", srv.received.Load(), res.Statuses["DeadlineExceeded"])
	}
}
