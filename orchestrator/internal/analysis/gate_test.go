package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// gateNoise is the noise of a simulated gate run, log-normal: a round's
// effect every server shares, one each server's two rows share (they run
// one right after the other), and each row's own.
type gateNoise struct{ round, pair, own float64 }

// thisMachine is the noise measured here, each row's own 17% a round
// (issue 27), none of it shared by the two rows of a server: the gate's
// power is stated for the worst case until a gate run measures better.
var thisMachine = gateNoise{round: 0.03, own: 0.17}

// gateRun draws a gate run of a catalog of servers, each with its
// baseline row, over rounds; slower names the servers whose candidate is
// slower by that share.
func gateRun(rng *rand.Rand, servers, rounds int, n gateNoise, slower map[int]float64) record.Run {
	cell := record.Cell{ClientCPUs: 1}
	speeds := make([]float64, servers)
	for i := range speeds {
		speeds[i] = 1000 * math.Exp(rng.Float64()*math.Log(30))
	}
	rows := make([]record.Server, 2*servers)
	for i := range speeds {
		rows[2*i] = record.Server{Name: fmt.Sprintf("s%d", i)}
		rows[2*i+1] = record.Server{Name: record.BaselineName(rows[2*i].Name, "main"), Of: rows[2*i].Name}
	}
	for r := 1; r <= rounds; r++ {
		shared := rng.NormFloat64() * n.round
		for i, s := range speeds {
			pair := rng.NormFloat64() * n.pair
			for side, factor := range []float64{1 - slower[i], 1} {
				rps := s * factor * math.Exp(shared+pair+rng.NormFloat64()*n.own)
				rows[2*i+side].Rounds = append(rows[2*i+side].Rounds, record.Round{Round: r, Measurement: record.Measurement{
					Load: &record.Result{Tool: "ghz", RPS: rps, OK: 100, Requests: 100, Statuses: map[string]uint64{"OK": 100}}}})
			}
		}
	}
	cell.Servers = rows
	return record.Run{Cells: []record.Cell{cell}, Baseline: &record.Baseline{Ref: "main", Commit: "c0ffee", Threshold: 0.10}}
}

// TestGateAA: the same code against itself, a catalog of 34 servers at
// this machine's noise, 2000 runs of 4 rounds: the gate finds a
// regression in at most 5% of them (within three Monte-Carlo standard
// errors): Holm holds the familywise rate over the 34 servers. Read in
// consecutive blocks of 20 runs, it logs how many blocks have at least 19
// runs that exit 0 (at a rate of 5% that is 74% of blocks, at 3.6% 84%).
func TestGateAA(t *testing.T) {
	const runs, block = 2000, 20
	rng := rand.New(rand.NewPCG(27, 20))
	flagged, blocks, good, inBlock := 0, 0, 0, 0
	for i := range runs {
		if GateOf(gateRun(rng, 34, 4, thisMachine, nil)).Regressions > 0 {
			flagged++
			inBlock++
		}
		if (i+1)%block == 0 {
			blocks++
			if inBlock <= 1 {
				good++
			}
			inBlock = 0
		}
	}
	t.Logf("A/A of 34 servers, 4 rounds: a regression in %d of %d runs (%.2f%%); %d of %d blocks of 20 runs exit 0 in at least 19", flagged, runs, 100*float64(flagged)/runs, good, blocks)
	if float64(flagged)/runs > 0.05+3*math.Sqrt(0.05*0.95/runs) {
		t.Errorf("A/A: a regression in %d of %d runs, more than 5%%", flagged, runs)
	}
}

// TestGatePower: one server of 34 made 10% slower is flagged as often as
// the gate's stated power says (within three Monte-Carlo standard errors
// and 3 points), at this machine's noise and at a quieter one where the
// two rows of a server share most of their round's noise; the stated
// power is logged for the record.
func TestGatePower(t *testing.T) {
	for _, tc := range []struct {
		name   string
		noise  gateNoise
		rounds int
	}{
		{"this machine, 4 rounds", thisMachine, 4},
		{"this machine, 12 rounds", thisMachine, 12},
		{"pairs sharing their noise, 4 rounds", gateNoise{round: 0.03, pair: 0.15, own: 0.03}, 4},
		{"pairs sharing their noise, 12 rounds", gateNoise{round: 0.03, pair: 0.15, own: 0.03}, 12},
	} {
		rng := rand.New(rand.NewPCG(27, 3))
		const runs = 300
		flagged, falsely := 0, 0
		var stated float64
		for range runs {
			g := GateOf(gateRun(rng, 34, tc.rounds, tc.noise, map[int]float64{0: 0.10}))
			for _, test := range g.Tests {
				switch {
				case test.Server == "s0" && test.Figure == GateRPS:
					stated += test.Power / runs
					if test.Regressed {
						flagged++
					}
				case test.Regressed:
					falsely++
				}
			}
		}
		got := float64(flagged) / runs
		t.Logf("%s: a 10%% slowdown flagged in %.1f%% of runs, stated power %.1f%% (other servers flagged in %d of %d runs)", tc.name, 100*got, 100*stated, falsely, runs)
		if math.Abs(got-stated) > 3*math.Sqrt(stated*(1-stated)/runs)+0.03 {
			t.Errorf("%s: flagged in %.1f%%, the stated power is %.1f%%", tc.name, 100*got, 100*stated)
		}
	}
}

// TestGateVerdicts: a server that fails now where its baseline ranked is
// a regression without a test; a client-bound pair is not tested; the
// verdicts are Holm's over every test.
func TestGateVerdicts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	run := gateRun(rng, 3, 4, gateNoise{own: 0.01}, map[int]float64{1: 0.3})
	servers := run.Cells[0].Servers
	servers[4].Failure = &record.Failure{Phase: "load", Reason: "crashed", Round: 2} // s2, the candidate
	g := Of(run).Gate
	verdict := map[string]GateTest{}
	for _, test := range g.Tests {
		verdict[test.Server+" "+test.Figure] = test
	}
	if v := verdict["s1 req/s"]; !v.Regressed || v.Ratio > 0.75 || v.P > 0.01 {
		t.Errorf("30%% slower: %+v", v)
	}
	if v := verdict["s0 req/s"]; v.Regressed || v.Power <= 0 {
		t.Errorf("unchanged: %+v", v)
	}
	if v := verdict["s2 req/s"]; v.FailsNow == "" {
		t.Errorf("failing now: %+v", v)
	}
	if g.Regressions != 2 || g.Tested != 2 {
		t.Errorf("regressions %d, tested %d; want 2 and 2", g.Regressions, g.Tested)
	}
}
