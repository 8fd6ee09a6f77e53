package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// noise is round-to-round noise, log-normal: the SD of log req/s of a
// per-round effect all servers of the round share, and of each server's
// own.
type noise struct{ shared, own float64 }

// machine is the noise measured here: each server's own round-to-round
// CV of 14–18% in the quiet catalog runs of issue 27 (17.2% in a default
// run's load ranking, 17.4% over 29 servers in a quiet run, 2026-12-01), shared 0–7%. It
// stands until a measurement of the variance components says otherwise.
var machine = noise{shared: 0.03, own: 0.17}

const simRuns = 2000

// simulate runs a design over servers of the given true speeds: every
// server until the first look, then only the servers of open pairs, as
// bench does. It returns the analysis and the rounds measured, over all
// servers.
func simulate(rng *rand.Rand, speeds []float64, d Design, n noise) (Analysis, int) {
	samples := make([]Sample, len(speeds))
	for i := range samples {
		samples[i].Name = string(rune('a' + i))
	}
	active := make([]bool, len(speeds))
	for i := range active {
		active[i] = true
	}
	var a Analysis
	done, measured := 0, 0
	for {
		look, ok := d.NextLook(done)
		if !ok {
			return a, measured
		}
		for r := done + 1; r <= look; r++ {
			shared := rng.NormFloat64() * n.shared
			for i, s := range speeds {
				if active[i] {
					measured++
					samples[i].Rounds = append(samples[i].Rounds, r)
					samples[i].Values = append(samples[i].Values, s*math.Exp(shared+rng.NormFloat64()*n.own))
				}
			}
		}
		done = look
		a = Analyse(samples, d)
		open := a.Open(samples)
		if len(open) == 0 {
			return a, measured
		}
		for i := range active {
			active[i] = false
			for _, name := range open {
				active[i] = active[i] || name == samples[i].Name
			}
		}
	}
}

// slack is three Monte-Carlo standard errors of a share near Alpha.
func slack(n int) float64 { return 3 * math.Sqrt(Alpha*(1-Alpha)/float64(n)) }

// Identical servers: the share of runs with any false separation stays
// at most Alpha (within three Monte-Carlo standard errors), for fixed
// rounds and for auto, with 1, 2, 10 and 30 servers alike (Benjamini–
// Hochberg holds the familywise rate when no pair differs, and auto's
// level is that of t-tests, SequentialLevel).
func TestFalseSeparationsOfIdenticalServers(t *testing.T) {
	designs := []struct {
		name string
		d    Design
	}{{"3 rounds", Fixed(3, 0.05)}, {"4 rounds", Fixed(4, 0.05)}, {"6 rounds", Fixed(6, 0.05)}, {"auto", Sequential(AutoLooks, 0.05)}}
	for _, servers := range []int{1, 2, 10, 30} {
		for _, tc := range designs {
			if servers == 30 && tc.d.Fixed {
				continue // a fixed design's one look is 10 servers' case, and 30 take long
			}
			rng := rand.New(rand.NewPCG(17, uint64(servers)))
			speeds := make([]float64, servers)
			for i := range speeds {
				speeds[i] = 1
			}
			var pairs, runsWithAny int
			for range simRuns {
				a, _ := simulate(rng, speeds, tc.d, machine)
				pairs += len(a.Pairs)
				for _, p := range a.Pairs {
					if p.Verdict == Separated {
						runsWithAny++
						break
					}
				}
			}
			share := float64(runsWithAny) / simRuns
			t.Logf("%2d servers, %s: %.2f%% of runs with a false separation (%d pairs a run)", servers, tc.name, 100*share, pairs/simRuns)
			if share > Alpha+slack(simRuns) {
				t.Errorf("%d servers, %s: false separations in %.2f%% of runs; at most %.0f%% allowed", servers, tc.name, 100*share, 100*Alpha)
			}
		}
	}
}

