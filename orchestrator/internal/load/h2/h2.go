package h2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"google.golang.org/grpc/codes"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// reconnectPause spaces the attempts to reopen a failed connection.
const reconnectPause = 100 * time.Millisecond

// Run is the load tool of this project: gRPC calls written straight onto
// HTTP/2 frames, streams kept open for their messages. Each request is
// encoded once and its frames reused;
// each connection batches its writes and has one reader; nothing is
// allocated per call on the usual path. Warm-up and measurement run on the
// same connections, and every call of the measurement window is in the
// latency histogram. With a rate it loads open-loop, on the schedule of
// schedule.go.
func Run(ctx context.Context, spec load.Spec) (load.Result, error) {
	c, err := newCall(ctx, spec.Target, spec.ScenarioDir)
	if err != nil {
		return load.Result{}, err
	}
	if spec.CAFile != "" {
		if err := c.secure(spec.Target, spec.CAFile); err != nil {
			return load.Result{}, err
		}
	}
	start := time.Now()
	measureStart := start.Add(spec.Warmup)
	end := measureStart.Add(spec.Duration)

	stop := make(chan struct{})
	var once sync.Once
	closeStop := func() { once.Do(func() { close(stop) }) }
	timer := time.AfterFunc(end.Add(spec.Tail).Sub(start), closeStop) // calls after end are not counted
	defer timer.Stop()
	cancelled := context.AfterFunc(ctx, closeStop)
	defer cancelled()

	slots := split(spec.Concurrency, spec.Connections)
	recs := make([]*callCounter, spec.Connections)
	plans := make([]*load.Schedule, spec.Connections)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = newCallCounter(start, measureStart, end, spec.Answered != nil, spec.QPS > 0)
		plans[i] = load.NewSchedule(start, measureStart, end, spec.QPS, i, spec.Connections, spec.Arrivals)
		wg.Add(1)
		go func() {
			defer wg.Done()
			keepConnected(spec.Target, c, slots[i], recs[i], plans[i], stop)
		}()
	}
	if spec.Answered != nil {
		defer tally(recs, spec.Answered, stop)()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return load.Result{}, err
	}
	res := merge(recs, measureStart, end)
	if spec.QPS > 0 {
		openLoop(&res, spec, plans)
	}
	return res, nil
}

// tallyEvery is how often the connections' live counts are summed for a
// live rate.
const tallyEvery = 200 * time.Millisecond

// tally sums the connections' OK calls into answered until stop closes;
// each connection counts its own, so the reader's count costs no shared
// cache line. The returned function waits for the last sum.
func tally(recs []*callCounter, answered *atomic.Uint64, stop <-chan struct{}) (wait func()) {
	done := make(chan struct{})
	sum := func() {
		var n uint64
		for _, r := range recs {
			n += r.live.Load()
		}
		answered.Store(n)
	}
	go func() {
		defer close(done)
		t := time.NewTicker(tallyEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				sum()
				return
			case <-t.C:
				sum()
			}
		}
	}()
	return func() { <-done }
}

// split shares n calls among k connections as evenly as it goes.
func split(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
		if i < n%k {
			out[i]++
		}
	}
	return out
}

// keepConnected runs one connection slot until stop: a connection that
// fails or drains is replaced. Calls lost with a failed connection are
// counted as Unavailable.
func keepConnected(addr string, c *call, slots int, rec *callCounter, plan *load.Schedule, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		cn, err := dial(addr, c, slots, rec, plan)
		if err != nil {
			rec.connError(err)
			select {
			case <-stop:
				return
			case <-time.After(reconnectPause):
			}
			continue
		}
		err = cn.serve(stop)
		lost := cn.inFlight()
		select {
		case <-stop:
			return // calls in flight at the end are not counted, as in ghz's "ignore"
		default:
		}
		if err == nil || errors.Is(err, errDrained) {
			continue
		}
		rec.connError(err)
		now := time.Now()
		for _, s := range lost {
			rec.series.Ended(now)
			rec.add(codeName(codes.Unavailable), now.Sub(s.start), now.Sub(s.sentAt), now)
		}
		select {
		case <-stop:
			return
		case <-time.After(reconnectPause):
		}
	}
}

// callCounter counts the calls of one connection slot. Only the slot's
// reader goroutine writes to it.
type callCounter struct {
	measureStart, end time.Time
	hist              *hdrhistogram.Histogram
	// statuses counts the calls that were not OK: an OK call, nearly every
	// call, costs no map update; the histogram counts those.
	statuses map[string]uint64
	// live counts OK calls, warm-up included, for a live rate read by
	// another goroutine, when counting (an atomic add a call otherwise
	// saved).
	live           atomic.Uint64
	counting       bool
	requests, warm uint64
	sum            time.Duration
	connErrors     map[string]uint64
	// service holds, in an open loop, the latencies of OK calls from their
	// actual start; hist holds them from the intended start.
	service    *hdrhistogram.Histogram
	serviceSum time.Duration
	// series counts the load interval by interval from start to end: the
	// calls that completed in each (by the reader), and the calls started
	// and ended (under the connection's lock, which the writer side holds
	// when it starts calls).
	series *load.SeriesCounter
}

