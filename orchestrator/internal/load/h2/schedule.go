package h2

// The open-loop schedule of a connection slot: when each call is meant to
// start, whatever the answers, and which calls could not start on time.

import (
	"math/rand/v2"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// lateAfter is how far past its intended start a call may start and still
// be on time. The pacer's timer wakes up tens of microseconds late on an
// idle machine, up to about a millisecond on a busy one, and calls that
// fall due together within minPace go out in one write: a call later than
// that was held back by the cap on calls in flight, the connection's
// stream limit or flow-control window, or a client short of CPU, not by
// the pacer's own granularity.
const lateAfter = time.Millisecond

// schedule is the open-loop plan of one connection slot; it outlives the
// connections that carry it. Its calls and counts are under the mutex of
// the connection that carries it.
type schedule struct {
	rate  float64 // calls per second; 0 means closed loop
	epoch time.Time
	// poisson draws exponential inter-arrival times; nil spaces calls
	// evenly.
	poisson *rand.Rand
	// next is the intended start of the next call, from epoch.
	next   time.Duration
	issued int64
	// The calls meant to start in [measureStart, end) are the window's:
	// planned counts them, late those that started more than lateAfter
	// after their intended start, capped those of them the cap on calls in
	// flight held back.
	measureStart, end     time.Time
	planned, late, capped uint64
	// dropped counts the warm-up's calls still unsent when the window
	// opened (dropWarmup).
	dropped uint64
}

// newSchedule is the plan of slot i of n at a total rate of qps: each
// slot takes an nth of the rate; evenly spaced slots are offset from each
// other by one interval of the total rate, so that the calls of all of
// them are evenly spaced too.
func newSchedule(start, measureStart, end time.Time, qps, i, n int, arrivals load.Arrivals) *schedule {
	s := &schedule{epoch: start, measureStart: measureStart, end: end}
	if qps <= 0 {
		return s
	}
	s.rate = float64(qps) / float64(n)
	if arrivals == load.ArrivalsPoisson {
		s.poisson = rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(i)))
		s.next = s.gap()
	} else {
		s.epoch = start.Add(time.Duration(float64(i) / float64(qps) * float64(time.Second)))
	}
	return s
}

// due says whether the next call may start at now: always in a closed
// loop. Once the window is open, the warm-up's backlog is dropped first.
func (s *schedule) due(now time.Time) bool {
	if s.rate == 0 {
		return true
	}
	s.dropWarmup(now)
	return !s.intended().After(now)
}

// dropWarmup skips the warm-up's calls still unsent once the window has
// opened. A server still starting (a JVM compiling) falls behind in the
// warm-up; its backlog, sent as fast as it then answers, would land in the
// window and read as a rate above the target. The warm-up is not measured,
// so dropping its calls hides nothing that is.
func (s *schedule) dropWarmup(now time.Time) {
	if now.Before(s.measureStart) {
		return
	}
	for s.intended().Before(s.measureStart) {
		s.dropped++
		s.advance()
	}
}

// intended is when the next call is meant to start.
func (s *schedule) intended() time.Time { return s.epoch.Add(s.next) }

// take starts the next call at now and returns its intended start; capped
// says the cap on calls in flight held it back, should it be late.
func (s *schedule) take(now time.Time, capped bool) time.Time {
	at := s.intended()
	if s.inWindow(at) {
		s.planned++
		if now.Sub(at) > lateAfter {
			s.late++
			if capped {
				s.capped++
			}
		}
	}
	s.advance()
	return at
}

func (s *schedule) inWindow(at time.Time) bool {
	return !at.Before(s.measureStart) && at.Before(s.end)
}

func (s *schedule) advance() {
	s.issued++
	if s.poisson != nil {
		s.next += s.gap()
		return
	}
	// From the count, not by adding intervals: no rounding accumulates.
	s.next = time.Duration(float64(s.issued) / s.rate * float64(time.Second))
}

// gap is an exponential inter-arrival time at the rate.
func (s *schedule) gap() time.Duration {
	return time.Duration(s.poisson.ExpFloat64() / s.rate * float64(time.Second))
}

// unsent counts the calls of the window that never started, once the run
// is over: they were owed, and are late.
func (s *schedule) unsent() uint64 {
	if s.rate == 0 {
		return 0
	}
	var n uint64
	for at := s.intended(); at.Before(s.end); at = s.intended() {
		if s.inWindow(at) {
			n++
			s.planned++
		}
		s.advance()
	}
	return n
}
