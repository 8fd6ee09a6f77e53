package usage

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

var t0 = time.Date(2026, 11, 30, 7, 35, 0, 0, time.UTC)

// at is t0 plus a number of seconds.
func at(seconds float64) time.Time {
	return t0.Add(time.Duration(seconds * float64(time.Second)))
}

// sample covers [from, to] seconds in which the container used cpuSeconds
// of CPU, with memBytes in use at the end.
func sample(from, to, cpuSeconds float64, memBytes uint64) backend.Sample {
	nanos := uint64(cpuSeconds * 1e9)
	return backend.Sample{Read: at(to), PreRead: at(from), CPUNanos: nanos, MemoryBytes: memBytes,
		CPUPercent: float64(nanos) / float64(at(to).Sub(at(from))) * 100}
}

const mib = 1 << 20

func TestSummarizeWindow(t *testing.T) {
	samples := []backend.Sample{
		sample(0, 1, 0.5, 50*mib),  // 50 %
		sample(1, 2, 1.0, 100*mib), // 100 %
		sample(2, 3, 1.5, 300*mib), // 150 %
		sample(3, 4, 0.2, 400*mib), // 20 %
	}
	tests := []struct {
		name     string
		from, to float64
		want     Summary
	}{
		{"edges on reading times", 1, 3, Summary{Samples: 2, CPUAvgPercent: 125, CPUMaxPercent: 150,
			MemoryAvgBytes: 200 * mib, MemoryMaxBytes: 300 * mib, CPUSeconds: 2.5}},
		// 0.25 + 1 + 1.5 + 0.1 s of CPU in 3 s: straddling samples count
		// for the share of them inside the window.
		{"straddling samples count for their share", 0.5, 3.5, Summary{Samples: 4, CPUAvgPercent: 95, CPUMaxPercent: 150,
			MemoryAvgBytes: 850 * mib / 4, MemoryMaxBytes: 400 * mib, CPUSeconds: 2.85}},
		{"everything", 0, 4, Summary{Samples: 4, CPUAvgPercent: 80, CPUMaxPercent: 150,
			MemoryAvgBytes: 850 * mib / 4, MemoryMaxBytes: 400 * mib, CPUSeconds: 3.2}},
		// Past the last reading nothing is known: the rate is of the part
		// the samples cover.
		{"past the stream's end", 3.5, 4.5, Summary{Samples: 1, CPUAvgPercent: 20, CPUMaxPercent: 20,
			MemoryAvgBytes: 400 * mib, MemoryMaxBytes: 400 * mib, CPUSeconds: 0.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkSummary(t, Summarize(samples, at(tt.from), at(tt.to)), tt.want)
		})
	}
}

func checkSummary(t *testing.T, got, want Summary) {
	t.Helper()
	if got.Samples != want.Samples {
		t.Errorf("Samples = %d, want %d", got.Samples, want.Samples)
	}
	if !closeTo(got.CPUAvgPercent, want.CPUAvgPercent) {
		t.Errorf("CPUAvgPercent = %v, want %v", got.CPUAvgPercent, want.CPUAvgPercent)
	}
	if !closeTo(got.CPUMaxPercent, want.CPUMaxPercent) {
		t.Errorf("CPUMaxPercent = %v, want %v", got.CPUMaxPercent, want.CPUMaxPercent)
	}
	if got.MemoryAvgBytes != want.MemoryAvgBytes {
		t.Errorf("MemoryAvgBytes = %d, want %d", got.MemoryAvgBytes, want.MemoryAvgBytes)
	}
	if got.MemoryMaxBytes != want.MemoryMaxBytes {
		t.Errorf("MemoryMaxBytes = %d, want %d", got.MemoryMaxBytes, want.MemoryMaxBytes)
	}
	if !closeTo(got.CPUSeconds, want.CPUSeconds) {
		t.Errorf("CPUSeconds = %v, want %v", got.CPUSeconds, want.CPUSeconds)
	}
}

func TestSummarizeWeightsByTime(t *testing.T) {
	short := sample(0, 1, 1.0, 10*mib) // 1 s at 100 %
	long := sample(1, 4, 0.6, 20*mib)  // 3 s at 20 %
	if !closeTo(short.CPUPercent, 100) || !closeTo(long.CPUPercent, 20) {
		t.Fatalf("hand-made samples are %v %% and %v %%, want 100 and 20", short.CPUPercent, long.CPUPercent)
	}
	sum := Summarize([]backend.Sample{short, long}, at(0), at(4))
	// 1.6 s of CPU over 4 s is 40 % of a core; the plain mean of the two
	// readings would be 60 %.
	plainMean := (short.CPUPercent + long.CPUPercent) / 2
	if closeTo(sum.CPUAvgPercent, plainMean) {
		t.Errorf("CPUAvgPercent = %v is the plain mean of the samples", sum.CPUAvgPercent)
	}
	checkSummary(t, sum, Summary{Samples: 2, CPUAvgPercent: 40, CPUMaxPercent: 100,
		MemoryAvgBytes: 15 * mib, MemoryMaxBytes: 20 * mib, CPUSeconds: 1.6})
}

