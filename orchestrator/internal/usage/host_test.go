package usage

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestHostSamplerSeesABusyCore keeps one core of this machine busy for a
// window and reads it back from /proc/stat.
func TestHostSamplerSeesABusyCore(t *testing.T) {
	if _, ok := ReadHostCPU("/proc/stat"); !ok {
		t.Fatal("/proc/stat cannot be read: the host sampler needs Linux")
	}
	s := SampleHost(context.Background(), "/proc/stat", 100*time.Millisecond)
	from := time.Now()
	for time.Since(from) < 1500*time.Millisecond {
		// spin
	}
	to := time.Now()
	s.Stop()
	cores, ok := s.BusyCores(from, to, runtime.NumCPU())
	if !ok {
		t.Fatal("no two readings in a 1.5 s window")
	}
	// The spinning loop alone keeps a core busy; other work only adds.
	if cores < 0.8 || cores > float64(runtime.NumCPU())+0.01 {
		t.Errorf("busy cores = %.2f, want at least 0.8 (this test spins on one) and at most %d", cores, runtime.NumCPU())
	}
	if _, ok := s.BusyCores(to.Add(time.Second), to.Add(2*time.Second), runtime.NumCPU()); ok {
		t.Error("a window after the last reading gave busy cores")
	}
}
