package load

// The latency histogram the tools keep and a Result carries: HdrHistogram,
// in microseconds from 1 µs to 100 s, to 3 significant digits.

import (
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

const (
	histMin     = 1
	histMax     = 100_000_000
	histSigFigs = 3
)

// NewHistogram is an empty latency histogram.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, histSigFigs)
}

// Record puts n of a latency into a histogram, clamped into its range.
func Record(h *hdrhistogram.Histogram, latency time.Duration, n uint64) {
	_ = h.RecordValues(min(max(latency.Microseconds(), histMin), histMax), int64(n)) // within the histogram's range: cannot fail
}

// EncodeHistogram is a histogram in the form a Result keeps: compressed,
// base64 (HdrHistogram's V2 encoding); "" for an empty one.
func EncodeHistogram(h *hdrhistogram.Histogram) string {
	if h.TotalCount() == 0 {
		return ""
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		panic("load: encode a histogram: " + err.Error()) // only an unknown version fails
	}
	return string(b)
}

// DecodeHistogram reads a Result's histogram back.
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode a latency histogram: %w", err)
	}
	return h, nil
}

// LatencyOf is the figures of a histogram whose latencies sum to sum.
func LatencyOf(h *hdrhistogram.Histogram, sum time.Duration) Latency {
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	l := Latency{
		Count: uint64(h.TotalCount()),
		P50:   us(h.ValueAtQuantile(50)),
		P90:   us(h.ValueAtQuantile(90)),
		P95:   us(h.ValueAtQuantile(95)),
		P99:   us(h.ValueAtQuantile(99)),
		P999:  us(h.ValueAtQuantile(99.9)),
		Max:   us(h.Max()),
	}
	if l.Count > 0 {
		l.Mean = sum / time.Duration(l.Count)
		l.Percentiles = PercentileList(func(q float64) time.Duration { return us(h.ValueAtQuantile(100 * q)) })
	}
	return l
}
