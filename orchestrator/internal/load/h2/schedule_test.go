package h2

import (
	"cmp"
	"math"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// arrivals takes every call of the slots' schedules meant to start before
// span, each at its intended time (a fake clock that is always on time),
// and returns their intended starts from start, in order.
func arrivals(plans []*schedule, start time.Time, span time.Duration) []time.Duration {
	var at []time.Duration
	for _, p := range plans {
		for p.intended().Before(start.Add(span)) {
			at = append(at, p.take(p.intended(), false).Sub(start))
		}
	}
	slices.Sort(at)
	return at
}

func plansOf(start time.Time, qps, conns int, arr load.Arrivals) []*schedule {
	plans := make([]*schedule, conns)
	for i := range plans {
		plans[i] = newSchedule(start, start, start.Add(time.Hour), qps, i, conns, arr)
	}
	return plans
}

// Evenly spaced calls over 4 connections are evenly spaced over all of
// them: 1000 a second, one every millisecond, none on time counted late.
func TestScheduleConstant(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	plans := plansOf(start, 1000, 4, load.ArrivalsConstant)
	at := arrivals(plans, start, time.Second)
	if len(at) != 1000 {
		t.Fatalf("%d calls in a second at 1000/s, want 1000", len(at))
	}
	for i, d := range at {
		if want := time.Duration(i) * time.Millisecond; d < want-time.Microsecond || d > want+time.Microsecond {
			t.Fatalf("call %d meant to start at %v, want %v", i, d, want)
		}
	}
	for _, p := range plans {
		if p.late != 0 {
			t.Errorf("%d calls taken on time counted late", p.late)
		}
	}
}

// Poisson arrivals: over 20 s at 5000/s the count and the mean spacing
// are the rate's (the count's standard deviation is 0.3%), and the
// spacings' coefficient of variation is an exponential's, 1, where even
// spacing's is 0.
func TestSchedulePoisson(t *testing.T) {
	const qps, span = 5000, 20 * time.Second
	start := time.Unix(1_000_000, 0)
	at := arrivals(plansOf(start, qps, 2, load.ArrivalsPoisson), start, span)
	want := qps * span.Seconds()
	if n := float64(len(at)); math.Abs(n-want) > 0.03*want {
		t.Errorf("%d calls in %v at %d/s, want %.0f ± 3%%", len(at), span, qps, want)
	}
	var sum, sq float64
	for i := 1; i < len(at); i++ {
		g := (at[i] - at[i-1]).Seconds()
		sum += g
		sq += g * g
	}
	n := float64(len(at) - 1)
	mean := sum / n
	cv := math.Sqrt(sq/n-mean*mean) / mean
	if math.Abs(mean-1.0/qps) > 0.03/qps {
		t.Errorf("mean spacing %v, want %v ± 3%%", time.Duration(mean*1e9), time.Second/qps)
	}
	if math.Abs(cv-1) > 0.05 {
		t.Errorf("coefficient of variation of the spacings %.3f, want an exponential's 1 ± 0.05", cv)
	}
}

// A call is late when it starts more than lateAfter after its intended
// start, and counted only when that start is in the window; the cap is
// blamed only for the late calls it held back.
func TestScheduleCountsLateCalls(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	p := newSchedule(start, start.Add(time.Second), start.Add(2*time.Second), 1000, 0, 1, load.ArrivalsConstant)
	take := func(after time.Duration, capped bool) { p.take(p.intended().Add(after), capped) }
	for range 1000 { // the warm-up: not counted, however late
		take(time.Minute, true)
	}
	take(lateAfter, false)   // on time, just
	take(2*lateAfter, false) // late
	take(time.Second, true)  // late, held by the cap
	take(0, true)            // on time: the cap held nothing back
	if p.late != 2 || p.capped != 1 {
		t.Errorf("late %d (held by the cap %d), want 2 (1)", p.late, p.capped)
	}
	// The window's other 996 calls never started: owed, and late.
	if n := p.unsent(); n != 996 {
		t.Errorf("%d calls of the window counted unsent, want 996", n)
	}
}

// A warm-up that fell behind leaves no backlog in the window: once the
// window opens, the warm-up's calls still unsent are dropped (counted, not
// late) and the window's first call is the one meant for its start, so a
// slow starter's burst cannot read as a rate above the target.
func TestWarmupBacklogIsDropped(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	measure := start.Add(time.Second)
	p := newSchedule(start, measure, measure.Add(time.Second), 1000, 0, 1, load.ArrivalsConstant)
	for range 100 { // the warm-up's first 100 calls went out, late
		p.take(p.intended().Add(time.Minute), true)
	}
	if !p.due(measure.Add(-time.Millisecond)) || p.dropped != 0 {
		t.Fatalf("before the window: dropped %d, want 0 and the backlog still due", p.dropped)
	}
	now := measure.Add(lateAfter / 2)
	if !p.due(now) {
		t.Fatal("the window's first call is not due at its start")
	}
	if at := p.take(now, false); !at.Equal(measure) {
		t.Errorf("the window's first call was meant for %v, want its start", at.Sub(start))
	}
	if p.dropped != 900 || p.late != 0 || p.planned != 1 {
		t.Errorf("dropped %d, late %d, planned %d; want 900, 0, 1", p.dropped, p.late, p.planned)
	}
	if p.due(now) {
		t.Error("the call after the window's first is due at once: a backlog was kept")
	}
}

// openConn is a connection past the server's SETTINGS, with slots, on an
// open-loop plan, for fill to start calls on.
func openConn(t *testing.T, slots int, plan *schedule) *conn {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	c := testCall(t)
	cn := newConn(client, c, slots, newCallCounter(plan.measureStart, plan.end, false, true), plan)
	cn.settled = true
	cn.block = c.plainBlock
	cn.template = requestTemplate(cn.block, c.body, c.firstSend())
	return cn
}

// active returns the calls in flight in the order of their intended
// starts.
func active(cn *conn) []stream {
	var out []stream
	for _, s := range cn.ring {
		if s.active {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b stream) int { return a.start.Compare(b.start) })
	return out
}

// Calls owed are never skipped: when the cap holds them back, they start
// as soon as slots free up, all at once, stamped with their intended start
// (where their latency runs from) and their actual one (where their service
// latency runs from), late and blamed on the cap.
func TestOwedCallsAreSent(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	plan := newSchedule(start, start, ms(60_000), 1000, 0, 1, load.ArrivalsConstant)
	cn := openConn(t, 4, plan)
	fill := func(now time.Time) {
		cn.mu.Lock()
		defer cn.mu.Unlock()
		cn.fill(now)
		cn.out = cn.out[:0]
	}
	// check wants the calls in flight to be those meant to start at first
	// to first+3 ms, started at now but the ones already in flight.
	check := func(now time.Time, first int, already map[int]time.Time) {
		t.Helper()
		got := active(cn)
		if len(got) != 4 {
			t.Fatalf("%d calls in flight at %v, want 4", len(got), now.Sub(start))
		}
		for i, s := range got {
			sent := cmp.Or(already[first+i], now)
			if !s.start.Equal(ms(first+i)) || !s.sentAt.Equal(sent) {
				t.Errorf("call meant to start at %v started at %v, want %v and %v",
					s.start.Sub(start), s.sentAt.Sub(start), ms(first+i).Sub(start), sent.Sub(start))
			}
		}
	}
	fill(ms(-1))
	if n := len(active(cn)); n != 0 {
		t.Fatalf("%d calls started before the first was due", n)
	}
	// 0.5 ms in, the first call starts on time.
	onTime := ms(0).Add(lateAfter / 2)
	fill(onTime)
	// 10 ms in (the pacer woke late), 10 more are due: 3 slots are free.
	fill(ms(10))
	check(ms(10), 0, map[int]time.Time{0: onTime})
	// The pacer wakes at 15 ms: the slots are full, the cap holds calls.
	fill(ms(15))
	// The answers free the slots at 20 ms: the next 4 go out at once.
	cn.mu.Lock()
	for i := range cn.ring {
		cn.ring[i].active = false
	}
	cn.inflight = 0
	cn.mu.Unlock()
	fill(ms(20))
	check(ms(20), 4, nil)
	if plan.issued != 8 || plan.late != 7 || plan.capped != 4 {
		t.Errorf("issued %d, late %d, held by the cap %d; want 8, 7, 4", plan.issued, plan.late, plan.capped)
	}
}
