package h2

import (
	"testing"
	"time"
)

// The fine timer never wakes before its time: a call it paces is never
// written early. (How late it wakes is measured by BenchmarkPacer, not
// asserted.)
func TestFineTimerNeverWakesEarly(t *testing.T) {
	fine := newFineTimer()
	defer fine.close()
	for _, d := range []time.Duration{time.Microsecond, 50 * time.Microsecond, 500 * time.Microsecond, 3 * time.Millisecond} {
		for range 20 {
			start := time.Now()
			fine.sleep(d)
			if got := time.Since(start); got < d {
				t.Fatalf("a sleep of %v returned after %v", d, got)
			}
		}
	}
}
