package stats

import (
	"math"
	"slices"
	"testing"
)

func sample(name string, values ...float64) Sample {
	s := Sample{Name: name, Values: values}
	for i := range values {
		s.Rounds = append(s.Rounds, i+1)
	}
	return s
}

// The paired t-test against the published t table: t = 4.303 with 2
// degrees of freedom is the two-sided 5% point (Student's table,
// t_{0.975,2}), so log ratios a, a+1, a+2 with (a+1)·√3 = 4.303 give p =
// 0.05 and an interval touching 1.
func TestPairedTAgainstTheTable(t *testing.T) {
	a := 4.303/math.Sqrt(3) - 1
	base := sample("x", 100, 200, 50)
	other := sample("y", 100*math.Exp(a), 200*math.Exp(a+1), 50*math.Exp(a+2))
	got := Analyse([]Sample{base, other}, Fixed(3, 0)).Pairs[0]
	if got.Test != PairedT || got.N != 3 || math.Abs(got.P-0.05) > 1e-3 || math.Abs(got.Ratio-math.Exp(a+1)) > 1e-9 || math.Abs(got.Lo-1) > 1e-3 {
		t.Errorf("pair = %+v, want paired, 3 rounds, p 0.05, ratio %.4f, lower bound 1", got, math.Exp(a+1))
	}
	if got.Verdict != Separated { // p is a hair below 0.05: t_{0.975,2} is 4.3027

		t.Errorf("verdict %q at p %.5f", got.Verdict, got.P)
	}
}

func TestBenjaminiHochberg(t *testing.T) {
	for _, tc := range []struct {
		ps   []float64
		want []bool
	}{
		// Sorted: 0.005 ≤ 0.0125, 0.01 ≤ 0.025, 0.03 ≤ 0.0375, 0.04 ≤ 0.05.
		{[]float64{0.01, 0.04, 0.03, 0.005}, []bool{true, true, true, true}},
		{[]float64{0.01, 0.02, 0.03, 0.5}, []bool{true, true, true, false}},
		// 0.02 > 0.0125 but 0.024 ≤ 0.025: the step-up takes both.
		{[]float64{0.024, 0.02, 0.9, 0.8}, []bool{true, true, false, false}},
		{[]float64{0.03, 0.2}, []bool{false, false}},
		{nil, []bool{}},
	} {
		if got := BenjaminiHochberg(tc.ps, 0.05); !slices.Equal(got, tc.want) {
			t.Errorf("BenjaminiHochberg(%v) = %v, want %v", tc.ps, got, tc.want)
		}
	}
}

func TestLetters(t *testing.T) {
	sep := func(pairs ...[2]int) func(i, j int) bool {
		return func(i, j int) bool {
			return slices.ContainsFunc(pairs, func(p [2]int) bool { return p == [2]int{i, j} || p == [2]int{j, i} })
		}
	}
	for _, tc := range []struct {
		name string
		n    int
		sep  func(i, j int) bool
		want []string
	}{
		{"nothing separated", 3, sep(), []string{"a", "a", "a"}},
		{"all separated", 3, sep([2]int{0, 1}, [2]int{0, 2}, [2]int{1, 2}), []string{"a", "b", "c"}},
		// 0 and 2 differ, 1 is like both: not a chain that ties 0 to 2.
		{"overlapping groups", 3, sep([2]int{0, 2}), []string{"a", "ab", "b"}},
		{"a staircase", 4, sep([2]int{0, 2}, [2]int{0, 3}, [2]int{1, 3}), []string{"a", "ab", "bc", "c"}},
		// A non-neighbour tie: 0 and 2 alike, 1 apart from both.
		{"non-neighbours alike", 3, sep([2]int{0, 1}, [2]int{1, 2}), []string{"a", "b", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Letters(tc.n, tc.sep)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Letters = %v, want %v", got, tc.want)
			}
			for i := range tc.n {
				for j := i + 1; j < tc.n; j++ {
					share := slices.ContainsFunc([]rune(got[i]), func(r rune) bool { return slices.Contains([]rune(got[j]), r) })
					if share == tc.sep(i, j) {
						t.Errorf("rows %d and %d: share a letter %v, separated %v", i, j, share, tc.sep(i, j))
					}
				}
			}
		})
	}
}

func TestAnalyseClaimsNothingOnTwoRounds(t *testing.T) {
	a := Analyse([]Sample{sample("x", 100, 101), sample("y", 1000, 1001)}, Fixed(2, 0.05))
	if p := a.Pairs[0]; p.Verdict != TooFewRounds || p.N != 2 {
		t.Errorf("two rounds, tenfold apart: %+v, want too few rounds", p)
	}
}

