//go:build e2e

package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// slowServiceTime is the service time of testdata/slow_server, which
// serves 4 calls at once: 400 calls a second at most.
const slowServiceTime = 10 * time.Millisecond

// TestOpenLoopAgainstASlowServer loads a server of known behaviour with h2
// open-loop on one connection: below its capacity, with room for 100 calls
// in flight, the latency is its service time and the rate is kept; above
// it, with a cap of 4 calls in flight (the server's own limit), the latency
// grows and the rate is marked as not sustained; and when the server
// stalls, with that cap, the latency from the intended start shows the
// stall where the latency from the actual start, what a closed loop
// measures, hides it (coordinated omission).
func TestOpenLoopAgainstASlowServer(t *testing.T) {
	api := engine(t)
	root := copyRepo(t, nil)
	dir := filepath.Join(root, "servers", "slow_server")
	copyTree(t, filepath.Join(root, "servers", "go_grpc"), dir)
	copyTree(t, filepath.Join(repoRoot(t), "orchestrator", "e2e", "testdata", "slow_server", "main.go"), filepath.Join(dir, "main.go"))
	if err := os.WriteFile(filepath.Join(dir, "variants.json"), []byte(`{"slow_server_stalls": {"SLOW_SERVER_STALLS": "1"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := func(qps, names, concurrency string) (string, map[string]record.Result) {
		t.Helper()
		env := benchEnv(t, map[string]string{"GRPC_BENCHMARKS": names, "GRPC_LOAD_TOOL": "h2", "GRPC_CLIENT_QPS": qps,
			"GRPC_CLIENT_CONNECTIONS": "1", "GRPC_CLIENT_CONCURRENCY": concurrency, "GRPC_BENCHMARK_DURATION": "20s", "GRPC_BENCHMARK_WARMUP": "1s"})
		res := runBinary(t, root, env, "bench")
		if res.code != 0 {
			t.Fatalf("GRPC_CLIENT_QPS=%s: exit code %d\nstdout:\n%s\nstderr:\n%s", qps, res.code, res.stdout, res.stderr)
		}
		text, run := readRun(t, runFolder(t, env))
		loads := map[string]record.Result{}
		for _, s := range servers(t, run) {
			if len(s.Rounds) != 1 || s.Rounds[0].Load == nil || s.Rounds[0].Load.Service == nil {
				t.Fatalf("%s: no open-loop measurement: %+v", s.Name, s.Rounds)
			}
			l := *s.Rounds[0].Load
			t.Logf("%s at %s/s: %.1f req/s, late %d, latency %+v, service %+v, notes %q", s.Name, qps, l.RPS, l.Late, l.Latency, *l.Service, l.Notes)
			loads[s.Name] = l
		}
		return text, loads
	}

	// (a) Half its capacity, evenly spaced: 2 calls in flight on average,
	// no queue; the latency is the service time, and the rate is kept. The
	// cap leaves room for a busy machine's slower calls; over 20 s the calls
	// in flight at the window's ends, a few, weigh less than 1%.
	text, loads := bench("200", "slow_server", "100")
	below := loads["slow_server"]
	// A busy machine stretches the server's 10 ms: the latency stays within
	// an order of magnitude of it, and close to the latency from the actual
	// start, the calls never waiting at the client.
	if l, s := below.Latency.P50, below.Service.P50; l < slowServiceTime || l > 10*slowServiceTime || l > s*3/2+5*time.Millisecond {
		t.Errorf("at 200/s, p50 %v (from the actual start %v), want about the service time %v", l, s, slowServiceTime)
	}
	if below.RPS < 198 || below.RPS > 202 {
		t.Errorf("at 200/s, achieved %.1f req/s, want within 1%%", below.RPS)
	}
	if strings.Contains(text, "slow_server: open loop: achieved") {
		t.Errorf("the kept rate is marked as not sustained:\n%s", text)
	}
	// (c) Stalls of 1 s every 4 s: the calls due in a stall wait at the
	// client, the cap of 4 full. From their intended start they take up
	// to a second; from their actual start, what a closed loop reports,
	// the service time, but for the few calls in flight when a stall began.
	text, loads = bench("200", "slow_server_stalls", "4")
	stalled := loads["slow_server_stalls"]
	if stalled.Latency.P99 < 200*time.Millisecond || stalled.Latency.P99 < 5*stalled.Service.P99 {
		t.Errorf("with stalls, intended-start p99 %v, actual-start p99 %v: want the first over 200ms and 5 times the second",
			stalled.Latency.P99, stalled.Service.P99)
	}
	if stalled.Late < 200 || !strings.Contains(text, "slow_server_stalls: open loop: the cap of 4 calls in flight held back") {
		t.Errorf("with stalls, %d calls late, want at least the 200 due in a stall, and a note on the cap:\n%s", stalled.Late, text)
	}

	// (b) Twice its capacity: the queue grows for as long as the load
	// lasts, and so does the latency of the calls answered; the calls still
	// queued when the grace ends count as unanswered, at their deadline, a
	// quarter of the window's and more; the rate is not sustained.
	text, loads = bench("800", "slow_server", "4")
	above := loads["slow_server"]
	if above.RPS > 0.6*800 || above.Late < 8000 || above.Unanswered < 4000 {
		t.Errorf("at 800/s, achieved %.1f req/s with %d calls late and %d unanswered, want at most 60%% of the target, half the window's 16000 late and a quarter unanswered",
			above.RPS, above.Late, above.Unanswered)
	}
	first, last := okLatencyAtTheEnds(t, above)
	if above.Latency.P50 < 20*slowServiceTime || last < 5*first || above.Service.P50 > 3*slowServiceTime {
		t.Errorf("at 800/s, latency p50 %v, of the calls answered in the window's first second %v and last %v, service p50 %v: want a queue growing to seconds, the service time unchanged",
			above.Latency.P50, first, last, above.Service.P50)
	}
	if !strings.Contains(text, "slow_server: open loop: achieved") || !strings.Contains(text, "the rate was not sustained") {
		t.Errorf("bench.txt does not mark the rate as not sustained:\n%s", text)
	}
	assertNoContainersLeft(t, api)
}

// okLatencyAtTheEnds is the mean latency of the OK calls that completed in
// the first second of the window and in its last, from the load's series.
func okLatencyAtTheEnds(t *testing.T, l record.Result) (first, last time.Duration) {
	t.Helper()
	s := l.Series
	if s == nil || s.Interval <= 0 {
		t.Fatalf("no series: %+v", l)
	}
	mean := func(from, to time.Time) time.Duration {
		var sum time.Duration
		var n uint64
		for i := max(0, int(from.Sub(s.Start)/s.Interval)); i < min(len(s.OK), int(to.Sub(s.Start)/s.Interval)); i++ {
			sum += s.Mean[i] * time.Duration(s.OK[i])
			n += s.OK[i]
		}
		if n == 0 {
			t.Fatalf("no OK call from %v to %v: %+v", from, to, s)
		}
		return sum / time.Duration(n)
	}
	return mean(l.Start, l.Start.Add(time.Second)), mean(l.End.Add(-time.Second), l.End)
}
