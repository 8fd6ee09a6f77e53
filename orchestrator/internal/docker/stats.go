package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/docker/docker/api/types/container"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// FromResponse computes a sample from one Engine API stats response. CPU
// is the cgroup's cumulative CPU time over wall-clock time between
// readings, not the Docker CLI's ratio to the host's jiffies, which reads
// up to 108% for a container under a one-CPU quota. ok is false for a
// response that has no previous reading to compare with (the first one of a
// stream) or whose counters went backwards.
func FromResponse(r container.StatsResponse) (s backend.Sample, ok bool) {
	s = backend.Sample{Read: r.Read, PreRead: r.PreRead, MemoryBytes: memoryUsage(r.MemoryStats)}
	cpu, pre := r.CPUStats.CPUUsage.TotalUsage, r.PreCPUStats.CPUUsage.TotalUsage
	// A stream's first response has nothing before it: no preread time, or
	// (on some engines) a preread time with zero counters.
	if r.PreRead.IsZero() || pre == 0 || !r.Read.After(r.PreRead) || cpu < pre {
		return s, false
	}
	s.CPUNanos = cpu - pre
	s.CPUPercent = float64(s.CPUNanos) / float64(r.Read.Sub(r.PreRead)) * 100
	now, before := r.CPUStats.ThrottlingData, r.PreCPUStats.ThrottlingData
	if now.Periods >= before.Periods && now.ThrottledPeriods >= before.ThrottledPeriods && now.ThrottledTime >= before.ThrottledTime {
		s.Periods = now.Periods - before.Periods
		s.Throttled = now.ThrottledPeriods - before.ThrottledPeriods
		s.ThrottledNanos = now.ThrottledTime - before.ThrottledTime
	}
	return s, true
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

// ReadStats decodes a stats stream (the body of GET /containers/{id}/stats
// with stream=true, or a run's *-stats.jsonl file, which keeps it raw)
// until it ends, passing each usable sample to fn.
func ReadStats(r io.Reader, fn func(backend.Sample)) error {
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
