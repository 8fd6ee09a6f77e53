package h2

import (
	"cmp"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
)

// openConn is a connection past the server's SETTINGS, with slots, on an
// open-loop plan, for fill to start calls on.
func openConn(t *testing.T, slots int, plan *load.Schedule) *conn {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	c := testCall(t)
	wstart, wend := plan.Window()
	cn := newConn(client, c, slots, newCallCounter(wstart, wstart, wend, false, true), plan)
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
	plan := load.NewSchedule(start, start, ms(60_000), 1000, 0, 1, load.ArrivalsConstant)
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
	onTime := ms(0).Add(load.LateAfter / 2)
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
	if plan.Issued != 8 || plan.Late != 7 || plan.Capped != 4 {
		t.Errorf("issued %d, late %d, held by the cap %d; want 8, 7, 4", plan.Issued, plan.Late, plan.Capped)
	}
}