func TestAnalyseFallsBackToMannWhitneyWithoutCommonRounds(t *testing.T) {
	x := Sample{Name: "x", Rounds: []int{1, 2, 3, 4, 5}, Values: []float64{10, 11, 12, 13, 14}}
	y := Sample{Name: "y", Rounds: []int{6, 7, 8, 9, 10}, Values: []float64{20, 21, 22, 23, 24}}
	p := Analyse([]Sample{x, y}, Fixed(10, 0)).Pairs[0]
	// 5 against 5, apart: p = 2/C(10,5) = 2/252.
	if p.Test != MannWhitney || math.Abs(p.P-2.0/252) > 1e-9 || p.Verdict != Separated || p.Ratio != 22.0/12 {
		t.Errorf("pair = %+v, want Mann–Whitney, p 2/252, separated, ratio 22/12", p)
	}
}

func TestAnalyseFindsEquivalence(t *testing.T) {
	x := sample("x", 100, 120, 90, 110, 105, 95)
	y := sample("y", 100.5, 119.6, 90.4, 109.5, 105.6, 94.6)
	p := Analyse([]Sample{x, y}, Fixed(6, 0.03)).Pairs[0]
	if p.Verdict != Equivalent || p.Lo < 1/1.03 || p.Hi > 1.03 {
		t.Errorf("pair = %+v, want equivalent within 3%%", p)
	}
	if p := Analyse([]Sample{x, y}, Fixed(6, 0)).Pairs[0]; p.Verdict != Unresolved {
		t.Errorf("no margin: %+v, want unresolved", p)
	}
}

func TestSequentialStopsPairsAtTheirLook(t *testing.T) {
	d := Sequential([]int{3, 6}, 0)
	d.Futility = 0
	fast := sample("fast", 300, 330, 290)
	slow := sample("slow", 100, 110, 95)
	near := sample("near", 101, 109, 97)
	a := Analyse([]Sample{fast, slow, near}, d)
	if !a.Separated("fast", "slow") || !a.Separated("fast", "near") || a.Separated("slow", "near") {
		t.Fatalf("look 1: %+v", a.Pairs)
	}
	if open := a.Open([]Sample{fast, slow, near}); !slices.Equal(open, []string{"slow", "near"}) {
		t.Errorf("open after look 1: %v, want slow and near", open)
	}
	if next, ok := d.NextLook(3); next != 6 || !ok {
		t.Errorf("NextLook(3) = %d, %v", next, ok)
	}
	if _, ok := d.NextLook(6); ok {
		t.Error("a look after the last")
	}
	if len(a.Looks) != 1 || a.Looks[0].Rounds != 3 || a.Looks[0].Tested != 3 || a.Looks[0].Decided != 2 {
		t.Errorf("looks = %+v", a.Looks)
	}
}

// A pair whose rounds agree on a small gap stops for futility at the
// first look: the rounds left would not separate it; one whose rounds
// disagree on a large gap goes on.
func TestSequentialStopsFutilePairs(t *testing.T) {
	d := Sequential([]int{3, 6, 9, 12}, 0)
	slow := sample("slow", 100, 110, 95)
	near := sample("near", 101, 109, 97)
	wide := sample("wide", 60, 130, 45)
	a := Analyse([]Sample{slow, near, wide}, d)
	verdict := func(x, y string) string {
		i := slices.IndexFunc(a.Pairs, func(p Pair) bool { return p.A == x && p.B == y })
		return a.Pairs[i].Verdict
	}
	if verdict("slow", "near") != Futile {
		t.Errorf("slow, near: %s, want futile", verdict("slow", "near"))
	}
	if verdict("slow", "wide") != Unresolved || verdict("near", "wide") != Unresolved {
		t.Errorf("with wide: %s and %s, want unresolved", verdict("slow", "wide"), verdict("near", "wide"))
	}
	if open := a.Open([]Sample{slow, near, wide}); !slices.Equal(open, []string{"slow", "near", "wide"}) {
		t.Errorf("open: %v", open)
	}
	// Were it the last look, nothing stops for futility.
	last := Analyse([]Sample{slow, near, wide}, Sequential([]int{3}, 0))
	if slices.ContainsFunc(last.Pairs, func(p Pair) bool { return p.Verdict == Futile }) {
		t.Errorf("futility at the last look: %+v", last.Pairs)
	}
}

// A pair compared on too few rounds at a look (a server missed one) is
// tested again at the next, and its servers go on meanwhile.
func TestTooFewRoundsRetested(t *testing.T) {
	d := Sequential([]int{3, 6}, 0)
	d.Futility = 0
	full := sample("full", 100, 101, 99, 100, 102, 98)
	gappy := Sample{Name: "gappy", Rounds: []int{1, 3, 4, 5, 6}, Values: []float64{200, 199, 201, 200, 202}}
	early := Analyse([]Sample{full, {Name: "gappy", Rounds: []int{1, 3}, Values: []float64{200, 199}}}, d)
	if p := early.Pairs[0]; p.Verdict != TooFewRounds {
		t.Fatalf("look 1 on 2 rounds: %+v", p)
	}
	if open := early.Open([]Sample{full, gappy}); len(open) != 2 {
		t.Errorf("open after a look with too few rounds: %v", open)
	}
	if p := Analyse([]Sample{full, gappy}, d).Pairs[0]; p.Verdict != Separated || p.Look != 6 || p.N != 5 {
		t.Errorf("look 2: %+v, want separated on 5 rounds at look 6", p)
	}
}
