package sweep

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// Verdict is a latency objective's verdict on one server at one rate,
// from every round measured there.
type Verdict struct {
	// Met says every round was measured, sustained its target and was
	// stable, and the objective's percentile over all their calls is
	// within the bound at histogram.Confidence: its upper bound is. Why
	// says why not, "" when met.
	Met bool
	Why string
	// Percentile is the objective's percentile of every call of the
	// rounds, failed and unanswered ones counted slower than any; Upper is
	// its one-sided upper bound, the figure the verdict compares with the
	// bound; Calls is how many calls they come from. Pooled says they come
	// from the rounds' merged histograms; without one in every round (a
	// tool or a record that keeps none), Percentile and Upper are the
	// highest of the rounds' own percentiles, and each round must meet the
	// bound.
	Percentile, Upper time.Duration
	Calls             uint64
	Pooled            bool
}

// Quantile is the quantile a percentile of GRPC_LATENCY_SLO names: 0.99
// for p99.
func Quantile(name string) float64 {
	p, err := strconv.ParseFloat(strings.TrimPrefix(name, "p"), 64)
	if err != nil {
		return 0
	}
	return p / 100
}

// Decide is the objective's verdict on the rounds of one server at one
// rate. A round that failed, did not sustain its target or was unstable
// fails it, whatever its latency; so does a percentile the calls cannot
// support (histogram.Supports). The figures are those of every measured
// round, whether or not it met.
func Decide(rounds []record.Round, slo config.SLO, poisson bool) Verdict {
	v := figures(rounds, slo.Percentile)
	why := func(text string) {
		if v.Why == "" {
			v.Why = text
		}
	}
	if len(rounds) == 0 {
		why("not measured")
	}
	for _, r := range rounds {
		switch {
		case r.Failure != nil:
			why(fmt.Sprintf("round %d: %s failed: %s", r.Round, r.Failure.Phase, r.Failure.Reason))
		case r.Load == nil:
			why(fmt.Sprintf("round %d: not measured", r.Round))
		default:
			if u := Unsustained(r.TargetRPS, poisson, *r.Load); u != "" {
				why(fmt.Sprintf("round %d: unsustained: %s", r.Round, u))
			}
			if u := Unstable(r.TargetRPS, *r.Load); u != "" {
				why(fmt.Sprintf("round %d: unstable: %s", r.Round, u))
			}
		}
	}
	q := Quantile(slo.Percentile)
	switch {
	case v.Why != "":
	case v.Upper == 0:
		why(fmt.Sprintf("%s needs %.0f calls (%d above it); the rounds had %d", slo.Percentile, histogram.MinTail/(1-q), histogram.MinTail, v.Calls))
	case v.Upper > slo.Bound && v.Pooled:
		why(fmt.Sprintf("%s at most %s (%.0f%% confidence, %d calls), above %s", slo.Percentile, DurationText(v.Upper), 100*histogram.Confidence, v.Calls, slo.Bound))
	case v.Upper > slo.Bound:
		why(fmt.Sprintf("%s %s in a round, above %s", slo.Percentile, DurationText(v.Upper), slo.Bound))
	}
	v.Met = v.Why == ""
	return v
}

// figures are the percentile of every measured round's calls: pooled from
// their histograms when each has one, else the highest of the rounds'
// own. Upper stays 0 when the calls cannot support the percentile.
func figures(rounds []record.Round, name string) Verdict {
	q := Quantile(name)
	var measured []*record.Result
	for _, r := range rounds {
		if r.Failure == nil && r.Load != nil {
			measured = append(measured, r.Load)
		}
	}
	if len(measured) == 0 {
		return Verdict{}
	}
	if pool, ok := poolOf(measured); ok {
		v := Verdict{Pooled: true, Calls: pool.Count(), Percentile: pool.At(q)}
		if upper, ok := pool.Upper(q, histogram.Confidence); ok && histogram.Supports(v.Calls, q) {
			v.Upper = upper
		}
		return v
	}
	v := Verdict{}
	supported := true
	for _, l := range measured {
		n := max(l.Latency.Count, l.OK)
		v.Calls += n
		v.Percentile = max(v.Percentile, Percentile(name, l.Latency))
		supported = supported && histogram.Supports(n, q)
	}
	if supported {
		v.Upper = v.Percentile
	}
	return v
}

// poolOf merges the rounds' histograms, false unless each has one that
// reads. The unanswered calls are in a histogram at their deadline; the
// other failed calls, which have no latency, count beyond every one.
func poolOf(results []*record.Result) (*histogram.Pool, bool) {
	pool := histogram.New()
	for _, l := range results {
		if l.Histogram == "" || pool.Add(l.Histogram, l.Requests-l.OK-min(l.Unanswered, l.Requests-l.OK)) != nil {
			return nil, false
		}
	}
	return pool, true
}

// DurationText says a latency in milliseconds, "no answer" for a call
// that had none.
func DurationText(d time.Duration) string {
	if d == histogram.Infinite {
		return "no answer"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}
