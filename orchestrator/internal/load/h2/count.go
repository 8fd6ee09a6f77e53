package h2

// The counting of a run's calls, per connection slot, and the result the
// slots' counts merge into.

import (
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc/codes"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// window is what a run measures: from measureStart to end, after a
// warm-up from start. A closed loop's window holds the calls that ended
// in it; an open loop's those its schedule planned in it, whenever they
// end, if they end by graceEnd, and each of its calls has a deadline.
type window struct {
	start, measureStart, end time.Time
	open                     bool
	graceEnd                 time.Time
	deadline                 time.Duration
	// moved, in a closed loop under a steady-state rule, is where the
	// warm-up's watcher opened the window (Unix nanoseconds, 0 until it
	// did, the window then as long as it was): every connection's reader
	// reads it per call.
	moved *atomic.Int64
}

// bounds is the window's start and end, where the watcher moved it.
func (w window) bounds() (time.Time, time.Time) {
	if w.moved != nil {
		if at := w.moved.Load(); at != 0 {
			from := time.Unix(0, at)
			return from, from.Add(w.end.Sub(w.measureStart))
		}
	}
	return w.measureStart, w.end
}

// phase is where a call belongs.
type phase int

const (
	inWarmup phase = iota
	inWindow
	// pastGrace is a call of an open loop's window answered after the
	// grace: the run no longer waited for it.
	pastGrace
	afterWindow
)

// of is the phase of a call planned at planned that ended at at.
func (w window) of(planned, at time.Time) phase {
	if !w.open {
		planned = at
	}
	measureStart, end := w.bounds()
	switch {
	case planned.Before(measureStart):
		return inWarmup
	case !planned.Before(end):
		return afterWindow
	case w.open && at.After(w.graceEnd):
		return pastGrace
	}
	return inWindow
}

// ended is a call, or messages of a stream, that ended.
type ended struct {
	status string
	// planned is the call's intended start (its actual one in a closed
	// loop); start is where its latency runs from, sent where its service
	// latency does; at is when it ended.
	planned, start, sent, at time.Time
	n                        uint64
	// unanswered says no answer came: it failed, and its latency is the
	// deadline.
	unanswered bool
}

// callCounter counts the calls of one connection slot. The reader
// goroutine writes to it, except for the series' calls in flight, which
// the connection counts under its lock.
type callCounter struct {
	w   window
	ok  uint64
	sum time.Duration
	// hist holds the latencies, from the intended start in an open loop,
	// of the window's OK calls and, at the deadline, of its unanswered
	// ones.
	hist *hdrhistogram.Histogram
	// statuses counts the calls that were not OK: an OK call, nearly every
	// call, costs no map update.
	statuses map[string]uint64
	// live counts OK calls, warm-up included, for a live rate read by
	// another goroutine, when counting (an atomic add a call otherwise
	// saved).
	live                       atomic.Uint64
	counting                   bool
	requests, warm, unanswered uint64
	connErrors                 map[string]uint64
	// service holds, in an open loop, the latencies of OK calls from their
	// actual start.
	service    *hdrhistogram.Histogram
	serviceSum time.Duration
	// pacer holds, in an open loop, the lateness of the window's calls the
	// pacer started itself, none held back: from the intended start to
	// the write. The connection counts it under its lock.
	pacer    *hdrhistogram.Histogram
	pacerSum time.Duration
	// series counts the load interval by interval from start to end: the
	// calls that completed in each (by the reader), and the calls started
	// and ended (under the connection's lock, which the writer side holds
	// when it starts calls).
	series *load.SeriesCounter
}

func newCallCounter(w window, counting bool) *callCounter {
	r := &callCounter{
		w:          w,
		counting:   counting,
		hist:       load.NewHistogram(),
		statuses:   map[string]uint64{},
		connErrors: map[string]uint64{},
		series:     load.NewSeriesCounter(w.start, w.end),
	}
	if w.open {
		r.service, r.pacer = load.NewHistogram(), load.NewHistogram()
	}
	return r
}

// paced counts the pacer's lateness for a call meant to start at intended
// that it wrote at now. Called under the connection's lock.
func (r *callCounter) paced(intended, now time.Time) {
	if intended.Before(r.w.measureStart) || !intended.Before(r.w.end) {
		return
	}
	late := now.Sub(intended)
	r.pacerSum += late
	load.Record(r.pacer, late, 1)
}

// count counts a call that ended, or messages of a stream: in the
// warm-up, in the window, or after it (not counted).
func (r *callCounter) count(e ended) {
	if e.n == 0 {
		return
	}
	ok := e.status == statusOK && !e.unanswered
	if ok && r.counting {
		r.live.Add(e.n)
	}
	latency := e.at.Sub(e.start)
	if e.unanswered {
		latency = r.w.deadline
	}
	r.series.Add(e.at, ok, latency, e.n)
	switch r.w.of(e.planned, e.at) {
	case inWarmup:
		r.warm += e.n
		return
	case afterWindow:
		return
	case pastGrace:
		if !e.unanswered {
			ok, e.unanswered, e.status, latency = false, true, load.StatusUnanswered, r.w.deadline
		}
	}
	r.requests += e.n
	switch {
	case e.unanswered:
		r.unanswered += e.n
		r.statuses[e.status] += e.n
	case !ok:
		// A server picks its codes: a new one each call must not grow the
		// client without end.
		if _, seen := r.statuses[e.status]; !seen && len(r.statuses) >= load.MaxDistinct {
			e.status = load.Others
		}
		r.statuses[e.status] += e.n
		return
	default:
		r.ok += e.n
		if r.service != nil {
			service := e.at.Sub(e.sent)
			r.serviceSum += service * time.Duration(e.n)
			load.Record(r.service, service, e.n)
		}
	}
	r.sum += latency * time.Duration(e.n)
	load.Record(r.hist, latency, e.n)
}

// connError counts a connection failure under a message without addresses
// or ports, so that one kind of failure is one entry.
func (r *callCounter) connError(err error) {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	r.connErrors[err.Error()]++
}

// The statuses of an OK call and of one cancelled at its deadline.
var (
	statusOK       = codes.OK.String()
	statusDeadline = codes.DeadlineExceeded.String()
)

func merge(recs []*callCounter, w window) load.Result {
	measureStart, end := w.bounds()
	res := load.Result{Tool: name, Start: measureStart, End: end, Statuses: map[string]uint64{}, Errors: map[string]uint64{}}
	hist, service, pacer := load.NewHistogram(), load.NewHistogram(), load.NewHistogram()
	var sum, serviceSum, pacerSum time.Duration
	series := make([]*load.SeriesCounter, len(recs))
	for i, r := range recs {
		series[i] = r.series
		hist.Merge(r.hist)
		sum += r.sum
		if r.service != nil {
			service.Merge(r.service)
			serviceSum += r.serviceSum
			pacer.Merge(r.pacer)
			pacerSum += r.pacerSum
		}
		res.Requests += r.requests
		res.OK += r.ok
		res.WarmupRequests += r.warm
		res.Unanswered += r.unanswered
		for s, n := range r.statuses {
			res.Statuses[s] += n
		}
		for e, n := range r.connErrors {
			res.Errors["connection: "+e] += n
		}
	}
	if res.OK > 0 {
		res.Statuses[statusOK] = res.OK
	}
	res.Bound()
	res.RPS = float64(res.OK) / end.Sub(measureStart).Seconds()
	res.Latency = load.LatencyOf(hist, sum)
	res.Histogram = load.EncodeHistogram(hist)
	res.Series = load.MergeSeries(series...)
	if w.open {
		l, p := load.LatencyOf(service, serviceSum), load.LatencyOf(pacer, pacerSum)
		res.Service, res.Pacer = &l, &p
	}
	return res
}
