package stats

import (
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"
)

// PowerT is the power of a one-sided t-test on an estimate of effect
// (normal around it with standard error se, the error itself estimated on
// df degrees of freedom) at level: the chance that the estimate exceeds
// both the test's critical value, t(1−level, df) times its estimated
// error, and floor, a least effect the decision also asks of the estimate
// (0 for none). It integrates over the estimated error's χ² distribution
// (the noncentral t's definition), by Gauss–Legendre quadrature on its
// quantiles.
func PowerT(df, se, effect, level, floor float64) float64 {
	if se <= 0 || df < 1 {
		return 0
	}
	c := tQuantile(df, 1-level)
	var sum float64
	for _, n := range chiNodes(df) {
		bound := math.Max(c*se*n.scale, floor)
		sum += n.weight * distuv.UnitNormal.CDF((effect-bound)/se)
	}
	return sum
}

// chiNode is a node of PowerT's quadrature: √(χ²/df) at a quantile of
// the χ² distribution on df degrees of freedom, and its weight.
type chiNode struct{ scale, weight float64 }

var chiCache sync.Map // df → []chiNode

// chiNodes are the Gauss–Legendre nodes of PowerT's integral over the χ²
// quantiles, for df degrees of freedom: the same few df come back for
// every figure of a run, and each quantile inverts a gamma function.
func chiNodes(df float64) []chiNode {
	if v, ok := chiCache.Load(df); ok {
		return v.([]chiNode)
	}
	const n = 64
	xs, ws := make([]float64, n), make([]float64, n)
	quad.Legendre{}.FixedLocations(xs, ws, 0, 1)
	chi := distuv.ChiSquared{K: df}
	nodes := make([]chiNode, n)
	for i := range xs {
		nodes[i] = chiNode{scale: math.Sqrt(chi.Quantile(xs[i]) / df), weight: ws[i]}
	}
	chiCache.Store(df, nodes)
	return nodes
}

// Holm says which of the p-values are rejected with the familywise error
// rate held at alpha (Holm 1979): in increasing order, p(k) ≤
// alpha/(m−k+1) until the first that is not.
func Holm(ps []float64, alpha float64) []bool {
	order := sortedOrder(ps)
	reject := make([]bool, len(ps))
	m := len(ps)
	for k, i := range order {
		if ps[i] > alpha/float64(m-k) {
			break
		}
		reject[i] = true
	}
	return reject
}

// Slower is the one-sided paired t-test of per-round log ratios, a
// candidate's over its baseline's, of "the candidate is slower" (their
// mean below 0): the ratio (the geometric mean of the per-round ratios),
// its lower bound at 1 − Alpha, the p, and the log ratios' spread. It
// needs 2 rounds; P is 1 with fewer.
type Slower struct {
	N      int     `json:"n"`
	Ratio  float64 `json:"ratio"`
	Lo     float64 `json:"lo"`
	P      float64 `json:"p"`
	Spread float64 `json:"spread"`
}

// SlowerOf tests log ratios for a slowdown.
func SlowerOf(logs []float64) Slower {
	s := Slower{N: len(logs), P: 1}
	if s.N < 2 {
		return s
	}
	logs = slices.Sorted(slices.Values(logs)) // a fixed order keeps the sums, and so p, reproducible
	mean, sd := meanSD(logs)
	se, df := sd/math.Sqrt(float64(s.N)), float64(s.N-1)
	s.Ratio, s.Spread = math.Exp(mean), sd
	switch {
	case se == 0 && mean < 0:
		s.P = 0
	case se == 0:
		s.P = 1
	default:
		s.P = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(mean / se)
	}
	s.Lo = math.Exp(mean - tQuantile(df, 1-Alpha)*se)
	return s
}

// TCDF is Student's t distribution function on df degrees of freedom.
func TCDF(df, x float64) float64 { return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.CDF(x) }