func TestSummarizeShortWindowInterpolates(t *testing.T) {
	samples := []backend.Sample{
		sample(0, 1, 0.2, 10*mib), // 20 %
		sample(1, 2, 0.8, 30*mib), // 80 %
		sample(2, 3, 0.4, 50*mib), // 40 %
	}
	// Inside one sampling period: that sample's rate, for half its time.
	checkSummary(t, Summarize(samples, at(1.2), at(1.7)), Summary{Samples: 1, CPUAvgPercent: 80, CPUMaxPercent: 80,
		MemoryAvgBytes: 30 * mib, MemoryMaxBytes: 30 * mib, CPUSeconds: 0.4})
	// Across a reading: 0.2 s at 20 % and 0.3 s at 80 %.
	checkSummary(t, Summarize(samples, at(0.8), at(1.3)), Summary{Samples: 2, CPUAvgPercent: 56, CPUMaxPercent: 80,
		MemoryAvgBytes: 20 * mib, MemoryMaxBytes: 30 * mib, CPUSeconds: 0.28})
}

// TestPinnedServerNeverReadsAboveOneCore is the property the interpolation
// is for: a server pinned to one core, busy all through a load that goes on
// LoadTail past the window, reads 100% (within the counters' resolution) in
// every window from the shortest the settings allow (1 s, after a warm-up
// of at least 1 s) up, wherever the window falls between readings. The
// stream's readings are 1 s apart give or take 100 ms, and each read time
// is stamped up to 2 ms after the counters were read, which is the
// resolution allowed.
func TestPinnedServerNeverReadsAboveOneCore(t *testing.T) {
	const resolution = 0.5 // percent of a core
	rng := rand.New(rand.NewPCG(17, 5))
	for trial := range 500 {
		warmup := 1 + 2*rng.Float64()
		length := 1 + 5*rng.Float64()
		if trial < 50 {
			length = 1 // the shortest window, at every phase of the ticks
		}
		from, to := warmup, warmup+length
		loadEnd := to + LoadTail.Seconds()
		// The stream starts with the load; its first reading has nothing
		// before it, so the first sample starts at a tick within a second.
		tick := rng.Float64()
		stamped := tick
		var samples []backend.Sample
		for tick < loadEnd+3 {
			next := tick + 0.9 + 0.2*rng.Float64()
			stamp := next + 0.002*rng.Float64()
			busy := max(0, min(next, loadEnd)-tick) // one core while the load runs
			samples = append(samples, sample(stamped, stamp, busy, mib))
			tick, stamped = next, stamp
		}
		got := Summarize(samples, at(from), at(to))
		if got.CPUAvgPercent > 100+resolution || got.CPUAvgPercent < 100-resolution {
			t.Errorf("trial %d: window [%.3f, %.3f] s read %.3f%% of the pinned core, want 100 ± %.1f", trial, from, to, got.CPUAvgPercent, resolution)
		}
	}
}

func TestSummarizeEmpty(t *testing.T) {
	if got := Summarize(nil, at(0), at(10)); got != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
	samples := []backend.Sample{sample(0, 1, 0.5, mib), sample(1, 2, 0.5, mib)}
	if got := Summarize(samples, at(5), at(10)); got != (Summary{}) {
		t.Errorf("Summarize with no sample near the window = %+v, want zero", got)
	}
}

func TestHostSteal(t *testing.T) {
	dir := t.TempDir()
	write := func(line string) HostCPU {
		path := filepath.Join(dir, "stat")
		if err := os.WriteFile(path, []byte(line+"\ncpu0 1 2 3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		h, ok := ReadHostCPU(path)
		if !ok {
			t.Fatalf("ReadHostCPU(%q) not ok", line)
		}
		return h
	}
	before := write("cpu  1000 0 500 8000 100 0 0 400 0 0")
	after := write("cpu  1400 0 600 8400 100 0 0 500 300 0") // +1000 jiffies, 100 stolen; guest time is in user already
	if got := after.StealSince(before); !closeTo(got, 0.1) {
		t.Errorf("steal = %v, want 0.1", got)
	}
	// user +400 and system +100 of 1000 jiffies on 2 cpus: one core busy.
	if got := after.BusyCoresSince(before, 2); !closeTo(got, 1) {
		t.Errorf("busy cores = %v, want 1", got)
	}
	if _, ok := ReadHostCPU(filepath.Join(dir, "nope")); ok {
		t.Error("a missing /proc/stat read as ok")
	}
	if _, ok := ReadHostCPU("usage.go"); ok {
		t.Error("a file of another format read as ok")
	}
}
