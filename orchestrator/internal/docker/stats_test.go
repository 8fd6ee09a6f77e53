package docker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
	"github.com/grpcbench/grpcbench/orchestrator/internal/usage"
)

// rawCPU and rawStats decode only the fields the figures come from, with
// types of the test's own, so that the expected values do not depend on the
// decoding under test.
type rawCPU struct {
	Usage struct {
		Total uint64 `json:"total_usage"`
	} `json:"cpu_usage"`
	System uint64 `json:"system_cpu_usage"`
	Online uint32 `json:"online_cpus"`
}

type rawStats struct {
	Read    time.Time `json:"read"`
	PreRead time.Time `json:"preread"`
	CPU     rawCPU    `json:"cpu_stats"`
	PreCPU  rawCPU    `json:"precpu_stats"`
	Memory  struct {
		Usage uint64            `json:"usage"`
		Stats map[string]uint64 `json:"stats"`
	} `json:"memory_stats"`
}

// readLines returns the file's lines and each decoded on its own.
func readLines(t *testing.T, path string) ([]byte, []rawStats) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rawStats
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var r rawStats
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return data, out
}

func readSamples(t *testing.T, data []byte) []backend.Sample {
	t.Helper()
	var got []backend.Sample
	if err := ReadStats(bytes.NewReader(data), func(s backend.Sample) { got = append(got, s) }); err != nil {
		t.Fatalf("Read error: %v", err)
	}
	return got
}

// wallPercent is CPU time over wall-clock time, written out from the raw
// fields.
func wallPercent(r rawStats) float64 {
	return float64(r.CPU.Usage.Total-r.PreCPU.Usage.Total) / float64(r.Read.Sub(r.PreRead)) * 100
}

// dockerPercent is the Docker CLI's formula: the ratio to the host's
// jiffies, which the suite no longer uses.
func dockerPercent(r rawStats) float64 {
	cpuDelta := float64(r.CPU.Usage.Total - r.PreCPU.Usage.Total)
	sysDelta := float64(r.CPU.System - r.PreCPU.System)
	return cpuDelta / sysDelta * float64(r.CPU.Online) * 100
}

func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func TestReadRecordedStreams(t *testing.T) {
	for _, tt := range []struct {
		file string
		// inactive says whether total_inactive_file is non-zero somewhere,
		// so that the subtraction is exercised.
		inactive bool
	}{
		{"server-stats.jsonl", false},
		{"client-stats.jsonl", true},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, lines := readLines(t, filepath.Join("testdata", tt.file))
			if len(lines) < 10 {
				t.Fatalf("testdata has %d lines, want at least 10", len(lines))
			}
			// The first response of a stream has no previous reading.
			if !lines[0].PreRead.IsZero() || lines[0].PreCPU.System != 0 {
				t.Fatalf("line 1 has precpu (preread %v, system %d); the test expects the first response of a stream",
					lines[0].PreRead, lines[0].PreCPU.System)
			}
			for i, l := range lines[1:] {
				if l.PreCPU.System == 0 || l.PreRead.IsZero() {
					t.Fatalf("line %d has no precpu; the test expects one on every line after the first", i+2)
				}
			}

			got := readSamples(t, data)
			if len(got) != len(lines)-1 {
				t.Fatalf("Read yielded %d samples from %d lines, want %d (the first has no precpu)", len(got), len(lines), len(lines)-1)
			}
			sawInactive := false
			for i, s := range got {
				raw := lines[i+1]
				if !s.Read.Equal(raw.Read) || !s.PreRead.Equal(raw.PreRead) {
					t.Errorf("sample %d covers [%v, %v], want line %d's [%v, %v]", i, s.PreRead, s.Read, i+2, raw.PreRead, raw.Read)
				}
				if i > 0 {
					if !s.Read.After(got[i-1].Read) {
						t.Errorf("sample %d read at %v, not after sample %d at %v", i, s.Read, i-1, got[i-1].Read)
					}
					if !s.PreRead.Equal(got[i-1].Read) {
						t.Errorf("sample %d starts at %v, want the previous sample's read %v", i, s.PreRead, got[i-1].Read)
					}
				}
				if want := wallPercent(raw); !closeTo(s.CPUPercent, want) {
					t.Errorf("sample %d CPUPercent = %v, want %v", i, s.CPUPercent, want)
				}
				if s.CPUPercent <= 0 || s.CPUPercent > 100*float64(raw.CPU.Online) {
					t.Errorf("sample %d CPUPercent = %v, outside (0, %d]", i, s.CPUPercent, 100*raw.CPU.Online)
				}
				inactive, ok := raw.Memory.Stats["total_inactive_file"]
				if !ok {
					t.Fatalf("line %d has no total_inactive_file; the testdata is meant to be cgroup v1", i+2)
				}
				if inactive != 0 {
					sawInactive = true
				}
				if want := raw.Memory.Usage - inactive; s.MemoryBytes != want {
					t.Errorf("sample %d MemoryBytes = %d, want usage %d - total_inactive_file %d = %d",
						i, s.MemoryBytes, raw.Memory.Usage, inactive, want)
				}
			}
			if sawInactive != tt.inactive {
				t.Errorf("non-zero total_inactive_file seen = %v, want %v", sawInactive, tt.inactive)
			}
		})
	}
}

