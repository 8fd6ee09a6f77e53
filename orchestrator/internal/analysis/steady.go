package analysis

import (
	"fmt"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// A round whose window was not steady (its trend over the window's
// intervals, package steady) measured a server still warming up, or
// slowing down: its figure is not the server's steady speed, and no
// number of rounds averages that away. Such rounds are left out of their
// row's figures and tests, and said so; a row none of whose rounds was
// steady keeps them all, is marked unsteady, and is shown like a
// client-bound row: sorted by its median, tested against no other row.
// Leaving the row out of the tests rather than ranking it with a flag:
// a flag does not stop a reader, or the letters, from taking its order
// as measured, and its error is a bias, not noise the tests account for.

// steadyRounds are the rounds whose measurement (by pick) had a steady
// window, or every round when none had; left counts those left out.
func steadyRounds(rounds []record.Round, pick measurement) (kept []record.Round, left int) {
	for _, r := range rounds {
		if pick(r).Unsteady() {
			left++
			continue
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return rounds, 0
	}
	return kept, left
}

// warmups sums up the warm-ups of a row's rounds (their median, and how
// many the steady-state rule ran to its cap without ending) and keeps
// what the noise's levels need of each: its window's spread from its
// intervals, its length, and the round's time beyond it.
func (row *Row) warmups(rounds []record.Round, pick measurement) {
	var all []float64
	for _, r := range rounds {
		m := pick(r)
		l := m.Load
		all = append(all, float64(l.Warmup))
		switch l.WarmupEnd {
		case record.WarmupCapped:
			row.WarmupCapped++
		case record.WarmupSteady:
			row.WarmupSteady++
		}
		window := l.End.Sub(l.Start).Seconds()
		if m.Window != nil && window > 0 {
			row.Spreads = append(row.Spreads, m.Window.Spread)
			row.Windows = append(row.Windows, window)
		}
		if total := r.Took(); total > window && window > 0 {
			row.RoundCosts = append(row.RoundCosts, total-window)
		}
	}
	row.Warmup = time.Duration(stats.Median(all))
}

// steadyNotes says which rows left rounds out for an unsteady window,
// which have no steady round, and which warmed up to the cap without
// being steady.
func steadyNotes(r Row) []string {
	var out []string
	switch {
	case r.Unsteady:
		out = append(out, fmt.Sprintf("%s: unsteady: no round's window was steady (its speed still moved, by the trend over its intervals); "+
			"its req/s is not its steady speed: sorted by its median and not tested against other rows", r.Name))
	case r.UnsteadyRounds > 0:
		out = append(out, fmt.Sprintf("%s: %d of %d rounds left out: their windows were not steady (still warming up, or slowing down)",
			r.Name, r.UnsteadyRounds, r.UnsteadyRounds+r.RPS.N))
	}
	if r.WarmupCapped > 0 {
		out = append(out, fmt.Sprintf("%s: the warm-up reached GRPC_BENCHMARK_WARMUP_MAX in %d of %d rounds before its series was steady", r.Name, r.WarmupCapped, r.RPS.N))
	}
	return out
}