// Pocock's normal-theory level, which auto used before issue 27, lets
// through more than Alpha with 10 identical servers: the failure the
// Bonferroni level fixes.
func TestPocockLevelLetsThrough(t *testing.T) {
	d := Sequential(AutoLooks, 0.05)
	for i := range d.Levels {
		d.Levels[i] = 0.0182
	}
	speeds := make([]float64, 10)
	for i := range speeds {
		speeds[i] = 1
	}
	rng := rand.New(rand.NewPCG(17, 10))
	any := 0
	for range simRuns {
		a, _ := simulate(rng, speeds, d, machine)
		if slices.ContainsFunc(a.Pairs, func(p Pair) bool { return p.Verdict == Separated }) {
			any++
		}
	}
	t.Logf("10 servers at Pocock's level 0.0182: %.2f%% of runs with a false separation", 100*float64(any)/simRuns)
	if float64(any)/simRuns <= Alpha {
		t.Errorf("Pocock's level separated identical servers in %.2f%% of runs, no more than %.0f%%", 100*float64(any)/simRuns, 100*Alpha)
	}
}

// power is the share of pairs separated when one server is faster by a
// gap than three identical ones, and the rounds a server on average.
func power(gap float64, d Design, n noise) (share, rounds float64) {
	rng := rand.New(rand.NewPCG(17, 2))
	speeds := []float64{1 + gap, 1, 1, 1}
	separated, measured := 0, 0
	for range simRuns {
		a, m := simulate(rng, speeds, d, n)
		for _, other := range []string{"b", "c", "d"} {
			if a.Separated("a", other) {
				separated++
			}
		}
		measured += m
	}
	return float64(separated) / (3 * simRuns), float64(measured) / simRuns / float64(len(speeds))
}

// Power at this machine's noise, for each design.
func TestPowerToSeparateAGap(t *testing.T) {
	for _, gap := range []float64{0.10, 0.20, 0.50, 1} {
		for _, name := range []string{"3 rounds", "4 rounds", "6 rounds", "auto"} {
			d := map[string]Design{"3 rounds": Fixed(3, 0.05), "4 rounds": Fixed(4, 0.05), "6 rounds": Fixed(6, 0.05), "auto": Sequential(AutoLooks, 0.05)}[name]
			share, rounds := power(gap, d, machine)
			t.Logf("gap %.0f%%, %s: separated in %.1f%% of pairs, %.1f rounds a server on average", 100*gap, name, 100*share, rounds)
			if name == "auto" && gap == 0.50 && share < 0.90 {
				t.Errorf("auto separates a 50%% gap in %.1f%% of pairs; want at least 90%%", 100*share)
			}
		}
	}
}

// measured are the capacity figure's noise levels measured by runs of
// the default design after the JVM servers' declared warm-ups
// (summary.txt's noise lines): the machine's quietest and its noisiest.
var measured = []struct {
	level string
	noise
}{
	{"quiet, six stacks 2026-12-02", noise{shared: 0, own: 0.063}},
	{"busy, JVM set 2026-12-03", noise{shared: 0.112, own: 0.217}},
}

// The default design's power for 1.2× and 1.5× gaps at those levels: at
// the quiet one, four rounds separate 1.5× nearly always.
func TestPowerAtTheMeasuredNoise(t *testing.T) {
	for _, m := range measured {
		level, n := m.level, m.noise
		for _, gap := range []float64{0.2, 0.5} {
			for _, name := range []string{"4 rounds", "auto"} {
				d := map[string]Design{"4 rounds": Fixed(4, 0.05), "auto": Sequential(AutoLooks, 0.05)}[name]
				share, rounds := power(gap, d, n)
				t.Logf("%s (own %.1f%%, shared %.1f%%), gap %.0f%%, %s: separated in %.1f%% of pairs, %.1f rounds a server", level, 100*n.own, 100*n.shared, 100*gap, name, 100*share, rounds)
				if n.own < 0.1 && gap == 0.5 && share < 0.95 {
					t.Errorf("%s, %s: a 50%% gap separated in %.1f%% of pairs; want at least 95%%", level, name, 100*share)
				}
			}
		}
	}
}

// bands are the upper ends of the gaps the catalog simulations sum up,
// as ratios − 1, from a lower end of 20%.
var bands = []float64{0.3, 0.5, 1, 2}