func TestSummarizeRecordedStream(t *testing.T) {
	data, lines := readLines(t, filepath.Join("testdata", "server-stats.jsonl"))
	samples := readSamples(t, data)
	// Samples 2..6 come from lines 3..7 (0-based indexes 3..7): a window
	// from the start of sample 2 to the end of sample 6 keeps exactly them.
	from, to := samples[2].PreRead, samples[6].Read
	sum := usage.Summarize(samples, from, to)
	if sum.Samples != 5 {
		t.Fatalf("Summarize kept %d samples, want 5", sum.Samples)
	}
	first, last := lines[3], lines[7]
	cpuDelta := float64(last.CPU.Usage.Total - first.PreCPU.Usage.Total)
	if want := cpuDelta / float64(last.Read.Sub(first.PreRead)) * 100; !closeTo(sum.CPUAvgPercent, want) {
		t.Errorf("CPUAvgPercent = %v, want %v", sum.CPUAvgPercent, want)
	}
	if want := cpuDelta / 1e9; !closeTo(sum.CPUSeconds, want) {
		t.Errorf("CPUSeconds = %v, want %v", sum.CPUSeconds, want)
	}
	var memTotal, memMax uint64
	var cpuMax float64
	for _, l := range lines[3:8] {
		m := l.Memory.Usage - l.Memory.Stats["total_inactive_file"]
		memTotal += m
		memMax = max(memMax, m)
		cpuMax = max(cpuMax, wallPercent(l))
	}
	if want := memTotal / 5; sum.MemoryAvgBytes != want {
		t.Errorf("MemoryAvgBytes = %d, want %d", sum.MemoryAvgBytes, want)
	}
	if sum.MemoryMaxBytes != memMax {
		t.Errorf("MemoryMaxBytes = %d, want %d", sum.MemoryMaxBytes, memMax)
	}
	if !closeTo(sum.CPUMaxPercent, cpuMax) {
		t.Errorf("CPUMaxPercent = %v, want %v", sum.CPUMaxPercent, cpuMax)
	}
}

func TestReadStopsAtBadInput(t *testing.T) {
	data, _ := readLines(t, filepath.Join("testdata", "client-stats.jsonl"))
	// A stream cut in the middle of a document: the complete ones before
	// the cut are still delivered, and the cut is an error.
	cut := bytes.SplitAfterN(data, []byte("\n"), 5) // lines 1-4 and the rest
	truncated := append(append(append([]byte{}, cut[0]...), cut[1]...), cut[2]...)
	truncated = append(truncated, cut[3][:len(cut[3])/2]...)
	var got []backend.Sample
	err := ReadStats(bytes.NewReader(truncated), func(s backend.Sample) { got = append(got, s) })
	if err == nil {
		t.Error("Read of a truncated stream returned nil error")
	}
	if len(got) != 2 {
		t.Errorf("Read delivered %d samples before the cut, want 2", len(got))
	}

	if err := ReadStats(strings.NewReader("{not json"), func(backend.Sample) {}); err == nil {
		t.Error("Read of garbage returned nil error")
	}
	calls := 0
	if err := ReadStats(strings.NewReader(""), func(backend.Sample) { calls++ }); err != nil || calls != 0 {
		t.Errorf("Read of an empty stream = %v with %d samples, want nil and 0", err, calls)
	}
}

