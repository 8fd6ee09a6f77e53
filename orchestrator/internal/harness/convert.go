package harness

import (
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/probe"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/steady"
	"github.com/grpcbench/grpcbench/orchestrator/internal/usage"
)

// What a load tool, the stats and the gate report, in the record's own
// types: the record owns the schema of results.json, and this is the edge
// where the figures enter it.

// resultOf is a load tool's result as the record keeps it.
func resultOf(r load.Result) record.Result {
	out := record.Result{Tool: r.Tool, Start: r.Start, End: r.End, Requests: r.Requests, OK: r.OK, Statuses: r.Statuses,
		Errors: r.Errors, RPS: r.RPS, Latency: latencyOf(r.Latency), Late: r.Late, Service: latencyPtr(r.Service),
		WarmupRequests: r.WarmupRequests, Warmup: r.Warmup, WarmupEnd: r.WarmupEnd, Planned: r.Planned, Unanswered: r.Unanswered, Pacer: latencyPtr(r.Pacer),
		Histogram: r.Histogram, Notes: r.Notes}
	if s := r.Series; s != nil {
		out.Series = &record.Series{Start: s.Start, Interval: s.Interval, OK: s.OK, Failed: s.Failed, Mean: s.Mean, Max: s.Max, InFlight: s.InFlight}
	}
	return out
}

// windowOf is the steadiness of a result's window, from the intervals of
// its series that lie in it; nil without a series. At a set rate the
// speed of an interval is the reciprocal of its mean latency.
func windowOf(r load.Result, paced bool) *record.Window {
	s := r.Series
	if s == nil || s.Interval <= 0 {
		return nil
	}
	speeds := s.Speeds(paced)
	var in []float64
	for i, v := range speeds {
		from := s.Start.Add(time.Duration(i) * s.Interval)
		if !from.Before(r.Start.Add(-s.Interval/2)) && !from.Add(s.Interval).After(r.End.Add(s.Interval/2)) {
			in = append(in, v)
		}
	}
	t := steady.TrendOf(in)
	return &record.Window{Steady: t.Steady(), Change: t.Change, P: t.P, Spread: t.MeanSpread(), Intervals: t.N}
}

func latencyPtr(l *load.Latency) *record.Latency {
	if l == nil {
		return nil
	}
	s := latencyOf(*l)
	return &s
}

func latencyOf(l load.Latency) record.Latency {
	out := record.Latency{Count: l.Count, Mean: l.Mean, P50: l.P50, P90: l.P90, P95: l.P95, P99: l.P99, P999: l.P999, Max: l.Max}
	for _, p := range l.Percentiles {
		out.Percentiles = append(out.Percentiles, record.Percentile{Q: p.Q, Latency: p.Latency})
	}
	return out
}

// usageOf is a container's usage over a window as the record keeps it.
func usageOf(s usage.Summary) record.Usage {
	return record.Usage{Samples: s.Samples, CPUAvgPercent: s.CPUAvgPercent, CPUMaxPercent: s.CPUMaxPercent,
		MemoryAvgBytes: s.MemoryAvgBytes, MemoryMaxBytes: s.MemoryMaxBytes, CPUSeconds: s.CPUSeconds,
		ThrottledShare: s.ThrottledShare, ThrottledSeconds: s.ThrottledSeconds}
}

// conformanceOf is the gate's verdict as the record keeps it.
func conformanceOf(v probe.Verdict) *record.Conformance {
	c := &record.Conformance{Passed: v.Passed, Warnings: v.Warnings}
	for _, ch := range v.Checks {
		c.Checks = append(c.Checks, record.Check{Name: ch.Name, Passed: ch.Passed, Detail: ch.Detail})
	}
	return c
}
