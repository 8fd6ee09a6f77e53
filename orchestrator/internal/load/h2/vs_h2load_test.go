package h2

// h2 against h2load on a server outside this process, in alternating
// rounds, with the client's CPU measured over each measurement window.
// scripts/h2-vs-h2load builds a grpc-go server, pins it and this process to
// one core each, and runs this benchmark.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/h2load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load/loadtest"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
)

// Speed targets of h2 against h2load on the same server: at least the same
// req/s per client core in every shape, and no added latency per round
// trip with one call in flight (1a), within the noise of a shared machine.
const (
	targetPerCoreRatio = 1.0
	targetAddedLatency = 0 * time.Microsecond
)

// compareShapes are the grpcxx matrix's shapes: connections × calls in
// flight per connection.
var compareShapes = []struct {
	name           string
	conns, streams int
}{
	{"1a", 1, 1}, {"1b", 1, 10}, {"2a", 10, 1}, {"2b", 10, 10}, {"3a", 100, 1}, {"3b", 100, 10},
}

// round is one client's run: req/s of OK calls, and the client's and the
// server's CPU in cores over the measurement window.
type round struct {
	rps, cpu, serverCPU float64
}

func (r round) perCore() float64 { return r.rps / r.cpu }

// BenchmarkH2VsH2Load loads the server at H2VS_TARGET with h2 (in this
// process) and h2load (a child, on the same cores), alternating which goes
// first in each round, and reports medians per shape. Settings, from the
// environment: H2VS_SHAPES (default all), H2VS_ROUNDS (5), H2VS_DURATION
// (10s), H2VS_WARMUP (3s), H2VS_SCENARIO (complex_proto), H2VS_SERVER_PID
// (the server's CPU is then reported too). Run it pinned, GOMAXPROCS=1:
//
//	H2VS_TARGET=127.0.0.1:50051 GOMAXPROCS=1 taskset -c 1 \
//	  go test -run '^$' -bench H2VsH2Load -benchtime 1x -timeout 0 ./orchestrator/internal/load/h2/
func BenchmarkH2VsH2Load(b *testing.B) {
	target := os.Getenv("H2VS_TARGET")
	if target == "" {
		b.Skip("H2VS_TARGET is not set: run scripts/h2-vs-h2load")
	}
	h2loadBin, err := exec.LookPath("h2load")
	if err != nil {
		b.Fatalf("find h2load (Debian's nghttp2-client): %v", err)
	}
	rounds := envInt(b, "H2VS_ROUNDS", 5)
	duration := envDuration(b, "H2VS_DURATION", 10*time.Second)
	warmup := envDuration(b, "H2VS_WARMUP", 3*time.Second)
	dir := loadtest.ScenarioDir(cmp.Or(os.Getenv("H2VS_SCENARIO"), "complex_proto"))
	serverPID := envInt(b, "H2VS_SERVER_PID", 0)
	wanted := strings.Split(cmp.Or(os.Getenv("H2VS_SHAPES"), "1a,1b,2a,2b,3a,3b"), ",")

	sc, err := scenario.Load(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	req, err := sc.RequestBytes()
	if err != nil {
		b.Fatal(err)
	}
	bodyFile := filepath.Join(b.TempDir(), "request.grpc")
	if err := os.WriteFile(bodyFile, load.GRPCFrame(req), 0o644); err != nil {
		b.Fatal(err)
	}

	var summary []string
	for _, sh := range compareShapes {
		if !slices.Contains(wanted, sh.name) {
			continue
		}
		spec := load.Spec{Target: target, ScenarioDir: dir, Connections: sh.conns, Concurrency: sh.conns * sh.streams,
			Warmup: warmup, Duration: duration}
		b.Run(sh.name, func(b *testing.B) {
			var h2s, refs []round
			for i := range rounds {
				h2First := i%2 == 0
				for j := range 2 {
					if (j == 0) == h2First {
						r := h2Round(b, spec, serverPID)
						h2s = append(h2s, r)
						b.Logf("round %d h2:     %8.0f req/s, client %.2f cores, server %.2f cores", i+1, r.rps, r.cpu, r.serverCPU)
					} else {
						r := h2loadRound(b, h2loadBin, spec, bodyFile, serverPID)
						refs = append(refs, r)
						b.Logf("round %d h2load: %8.0f req/s, client %.2f cores, server %.2f cores", i+1, r.rps, r.cpu, r.serverCPU)
					}
				}
			}
			h2RPS, refRPS := median(h2s, func(r round) float64 { return r.rps }), median(refs, func(r round) float64 { return r.rps })
			h2Core, refCore := median(h2s, round.perCore), median(refs, round.perCore)
			ratio := h2Core / refCore
			b.ReportMetric(h2RPS, "h2-req/s")
			b.ReportMetric(refRPS, "h2load-req/s")
			b.ReportMetric(h2Core, "h2-req/s/core")
			b.ReportMetric(refCore, "h2load-req/s/core")
			b.ReportMetric(ratio, "per-core-ratio")
			line := fmt.Sprintf("%s  h2 %8.0f req/s %8.0f /core   h2load %8.0f req/s %8.0f /core   h2/h2load req/s %.2f per core %.2f %s",
				sh.name, h2RPS, h2Core, refRPS, refCore, h2RPS/refRPS, ratio, verdict(ratio >= targetPerCoreRatio))
			if sh.conns*sh.streams == 1 {
				// One call in flight: each call's latency is 1/req/s.
				added := time.Duration(float64(time.Second)/h2RPS - float64(time.Second)/refRPS)
				b.ReportMetric(float64(added)/float64(time.Microsecond), "added-µs/roundtrip")
				line += fmt.Sprintf("; added latency per round trip %+.1f µs %s",
					float64(added)/float64(time.Microsecond), verdict(added <= targetAddedLatency))
			}
			summary = append(summary, line)
		})
	}
	// A parent benchmark's log is not printed: the summary goes to stdout.
	fmt.Printf("h2 against h2load, medians of %d rounds of %v (warm-up %v):\n%s\n", rounds, duration, warmup, strings.Join(summary, "\n"))
}

func verdict(met bool) string {
	if met {
		return "(target met)"
	}
	return "(below target)"
}

// h2Round runs h2 in this process; the process's CPU is h2's.
func h2Round(b *testing.B, spec load.Spec, serverPID int) round {
	b.Helper()
	w := watchCPU(os.Getpid(), serverPID, spec.Warmup, spec.Duration)
	res, err := Run(context.Background(), spec)
	if err != nil {
		b.Fatalf("h2: %v", err)
	}
	if res.Requests != res.OK || len(res.Errors) > 0 {
		b.Fatalf("h2: %d of %d calls not OK: %v %v", res.Requests-res.OK, res.Requests, res.Statuses, res.Errors)
	}
	r := <-w
	r.rps = res.RPS
	return r
}

func h2loadRound(b *testing.B, bin string, spec load.Spec, bodyFile string, serverPID int) round {
	b.Helper()
	var out bytes.Buffer
	cmd := exec.Command(bin, h2load.Args(spec, bodyFile, scenario.FullMethod)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatalf("start h2load: %v", err)
	}
	w := watchCPU(cmd.Process.Pid, serverPID, spec.Warmup, spec.Duration)
	r := <-w
	if err := cmd.Wait(); err != nil {
		b.Fatalf("h2load: %v\n%s", err, out.String())
	}
	res, err := h2load.Parse(out.String())
	if err != nil {
		b.Fatal(err)
	}
	if res.Requests != res.OK {
		b.Fatalf("h2load: %d of %d calls failed:\n%s", res.Requests-res.OK, res.Requests, out.String())
	}
	r.rps = res.RPS
	return r
}

// watchCPU measures the CPU of the client and the server over the
// measurement window, which starts warmup from now.
func watchCPU(client, server int, warmup, duration time.Duration) <-chan round {
	out := make(chan round, 1)
	start := time.Now()
	go func() {
		time.Sleep(warmup)
		t0, c0, s0 := time.Now(), cpuTime(client), cpuTime(server)
		time.Sleep(time.Until(start.Add(warmup + duration)))
		wall := time.Since(t0)
		out <- round{cpu: float64(cpuTime(client)-c0) / float64(wall), serverCPU: float64(cpuTime(server)-s0) / float64(wall)}
	}()
	return out
}

// cpuTime is a process's user and system time, all threads, from
// /proc/<pid>/stat (in clock ticks of 10 ms); 0 for pid 0.
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields after it are fixed.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func median(rs []round, f func(round) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, s, err)
	}
	return n
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		b.Fatalf("%s=%q: %v", name, s, err)
	}
	return d
}