var t0 = time.Date(2026, 11, 30, 7, 35, 0, 0, time.UTC)

// at is t0 plus a number of seconds.
func at(seconds float64) time.Time {
	return t0.Add(time.Duration(seconds * float64(time.Second)))
}

// online is the CPU count of the hand-made engine: system_cpu_usage grows
// by online nanoseconds per nanosecond of wall time.
const online = 2

// response builds a stats response covering [from, to] seconds in which the
// container used cpuSeconds of CPU, with memBytes in use at the end.
func response(from, to, cpuSeconds float64, memBytes uint64) container.StatsResponse {
	const base = 1_000_000_000_000
	preCPU := uint64(5e9)
	preSys := uint64(base + from*1e9*online)
	return container.StatsResponse{
		Read:    at(to),
		PreRead: at(from),
		CPUStats: container.CPUStats{
			CPUUsage:    container.CPUUsage{TotalUsage: preCPU + uint64(cpuSeconds*1e9)},
			SystemUsage: uint64(base + to*1e9*online),
			OnlineCPUs:  online,
		},
		PreCPUStats: container.CPUStats{
			CPUUsage:    container.CPUUsage{TotalUsage: preCPU},
			SystemUsage: preSys,
			OnlineCPUs:  online,
		},
		MemoryStats: container.MemoryStats{
			Usage: memBytes + 4096,
			Stats: map[string]uint64{"total_inactive_file": 4096},
		},
	}
}

func sample(t *testing.T, from, to, cpuSeconds float64, memBytes uint64) backend.Sample {
	t.Helper()
	s, ok := FromResponse(response(from, to, cpuSeconds, memBytes))
	if !ok {
		t.Fatalf("FromResponse([%v, %v]) not ok", from, to)
	}
	return s
}

const mib = 1 << 20

func TestFromResponse(t *testing.T) {
	s := sample(t, 0, 1, 0.5, 100*mib)
	// 0.5 s of CPU in 1 s of wall time is half a core: 50 %.
	if !closeTo(s.CPUPercent, 50) {
		t.Errorf("CPUPercent = %v, want 50", s.CPUPercent)
	}
	if s.MemoryBytes != 100*mib {
		t.Errorf("MemoryBytes = %d, want %d", s.MemoryBytes, 100*mib)
	}
	if !s.Read.Equal(at(1)) || !s.PreRead.Equal(at(0)) {
		t.Errorf("sample covers [%v, %v], want [%v, %v]", s.PreRead, s.Read, at(0), at(1))
	}

	first := response(0, 1, 0.5, mib)
	first.PreRead = time.Time{}
	first.PreCPUStats = container.CPUStats{}
	if _, ok := FromResponse(first); ok {
		t.Error("FromResponse of a first response (no precpu) is ok, want not ok")
	}

	// A response with a preread time but no precpu counters (as some
	// engines send first) has nothing to subtract from either.
	noPreCPU := response(0, 1, 0.5, mib)
	noPreCPU.PreCPUStats = container.CPUStats{}
	if s, ok := FromResponse(noPreCPU); ok {
		t.Errorf("FromResponse without precpu_stats is ok with CPUPercent %v, want not ok", s.CPUPercent)
	}

	backwards := response(0, 1, 0.5, mib)
	backwards.CPUStats.CPUUsage.TotalUsage = backwards.PreCPUStats.CPUUsage.TotalUsage - 1
	if _, ok := FromResponse(backwards); ok {
		t.Error("FromResponse with CPU usage going backwards is ok, want not ok")
	}
	still := response(0, 1, 0.5, mib)
	still.Read = still.PreRead
	if _, ok := FromResponse(still); ok {
		t.Error("FromResponse with no wall time elapsed is ok, want not ok")
	}
}

