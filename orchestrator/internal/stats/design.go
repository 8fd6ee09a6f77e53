package stats

import "slices"

// AutoLooks are the looks of GRPC_BENCHMARK_ROUNDS=auto: equally spaced,
// so that Pocock's published constants check the boundary, the first at
// MinRounds; at 12 rounds a pair of this machine's noise resolves a gap of
// about 7%, and a catalog run is 4 times a fixed 3-round run's length.
var AutoLooks = []int{3, 6, 9, 12}

// Design says when a ranking's pairs are tested and at what level.
type Design struct {
	// Looks are the rounds after which pairs are tested, Levels each
	// look's nominal level.
	Looks  []int     `json:"looks"`
	Levels []float64 `json:"levels"`
	// Margin is the equivalence margin δ: a pair whose ratio's interval
	// lies within 1±δ is equivalent; 0 decides no pair equivalent.
	Margin float64 `json:"margin"`
	// Fixed is a design of one look at the end, at Alpha, tested on
	// whatever rounds the samples have (an interrupted run's too).
	Fixed bool `json:"fixed"`
	// Futility is the conditional power below which a sequential design
	// stops a pair before its last look (Futile); 0 stops none.
	Futility float64 `json:"futility,omitempty"`
}

// Fixed is the design of a run of a fixed number of rounds.
func Fixed(rounds int, margin float64) Design {
	return Design{Looks: []int{rounds}, Levels: []float64{Alpha}, Margin: margin, Fixed: true}
}

// NextLook is the first look after done rounds, false when there is none.
func (d Design) NextLook(done int) (int, bool) {
	for _, l := range d.Looks {
		if l > done {
			return l, true
		}
	}
	return 0, false
}

// looks are the design's looks and levels; a fixed design's one look is
// the last round any sample has.
func (d Design) looks(samples []Sample) ([]int, []float64) {
	if !d.Fixed {
		return d.Looks, d.Levels
	}
	last := 0
	for _, s := range samples {
		if len(s.Rounds) > 0 {
			last = max(last, slices.Max(s.Rounds))
		}
	}
	return []int{last}, []float64{Alpha}
}

// Sequential is a group-sequential design with a constant boundary: the
// same nominal level at every look, Alpha over the number of looks
// (Bonferroni). At each look Benjamini–Hochberg over the pairs, exact
// t-tests each, separates identical servers with probability at most
// that level, so over the looks at most Alpha in all, whatever the number
// of servers and however the looks are correlated. Pocock's level (0.0182
// for 4 looks) assumes one z-test whose statistic is correlated from look
// to look as a Brownian motion's; with t-tests of 2–11 degrees of freedom,
// and a ranking whose most extreme pair changes from look to look, it let
// 6% through (TestFalseSeparationsOfIdenticalServers); the largest level
// that holds for many servers tends to Šidák's 1−(1−Alpha)^(1/K), 0.0127,
// barely above Bonferroni's 0.0125. A constant boundary rather than
// O'Brien–Fleming's: a ranking's pairs are mostly far apart, and a
// constant one lets them stop at the first look, where O'Brien–Fleming's
// spends almost nothing early and so runs every server to the last look.
// Pairs the rounds left would likely not separate stop for futility.
func Sequential(looks []int, margin float64) Design {
	levels := make([]float64, len(looks))
	for i := range levels {
		levels[i] = Alpha / float64(len(looks))
	}
	return Design{Looks: looks, Levels: levels, Margin: margin, Futility: Futility}
}
