package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// noisyRun is a run of 4 servers of 6 rounds, each round 12 s in all of
// which 4 s are its window, each window's mean spread by 2% from its
// intervals, the servers' rounds by 10% in all.
func noisyRun() record.Run {
	rng := rand.New(rand.NewPCG(3, 3))
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cell := record.Cell{ClientCPUs: 1}
	for i, name := range []string{"a", "b", "c", "d"} {
		s := record.Server{Name: name}
		for r := 1; r <= 6; r++ {
			rps := float64(1000*(i+1)) * math.Exp(0.1*rng.NormFloat64())
			s.Rounds = append(s.Rounds, record.Round{Round: r, Phases: []record.Phase{{Name: "all", Seconds: 12}},
				Measurement: record.Measurement{
					Load:   &record.Result{Tool: "ghz", Start: at, End: at.Add(4 * time.Second), RPS: rps, OK: 100, Requests: 100, Statuses: map[string]uint64{"OK": 100}},
					Window: &record.Window{Steady: true, Spread: 0.02, Intervals: 16},
				}})
		}
		cell.Servers = append(cell.Servers, s)
	}
	return record.Run{Cells: []record.Cell{cell}}
}

// TestLevels: a ranking's noise by level takes the windows' part out of
// each server's own, and weighs a server's time as Kalibera & Jones do.
func TestLevels(t *testing.T) {
	c := Of(noisyRun()).Cells[0]
	l, n := c.Load.Levels, c.Load.Noise
	if l == nil || n == nil {
		t.Fatalf("levels %v, noise %v", l, n)
	}
	if l.Interval != 0.02 || l.Window != 4 || l.Windows != 24 || math.Abs(l.Round-math.Sqrt(n.Own*n.Own-0.0004)) > 1e-12 || l.Cost != 8 {
		t.Errorf("levels %+v (own %.4f)", l, n.Own)
	}
	if l.Now.Rounds != 6 || l.Now.Window != 4 || l.Best.Spread > l.Now.Spread {
		t.Errorf("now %+v, best %+v", l.Now, l.Best)
	}
	// A record before the series has no windows: no levels.
	run := noisyRun()
	for i := range run.Cells[0].Servers {
		for j := range run.Cells[0].Servers[i].Rounds {
			run.Cells[0].Servers[i].Rounds[j].Window = nil
		}
	}
	if l := Of(run).Cells[0].Load.Levels; l != nil {
		t.Errorf("levels without series: %+v", l)
	}
}
