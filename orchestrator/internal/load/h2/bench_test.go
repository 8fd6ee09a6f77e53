package h2

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
)

// BenchmarkH2Calls runs h2 for a second against a frame-level echo
// server in this process and reports calls per second and heap allocations
// per call, the server's included (an upper bound on h2's own).
//
//	go test -run '^$' -bench H2Calls -benchtime 1x ./orchestrator/load/
func BenchmarkH2Calls(b *testing.B) {
	addr, _ := startRawServer(b)
	spec := load.Spec{Target: addr, ScenarioDir: loadtest.ScenarioDir("complex_proto"), Connections: 4, Concurrency: 256,
		Warmup: 200 * time.Millisecond, Duration: time.Second}
	for range b.N {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Run(context.Background(), spec)
		runtime.ReadMemStats(&after)
		if err != nil || res.OK == 0 {
			b.Fatalf("%v %+v", err, res)
		}
		calls := float64(res.OK + res.WarmupRequests)
		b.ReportMetric(res.RPS, "calls/s")
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/calls, "allocs/call")
	}
}

// BenchmarkVerify is the cost of checking one answer against the expected
// echo as it arrives: why every answer is checked rather than a sample.
func BenchmarkVerify(b *testing.B) {
	for _, name := range []string{"complex_proto", "string_10kB"} {
		b.Run(name, func(b *testing.B) {
			c, err := newCall(context.Background(), "127.0.0.1:1", loadtest.ScenarioDir(name))
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
		c, err := newCall(context.Background(), "127.0.0.1:1", loadtest.ScenarioDir("complex_proto"))
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