// TestQuotaCapsTheClient is why CPU is CPU time over wall time: the
// recorded client ran under a one-core quota, which the Docker CLI's ratio
// to the host's jiffies reads as more than one core.
func TestQuotaCapsTheClient(t *testing.T) {
	data, lines := readLines(t, filepath.Join("testdata", "client-stats.jsonl"))
	docker := 0.0
	for _, l := range lines[1:] {
		docker = max(docker, dockerPercent(l))
	}
	if docker <= 101 {
		t.Fatalf("the recorded stream no longer shows the jiffies error (Docker's formula peaks at %.2f%%)", docker)
	}
	samples := readSamples(t, data)
	sum := usage.Summarize(samples, samples[0].PreRead, samples[len(samples)-1].Read)
	if sum.CPUAvgPercent > 100.1 || sum.CPUAvgPercent < 99 {
		t.Errorf("the client under a one-core quota averaged %.3f%%, want (99, 100.1]", sum.CPUAvgPercent)
	}
}

func TestThrottling(t *testing.T) {
	throttled := func(from, to float64, periods, throttled uint64, stopped time.Duration) backend.Sample {
		r := response(from, to, 0.9, mib)
		r.PreCPUStats.ThrottlingData = container.ThrottlingData{Periods: 1000, ThrottledPeriods: 100, ThrottledTime: uint64(time.Second)}
		r.CPUStats.ThrottlingData = container.ThrottlingData{Periods: 1000 + periods, ThrottledPeriods: 100 + throttled,
			ThrottledTime: uint64(time.Second + stopped)}
		s, ok := FromResponse(r)
		if !ok {
			t.Fatal("FromResponse not ok")
		}
		return s
	}
	sum := usage.Summarize([]backend.Sample{
		throttled(0, 1, 10, 2, 30*time.Millisecond),
		throttled(1, 2, 10, 0, 0),
		throttled(2, 3, 10, 4, 50*time.Millisecond),
	}, at(0), at(3))
	if !closeTo(sum.ThrottledShare, 0.2) || !closeTo(sum.ThrottledSeconds, 0.08) {
		t.Errorf("throttled %v of periods for %v s, want 0.2 and 0.08", sum.ThrottledShare, sum.ThrottledSeconds)
	}
}

func TestMemoryUsage(t *testing.T) {
	tests := []struct {
		name  string
		usage uint64
		stats map[string]uint64
		want  uint64
	}{
		{"cgroup v1", 300 * mib, map[string]uint64{"total_inactive_file": 40 * mib, "inactive_file": 10 * mib, "cache": 50 * mib}, 260 * mib},
		{"cgroup v2", 300 * mib, map[string]uint64{"inactive_file": 25 * mib, "anon": 200 * mib, "file": 90 * mib}, 275 * mib},
		{"neither", 300 * mib, map[string]uint64{"rss": 200 * mib, "cache": 90 * mib}, 300 * mib},
		{"no stats at all", 300 * mib, nil, 300 * mib},
		{"inactive not below usage", 10 * mib, map[string]uint64{"inactive_file": 20 * mib}, 10 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := response(0, 1, 0.5, 0)
			r.MemoryStats = container.MemoryStats{Usage: tt.usage, Stats: tt.stats}
			s, ok := FromResponse(r)
			if !ok {
				t.Fatal("FromResponse not ok")
			}
			if s.MemoryBytes != tt.want {
				t.Errorf("MemoryBytes = %d, want %d", s.MemoryBytes, tt.want)
			}
		})
	}
}

func TestMemoryUsageCgroupV2JSON(t *testing.T) {
	// A cgroup v2 engine's response, as JSON: no total_* keys.
	const doc = `{"read":"2026-11-30T07:35:02Z","preread":"2026-11-30T07:35:01Z",
"cpu_stats":{"cpu_usage":{"total_usage":3000000000},"system_cpu_usage":9000000000,"online_cpus":4},
"precpu_stats":{"cpu_usage":{"total_usage":2000000000},"system_cpu_usage":5000000000,"online_cpus":4},
"memory_stats":{"usage":52428800,"stats":{"anon":31457280,"file":20971520,"inactive_file":15728640,"active_file":5242880},"limit":536870912}}`
	var got []backend.Sample
	if err := ReadStats(strings.NewReader(doc), func(s backend.Sample) { got = append(got, s) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d samples, want 1", len(got))
	}
	if want := uint64(52428800 - 15728640); got[0].MemoryBytes != want {
		t.Errorf("MemoryBytes = %d, want %d", got[0].MemoryBytes, want)
	}
	// 1e9 ns of CPU in one second: one core.
	if !closeTo(got[0].CPUPercent, 100) {
		t.Errorf("CPUPercent = %v, want 100", got[0].CPUPercent)
	}
}
