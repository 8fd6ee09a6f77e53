package stats

import (
	"math"

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
	chi := distuv.ChiSquared{K: df}
	return quad.Fixed(func(u float64) float64 {
		bound := math.Max(c*se*math.Sqrt(chi.Quantile(u)/df), floor)
		return distuv.UnitNormal.CDF((effect - bound) / se)
	}, 0, 1, 64, nil, 0)
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
