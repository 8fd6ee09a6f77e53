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
	// T = √(0.02²·4·8/0.1²) = 1.13 s: 100 s buy 10.95 rounds of it, and
	// of 10 rounds of 2 s and 11 of 1.09 s the 11 spread the mean less.
	l := Levels{Window: 4, Interval: 0.02, Round: 0.1}
	if a := l.Allocate(8, 100); math.Abs(a.Window-(100.0/11-8)) > 1e-9 || a.Rounds != 11 {
		t.Errorf("own noise dominates: %+v, want 11 rounds of 1.09 s", a)
	}
	// Below a second: a second, and no more rounds than fit.
	if a := (Levels{Window: 4, Interval: 0.01, Round: 0.2}).Allocate(8, 100); a.Rounds != 11 || a.Window < MinWindow || 11*(8+a.Window) > 100+1e-9 {
		t.Errorf("%+v, want 11 rounds of at least 1 s within 100 s", a)
	}
	// T = √(0.05²·4·8/0.01²) = 28.3 s: 200 s buy 5.5 rounds; 6 of 25.3 s
	// spread it by 0.9080%, 5 of 32 s by 0.9083%.
	l = Levels{Window: 4, Interval: 0.05, Round: 0.01}
	if a := l.Allocate(8, 200); math.Abs(a.Window-(200.0/6-8)) > 1e-9 || a.Rounds != 6 {
		t.Errorf("window noise dominates: %+v, want 6 rounds of 25.3 s", a)
	}
	if a := (Levels{Window: 4, Interval: 0.05}).Allocate(8, 200); math.Abs(a.Window-(200.0/3-8)) > 1e-9 || a.Rounds != MinRounds {
		t.Errorf("no round noise: %+v, want the fewest rounds, of the longest windows the time allows", a)
	}
	// The levels of a run on 2026-12-03 (capacity: 7.7% within a 2 s
	// window, 20.3% between rounds, 40.8 s a round beyond its window):
	// rounding 3.87 rounds down to 3 had put 3 rounds of 3.4 s, 12.2%,
	// beside the run's own 4 rounds of 2 s, 10.8%, "in the same time".
	l = Levels{Window: 2, Interval: 0.077, Round: 0.203}
	now := l.Spread(2, 4)
	if a := l.Allocate(40.8, 4*(40.8+2)); a.Spread > now+1e-12 || a.Rounds*(40.8+a.Window) > 4*(40.8+2)+1e-9 {
		t.Errorf("%+v: spreads more than the run's own 4 rounds of 2 s (%.4f), or takes longer", a, now)
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
