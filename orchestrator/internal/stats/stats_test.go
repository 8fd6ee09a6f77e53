package stats

import (
	"math"
	"slices"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name           string
		values         []float64
		median, lo, hi float64
		interval       string
		cv             float64
	}{
		// sd of 1,2,3 is 1, mean 2.
		{"three rounds: the range", []float64{3, 1, 2}, 2, 1, 3, "min–max, 75%", 0.5},
		{"one round", []float64{7}, 7, 7, 7, "one round, no interval", 0},
		{"even count: mean of the middle two", []float64{4, 1, 3, 2}, 2.5, 1, 4, "min–max, 87.5%", math.Sqrt(5.0/3) / 2.5},
		// n=6: the 95% interval of the median runs from the 1st to the 6th
		// order statistic (coverage 1-2/64 = 96.9%).
		{"six rounds: a confidence interval", []float64{6, 5, 4, 3, 2, 1}, 3.5, 1, 6, CI, math.Sqrt(3.5) / 3.5},
		// n=10: from the 2nd to the 9th (coverage 97.9%).
		{"ten rounds", []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}, 5.5, 2, 9, CI, math.Sqrt(110.0/12) / 5.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			given := slices.Clone(tc.values)
			e := Of(tc.values)
			if !slices.Equal(tc.values, given) {
				t.Errorf("Of reordered the rounds: %v, were %v", tc.values, given)
			}
			if m := Median(tc.values); !near(m, tc.median) {
				t.Errorf("Median(%v) = %v, want %v", tc.values, m, tc.median)
			}
			if e.N != len(tc.values) || !near(e.Median, tc.median) || !near(e.Lo, tc.lo) || !near(e.Hi, tc.hi) || e.Interval != tc.interval || !near(e.CV, tc.cv) {
				t.Errorf("Of(%v) = %+v, want median %v in [%v, %v] (%s), CV %v", tc.values, e, tc.median, tc.lo, tc.hi, tc.interval, tc.cv)
			}
		})
	}
	if e := Of(nil); e != (Estimate{}) {
		t.Errorf("Of(nil) = %+v", e)
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		name        string
		a, b        []float64
		p           float64
		significant bool
		tooFew      bool
		change      float64
	}{
		// 3 against 3, fully separated: the exact two-sided p is 2/C(6,3) = 0.1.
		{"3 rounds a side cannot be significant", []float64{100, 101, 102}, []float64{110, 111, 112}, 0.1, false, true, 111.0/101 - 1},
		{"3 rounds a side, ranges overlap", []float64{100, 105, 110}, []float64{104, 108, 112}, 0.7, false, true, 108.0/105 - 1},
		// 4 against 4, separated: 2/C(8,4) = 2/70.
		{"4 rounds a side, separated", []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 2.0 / 70, true, false, 6.5/2.5 - 1},
		// 5 against 5, separated: 2/C(10,5) = 2/252.
		{"5 rounds a side, separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252, true, false, 8.0/3 - 1},
		{"a sample against itself", []float64{1, 2, 3, 4, 5}, []float64{1, 2, 3, 4, 5}, 1, false, false, 0},
		{"equal values, enough of them", []float64{7, 7, 7, 7, 7}, []float64{7, 7, 7, 7, 7}, 1, false, false, 0},
		// 3 against 5, separated: 2/C(8,3) = 2/56, enough.
		{"3 against 5, separated", []float64{1, 2, 3}, []float64{4, 5, 6, 7, 8}, 2.0 / 56, true, false, 6.0/2 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare(tc.a, tc.b)
			if math.Abs(d.P-tc.p) > 1e-6 || d.Significant != tc.significant || d.TooFew != tc.tooFew || !near(d.Change, tc.change) {
				t.Errorf("Compare = %+v, want p %v significant %v tooFew %v change %v", d, tc.p, tc.significant, tc.tooFew, tc.change)
			}
		})
	}
}
