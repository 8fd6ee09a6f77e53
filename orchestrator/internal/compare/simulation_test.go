package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// between is how far two runs of one code land apart, a server's whole
// run moved by a log-normal of this CV.
const between = 0.05

// catalogRun draws a run of a catalog of servers of the given speeds at
// this machine's noise (each server's own 17% a round; issue 27), each
// server moved by between for the whole run; slower names servers slower
// by that share.
func catalogRun(rng *rand.Rand, speeds []float64, rounds int, slower map[int]float64) record.Run {
	var servers []record.Server
	for i, s := range speeds {
		shift := math.Exp(between*rng.NormFloat64()) * (1 - slower[i])
		rps := make([]float64, rounds)
		for r := range rps {
			rps[r] = s * shift * math.Exp(0.17*rng.NormFloat64())
		}
		servers = append(servers, srv(fmt.Sprintf("s%d", i), rps))
	}
	return run(1, servers...)
}

func speedsOf(rng *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1000 * math.Exp(rng.Float64()*math.Log(30))
	}
	return out
}

// TestCompareAA: two runs of the same code of 34 servers, 4 rounds each,
// at this machine's noise and 5% between runs: compare finds a regression
// in at most 5% of 1000 pairs of runs (within three Monte-Carlo standard
// errors), where before Holm it found one in 59–83% (issue 27).
func TestCompareAA(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 4))
	const runs = 1000
	flagged := 0
	for range runs {
		speeds := speedsOf(rng, 34)
		if Runs(catalogRun(rng, speeds, 4, nil), catalogRun(rng, speeds, 4, nil), DefaultThreshold).Regressions > 0 {
			flagged++
		}
	}
	share := float64(flagged) / runs
	t.Logf("A/A of 34 servers, 4 rounds a run: a regression in %.1f%% of %d comparisons", 100*share, runs)
	if share > 0.05+3*math.Sqrt(0.05*0.95/runs) {
		t.Errorf("A/A: a regression in %.1f%% of comparisons, more than 5%%", 100*share)
	}
}

// TestComparePower: one server of 34 made 20% slower in the second run is
// flagged about as often as compare's stated power says, and more often
// with more rounds; a 10% slowdown, at the threshold, far less.
func TestComparePower(t *testing.T) {
	for _, tc := range []struct {
		rounds int
		slower float64
	}{{4, 0.2}, {12, 0.2}, {12, 0.1}} {
		rng := rand.New(rand.NewPCG(27, 5))
		const runs = 300
		flagged := 0
		var stated float64
		for range runs {
			speeds := speedsOf(rng, 34)
			c := Runs(catalogRun(rng, speeds, tc.rounds, nil), catalogRun(rng, speeds, tc.rounds, map[int]float64{0: tc.slower}), DefaultThreshold)
			ch := byName(c, "s0")
			stated += ch.RPS.Power / runs
			if ch.Regression != "" {
				flagged++
			}
		}
		got := float64(flagged) / runs
		t.Logf("%d rounds, s0 %.0f%% slower: flagged in %.1f%% (stated power at a 20%% slowdown: %.1f%%)", tc.rounds, 100*tc.slower, 100*got, 100*stated)
		if tc.slower == 0.2 && math.Abs(got-stated) > 3*math.Sqrt(stated*(1-stated)/runs)+0.05 {
			t.Errorf("%d rounds: a 20%% slowdown flagged in %.1f%%, the stated power %.1f%%", tc.rounds, 100*got, 100*stated)
		}
	}
}

// TestUnfinishedRunIsNoRegression: a second run interrupted before it
// measured a server, or cut that server's round short, says so: the
// server is not measured, no regression, and the run is unfinished.
func TestUnfinishedRunIsNoRegression(t *testing.T) {
	a := run(1, srv("done", []float64{100, 101, 99}), srv("never", []float64{100, 101, 99}), srv("cut", []float64{100, 101, 99}))
	b := run(1, srv("done", []float64{100, 101, 99}), srv("never", nil), srv("cut", []float64{100}, func(s *record.Server) {
		s.Rounds[0].Failure = &record.Failure{Phase: "load", Reason: "interrupted", CutShort: true}
	}))
	b.State = record.Interrupted
	c := Runs(a, b, DefaultThreshold)
	for _, name := range []string{"never", "cut"} {
		if ch := byName(c, name); ch.Status != NotMeasured || ch.Regression != "" {
			t.Errorf("%s: %+v, want not measured, no regression", name, ch)
		}
	}
	if c.Regressions != 0 {
		t.Errorf("regressions %d", c.Regressions)
	}
	if out := text(t, c); !strings.Contains(out, "never: not measured: a run ended before it was, or cut its round short") {
		t.Errorf("table:\n%s", out)
	}
}
