// Package stats sums up a figure measured over rounds and compares two such
// samples, in benchstat's manner (golang.org/x/perf/benchmath): the median,
// an interval around it, the coefficient of variation, and the
// Mann–Whitney U test, which assumes nothing about the distribution.
package stats

import (
	"math"
	"slices"
	"strconv"

	"golang.org/x/perf/benchmath"
)

// Confidence is the level of the confidence interval of a median.
const Confidence = 0.95

// Alpha is the significance level of a comparison, as benchstat's.
const Alpha = 0.05

// MinRoundsForCI is the number of rounds from which a median has a 95%
// confidence interval without assumptions; with fewer, the interval shown
// is the range of the rounds, at its own, lower confidence.
const MinRoundsForCI = 6

// CI names benchstat's interval of the median.
const CI = "95% CI"

// RangeConfidence is the confidence of the range of n rounds as an
// interval for their median: the median lies outside it only when every
// round falls on one side, 2·0.5^n (75% at 3 rounds, 87.5% at 4).
func RangeConfidence(n int) float64 { return 1 - 2*math.Pow(0.5, float64(n)) }

// rangeName names the range of n rounds with its confidence.
func rangeName(n int) string {
	if n < 2 {
		return "one round, no interval"
	}
	return "min–max, " + strconv.FormatFloat(100*RangeConfidence(n), 'f', -1, 64) + "%"
}

// Estimate sums up one figure over rounds.
type Estimate struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	// Lo and Hi bound the interval: the range of the rounds, or from
	// MinRoundsForCI rounds on the median's confidence interval; Interval
	// names it with its confidence, Confidence is that confidence.
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Interval   string  `json:"interval"`
	Confidence float64 `json:"confidence"`
	// CV is the coefficient of variation: the rounds' standard deviation
	// over their mean (0 for a single round).
	CV float64 `json:"cv"`
}

// Estimate sums up values, one per round.
func Of(values []float64) Estimate {
	if len(values) == 0 {
		return Estimate{}
	}
	// NewSample sorts what it is given: the caller's rounds keep their order.
	sample := benchmath.NewSample(slices.Clone(values), &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(sample, Confidence)
	e := Estimate{N: len(values), Median: sum.Center, Lo: slices.Min(values), Hi: slices.Max(values),
		Interval: rangeName(len(values)), Confidence: RangeConfidence(len(values))}
	if len(values) >= MinRoundsForCI && !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) {
		e.Lo, e.Hi, e.Interval, e.Confidence = sum.Lo, sum.Hi, CI, Confidence
	}
	if len(values) > 1 {
		mean, sd := meanSD(values)
		if mean != 0 {
			e.CV = sd / mean
		}
	}
	return e
}

// Mean is the mean of values, 0 for none.
func Mean(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	var sum float64
	for _, v := range values {
		sum += v
	}
	return sum / float64(len(values))
}

// MeanSD is the mean and the sample standard deviation of two values or
// more.
func MeanSD(values []float64) (mean, sd float64) { return meanSD(values) }

// meanSD is the mean and the sample standard deviation.
func meanSD(values []float64) (mean, sd float64) {
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	var ss float64
	for _, v := range values {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(values)-1))
}

// Median is the median of values, 0 for none.
func Median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(values))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Difference compares two samples of one figure.
type Difference struct {
	// Change is b's median relative to a's: +0.05 is 5% more.
	Change float64 `json:"change"`
	P      float64 `json:"p"`
	// Significant says the Mann–Whitney U test rejects "no difference" at
	// Alpha.
	Significant bool `json:"significant"`
	// TooFew says the samples are too small for any difference to be
	// significant at Alpha (3 rounds a side: p is at least 0.1).
	TooFew bool `json:"too_few"`
}

// Compare tests whether b differs from a. A sample with a NaN (no figure
// can be one) is not compared: the U test would not end.
func Compare(a, b []float64) Difference {
	if slices.ContainsFunc(a, math.IsNaN) || slices.ContainsFunc(b, math.IsNaN) {
		return Difference{P: 1, TooFew: true}
	}
	thresholds := benchmath.Thresholds{CompareAlpha: Alpha}
	sa := benchmath.NewSample(slices.Clone(a), &thresholds)
	sb := benchmath.NewSample(slices.Clone(b), &thresholds)
	c := benchmath.AssumeNothing.Compare(sa, sb)
	d := Difference{P: c.P, Significant: c.P <= Alpha, TooFew: tooFew(len(a), len(b))}
	if ma := Median(a); ma != 0 {
		d.Change = Median(b)/ma - 1
	}
	return d
}

// tooFew says no difference between samples of n and m values can be
// significant: the smallest two-sided p of the U test, when the samples do
// not overlap at all, is 2/C(n+m, n).
func tooFew(n, m int) bool {
	ways := 1.0 // C(n+m, n)
	for i := 1; i <= n; i++ {
		ways = ways * float64(m+i) / float64(i)
	}
	return 2/ways > Alpha
}
