package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// PowerT against what is known: with many degrees of freedom it is the
// z-test's Φ(δ/se − z); at no effect it is the level; and at few degrees
// of freedom, with and without a floor, it matches a simulation of the
// test it describes.
func TestPowerT(t *testing.T) {
	z := distuv.UnitNormal.Quantile(0.95)
	if got, want := PowerT(10000, 0.05, 0.1, 0.05, 0), distuv.UnitNormal.CDF(2-z); math.Abs(got-want) > 0.002 {
		t.Errorf("many degrees of freedom: %.4f, want %.4f", got, want)
	}
	if got := PowerT(3, 0.1, 0, 0.05, 0); math.Abs(got-0.05) > 0.002 {
		t.Errorf("no effect: %.4f, want the level 0.05", got)
	}
	for _, tc := range []struct{ n, sd, effect, level, floor float64 }{
		{4, 0.1, 0.1, 0.05, 0}, {3, 0.2, 0.15, 0.01, 0}, {6, 0.1, 0.1, 0.05, 0.1}, {4, 0.3, 0.2, 0.0125, 0},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		const draws = 40000
		c := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: tc.n - 1}.Quantile(1 - tc.level)
		hit := 0
		for range draws {
			x := make([]float64, int(tc.n))
			for i := range x {
				x[i] = tc.effect + tc.sd*rng.NormFloat64()
			}
			mean, sd := meanSD(x)
			if mean/(sd/math.Sqrt(tc.n)) > c && mean > tc.floor {
				hit++
			}
		}
		sim := float64(hit) / draws
		got := PowerT(tc.n-1, tc.sd/math.Sqrt(tc.n), tc.effect, tc.level, tc.floor)
		if math.Abs(got-sim) > 4*math.Sqrt(sim*(1-sim)/draws)+0.002 {
			t.Errorf("%+v: PowerT %.4f, simulated %.4f", tc, got, sim)
		}
	}
}

func TestHolm(t *testing.T) {
	for _, tc := range []struct {
		ps   []float64
		want []bool
	}{
		// Sorted: 0.01 ≤ 0.05/4, 0.015 ≤ 0.05/3, 0.03 > 0.05/2: stop.
		{[]float64{0.03, 0.01, 0.015, 0.04}, []bool{false, true, true, false}},
		{[]float64{0.04}, []bool{true}},
		{[]float64{0.02, 0.02}, []bool{true, true}},
		{[]float64{0.6, 0.02}, []bool{false, true}},
		{[]float64{0.026, 0.03}, []bool{false, false}},
		{nil, []bool{}},
	} {
		if got := Holm(tc.ps, 0.05); !slices.Equal(got, tc.want) {
			t.Errorf("Holm(%v) = %v, want %v", tc.ps, got, tc.want)
		}
	}
}
