package usage

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HostCPU is the host's CPU time counters from /proc/stat (in jiffies):
// for the share its hypervisor took (steal), and for the work the host did
// beside a measurement.
type HostCPU struct {
	total, steal, busy uint64
}

// ReadHostCPU reads the host's counters; ok is false where /proc/stat has
// no such line (not Linux) or cannot be read.
func ReadHostCPU(path string) (HostCPU, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return HostCPU{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return HostCPU{}, false
	}
	var h HostCPU
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return HostCPU{}, false
		}
		// guest and guest_nice (fields 9 and 10) are inside user and nice.
		if i < 8 {
			h.total += n
		}
		switch i {
		case 0, 1, 2, 5, 6: // user, nice, system, irq, softirq
			h.busy += n
		case 7:
			h.steal = n
		}
	}
	return h, true
}

// StealSince is the share of the host's CPU time stolen between two
// readings.
func (h HostCPU) StealSince(before HostCPU) float64 {
	if h.total <= before.total {
		return 0
	}
	return float64(h.steal-before.steal) / float64(h.total-before.total)
}

// BusyCoresSince is how many of the host's cpus were busy on average
// between two readings, with any work: the benchmark's containers, the
// engine, and whatever else runs on the machine. Idle, I/O wait and steal
// are not work of the host.
func (h HostCPU) BusyCoresSince(before HostCPU, cpus int) float64 {
	if h.total <= before.total {
		return 0
	}
	return float64(h.busy-before.busy) / float64(h.total-before.total) * float64(cpus)
}

// hostReading is the host's counters at a time.
type hostReading struct {
	at  time.Time
	cpu HostCPU
}

// HostSampler reads the host's counters at a fixed period while a
// measurement runs, so that the host's busy cores over the measurement
// window, known only when the load client reports, can be cut out later.
type HostSampler struct {
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	readings []hostReading
}

// SampleHost starts reading path (the host's /proc/stat) every period
// until Stop.
func SampleHost(ctx context.Context, path string, period time.Duration) *HostSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &HostSampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			if cpu, ok := ReadHostCPU(path); ok {
				s.mu.Lock()
				s.readings = append(s.readings, hostReading{time.Now(), cpu})
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// Stop ends the readings.
func (s *HostSampler) Stop() {
	s.cancel()
	<-s.done
}

// BusyCores is the host's busy cores over [from, to], from the first
// reading at or after from to the last at or before to; ok is false when
// fewer than two readings, a second apart at least, lie in the window.
func (s *HostSampler) BusyCores(from, to time.Time, cpus int) (cores float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first, last *hostReading
	for i := range s.readings {
		r := &s.readings[i]
		if r.at.Before(from) || r.at.After(to) {
			continue
		}
		if first == nil {
			first = r
		}
		last = r
	}
	if first == nil || last.at.Sub(first.at) < time.Second {
		return 0, false
	}
	return last.cpu.BusyCoresSince(first.cpu, cpus), true
}