// catalogs draws n catalogs like this one (31 servers spread
// log-uniformly over 30×) and runs a design on each at this machine's
// noise: the share of pairs separated in each band of gaps, and the
// rounds a server on average.
func catalogs(d Design, n int) (shares []float64, rounds float64) {
	rng := rand.New(rand.NewPCG(17, 3))
	sep, all := make([]int, len(bands)), make([]int, len(bands))
	measured := 0
	for range n {
		speeds := make([]float64, 31)
		for i := range speeds {
			speeds[i] = math.Exp(rng.Float64() * math.Log(30))
		}
		a, m := simulate(rng, speeds, d, machine)
		measured += m
		for i := range speeds {
			for j := i + 1; j < len(speeds); j++ {
				gap := math.Max(speeds[i], speeds[j])/math.Min(speeds[i], speeds[j]) - 1
				b := gapBand(bands, gap)
				if b < 0 {
					continue
				}
				all[b]++
				if a.Separated(string(rune('a'+i)), string(rune('a'+j))) {
					sep[b]++
				}
			}
		}
	}
	shares = make([]float64, len(bands))
	for b := range bands {
		shares[b] = float64(sep[b]) / float64(all[b])
	}
	return shares, float64(measured) / float64(n*31)
}

// gapBand is the band of a gap: the first upper end at or above it,
// below which the band's lower end (the previous upper end) lies; -1 for
// a gap below the first band's lower end of 20% or above the last.
func gapBand(bands []float64, gap float64) int {
	if gap < 0.2 {
		return -1
	}
	for b, hi := range bands {
		if gap <= hi {
			return b
		}
	}
	return -1
}

// TestDefaultRoundsSeparate: the arithmetic behind the default of 4
// rounds at this machine's noise: they separate pairs 2–3× apart nearly
// always and pairs 1.5–2× apart mostly, where 3 rounds leave a quarter
// and over half of them unseparated.
func TestDefaultRoundsSeparate(t *testing.T) {
	three, _ := catalogs(Fixed(3, 0.05), 60)
	four, _ := catalogs(Fixed(4, 0.05), 60)
	for b, hi := range bands {
		t.Logf("gaps up to %.0f%%: 3 rounds separate %.0f%%, 4 rounds %.0f%%", 100*hi, 100*three[b], 100*four[b])
	}
	if four[3] < 0.9 || four[2] < 0.6 {
		t.Errorf("4 rounds separate %.0f%% of 2–3× gaps and %.0f%% of 1.5–2× ones; the default was chosen for at least 90%% and 60%%", 100*four[3], 100*four[2])
	}
	if four[2] < three[2]+0.2 {
		t.Errorf("4 rounds separate %.0f%% of 1.5–2× gaps, 3 rounds %.0f%%: a fourth round should buy at least 20 points", 100*four[2], 100*three[2])
	}
}

// TestAutoStopsAtThisNoise: on catalogs like this one, auto's futility
// rule stops the pairs its rounds would not separate, so that it measures
// the catalog in fewer rounds than its 12, at a small cost in power;
// without it, at this noise, every server ran to the last look.
func TestAutoStopsAtThisNoise(t *testing.T) {
	never := Sequential(AutoLooks, 0.05)
	never.Futility = 0
	without, roundsWithout := catalogs(never, 30)
	with, roundsWith := catalogs(Sequential(AutoLooks, 0.05), 30)
	t.Logf("auto without a futility rule: %.1f rounds a server; with it (conditional power below %.0f%%): %.1f", roundsWithout, 100*Futility, roundsWith)
	for b, hi := range bands {
		t.Logf("gaps up to %.0f%%: separated %.0f%% without, %.0f%% with", 100*hi, 100*without[b], 100*with[b])
	}
	if roundsWith > roundsWithout-1 {
		t.Errorf("auto with its futility rule: %.1f rounds a server, without %.1f; want at least 1 fewer", roundsWith, roundsWithout)
	}
	for b := range bands {
		if with[b] < without[b]-0.15 {
			t.Errorf("gaps up to %.0f%%: the futility rule separates %.0f%%, without it %.0f%%; want at most 15 points less", 100*bands[b], 100*with[b], 100*without[b])
		}
	}
}
