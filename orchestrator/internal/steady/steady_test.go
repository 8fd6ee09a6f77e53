package steady

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

const interval = 250 * time.Millisecond

// shape is a server's speed at a time since the load started, as a share
// of its steady speed.
type shape func(seconds float64) float64

// The classes of Barrett et al. (2017): flat, warm-up, slowdown, no
// steady state.
var (
	flat = func(float64) float64 { return 1 }
	// warmup climbs from 10% of its speed with time constant tau, as a JIT
	// does.
	warmup = func(tau float64) shape { return func(s float64) float64 { return 1 - 0.9*math.Exp(-s/tau) } }
	// slowdown loses speed steadily, a third in 12 s, as a leak does.
	slowdown = func(s float64) float64 { return math.Exp(-s / 30) }
)

// wandering is never steady: its speed takes a random walk, 4% a second.
func wandering(rng *rand.Rand) shape {
	steps := make([]float64, 80)
	level := 0.0
	for i := range steps {
		level += 0.04 * rng.NormFloat64()
		steps[i] = math.Exp(level)
	}
	return func(s float64) float64 { return steps[min(int(s), len(steps)-1)] }
}

// draw is n intervals of 1000 calls at full speed, times the shape, with
// AR(1) noise of lag-1 correlation rho and the given CV.
func draw(rng *rand.Rand, s shape, from float64, n int, cv, rho float64) []uint64 {
	out := make([]uint64, n)
	e := 0.0
	for i := range out {
		e = rho*e + math.Sqrt(1-rho*rho)*rng.NormFloat64()*cv
		out[i] = uint64(math.Max(0, 1000*s(from+float64(i)*interval.Seconds())*(1+e)))
	}
	return out
}

// warmupEnd is where the rule ends the warm-up of a series, in intervals,
// and whether it did before the cap.
func warmupEnd(r Rule, series []uint64, capN int) (int, bool) {
	for n := 1; n <= capN; n++ {
		if r.Ended(Speeds(series[:n], nil, false), interval) {
			return n, true
		}
	}
	return capN, false
}

func quantile(v []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[int(q*float64(len(s)-1))]
}

// The default rule on each class, 300 draws each at a lag-1 correlation
// of 0.3: where it ends the warm-up before a 60 s cap, and what the 4 s
// window after it reads: the share of draws whose window is flagged not
// steady, and of those whose window is off its steady speed by more than
// 5% yet not flagged (the rounds that would be ranked biased).
func TestRuleOnSynthetic(t *testing.T) {
	const capN, window, draws = 240, 16, 300
	for _, tc := range []struct {
		name string
		s    shape
		cv   float64
		// the median end at most, in seconds; the shares flagged and
		// biased but not flagged, at least and at most.
		endAtMost              float64
		flaggedMin, flaggedMax float64
		biasedMax              float64
	}{
		{"flat, CV 3%", flat, 0.03, 6.25, 0, 0.01, 0},
		{"flat, CV 10%", flat, 0.10, 6.25, 0, 0.01, 0},
		{"flat, CV 20%", flat, 0.20, 6.25, 0, 0.01, 0},
		{"warm-up τ 2 s, CV 3%", warmup(2), 0.03, 20, 0, 0.01, 0},
		{"warm-up τ 5 s, CV 3%", warmup(5), 0.03, 45, 0, 0.01, 0.01},
		{"warm-up τ 5 s, CV 10%", warmup(5), 0.10, 25, 0, 0.05, 0.3},
		{"warm-up τ 10 s, CV 3%", warmup(10), 0.03, 60, 0, 0.01, 0.01},
		{"warm-up τ 10 s, CV 10%", warmup(10), 0.10, 50, 0, 0.05, 0.25},
		// Neither has a steady speed to be off from: what matters is how
		// often the window is flagged.
		{"slowdown", slowdown, 0.03, 60, 0.3, 1, 1},
		{"no steady state", nil, 0.03, 60, 0.04, 1, 1},
	} {
		rng := rand.New(rand.NewPCG(27, 1))
		var ends []float64
		capped, flagged, biased := 0, 0, 0
		for range draws {
			s := tc.s
			if s == nil {
				s = wandering(rng)
			}
			series := draw(rng, s, 0, capN+window, tc.cv, 0.3)
			end, ok := warmupEnd(Default, series, capN)
			if !ok {
				capped++
			}
			ends = append(ends, float64(end)*interval.Seconds())
			var level float64
			for i := end; i < end+window; i++ {
				level += s(float64(i)*interval.Seconds()) / window
			}
			steady := TrendOf(Speeds(series[end:end+window], nil, false)).Steady()
			if !steady {
				flagged++
			}
			if steady && level < 0.95 {
				biased++
			}
		}
		fl, bi := float64(flagged)/draws, float64(biased)/draws
		t.Logf("%-24s ends at %5.2f s (median; 90th percentile %5.2f s; %3.0f%% at the cap); window flagged in %5.1f%%, >5%% off and not flagged in %5.1f%%",
			tc.name, quantile(ends, .5), quantile(ends, .9), 100*float64(capped)/draws, 100*fl, 100*bi)
		if quantile(ends, .5) > tc.endAtMost || fl < tc.flaggedMin || fl > tc.flaggedMax || bi > tc.biasedMax {
			t.Errorf("%s: median end %.2f s (at most %.2f), flagged %.1f%% (want %.0f%%–%.0f%%), biased and not flagged %.1f%% (at most %.0f%%)",
				tc.name, quantile(ends, .5), tc.endAtMost, 100*fl, 100*tc.flaggedMin, 100*tc.flaggedMax, 100*bi, 100*tc.biasedMax)
		}
	}
}

