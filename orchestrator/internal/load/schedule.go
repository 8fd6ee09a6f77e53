package load

// The open-loop pacer any open-loop tool can take: when each call of a
// connection slot is meant to start, whatever the answers, and which calls
// could not start on time.

import (
	"math/rand/v2"
	"time"
)

// LateAfter is how far past its intended start a call may start and still
// be on time. h2's pacer writes a call tens of microseconds after its
// intended start at the median, rarely more than a few hundred on a busy
// machine (Result.Pacer, docs/load-tools.md), and calls that fall due
// within 50 µs of each other go out in one write: a call later than a
// millisecond was held back by the cap on calls in flight, the
// connection's stream limit or flow-control window, or a client short of
// CPU, not by the pacer's own granularity.
const LateAfter = time.Millisecond

// Schedule is the open-loop plan of one connection slot; it outlives the
// connections that carry it, and is not safe for concurrent use: the
// connection that carries it holds it under its lock. The zero Schedule is
// a closed loop: every call is due at once.
type Schedule struct {
	rate  float64 // calls per second; 0 means closed loop
	total float64 // calls per second of all the slots
	epoch time.Time
	// poisson draws exponential inter-arrival times; nil spaces calls
	// evenly.
	poisson *rand.Rand
	// next is the intended start of the next call, from epoch.
	next time.Duration
	// Issued counts the calls taken, warm-up included.
	Issued            int64
	measureStart, end time.Time
	// The calls meant to start in [measureStart, end) are the window's:
	// Planned counts them, Late those that started more than LateAfter
	// after their intended start, Capped those of them the cap on calls in
	// flight held back.
	Planned, Late, Capped uint64
	// Dropped counts the warm-up's calls still unsent when the window
	// opened (dropWarmup).
	Dropped uint64
}

// NewSchedule is the plan of slot i of n at a total rate of calls a
// second: each slot takes an nth of the rate; evenly spaced slots are
// offset from each other by one interval of the total rate, so that the
// calls of all of them are evenly spaced too. A stream is one call: a rate
// of messages is the rate of streams times the messages of one.
func NewSchedule(start, measureStart, end time.Time, rate float64, i, n int, arrivals Arrivals) *Schedule {
	s := &Schedule{epoch: start, measureStart: measureStart, end: end}
	if rate <= 0 {
		return s
	}
	s.rate, s.total = rate/float64(n), rate
	if arrivals == ArrivalsPoisson {
		s.poisson = rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(i)))
		s.next = s.gap()
	} else {
		s.epoch = start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
	}
	return s
}

// Window is the measurement window the schedule counts calls of.
func (s *Schedule) Window() (start, end time.Time) { return s.measureStart, s.end }

// Spacing is the mean time between the intended starts of the calls of
// all the slots; 0 in a closed loop.
func (s *Schedule) Spacing() time.Duration {
	if s.total <= 0 {
		return 0
	}
	return time.Duration(float64(time.Second) / s.total)
}

// Paced says calls start on the schedule: false in a closed loop.
func (s *Schedule) Paced() bool { return s.rate > 0 }

// Due says whether the next call may start at now: always in a closed
// loop. Once the window is open, the warm-up's backlog is dropped first.
func (s *Schedule) Due(now time.Time) bool {
	if s.rate == 0 {
		return true
	}
	s.dropWarmup(now)
	return !s.Intended().After(now)
}

// dropWarmup skips the warm-up's calls still unsent once the window has
// opened. A server still starting (a JVM compiling) falls behind in the
// warm-up; its backlog, sent as fast as it then answers, would land in the
// window and read as a rate above the target. The warm-up is not measured,
// so dropping its calls hides nothing that is.
func (s *Schedule) dropWarmup(now time.Time) {
	if now.Before(s.measureStart) {
		return
	}
	for s.Intended().Before(s.measureStart) {
		s.Dropped++
		s.advance()
	}
}

// Intended is when the next call is meant to start.
func (s *Schedule) Intended() time.Time { return s.epoch.Add(s.next) }

// Take starts the next call at now and returns its intended start; capped
// says the cap on calls in flight held it back, should it be late.
func (s *Schedule) Take(now time.Time, capped bool) time.Time {
	at := s.Intended()
	if s.inWindow(at) {
		s.Planned++
		if now.Sub(at) > LateAfter {
			s.Late++
			if capped {
				s.Capped++
			}
		}
	}
	s.advance()
	return at
}

func (s *Schedule) inWindow(at time.Time) bool {
	return !at.Before(s.measureStart) && at.Before(s.end)
}

func (s *Schedule) advance() {
	s.Issued++
	if s.poisson != nil {
		s.next += s.gap()
		return
	}
	// From the count, not by adding intervals: no rounding accumulates.
	s.next = time.Duration(float64(s.Issued) / s.rate * float64(time.Second))
}

// gap is an exponential inter-arrival time at the rate.
func (s *Schedule) gap() time.Duration {
	return time.Duration(s.poisson.ExpFloat64() / s.rate * float64(time.Second))
}

// Unsent counts the calls of the window that never started, once the run
// is over: they were owed, and are late.
func (s *Schedule) Unsent() uint64 {
	if s.rate == 0 {
		return 0
	}
	var n uint64
	for at := s.Intended(); at.Before(s.end); at = s.Intended() {
		if s.inWindow(at) {
			n++
			s.Planned++
		}
		s.advance()
	}
	return n
}
