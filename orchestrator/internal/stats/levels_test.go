package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// LevelsOf takes the window's part out of each server's own: with
// windows that spread by 3% and an own noise of 5%, the round's part is
// 4%.
func TestLevelsOf(t *testing.T) {
	l, ok := LevelsOf(Noise{Shared: 0.01, Own: 0.05, Servers: 4, Rounds: 6}, []float64{0.03, 0.03, 0.03}, []float64{4, 4, 4})
	if !ok || math.Abs(l.Interval-0.03) > 1e-12 || math.Abs(l.Round-0.04) > 1e-12 || l.Window != 4 || l.Shared != 0.01 || l.Windows != 3 {
		t.Errorf("levels %+v", l)
	}
	// A window's part above the own noise leaves no round part.
	if l, _ := LevelsOf(Noise{Own: 0.02, Servers: 2, Rounds: 3}, []float64{0.03}, []float64{4}); l.Round != 0 {
		t.Errorf("round part %v, want 0", l.Round)
	}
	if _, ok := LevelsOf(Noise{Own: 0.05, Servers: 2, Rounds: 3}, nil, nil); ok {
		t.Error("levels without a window")
	}
}

// Allocate against the formula, and against a brute-force search over
// windows at the same cost and time: no other window spreads the mean
// less, within the rounding of rounds.
func TestAllocate(t *testing.T) {
	// T = √(0.02²·4·8/0.1²) = 1.13 s, and 100 s buy 10 rounds of 9.13 s.
	l := Levels{Window: 4, Interval: 0.02, Round: 0.1}
	if a := l.Allocate(8, 100); math.Abs(a.Window-math.Sqrt(1.28)) > 1e-9 || a.Rounds != 10 {
		t.Errorf("own noise dominates: %+v, want 1.13 s windows, 10 rounds", a)
	}
	// Below a second: a second.
	if a := (Levels{Window: 4, Interval: 0.01, Round: 0.2}).Allocate(8, 100); a.Window != MinWindow || a.Rounds != 11 {
		t.Errorf("%+v, want 1 s windows, 11 rounds", a)
	}
	// T = √(0.05²·4·8/0.01²) = 28.3 s, and 200 s buy 5 rounds of 36.3 s.
	l = Levels{Window: 4, Interval: 0.05, Round: 0.01}
	if a := l.Allocate(8, 200); math.Abs(a.Window-math.Sqrt(800)) > 1e-9 || a.Rounds != 5 {
		t.Errorf("window noise dominates: %+v, want 28.3 s windows, 5 rounds", a)
	}
	if a := (Levels{Window: 4, Interval: 0.05}).Allocate(8, 200); a.Window != MaxWindow || a.Rounds != MinRounds {
		t.Errorf("no round noise: %+v, want the longest window and the fewest rounds", a)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		l := Levels{Window: 4, Interval: 0.001 + 0.1*rng.Float64(), Round: 0.001 + 0.2*rng.Float64()}
		cost := 2 + 20*rng.Float64()
		best := l.Allocate(cost, 1e6) // rounds barely rounded
		for w := MinWindow; w <= MaxWindow; w += 0.25 {
			if s := l.Spread(w, 1e6/(cost+w)); s < best.Spread*(1-1e-3) {
				t.Fatalf("%+v at cost %.1f: a %.2f s window spreads %.5f, Allocate's %.2f s %.5f", l, cost, w, s, best.Window, best.Spread)
			}
		}
	}
}