// The window verdict on windows of 16 and 40 intervals (4 s and 10 s):
// a flat window is rarely flagged, whatever its noise; one still warming
// up or slowing down is flagged as often as its noise lets the trend
// show.
func TestWindowVerdicts(t *testing.T) {
	const draws = 2000
	for _, tc := range []struct {
		name     string
		s        shape
		from     float64
		n        int
		cv, rho  float64
		min, max float64 // the share flagged
	}{
		{"flat", flat, 0, 16, 0.03, 0.3, 0, 0.01},
		{"flat", flat, 0, 16, 0.20, 0.3, 0, 0.01},
		{"flat, correlated", flat, 0, 16, 0.10, 0.6, 0, 0.03},
		{"flat", flat, 0, 40, 0.10, 0.3, 0, 0.01},
		{"warm-up τ 10 s, 6 s in", warmup(10), 6, 16, 0.03, 0.3, 0.7, 1},
		{"warm-up τ 10 s, 6 s in", warmup(10), 6, 16, 0.10, 0.3, 0.1, 1},
		{"warm-up τ 10 s, 6 s in", warmup(10), 6, 40, 0.10, 0.3, 0.8, 1},
		{"warm-up τ 5 s, 40 s in", warmup(5), 40, 16, 0.03, 0.3, 0, 0.01},
		{"slowdown, 10% over 10 s", func(s float64) float64 { return 1 - 0.01*s }, 0, 40, 0.03, 0.3, 0.6, 1},
	} {
		rng := rand.New(rand.NewPCG(27, 2))
		flagged := 0
		for range draws {
			if !TrendOf(Speeds(draw(rng, tc.s, tc.from, tc.n, tc.cv, tc.rho), nil, false)).Steady() {
				flagged++
			}
		}
		share := float64(flagged) / draws
		t.Logf("%-26s %d intervals, CV %2.0f%%, ρ %.1f: %5.1f%% flagged not steady", tc.name, tc.n, 100*tc.cv, tc.rho, 100*share)
		if share < tc.min || share > tc.max {
			t.Errorf("%s, %d intervals, CV %.2f: %.1f%% flagged, want %.0f%%–%.0f%%", tc.name, tc.n, tc.cv, 100*share, 100*tc.min, 100*tc.max)
		}
	}
}

func TestTruncation(t *testing.T) {
	// 4 batches: too few to decide.
	if _, ok := Truncation(make([]float64, 4*Batch)); ok {
		t.Error("a decision on 4 batches")
	}
	// A step up after 3 batches of 10: cut there.
	v := slices.Concat(slices.Repeat([]float64{10}, 3*Batch), []float64{100, 101, 99, 100, 100, 100, 101, 99, 100, 100, 99, 101, 100, 100, 100, 101, 99, 100, 100, 100, 100, 101, 99, 100, 100, 99, 101, 100, 100, 100, 101, 99, 100, 100, 100})
	cut, ok := Truncation(v)
	if cut != 3*Batch || !ok {
		t.Errorf("step after 3 batches of 10: cut %d ok %v, want %d true", cut, ok, 3*Batch)
	}
	// A ramp all along: the cut lies late, not ok.
	ramp := make([]float64, 10*Batch)
	for i := range ramp {
		ramp[i] = float64(i)
	}
	if cut, ok := Truncation(ramp); ok {
		t.Errorf("a ramp read as steady after %d values", cut)
	}
}

func TestTrendOf(t *testing.T) {
	line := make([]float64, 20)
	for i := range line {
		line[i] = 100 + float64(i)
	}
	tr := TrendOf(line)
	if math.Abs(tr.Change-19/109.5) > 1e-9 || tr.P != 0 || tr.Steady() {
		t.Errorf("a straight rise: %+v", tr)
	}
	if tr := TrendOf([]float64{5, 5, 5, 5, 5}); tr.Change != 0 || tr.P != 1 || !tr.Steady() || tr.MeanSpread() != 0 {
		t.Errorf("a constant: %+v", tr)
	}
	if tr := TrendOf([]float64{1, 2, 3}); tr.P != 1 {
		t.Errorf("3 values: %+v", tr)
	}
}
