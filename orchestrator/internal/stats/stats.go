// Package stats turns the Docker Engine API's container stats into the CPU
// and memory figures of a benchmark row, computed as the Docker CLI computes
// them, over the measurement window only.
package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Sample is one reading of the stats stream: the CPU used since the previous
// reading and the memory in use at the time of this one.
type Sample struct {
	Read    time.Time `json:"read"`
	PreRead time.Time `json:"preread"`
	// CPUPercent is the share of one core used over [PreRead, Read]:
	// 100 means one core busy all the time.
	CPUPercent float64 `json:"cpu_percent"`
	// MemoryBytes is usage less inactive file cache, the figure `docker
	// stats` shows.
	MemoryBytes uint64 `json:"memory_bytes"`

	cpuDelta, systemDelta uint64
	onlineCPUs            uint32
}

// FromResponse computes a Sample from one Engine API stats response. ok is
// false for a response that has no previous reading to compare with (the
// first one of a stream) or whose counters went backwards.
func FromResponse(r container.StatsResponse) (s Sample, ok bool) {
	s = Sample{Read: r.Read, PreRead: r.PreRead, MemoryBytes: memoryUsage(r.MemoryStats)}
	if r.PreRead.IsZero() || r.PreCPUStats.SystemUsage == 0 {
		return s, false
	}
	cpu, pre := r.CPUStats.CPUUsage.TotalUsage, r.PreCPUStats.CPUUsage.TotalUsage
	sys, preSys := r.CPUStats.SystemUsage, r.PreCPUStats.SystemUsage
	if cpu < pre || sys <= preSys {
		return s, false
	}
	s.cpuDelta, s.systemDelta = cpu-pre, sys-preSys
	s.onlineCPUs = r.CPUStats.OnlineCPUs
	if s.onlineCPUs == 0 {
		s.onlineCPUs = uint32(len(r.CPUStats.CPUUsage.PercpuUsage))
	}
	s.CPUPercent = percent(s.cpuDelta, s.systemDelta, s.onlineCPUs)
	return s, true
}

// percent is the Docker CLI's formula: the container's share of the host's
// CPU time, scaled so that one busy core is 100.
func percent(cpuDelta, systemDelta uint64, online uint32) float64 {
	if systemDelta == 0 {
		return 0
	}
	return float64(cpuDelta) / float64(systemDelta) * float64(online) * 100
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

// Summary is the CPU and memory of one container over a window.
type Summary struct {
	Samples        int     `json:"samples"`
	CPUAvgPercent  float64 `json:"cpu_avg_percent"`
	CPUMaxPercent  float64 `json:"cpu_max_percent"`
	MemoryAvgBytes uint64  `json:"memory_avg_bytes"`
	MemoryMaxBytes uint64  `json:"memory_max_bytes"`
	// CPUSeconds is the CPU time the container used over the samples kept.
	CPUSeconds float64 `json:"cpu_seconds"`
}

// Summarize keeps the samples whose interval lies inside [from, to] and
// returns their figures. The average CPU is weighted by each interval's
// length (total CPU time over total time), so a late or early reading does
// not count more than its share. When no interval fits entirely (a window
// shorter than the sampling period), the samples that overlap it are used.
func Summarize(samples []Sample, from, to time.Time) Summary {
	kept := within(samples, from, to)
	if len(kept) == 0 {
		kept = overlapping(samples, from, to)
	}
	var sum Summary
	var cpuDelta, systemDelta, memTotal uint64
	var online uint32
	for _, s := range kept {
		sum.Samples++
		cpuDelta += s.cpuDelta
		systemDelta += s.systemDelta
		online = s.onlineCPUs
		sum.CPUMaxPercent = max(sum.CPUMaxPercent, s.CPUPercent)
		memTotal += s.MemoryBytes
		sum.MemoryMaxBytes = max(sum.MemoryMaxBytes, s.MemoryBytes)
	}
	if sum.Samples == 0 {
		return sum
	}
	sum.CPUAvgPercent = percent(cpuDelta, systemDelta, online)
	sum.MemoryAvgBytes = memTotal / uint64(sum.Samples)
	sum.CPUSeconds = float64(cpuDelta) / 1e9
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
