// Package usage turns the Docker Engine API's container stats into the CPU,
// throttling and memory figures of a benchmark row, over the measurement
// window only. CPU is the cgroup's cumulative CPU time over wall-clock time
// between readings, not the Docker CLI's ratio to the host's jiffies, which
// reads up to 108% for a container under a one-CPU quota.
package usage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Sample is one reading of the stats stream: the CPU used and the CFS
// throttling since the previous reading, and the memory in use at the time
// of this one.
type Sample struct {
	Read    time.Time `json:"read"`
	PreRead time.Time `json:"preread"`
	// CPUPercent is the share of one core used over [PreRead, Read]:
	// 100 means one core busy all the time.
	CPUPercent float64 `json:"cpu_percent"`
	// MemoryBytes is usage less inactive file cache, the figure `docker
	// stats` shows.
	MemoryBytes uint64 `json:"memory_bytes"`

	cpuNanos           uint64 // CPU time used over the interval
	periods, throttled uint64 // CFS periods, and those throttled
	throttledNanos     uint64
}

// FromResponse computes a Sample from one Engine API stats response. ok is
// false for a response that has no previous reading to compare with (the
// first one of a stream) or whose counters went backwards.
func FromResponse(r container.StatsResponse) (s Sample, ok bool) {
	s = Sample{Read: r.Read, PreRead: r.PreRead, MemoryBytes: memoryUsage(r.MemoryStats)}
	cpu, pre := r.CPUStats.CPUUsage.TotalUsage, r.PreCPUStats.CPUUsage.TotalUsage
	// A stream's first response has nothing before it: no preread time, or
	// (on some engines) a preread time with zero counters.
	if r.PreRead.IsZero() || pre == 0 || !r.Read.After(r.PreRead) || cpu < pre {
		return s, false
	}
	s.cpuNanos = cpu - pre
	s.CPUPercent = percent(s.cpuNanos, r.Read.Sub(r.PreRead))
	now, before := r.CPUStats.ThrottlingData, r.PreCPUStats.ThrottlingData
	if now.Periods >= before.Periods && now.ThrottledPeriods >= before.ThrottledPeriods && now.ThrottledTime >= before.ThrottledTime {
		s.periods = now.Periods - before.Periods
		s.throttled = now.ThrottledPeriods - before.ThrottledPeriods
		s.throttledNanos = now.ThrottledTime - before.ThrottledTime
	}
	return s, true
}

// percent is CPU time over wall-clock time, so that one busy core is 100.
func percent(cpuNanos uint64, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return float64(cpuNanos) / float64(wall) * 100
}

// memoryUsage follows the Docker CLI: cgroup v1 reports total_inactive_file,
// cgroup v2 inactive_file; either is page cache the kernel can take back.
func memoryUsage(m container.MemoryStats) uint64 {
	if v, ok := m.Stats["total_inactive_file"]; ok && v < m.Usage {
		return m.Usage - v
	}
	if v := m.Stats["inactive_file"]; v < m.Usage {
		return m.Usage - v
	}
	return m.Usage
}

// Read decodes a stats stream (the body of GET /containers/{id}/stats with
// stream=true) until it ends, passing each usable sample to fn.
func Read(r io.Reader, fn func(Sample)) error {
	dec := json.NewDecoder(r)
	for {
		var resp container.StatsResponse
		if err := dec.Decode(&resp); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decode stats: %w", err)
		}
		if s, ok := FromResponse(resp); ok {
			fn(s)
		}
	}
}

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
// keeps loading a moment past the window (suite's statsTail). Memory is a
// reading at Read: the average and maximum are of the samples that
// overlap the window.
func Summarize(samples []Sample, from, to time.Time) Summary {
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
		cpuNanos += share * float64(s.cpuNanos)
		periods += share * float64(s.periods)
		throttled += share * float64(s.throttled)
		throttledNanos += share * float64(s.throttledNanos)
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
