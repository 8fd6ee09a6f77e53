package load

// How a tool counts its series: interval by interval, as calls complete,
// into counters sized for the whole load once, so that counting a call
// costs an index and a few additions.

import "time"

// SeriesCounter counts a load's series from start to end in intervals of
// SeriesInterval: the calls that completed in each (Add), and the calls in
// flight at each interval's end (Started, Ended). What happens outside
// [start, end) is not counted. Add and the in-flight counts share no
// memory, so one goroutine may add while another counts starts; neither
// is safe for concurrent use with itself.
type SeriesCounter struct {
	start, end time.Time
	// per interval: OK and failed calls, the OK ones' latencies' sum and
	// maximum
	ok, failed []uint64
	sum, max   []time.Duration
	// flight is the calls started less those ended in each interval.
	flight []int
}

// NewSeriesCounter counts the series of [start, end).
func NewSeriesCounter(start, end time.Time) *SeriesCounter {
	n := max(0, int((end.Sub(start)+SeriesInterval-1)/SeriesInterval))
	return &SeriesCounter{start: start, end: end, ok: make([]uint64, n), failed: make([]uint64, n),
		sum: make([]time.Duration, n), max: make([]time.Duration, n), flight: make([]int, n)}
}

// interval is the interval holding at, -1 outside the series.
func (c *SeriesCounter) interval(at time.Time) int {
	if at.Before(c.start) || !at.Before(c.end) {
		return -1
	}
	return int(at.Sub(c.start) / SeriesInterval)
}

// Add counts n calls (or messages) that completed at at, OK with a
// latency or failed.
func (c *SeriesCounter) Add(at time.Time, ok bool, latency time.Duration, n uint64) {
	i := c.interval(at)
	switch {
	case i < 0:
	case ok:
		c.ok[i] += n
		c.sum[i] += latency * time.Duration(n)
		c.max[i] = max(c.max[i], latency)
	default:
		c.failed[i] += n
	}
}

// Started counts a call that started at at; Ended one that ended.
func (c *SeriesCounter) Started(at time.Time) {
	if i := c.interval(at); i >= 0 {
		c.flight[i]++
	}
}

func (c *SeriesCounter) Ended(at time.Time) {
	if i := c.interval(at); i >= 0 {
		c.flight[i]--
	}
}

// MergeSeries is the series of counters of the same span, such as a
// tool's connections': nil without counters.
func MergeSeries(counters ...*SeriesCounter) *Series {
	if len(counters) == 0 {
		return nil
	}
	n := len(counters[0].ok)
	s := &Series{Start: counters[0].start, Interval: SeriesInterval, OK: make([]uint64, n), Failed: make([]uint64, n),
		Mean: make([]time.Duration, n), Max: make([]time.Duration, n), InFlight: make([]int, n)}
	sum := make([]time.Duration, n)
	for _, c := range counters {
		for i := range n {
			s.OK[i] += c.ok[i]
			s.Failed[i] += c.failed[i]
			sum[i] += c.sum[i]
			s.Max[i] = max(s.Max[i], c.max[i])
			s.InFlight[i] += c.flight[i]
		}
	}
	for i := range n {
		if s.OK[i] > 0 {
			s.Mean[i] = sum[i] / time.Duration(s.OK[i])
		}
		if i > 0 {
			s.InFlight[i] += s.InFlight[i-1] // from starts less ends to the calls in flight
		}
	}
	return s
}
