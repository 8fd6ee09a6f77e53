// Package histogram is the latencies of many calls as one distribution:
// the histograms the load tools keep (HdrHistogram's compressed form, in
// microseconds) decoded and merged over rounds, the calls that never
// answered counted above every latency, a percentile with the
// distribution-free upper bound of its confidence interval, and the rule of
// which percentiles a count of calls can show at all.
package histogram

import (
	"fmt"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/gonum/stat/distuv"
)

// Infinite is the latency of a call that has none: it failed, or was
// never answered. It sorts above every latency and meets no bound.
const Infinite = time.Duration(math.MaxInt64)

// MinTail is how many calls must lie above a percentile for it to be
// shown: p99 needs 1000 calls, p99.9 10,000, p99.99 100,000. Fewer, and the
// percentile is one of the last few calls, its 95% interval reaching the
// maximum: the figure would be the slowest call under another name.
const MinTail = 10

// Supports says whether n calls can show the percentile q.
func Supports(n uint64, q float64) bool {
	return float64(n)*(1-q) >= MinTail-1e-9
}

// Confidence is the level of the upper bound a latency objective is
// decided on: a percentile met with 95% confidence.
const Confidence = 0.95

// Pool is the latencies of the calls of one or more rounds: the answered
// calls' histogram, and the calls slower than any (failed, unanswered).
type Pool struct {
	h      *hdrhistogram.Histogram
	beyond uint64
}

// The histograms' range and precision: 1 µs to 100 s, three significant
// digits, as the load tools keep theirs.
const (
	lowest      = 1
	highest     = 100_000_000
	significant = 3
)

// New is an empty pool.
func New() *Pool { return &Pool{h: hdrhistogram.New(lowest, highest, significant)} }

// Add merges one round's histogram (base64 of HdrHistogram's V2 compressed
// form, microseconds) and counts beyond calls that have no latency.
func (p *Pool) Add(encoded string, beyond uint64) error {
	h, err := decode(encoded)
	if err != nil {
		return fmt.Errorf("decode a latency histogram: %w", err)
	}
	if dropped := p.h.Merge(h); dropped > 0 {
		return fmt.Errorf("merge a latency histogram: %d calls outside 1 µs–100 s", dropped)
	}
	p.beyond += beyond
	return nil
}

// decode reads a histogram: the library slices its input unchecked and
// panics on a truncated one, which a record edited by hand may hold.
func decode(encoded string) (h *hdrhistogram.Histogram, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("not a histogram: %v", r)
		}
	}()
	return hdrhistogram.Decode([]byte(encoded))
}

// Record adds n calls of one latency, for tests and for a tool that keeps
// no histogram of its own.
func (p *Pool) Record(latency time.Duration, n uint64) {
	if latency == Infinite {
		p.beyond += n
		return
	}
	_ = p.h.RecordValues(min(max(latency.Microseconds(), lowest), highest), int64(n)) // clamped into range: cannot fail
}

// Encode is the pool's answered calls in the form Add reads.
func (p *Pool) Encode() (string, error) {
	b, err := p.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	return string(b), err
}

// Count is every call of the pool, answered or not.
func (p *Pool) Count() uint64 { return uint64(p.h.TotalCount()) + p.beyond }

// Beyond counts the calls without a latency.
func (p *Pool) Beyond() uint64 { return p.beyond }

// Rank is the latency of the k-th fastest call (from 1): the upper edge of
// its histogram bucket (within 0.1%), Infinite among the calls without
// one.
func (p *Pool) Rank(k uint64) time.Duration {
	n := uint64(p.h.TotalCount())
	switch {
	case k == 0 || n == 0 && p.beyond == 0:
		return 0
	case k > n:
		return Infinite
	}
	return time.Duration(p.h.ValueAtPercentile(100*float64(k)/float64(n))) * time.Microsecond
}

// At is the percentile q of every call: the latency of the call at rank
// ⌈q·n⌉.
func (p *Pool) At(q float64) time.Duration {
	return p.Rank(max(1, uint64(math.Ceil(q*float64(p.Count())-1e-9))))
}

// Upper is the one-sided upper bound at the level confidence of the
// percentile q of the distribution the calls were drawn from, free of any
// assumption on its shape: the latency of the call at the smallest rank u
// such that at least u calls fall at or below the true percentile with
// that probability (the binomial count of calls below it is less than u).
// ok is false when no rank of the pool is high enough: too few calls.
func (p *Pool) Upper(q, confidence float64) (bound time.Duration, ok bool) {
	n := p.Count()
	if n == 0 {
		return 0, false
	}
	below := distuv.Binomial{N: float64(n), P: q}
	lo, hi := uint64(1), n // the smallest u in [lo, hi] whose P(count ≤ u−1) ≥ confidence
	if below.CDF(float64(n-1)) < confidence {
		return 0, false
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if below.CDF(float64(mid-1)) >= confidence {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return p.Rank(lo), true
}

// Mean is the answered calls' mean latency, to the histogram's precision.
func (p *Pool) Mean() time.Duration {
	return time.Duration(p.h.Mean() * float64(time.Microsecond))
}

// Max is the slowest answered call's latency.
func (p *Pool) Max() time.Duration { return time.Duration(p.h.Max()) * time.Microsecond }