// newCallCounter counts the calls of a load that starts at start and
// measures from measureStart to end.
func newCallCounter(start, measureStart, end time.Time, counting, openLoop bool) *callCounter {
	r := &callCounter{
		measureStart: measureStart,
		end:          end,
		counting:     counting,
		hist:         load.NewHistogram(),
		statuses:     map[string]uint64{},
		connErrors:   map[string]uint64{},
		series:       load.NewSeriesCounter(start, end),
	}
	if openLoop {
		r.service = load.NewHistogram()
	}
	return r
}

// add counts a finished call, or a message of a stream: in the warm-up, in
// the window, or after it (not counted). Latencies of OK ones go into the
// histogram; service is the latency from the actual start, which only an
// open loop records.
func (r *callCounter) add(status string, latency, service time.Duration, now time.Time) {
	r.addN(status, latency, service, now, 1)
}

// addN is add for n messages of one latency: a client stream's, which one
// answer ends.
func (r *callCounter) addN(status string, latency, service time.Duration, now time.Time, n uint64) {
	ok := status == codeName(codes.OK)
	if ok && r.counting {
		r.live.Add(n)
	}
	r.series.Add(now, ok, latency, n)
	switch {
	case now.Before(r.measureStart):
		r.warm += n
		return
	case !now.Before(r.end):
		return
	}
	r.requests += n
	if !ok {
		// A server picks its codes: a new one each call must not grow the
		// client without end.
		if _, seen := r.statuses[status]; !seen && len(r.statuses) >= load.MaxDistinct {
			status = load.Others
		}
		r.statuses[status] += n
		return
	}
	r.sum += latency * time.Duration(n)
	load.Record(r.hist, latency, n)
	if r.service != nil {
		r.serviceSum += service * time.Duration(n)
		load.Record(r.service, service, n)
	}
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

func merge(recs []*callCounter, measureStart, end time.Time) load.Result {
	res := load.Result{Tool: name, Start: measureStart, End: end, Statuses: map[string]uint64{}, Errors: map[string]uint64{}}
	hist, service := load.NewHistogram(), load.NewHistogram()
	var sum, serviceSum time.Duration
	series := make([]*load.SeriesCounter, len(recs))
	for i, r := range recs {
		series[i] = r.series
		hist.Merge(r.hist)
		sum += r.sum
		if r.service != nil {
			service.Merge(r.service)
			serviceSum += r.serviceSum
		}
		res.Requests += r.requests
		res.WarmupRequests += r.warm
		for s, n := range r.statuses {
			res.Statuses[s] += n
		}
		if n := r.hist.TotalCount(); n > 0 { // every OK call of the window, clamped into range
			res.Statuses[codeName(codes.OK)] += uint64(n)
		}
		for e, n := range r.connErrors {
			res.Errors["connection: "+e] += n
		}
	}
	res.Bound()
	res.OK = res.Statuses[codeName(codes.OK)]
	res.RPS = float64(res.OK) / end.Sub(measureStart).Seconds()
	res.Latency = load.LatencyOf(hist, sum)
	res.Histogram = load.EncodeHistogram(hist)
	res.Series = load.MergeSeries(series...)
	if len(recs) > 0 && recs[0].service != nil {
		l := load.LatencyOf(service, serviceSum)
		res.Service = &l
	}
	return res
}

// openLoop adds what the schedules counted to an open-loop result: the
// calls of the window that started late or never, and notes on why.
func openLoop(res *load.Result, spec load.Spec, plans []*load.Schedule) {
	var planned, capped, unsent, dropped uint64
	for _, p := range plans {
		unsent += p.Unsent()
		res.Late += p.Late
		planned += p.Planned
		capped += p.Capped
		dropped += p.Dropped
	}
	res.Late += unsent
	if dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop: the warm-up ended %d calls behind its schedule; they were dropped, not sent into the window, and the window's schedule began on time",
			dropped))
	}
	if res.Late > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop at %d req/s: %d of the window's %d calls started more than %v after their intended start (%d never started); their latency runs from the intended start",
			spec.QPS, res.Late, planned, load.LateAfter, unsent))
	}
	if capped > 0 && res.Service != nil {
		// Little's law: calls in flight = rate × the time each is in flight.
		need := int(math.Ceil(float64(spec.QPS) * res.Service.P99.Seconds()))
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop: the cap of %d calls in flight held back %d late calls; not to throttle the schedule it must be at least rate × latency (here %d req/s × service p99 %v ≈ %d)",
			spec.Concurrency, capped, spec.QPS, res.Service.P99, need))
	}
	// Against the calls the schedule planned, not the target: a Poisson
	// count varies by its square root.
	if asked := float64(planned) / res.End.Sub(res.Start).Seconds(); res.RPS < (1-load.RateShortfall)*asked {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop: achieved %.0f req/s of the %.0f the schedule asked (target %d; %.1f%% short): the rate was not sustained",
			res.RPS, asked, spec.QPS, 100*(1-res.RPS/asked)))
	}
}
