package load_test

import (
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// A series counts what completed in each interval, by when it completed,
// and the calls in flight at each interval's end from the starts and ends
// before it, over the connections merged; nothing outside its span.
func TestSeriesCounts(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	ms := time.Millisecond
	// 600 ms: two whole intervals and a part of one.
	a, b := load.NewSeriesCounter(start, at(600*ms)), load.NewSeriesCounter(start, at(600*ms))
	a.Started(at(10 * ms))
	a.Started(at(20 * ms))
	b.Started(at(30 * ms))
	a.Add(at(100*ms), true, 2*ms, 1)
	a.Ended(at(100 * ms))
	b.Add(at(249*ms), true, 4*ms, 10) // ten messages of one stream
	a.Add(at(250*ms), false, time.Second, 1)
	a.Ended(at(250 * ms))
	b.Started(at(590 * ms))
	b.Add(at(599*ms), true, 6*ms, 1)
	b.Add(at(600*ms), true, 7*ms, 1) // after the span
	b.Add(at(-ms), true, 7*ms, 1)    // before it
	b.Started(at(700 * ms))

	s := load.MergeSeries(a, b)
	if !s.Start.Equal(start) || s.Interval != load.SeriesInterval {
		t.Errorf("series from %v every %v, want from the start every %v", s.Start, s.Interval, load.SeriesInterval)
	}
	check := func(name string, got, want any) {
		t.Helper()
		if !slices.Equal(anySlice(got), anySlice(want)) {
			t.Errorf("%s %v, want %v", name, got, want)
		}
	}
	check("OK", s.OK, []uint64{11, 0, 1})
	check("failed", s.Failed, []uint64{0, 1, 0})
	check("mean", s.Mean, []time.Duration{(2*ms + 40*ms) / 11, 0, 6 * ms})
	check("max", s.Max, []time.Duration{4 * ms, 0, 6 * ms})
	check("in flight", s.InFlight, []int{2, 1, 2})
	if load.MergeSeries() != nil {
		t.Error("no counters merged into a series")
	}
}

func anySlice(v any) []any {
	var out []any
	switch v := v.(type) {
	case []uint64:
		for _, x := range v {
			out = append(out, x)
		}
	case []time.Duration:
		for _, x := range v {
			out = append(out, x)
		}
	case []int:
		for _, x := range v {
			out = append(out, x)
		}
	}
	return out
}

// A histogram goes into a Result and comes back with its counts; an
// empty one is left out.
func TestHistogramRoundTrip(t *testing.T) {
	h := load.NewHistogram()
	if load.EncodeHistogram(h) != "" {
		t.Error("an empty histogram encoded")
	}
	for i := range 1000 {
		load.Record(h, time.Duration(i+1)*time.Microsecond, 2)
	}
	load.Record(h, time.Hour, 1) // clamped to the range
	back, err := load.DecodeHistogram(load.EncodeHistogram(h))
	if err != nil {
		t.Fatal(err)
	}
	if back.TotalCount() != 2001 || back.ValueAtQuantile(50) != h.ValueAtQuantile(50) || back.Max() != h.Max() {
		t.Errorf("decoded %d values, p50 %d, max %d; want 2001, %d, %d", back.TotalCount(), back.ValueAtQuantile(50), back.Max(), h.ValueAtQuantile(50), h.Max())
	}
	if _, err := load.DecodeHistogram("not a histogram"); err == nil {
		t.Error("a wrong histogram decoded")
	}
}
