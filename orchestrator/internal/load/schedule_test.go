package load_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// arrivals takes every call of the slots' schedules meant to start before
// span, each at its intended time (a fake clock that is always on time),
// and returns their intended starts from start, in order.
func arrivals(plans []*load.Schedule, start time.Time, span time.Duration) []time.Duration {
	var at []time.Duration
	for _, p := range plans {
		for p.Intended().Before(start.Add(span)) {
			at = append(at, p.Take(p.Intended(), false).Sub(start))
		}
	}
	slices.Sort(at)
	return at
}

func plansOf(start time.Time, qps, conns int, arr load.Arrivals) []*load.Schedule {
	plans := make([]*load.Schedule, conns)
	for i := range plans {
		plans[i] = load.NewSchedule(start, start, start.Add(time.Hour), float64(qps), i, conns, arr)
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
		if p.Late != 0 {
			t.Errorf("%d calls taken on time counted late", p.Late)
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

// A call is late when it starts more than load.LateAfter after its intended
// start, and counted only when that start is in the window; the cap is
// blamed only for the late calls it held back.
func TestScheduleCountsLateCalls(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	p := load.NewSchedule(start, start.Add(time.Second), start.Add(2*time.Second), 1000, 0, 1, load.ArrivalsConstant)
	take := func(after time.Duration, capped bool) { p.Take(p.Intended().Add(after), capped) }
	for range 1000 { // the warm-up: not counted, however late
		take(time.Minute, true)
	}
	take(load.LateAfter, false)   // on time, just
	take(2*load.LateAfter, false) // late
	take(time.Second, true)       // late, held by the cap
	take(0, true)                 // on time: the cap held nothing back
	if p.Late != 2 || p.Capped != 1 {
		t.Errorf("late %d (held by the cap %d), want 2 (1)", p.Late, p.Capped)
	}
	// The window's other 996 calls never started: owed, and late.
	if n := p.Unsent(); n != 996 {
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
	p := load.NewSchedule(start, measure, measure.Add(time.Second), 1000, 0, 1, load.ArrivalsConstant)
	for range 100 { // the warm-up's first 100 calls went out, late
		p.Take(p.Intended().Add(time.Minute), true)
	}
	if !p.Due(measure.Add(-time.Millisecond)) || p.Dropped != 0 {
		t.Fatalf("before the window: dropped %d, want 0 and the backlog still due", p.Dropped)
	}
	now := measure.Add(load.LateAfter / 2)
	if !p.Due(now) {
		t.Fatal("the window's first call is not due at its start")
	}
	if at := p.Take(now, false); !at.Equal(measure) {
		t.Errorf("the window's first call was meant for %v, want its start", at.Sub(start))
	}
	if p.Dropped != 900 || p.Late != 0 || p.Planned != 1 {
		t.Errorf("dropped %d, late %d, planned %d; want 900, 0, 1", p.Dropped, p.Late, p.Planned)
	}
	if p.Due(now) {
		t.Error("the call after the window's first is due at once: a backlog was kept")
	}
}

// TestSpacingIsOfAllTheSlots: the spacing is of the total rate, whichever
// slot is asked (h2 bounds its pacer's spin by a share of it), and 0 in a
// closed loop.
func TestSpacingIsOfAllTheSlots(t *testing.T) {
	start := time.Now()
	for i := range 4 {
		if got := load.NewSchedule(start, start, start.Add(time.Second), 500, i, 4, load.ArrivalsConstant).Spacing(); got != 2*time.Millisecond {
			t.Errorf("slot %d of 4 at 500 calls a second: spacing %s, want 2ms", i, got)
		}
	}
	if got := load.NewSchedule(start, start, start.Add(time.Second), 0, 0, 4, load.ArrivalsConstant).Spacing(); got != 0 {
		t.Errorf("closed loop: spacing %s, want 0", got)
	}
}
