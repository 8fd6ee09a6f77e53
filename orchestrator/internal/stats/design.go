package stats

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

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

// Sequential is a group-sequential design with Pocock's boundary: the same
// nominal level at every look, chosen so that a pair of identical servers
// is separated at some look with probability Alpha in all (the looks
// being correlated, that level is above Alpha/len(looks)). Pocock's rather
// than O'Brien–Fleming's: a ranking's pairs are mostly far apart, and a
// constant boundary lets them stop at the first look, where O'Brien–
// Fleming's spends almost nothing early and so runs every server to the
// last look.
func Sequential(looks []int, margin float64) Design {
	level := PocockLevel(fractions(looks), Alpha)
	levels := make([]float64, len(looks))
	for i := range levels {
		levels[i] = level
	}
	return Design{Looks: looks, Levels: levels, Margin: margin}
}

// fractions are the looks' information fractions: rounds over the last
// look's.
func fractions(looks []int) []float64 {
	t := make([]float64, len(looks))
	for i, l := range looks {
		t[i] = float64(l) / float64(looks[len(looks)-1])
	}
	return t
}

var pocockCache sync.Map // fmt of fractions and alpha → level

// PocockLevel is the nominal two-sided level of Pocock's boundary at
// looks at information fractions t (increasing, the last 1) for an
// overall level alpha: 2(1−Φ(c)) for the constant c at which a standard
// Brownian motion observed at t leaves ±c·√t with probability alpha.
func PocockLevel(t []float64, alpha float64) float64 {
	key := fmt.Sprint(t, alpha)
	if v, ok := pocockCache.Load(key); ok {
		return v.(float64)
	}
	lo, hi := 1.0, 6.0
	for range 50 {
		c := (lo + hi) / 2
		if Crossing(t, c) > alpha {
			lo = c
		} else {
			hi = c
		}
	}
	level := 2 * distuv.UnitNormal.Survival((lo+hi)/2)
	pocockCache.Store(key, level)
	return level
}

// gridPoints is the points of each look's grid in Crossing (odd, for
// Simpson's rule): boundaries come out to 3 decimals.
const gridPoints = 301

// Crossing is the probability that the z-statistic of a standard Brownian
// motion observed at information fractions t crosses ±c at some look:
// Armitage, McPherson and Rowe's recursive integration of the density of
// the score S = Z·√t over the region it has not left, on a grid with
// Simpson's weights. No Go library computes group-sequential boundaries.
func Crossing(t []float64, c float64) float64 {
	var grid, dens []float64
	prev := 0.0
	for k, tk := range t {
		b := c * math.Sqrt(tk)
		next := make([]float64, gridPoints)
		nextDens := make([]float64, gridPoints)
		sd := math.Sqrt(tk - prev)
		for j := range next {
			s := -b + 2*b*float64(j)/float64(gridPoints-1)
			next[j] = s
			if k == 0 {
				nextDens[j] = normal(s, sd)
				continue
			}
			var sum float64
			for i, u := range grid {
				sum += weight(i, grid) * dens[i] * normal(s-u, sd)
			}
			nextDens[j] = sum
		}
		grid, dens, prev = next, nextDens, tk
	}
	var stay float64
	for i := range grid {
		stay += weight(i, grid) * dens[i]
	}
	return 1 - stay
}

// normal is the density of N(0, sd²) at x.
func normal(x, sd float64) float64 {
	return math.Exp(-x*x/(2*sd*sd)) / (sd * math.Sqrt(2*math.Pi))
}

// weight is Simpson's weight of grid point i.
func weight(i int, grid []float64) float64 {
	h := (grid[len(grid)-1] - grid[0]) / float64(len(grid)-1)
	switch {
	case i == 0 || i == len(grid)-1:
		return h / 3
	case i%2 == 1:
		return 4 * h / 3
	}
	return 2 * h / 3
}
