package analysis

import (
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// The noise of a ranking by level, and what it says of how to spend a
// server's time: the run's rounds and windows, against the split that
// Kalibera & Jones' formula finds best at those levels and that cost.

// Levels are a ranking's noise by level, with the allocation of its time
// now and the best one.
type Levels struct {
	stats.Levels
	// Now is the run's own split of a server's time, Best the one that
	// would spread its mean least for the same time; Cost is the median
	// round's seconds beyond its window.
	Now, Best stats.Allocation
	Cost      float64
}

// levelsOf splits a ranking's noise by level, from its tested rows (the
// rows the noise split rests on); nil when the rows have no windows with
// a spread (a record before the series) or no noise estimate.
func levelsOf(rows []Row, noise *stats.Noise) *Levels {
	if noise == nil {
		return nil
	}
	var spreads, windows, costs, rounds []float64
	judged, _ := samplesOf(rows)
	for _, i := range judged {
		r := rows[i]
		spreads = append(spreads, r.Spreads...)
		windows = append(windows, r.Windows...)
		costs = append(costs, r.RoundCosts...)
		rounds = append(rounds, float64(r.RPS.N))
	}
	l, ok := stats.LevelsOf(*noise, spreads, windows)
	if !ok || len(costs) == 0 {
		return nil
	}
	cost, n := stats.Median(costs), stats.Median(rounds)
	now := stats.Allocation{Window: l.Window, Rounds: n, Spread: l.Spread(l.Window, n)}
	return &Levels{Levels: l, Now: now, Best: l.Allocate(cost, n*(cost+l.Window)), Cost: cost}
}
