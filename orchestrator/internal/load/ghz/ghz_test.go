package ghz

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bojand/ghz/runner"
	"google.golang.org/grpc"

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

// TestStreams: ghz drives every streaming kind, each OK call counted as
// its messages, never more than the server answered or took.
func TestStreams(t *testing.T) {
	for _, name := range []string{"stream_pingpong", "stream_server", "stream_client"} {
		t.Run(name, func(t *testing.T) {
			var messages atomic.Int64
			dir := loadtest.ScenarioDir(name)
			addr, sc := loadtest.StartStreamServer(t, dir, func(sc *scenario.Scenario, st grpc.ServerStream) error {
				return loadtest.Streams(sc, countingStream{st, sc, &messages})
			})
			res, err := Run(context.Background(), load.Spec{Target: addr, ScenarioDir: dir, Kind: sc.Kind,
				Connections: 2, Concurrency: 8, Warmup: 500 * time.Millisecond, Duration: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", res)
			per := uint64(sc.Replies)
			if sc.Kind == scenario.ClientStreaming {
				per = uint64(sc.Sends)
			}
			if res.OK == 0 || res.OK%per != 0 || res.Requests != res.OK || len(res.Notes) == 0 {
				t.Errorf("OK %d of %d, notes %q: want OK calls of %d messages each, all OK, and a note on latency", res.OK, res.Requests, res.Notes, per)
			}
			if got := int64(res.OK + res.WarmupRequests); got > messages.Load() {
				t.Errorf("%d messages counted, more than the server's %d", got, messages.Load())
			}
			// The series counts the same messages, but for those of calls
			// that ended as a run stopped.
			var series uint64
			for _, n := range res.Series.OK {
				series += n
			}
			if all := res.OK + res.WarmupRequests; series > all || series+8*per < all {
				t.Errorf("the series counts %d messages, want the %d of warm-up and window, less at most the 8 calls in flight", series, all)
			}
		})
	}
}

// countingStream counts the messages of the load the server saw: the
// requests of a client stream, the replies of the others.
type countingStream struct {
	grpc.ServerStream
	sc *scenario.Scenario
	n  *atomic.Int64
}

func (s countingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && s.sc.Kind == scenario.ClientStreaming {
		s.n.Add(1)
	}
	return err
}

func (s countingStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil && s.sc.Kind != scenario.ClientStreaming {
		s.n.Add(1)
	}
	return err
}

// TestGHZOverTLS: ghz verifies the chain against the run's CA.
func TestGHZOverTLS(t *testing.T) { loadtest.LoadsOverTLS(t, Run) }

// firstConns is a listener that serves its first n connections and
// leaves every later one unanswered (a server too busy to finish a
// handshake), until the test ends.
type firstConns struct {
	net.Listener
	n, accepted int
	mu          sync.Mutex
	held        []net.Conn
}

func (l *firstConns) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil || l.accepted < l.n {
			l.accepted++
			return nc, err
		}
		l.mu.Lock()
		l.held = append(l.held, nc)
		l.mu.Unlock()
	}
}

func (l *firstConns) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, nc := range l.held {
		nc.Close()
	}
	return l.Listener.Close()
}

// TestFailedTailIsANote: the tail is a ghz run of its own, on new
// connections; when it completes no call, the window's figures stand,
// with a note saying so.
func TestFailedTailIsANote(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The warm-up's two connections and the measurement's two.
	loadtest.StartServerOn(t, &firstConns{Listener: inner, n: 4}, "complex_proto", loadtest.Echo)
	res, err := Run(context.Background(), load.Spec{Target: inner.Addr().String(), ScenarioDir: loadtest.ScenarioDir("complex_proto"), Kind: scenario.Unary,
		Connections: 2, Concurrency: 8, Warmup: 200 * time.Millisecond, Duration: 500 * time.Millisecond, Tail: 400 * time.Millisecond})
	if err != nil {
		t.Fatalf("a failed tail failed the run: %v", err)
	}
	if res.OK == 0 || len(res.Notes) == 0 || !strings.Contains(res.Notes[len(res.Notes)-1], "load after the window failed") {
		t.Errorf("%d OK calls, notes %q: want the window's calls and a note on the tail", res.OK, res.Notes)
	}
}

