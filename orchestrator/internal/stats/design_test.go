package stats

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// Pocock's constants for K equally spaced looks at two-sided α = 0.05
// (Pocock 1977, Biometrika 64:191, table 1; Jennison & Turnbull 2000,
// table 2.1).
func TestPocockLevelMatchesPublishedTable(t *testing.T) {
	for k, c := range map[int]float64{1: 1.960, 2: 2.178, 3: 2.289, 4: 2.361, 5: 2.413} {
		looks := make([]int, k)
		for i := range looks {
			looks[i] = 3 * (i + 1)
		}
		level := PocockLevel(fractions(looks), 0.05)
		got := distuv.UnitNormal.Quantile(1 - level/2)
		if math.Abs(got-c) > 0.002 {
			t.Errorf("K=%d: Pocock's c = %.4f, want %.3f", k, got, c)
		}
	}
}

// Crossing against what is known independently: one look is the normal
// tail, Pocock's published K=2 constant crosses at 0.05, and two looks
// far apart are nearly independent tests.
func TestCrossing(t *testing.T) {
	if got := Crossing([]float64{1}, 1.959964); math.Abs(got-0.05) > 1e-4 {
		t.Errorf("one look at 1.96: crossing %.5f, want 0.05", got)
	}
	if got := Crossing([]float64{0.5, 1}, 2.178); math.Abs(got-0.05) > 5e-4 {
		t.Errorf("two looks at Pocock's 2.178: crossing %.5f, want 0.05", got)
	}
	// Far apart looks are nearly independent: 1-(1-a)^2 for a=P(|Z|>c).
	a := 2 * distuv.UnitNormal.Survival(2.5)
	if got, want := Crossing([]float64{1e-4, 1}, 2.5), 1-(1-a)*(1-a); math.Abs(got-want) > 2e-3 {
		t.Errorf("nearly independent looks: crossing %.5f, want about %.5f", got, want)
	}
}
