package analysis

import (
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// poolLatencies sets a row's latencies from the rounds' merged histograms
// when every round has one (Row.Pooled): the percentiles of every OK
// call of the rounds, not the medians of each round's. Either way, a
// percentile the calls behind it cannot support (histogram.Supports: the
// pooled calls, or the fewest of a round when the figures are medians of
// the rounds') is left out, 0, which every file shows as n/a.
func poolLatencies(row *Row, results []*record.Result) {
	pool, calls := histogram.New(), uint64(0)
	var sum time.Duration
	for _, l := range results {
		if l.Histogram == "" || pool.Add(l.Histogram, 0) != nil {
			pool = nil
			break
		}
		calls += l.Latency.Count
		sum += l.Latency.Mean * time.Duration(l.Latency.Count)
	}
	fewest := uint64(0)
	for i, l := range results {
		if n := max(l.Latency.Count, l.OK); i == 0 || n < fewest {
			fewest = n
		}
	}
	if pool != nil && pool.Count() > 0 {
		row.Pooled, fewest = true, pool.Count()
		row.P50, row.P90, row.P95, row.P99, row.P999 = pool.At(0.5), pool.At(0.9), pool.At(0.95), pool.At(0.99), pool.At(0.999)
		if calls > 0 {
			row.Mean = sum / time.Duration(calls)
		}
		row.Percentiles = nil
		for _, q := range load.HDRQuantiles {
			row.Percentiles = append(row.Percentiles, record.Percentile{Q: q, Latency: pool.At(q)})
		}
	}
	for _, p := range []struct {
		q float64
		d *time.Duration
	}{{0.5, &row.P50}, {0.9, &row.P90}, {0.95, &row.P95}, {0.99, &row.P99}, {0.999, &row.P999}} {
		if !histogram.Supports(fewest, p.q) {
			*p.d = 0
		}
	}
	kept := row.Percentiles[:0]
	for _, p := range row.Percentiles {
		if histogram.Supports(fewest, p.Q) {
			kept = append(kept, p)
		}
	}
	row.Percentiles = kept
}