// The series comes from ghz's details of its warm-up's and window's calls,
// by when each ended, an OK call as its messages; it has no calls in
// flight (ghz ignores those of each run's stop). When a run made more
// calls than ghz keeps the details of, the series ends before the
// interval of the last detail, and a note says so.
func TestSeriesFromDetails(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	ms := time.Millisecond
	detail := func(end time.Duration, latency time.Duration, err string) runner.ResultDetail {
		return runner.ResultDetail{Timestamp: start.Add(end), Latency: latency, Error: err}
	}
	warm := &runner.Report{Count: 2, Details: []runner.ResultDetail{detail(100*ms, 2*ms, ""), detail(200*ms, ms, "unavailable")}}
	window := &runner.Report{Count: 3, Details: []runner.ResultDetail{detail(300*ms, 4*ms, ""), detail(400*ms, 6*ms, ""), detail(800*ms, ms, "")}}
	s, note := seriesOf(start, start.Add(time.Second), 10, warm, window)
	if note != "" || s.InFlight != nil {
		t.Errorf("note %q, in flight %v; want neither", note, s.InFlight)
	}
	if want := []uint64{10, 20, 0, 10}; !slices.Equal(s.OK, want) {
		t.Errorf("OK %v, want %v", s.OK, want)
	}
	if want := []uint64{1, 0, 0, 0}; !slices.Equal(s.Failed, want) {
		t.Errorf("failed %v, want %v", s.Failed, want)
	}
	if want := []time.Duration{2 * ms, 5 * ms, 0, ms}; !slices.Equal(s.Mean, want) {
		t.Errorf("mean %v, want %v", s.Mean, want)
	}
	window.Count = 4 // its fourth call's details were not kept
	s, note = seriesOf(start, start.Add(time.Second), 10, warm, window)
	if len(s.OK) != 3 || len(s.Mean) != 3 || !strings.Contains(note, "the series ends 750ms after the warm-up's start") {
		t.Errorf("%d intervals, note %q; want 3, cut before the last detail's", len(s.OK), note)
	}
}

// The window's histogram holds the latencies of its OK calls.
func TestHistogramOfTheWindow(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	rep := &runner.Report{Count: 3, StatusCodeDist: map[string]int{"OK": 2, "Unavailable": 1}, Details: []runner.ResultDetail{
		{Timestamp: start, Latency: time.Millisecond}, {Timestamp: start, Latency: 3 * time.Millisecond}, {Timestamp: start, Latency: time.Second, Error: "unavailable"}}}
	res := fromGHZReport(rep, start, start.Add(time.Second), 1)
	h, err := load.DecodeHistogram(res.Histogram)
	if err != nil {
		t.Fatal(err)
	}
	if h.TotalCount() != 2 || h.Max() < 2990 || h.Max() > 3010 {
		t.Errorf("histogram of %d calls, max %dµs; want the 2 OK ones, max 3000µs", h.TotalCount(), h.Max())
	}
}

func TestGHZFloodIsBounded(t *testing.T) { loadtest.FloodIsBounded(t, Run) }

// TestWorkersFinishedBeforeTheirTick: a run that stops before the worker
// ticker sent its one tick closes the ticker without a send on the closed
// channel, which ghz's own ticker panics on; a ticker that ran first
// delivers its tick.
func TestWorkersFinishedBeforeTheirTick(t *testing.T) {
	w := newWorkers(7)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Finish() // the run stopped at once
	}()
	w.Run() // the ticker's goroutine, late
	<-done
	if _, open := <-w.Ticker(); open {
		t.Error("the ticker of a finished run is still open")
	}
	w = newWorkers(7)
	go w.Run()
	if tv := <-w.Ticker(); tv.Delta != 7 || !tv.Done {
		t.Errorf("tick %+v, want 7 workers at once", tv)
	}
	w.Finish()
}
