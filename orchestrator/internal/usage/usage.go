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

// Summary is the CPU, throttling and memory of one container over a window.
type Summary struct {
	Samples        int     `json:"samples"`
	CPUAvgPercent  float64 `json:"cpu_avg_percent"`
	CPUMaxPercent  float64 `json:"cpu_max_percent"`
	MemoryAvgBytes uint64  `json:"memory_avg_bytes"`
	MemoryMaxBytes uint64  `json:"memory_max_bytes"`
	// CPUSeconds is the CPU time the container used over the samples kept.
	CPUSeconds float64 `json:"cpu_seconds"`
	// ThrottledShare is the share of CFS periods in which the container's
	// CPU quota stopped it; ThrottledSeconds the time it spent stopped.
	ThrottledShare   float64 `json:"throttled_share"`
	ThrottledSeconds float64 `json:"throttled_seconds"`
}

// Summarize keeps the samples whose interval lies inside [from, to] and
// returns their figures. The samples of a stream follow each other, so the
// average CPU is the cgroup's CPU time between the first and the last
// reading kept over the wall-clock time between them: a late or early
// reading does not count more than its share. When no interval fits
// entirely (a window shorter than the sampling period), the samples that
// overlap it are used.
func Summarize(samples []Sample, from, to time.Time) Summary {
	kept := within(samples, from, to)
	if len(kept) == 0 {
		kept = overlapping(samples, from, to)
	}
	var sum Summary
	var cpuNanos, memTotal, periods, throttled, throttledNanos uint64
	var wall time.Duration
	for _, s := range kept {
		sum.Samples++
		cpuNanos += s.cpuNanos
		wall += s.Read.Sub(s.PreRead)
		sum.CPUMaxPercent = max(sum.CPUMaxPercent, s.CPUPercent)
		memTotal += s.MemoryBytes
		sum.MemoryMaxBytes = max(sum.MemoryMaxBytes, s.MemoryBytes)
		periods += s.periods
		throttled += s.throttled
		throttledNanos += s.throttledNanos
	}
	if sum.Samples == 0 {
		return sum
	}
	sum.CPUAvgPercent = percent(cpuNanos, wall)
	sum.MemoryAvgBytes = memTotal / uint64(sum.Samples)
	sum.CPUSeconds = float64(cpuNanos) / 1e9
	if periods > 0 {
		sum.ThrottledShare = float64(throttled) / float64(periods)
	}
	sum.ThrottledSeconds = float64(throttledNanos) / 1e9
	return sum
}

func within(samples []Sample, from, to time.Time) []Sample {
	var out []Sample
	for _, s := range samples {
		if !s.PreRead.Before(from) && !s.Read.After(to) {
			out = append(out, s)
		}
	}
	return out
}

func overlapping(samples []Sample, from, to time.Time) []Sample {
	var out []Sample
	for _, s := range samples {
		if s.Read.After(from) && s.PreRead.Before(to) {
			out = append(out, s)
		}
	}
	return out
}
