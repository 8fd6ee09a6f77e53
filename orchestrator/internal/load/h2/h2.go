package h2

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/scenario"
	"github.com/grpcbench/grpcbench/orchestrator/internal/steady"
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
	open := spec.QPS > 0
	var deadline time.Duration
	if open {
		deadline = spec.CallDeadline()
	}
	c, err := newCall(ctx, spec.Target, spec.ScenarioDir, deadline)
	if err != nil {
		return load.Result{}, err
	}
	if spec.CAFile != "" {
		if err := c.secure(spec.Target, spec.CAFile); err != nil {
			return load.Result{}, err
		}
	}
	start := time.Now()
	w := window{start: start, measureStart: start.Add(spec.Warmup), open: open, deadline: deadline}
	w.end = w.measureStart.Add(spec.Duration)
	w.graceEnd = w.end.Add(spec.CallGrace())
	// Under a steady-state rule a closed loop's window opens when the
	// warm-up is steady, up to Warmup after the start. At a set rate the
	// rule has no speed to watch (every interval completes the rate's
	// calls) and the schedule's window is set at the start.
	rule := spec.Steady
	if open {
		rule = nil
	}
	if rule != nil {
		w.moved = new(atomic.Int64)
	}

	stop := make(chan struct{})
	var once sync.Once
	closeStop := func() { once.Do(func() { close(stop) }) }
	timer := time.AfterFunc(spec.Length(), closeStop)
	defer timer.Stop()
	cancelled := context.AfterFunc(ctx, closeStop)
	defer cancelled()

	// The rate is of messages (RateUnit); the schedule's of calls, each a
	// stream of c.messages() in a streaming scenario.
	rate := float64(spec.QPS) / float64(c.messages())
	slots := split(spec.Concurrency, spec.Connections)
	recs := make([]*callCounter, spec.Connections)
	plans := make([]*load.Schedule, spec.Connections)
	var wg sync.WaitGroup
	for i := range recs {
		recs[i] = newCallCounter(w, spec.Answered != nil || rule != nil)
		plans[i] = load.NewSchedule(start, w.measureStart, w.end, rate, i, spec.Connections, spec.Arrivals)
		wg.Add(1)
		go func() {
			defer wg.Done()
			keepConnected(spec.Target, c, slots[i], recs[i], plans[i], stop)
		}()
	}
	if spec.Answered != nil {
		defer tally(recs, spec.Answered, stop)()
	}
	warmed := func() string { return "" }
	if rule != nil {
		warmed = endWarmup(recs, *rule, w, func(at time.Time) { timer.Reset(time.Until(at.Add(spec.Duration + spec.Tail))) }, stop)
	}
	wg.Wait()
	warmup := warmed()
	if err := ctx.Err(); err != nil {
		return load.Result{}, err
	}
	var unsent uint64
	if open {
		// The window's calls that never started are owed, late and
		// unanswered.
		now := time.Now()
		for i, p := range plans {
			n := p.Unsent()
			unsent += n
			recs[i].count(ended{status: load.StatusUnanswered, planned: w.measureStart, at: now, n: n * c.messages(), unanswered: true})
		}
	}
	res := merge(recs, w)
	measureStart, end := w.bounds()
	res.Warmup, res.WarmupEnd = measureStart.Sub(start), warmup
	res.Series.Cut(end.Add(spec.Tail))
	if open {
		openLoop(&res, spec, c, plans, unsent)
	}
	return res, nil
}

// endWarmup watches the connections' OK calls interval by interval until
// the rule finds them steady, then opens the window there (as long as it
// was) and calls moved with its start, for the run's stop after it; it
// gives up at the window's first start, the cap. The returned function
// waits for it, once stop has closed, and says how the warm-up ended.
func endWarmup(recs []*callCounter, rule steady.Rule, w window, moved func(time.Time), stop <-chan struct{}) func() string {
	result := make(chan string, 1)
	go func() {
		count := func() (n uint64) {
			for _, r := range recs {
				n += r.live.Load()
			}
			return n
		}
		now, ok := load.WatchWarmup(rule, count, w.measureStart, stop)
		if !ok {
			result <- load.WarmupCapped
			return
		}
		w.moved.Store(now.UnixNano())
		moved(now)
		result <- load.WarmupSteady
	}()
	return func() string { return <-result }
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
		now := time.Now()
		select {
		case <-stop:
			// A closed loop does not count the calls in flight at its end,
			// as ghz's "ignore"; an open loop's still owed answers are
			// unanswered.
			for _, s := range lost {
				if rec.w.open {
					rec.count(ended{status: load.StatusUnanswered, planned: s.planned, start: s.start, sent: s.sentAt, at: now, n: c.unanswered(&s), unanswered: true})
				}
			}
			return
		default:
		}
		if err == nil || errors.Is(err, errDrained) {
			continue
		}
		rec.connError(err)
		for _, s := range lost {
			rec.series.Ended(now)
			rec.count(ended{status: codeName(codes.Unavailable), planned: s.planned, start: s.start, sent: s.sentAt, at: now, n: 1})
		}
		select {
		case <-stop:
			return
		case <-time.After(reconnectPause):
		}
	}
}

// openLoop adds what the schedules counted to an open-loop result, in the
// cell's unit (a stream's messages share its start): the calls of the
// window planned, those that started late or never, and notes on why.
func openLoop(res *load.Result, spec load.Spec, c *call, plans []*load.Schedule, unsent uint64) {
	var planned, late, capped, dropped uint64
	for _, p := range plans {
		late += p.Late
		planned += p.Planned
		capped += p.Capped
		dropped += p.Dropped
	}
	per := c.messages()
	res.Planned, res.Late = planned*per, (late+unsent)*per
	unit, what := c.kind.RateUnit(), "calls"
	if c.kind != scenario.Unary {
		what = fmt.Sprintf("messages (streams of %d, started at %.4g a second)", per, float64(spec.QPS)/float64(per))
	}
	if dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop: the warm-up ended %d calls behind its schedule; they were dropped, not sent into the window, and the window's schedule began on time",
			dropped))
	}
	if res.Late > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop at %d %s: %d of the window's %d %s started more than %v after their intended start (%d never started); their latency runs from the intended start",
			spec.QPS, unit, res.Late, res.Planned, what, load.LateAfter, unsent*per))
	}
	if res.Unanswered > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop: %d of the window's %d planned %s had no answer %v after the window (%d never started): they count as failed, with their deadline of %v as latency",
			res.Unanswered, res.Planned, what, spec.CallGrace(), unsent*per, spec.CallDeadline()))
	}
	if capped > 0 && res.Service != nil {
		// Little's law: calls in flight = rate × the time each is in flight.
		need := fmt.Sprintf("%d req/s × service p99 %v ≈ %d", spec.QPS, res.Service.P99, int(math.Ceil(float64(spec.QPS)*res.Service.P99.Seconds())))
		if c.kind != scenario.Unary {
			need = "streams a second × the time a stream lasts"
		}
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop: the cap of %d calls in flight held back %d late calls; not to throttle the schedule it must be at least rate × latency (here %s)",
			spec.Concurrency, capped, need))
	}
	// Against the calls the schedule planned, not the target: a Poisson
	// count varies by its square root.
	if asked := float64(res.Planned) / res.End.Sub(res.Start).Seconds(); res.RPS < (1-load.RateShortfall)*asked {
		res.Notes = append(res.Notes, fmt.Sprintf(
			"open loop: achieved %.0f %s of the %.0f the schedule asked (target %d; %.1f%% short): the rate was not sustained",
			res.RPS, unit, asked, spec.QPS, 100*(1-res.RPS/asked)))
	}
}
