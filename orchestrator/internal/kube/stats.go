package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/backend"
)

// statsEvery is how often a container's cgroup is read, as often as the
// Docker engine's stats stream gives a reading.
const statsEvery = time.Second

// sampler turns each reading into a sample of the change since the one
// before it.
type sampler struct {
	prev *reading
}

// add takes a reading; ok is false for the first one, and for one whose
// counters went backwards.
func (s *sampler) add(r reading) (backend.Sample, bool) {
	prev := s.prev
	s.prev = &r
	if prev == nil || !r.Read.After(prev.Read) || r.CPUNanos < prev.CPUNanos {
		return backend.Sample{}, false
	}
	sm := backend.Sample{Read: r.Read, PreRead: prev.Read, MemoryBytes: r.MemoryBytes, CPUNanos: r.CPUNanos - prev.CPUNanos}
	sm.CPUPercent = float64(sm.CPUNanos) / float64(r.Read.Sub(prev.Read)) * 100
	if r.Periods >= prev.Periods && r.Throttled >= prev.Throttled && r.ThrottledNanos >= prev.ThrottledNanos {
		sm.Periods, sm.Throttled, sm.ThrottledNanos = r.Periods-prev.Periods, r.Throttled-prev.Throttled, r.ThrottledNanos-prev.ThrottledNanos
	}
	return sm, true
}

// ReadStats decodes the readings a container's Stats copied to raw (one
// JSON document a line) and passes each usable sample to each.
func ReadStats(r io.Reader, each func(backend.Sample)) error {
	dec := json.NewDecoder(r)
	var s sampler
	for {
		var rd reading
		if err := dec.Decode(&rd); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decode stats: %w", err)
		}
		if sm, ok := s.add(rd); ok {
			each(sm)
		}
	}
}

// stream reads the cgroup every statsEvery, copying each reading to raw
// and passing each sample to each, until ctx ends, ended says the
// container's process ended, or the cgroup is gone with the container.
func stream(ctx context.Context, ct container, raw io.Writer, each func(backend.Sample), ended func() bool) error {
	enc := json.NewEncoder(raw)
	var s sampler
	tick := time.NewTicker(statsEvery)
	defer tick.Stop()
	for {
		r, err := ct.read()
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return fmt.Errorf("read the cgroup of a container: %w", err)
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
		if sm, ok := s.add(r); ok {
			each(sm)
		}
		if ended() {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
