// Package usage turns a container's stats samples, as its host's backend
// reads them, into the CPU, throttling and memory figures of a benchmark
// row, over the measurement window only; and reads the CPU counters of the
// servers' host.
package usage

import (
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// LoadTail is how long a load must go on, unmeasured, past its window so
// that the stats sample holding the window's end is under load all
// through: longer than the stream's sampling period (1 s, give or take a
// few tens of milliseconds here), which Summarize's interpolation needs.
const LoadTail = 1250 * time.Millisecond

// Summary is the CPU, throttling and memory of one container over a window.
type Summary struct {
	Samples        int     `json:"samples"`
	CPUAvgPercent  float64 `json:"cpu_avg_percent"`
	CPUMaxPercent  float64 `json:"cpu_max_percent"`
	MemoryAvgBytes uint64  `json:"memory_avg_bytes"`
	MemoryMaxBytes uint64  `json:"memory_max_bytes"`
	// CPUSeconds is the CPU time the container used inside the window.
	CPUSeconds float64 `json:"cpu_seconds"`
	// ThrottledShare is the share of CFS periods in which the container's
	// CPU quota stopped it; ThrottledSeconds the time it spent stopped.
	ThrottledShare   float64 `json:"throttled_share"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// Summarize returns the figures of the window [from, to]. The stats
// counters (CPU time, CFS periods, throttled periods and time) are
// cumulative, and a sample is their change over [PreRead, Read]; they are
// interpolated linearly to the window's exact ends, so that a sample that
// straddles an end counts for the share of it inside the window. The
// average CPU is then the CPU time inside the window over the part of the
// window the samples cover: it is a time-weighted mean of the samples'
// own rates, so it can never read above the fastest of them (a pinned
// one-CPU server never reads above 100% plus the counters' resolution),
// and a window shorter than the sampling period still gets a reading.
// The counters grow at the sample's mean rate inside it, so the sample that
// holds the window's end must be under load to its own end: the caller
// keeps loading a moment past the window (the harness's Spec.Tail). Memory is a
// reading at Read: the average and maximum are of the samples that
// overlap the window.
func Summarize(samples []backend.Sample, from, to time.Time) Summary {
	var sum Summary
	var cpuNanos, periods, throttled, throttledNanos float64
	var covered time.Duration
	var memTotal uint64
	for _, s := range samples {
		lo, hi := later(s.PreRead, from), earlier(s.Read, to)
		if !hi.After(lo) {
			continue
		}
		share := float64(hi.Sub(lo)) / float64(s.Read.Sub(s.PreRead))
		sum.Samples++
		covered += hi.Sub(lo)
		cpuNanos += share * float64(s.CPUNanos)
		periods += share * float64(s.Periods)
		throttled += share * float64(s.Throttled)
		throttledNanos += share * float64(s.ThrottledNanos)
		sum.CPUMaxPercent = max(sum.CPUMaxPercent, s.CPUPercent)
		memTotal += s.MemoryBytes
		sum.MemoryMaxBytes = max(sum.MemoryMaxBytes, s.MemoryBytes)
	}
	if sum.Samples == 0 {
		return sum
	}
	sum.CPUAvgPercent = cpuNanos / float64(covered) * 100
	sum.MemoryAvgBytes = memTotal / uint64(sum.Samples)
	sum.CPUSeconds = cpuNanos / 1e9
	if periods > 0 {
		sum.ThrottledShare = throttled / periods
	}
	sum.ThrottledSeconds = throttledNanos / 1e9
	return sum
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
