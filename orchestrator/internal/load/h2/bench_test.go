package h2

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
)

// BenchmarkH2Calls runs h2 for a second against a frame-level echo
// server in this process, closed-loop and open-loop at a rate it keeps up
// with, and reports calls per second, the process's CPU time per call and
// heap allocations per call, the server's included (upper bounds on h2's
// own). A call costs less the more calls share a write and a read, which
// a closed loop with many in flight and an open loop near capacity do:
// compare an open loop far below capacity with one call in flight per
// connection.
//
//	go test -run '^$' -bench H2Calls -benchtime 1x ./orchestrator/internal/load/h2/
func BenchmarkH2Calls(b *testing.B) {
	addr, _ := startRawServer(b)
	base := load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 4, Concurrency: 256,
		Warmup: 200 * time.Millisecond, Duration: time.Second}
	open := func(qps int, arr load.Arrivals) load.Spec {
		s := base
		// A short grace: the load after the window is not in the calls
		// the CPU is divided by.
		s.QPS, s.Arrivals, s.Grace = qps, arr, 10*time.Millisecond
		return s
	}
	for _, c := range []struct {
		name string
		spec load.Spec
	}{
		{"closed-loop", base},
		// One call in flight per connection: a round trip per call, no
		// batching, as an open loop far below capacity.
		{"closed-loop-4x1", func() load.Spec { s := base; s.Concurrency = 4; return s }()},
		{"open-loop-constant-20k", open(20_000, load.ArrivalsConstant)},
		{"open-loop-poisson-20k", open(20_000, load.ArrivalsPoisson)},
		{"open-loop-constant-50k", open(50_000, load.ArrivalsConstant)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				cpu := cpuTime(os.Getpid())
				res, err := Run(context.Background(), c.spec)
				cpu = cpuTime(os.Getpid()) - cpu
				runtime.ReadMemStats(&after)
				if err != nil || res.OK == 0 {
					b.Fatalf("%v %+v", err, res)
				}
				calls := float64(res.OK + res.WarmupRequests)
				b.ReportMetric(res.RPS, "calls/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/calls, "cpu-ns/call")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/calls, "allocs/call")
			}
		})
	}
}

// BenchmarkPacer runs h2 open-loop for 2 s at 500, 5000 and 20,000 calls
// a second, evenly spaced over 4 connections, against the frame-level
// echo server in this process, and reports the pacer's own lateness (from
// each call's intended start to its write, of the calls it started
// itself: Result.Pacer) at p50, p90 and p99, the share of calls counted
// late, and the process's CPU time per call, the server's included; with
// PACER_TARGET set (host:port of an echo server in a process of its own),
// against that server, and the CPU per call is h2's own. The machine's
// load changes the figures: run it a few times and compare medians, beside
// `uptime`.
//
//	go test -run '^$' -bench Pacer -benchtime 1x -count 5 ./orchestrator/internal/load/h2/
func BenchmarkPacer(b *testing.B) {
	addr := os.Getenv("PACER_TARGET")
	if addr == "" {
		addr, _ = startRawServer(b)
	}
	for _, qps := range []int{500, 5000, 20_000} {
		b.Run(strconv.Itoa(qps), func(b *testing.B) {
			spec := load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 4, Concurrency: 256,
				QPS: qps, Warmup: 200 * time.Millisecond, Duration: 2 * time.Second, Grace: 100 * time.Millisecond}
			for range b.N {
				cpu := cpuTime(os.Getpid())
				res, err := Run(context.Background(), spec)
				cpu = cpuTime(os.Getpid()) - cpu
				if err != nil || res.OK == 0 || res.Pacer == nil {
					b.Fatalf("%v %+v", err, res)
				}
				us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
				b.ReportMetric(us(res.Pacer.P50), "pacer-p50-µs")
				b.ReportMetric(us(res.Pacer.P90), "pacer-p90-µs")
				b.ReportMetric(us(res.Pacer.P99), "pacer-p99-µs")
				b.ReportMetric(100*float64(res.Late)/float64(res.Planned), "late-%")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(res.OK+res.WarmupRequests), "cpu-ns/call")
			}
		})
	}
}

// BenchmarkVerify is the cost of checking one answer against the expected
// echo as it arrives: why every answer is checked rather than a sample.
func BenchmarkVerify(b *testing.B) {
	for _, name := range []string{"complex_proto", "string_10kB"} {
		b.Run(name, func(b *testing.B) {
			c, err := newCall(context.Background(), "127.0.0.1:1", loadtest.ScenarioDir(name), 0)
			if err != nil {
				b.Fatal(err)
			}
			cn := &conn{call: c}
			answer := bytes.Clone(c.expect) // as read from the socket, not the same memory
			b.SetBytes(int64(len(answer)))
			b.ReportAllocs()
			for range b.N {
				s := stream{}
				cn.compare(&s, answer)
				if s.mismatch {
					b.Fatal("the expected answer did not match")
				}
			}
		})
	}
	// A server that encodes the oneof in field order (C++, Java, Python):
	// the first answer is checked by meaning, the others against it.
	b.Run("complex_proto_reordered", func(b *testing.B) {
		c, err := newCall(context.Background(), "127.0.0.1:1", loadtest.ScenarioDir("complex_proto"), 0)
		if err != nil {
			b.Fatal(err)
		}
		cn := &conn{call: c}
		echoes, _ := answers(b, c)
		answer := echoes["fields reordered"]
		b.SetBytes(int64(len(answer)))
		b.ReportAllocs()
		s := stream{httpStatus: 200, grpcContent: true}
		for range b.N {
			s.matched, s.mismatch = 0, false
			cn.compare(&s, answer)
			if cn.outcome(&s) != "OK" {
				b.Fatal("the reordered echo was refused")
			}
		}
	})
}
