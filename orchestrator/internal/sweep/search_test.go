package sweep_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// server is a simulated server of capacity 1000 calls a second whose
// latencies at a share s of it are exponential of mean base/(1−s), times
// a round's own factor (lognormal, 15%: one round's machine is not
// another's).
type server struct {
	base time.Duration
	rng  *rand.Rand
}

const (
	simCapacity = 1000
	simRounds   = 4
	simWindow   = 4 * time.Second
)

// round is one round at target: every call planned answered, its
// latencies in a histogram when kept.
func (s server) round(t *testing.T, n int, target float64, kept bool) record.Round {
	t.Helper()
	share := target / simCapacity
	mean := float64(s.base) / (1 - min(share, 0.999)) * math.Exp(0.15*s.rng.NormFloat64())
	calls := uint64(math.Round(target * simWindow.Seconds()))
	pool := histogram.New()
	for range calls {
		pool.Record(time.Duration(s.rng.ExpFloat64()*mean), 1)
	}
	enc := ""
	if kept {
		var err error
		if enc, err = pool.Encode(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return record.Round{Round: n, TargetRPS: target, Measurement: record.Measurement{Load: &record.Result{
		Tool: "simulated", Start: start, End: start.Add(simWindow), Planned: calls, Requests: calls, OK: calls,
		RPS: float64(calls) / simWindow.Seconds(), Histogram: enc,
		Latency: record.Latency{Count: calls, P99: pool.At(0.99)},
	}}}
}

// searchRun is a record with a saturation cell (capacity 1000 by the
// capacity tool in round 1) and the probes of a search.
func searchRun() record.Run {
	sat := plan.Cell{Scenario: "helloworld", ServerCPUs: 1, ClientCPUs: 1, Connections: 1, Concurrency: 1}
	capacity := &record.Measurement{Load: &record.Result{RPS: simCapacity}}
	run := record.Run{Cells: []record.Cell{sat.Record()}}
	run.Cells[0].Servers = []record.Server{{Name: "s", Rounds: []record.Round{{Round: 1, Measurement: *capacity, Capacity: capacity}}}}
	for k := 1; k <= plan.SLOProbes; k++ {
		probe := sat
		probe.Probe = k
		c := probe.Record()
		c.Servers = []record.Server{{Name: "s"}}
		run.Cells = append(run.Cells, c)
	}
	return run
}

// search runs the objective's search on s, every round of a probe before
// the next, and returns the highest share met, 0 when none was.
func search(t *testing.T, s server, slo config.SLO) float64 {
	t.Helper()
	run := searchRun()
	best := 0.0
	for k := 1; k <= plan.SLOProbes; k++ {
		target, err := sweep.Target(run, k, "s", slo)
		if err != nil {
			t.Fatal(err)
		}
		srv := &run.Cells[k].Servers[0]
		for r := 1; r <= simRounds; r++ {
			srv.Rounds = append(srv.Rounds, s.round(t, r, target, true))
		}
		if sweep.Decide(srv.Rounds, slo, false).Met {
			best = max(best, target/simCapacity)
		}
	}
	return best
}

// roundOneSearch is the search before (Why 7), for comparison: the
// bisection of [0, 1] steered by each probe's first round alone, and the
// highest probe whose every round met the objective on its own.
func roundOneSearch(t *testing.T, s server, slo config.SLO) float64 {
	t.Helper()
	lo, hi, best := 0.0, 1.0, 0.0
	for range plan.SLOProbes {
		share := (lo + hi) / 2
		all := true
		for r := 1; r <= simRounds; r++ {
			met := s.round(t, r, share*simCapacity, false).Load.Latency.P99 <= slo.Bound
			if r == 1 && met {
				lo = share
			} else if r == 1 {
				hi = share
			}
			all = all && met
		}
		if all {
			best = max(best, share)
		}
	}
	return best
}

// TestTheSearchUsesEveryRound (Why 7): a server whose p99 crosses the
// objective at half its capacity. Steered by round 1 alone, the search
// returned no figure in a third of the runs or more, though 25–45% would
// pass; steered by every round, it finds one in every run, between 27%
// and 53% (the grid's steps below the knee: a round's own factor makes
// the pooled p99 at 40% cross the bound now and then), and a server that
// meets the
// objective at its capacity is found there, above the old limit of
// 93.75%.
func TestTheSearchUsesEveryRound(t *testing.T) {
	slo := config.SLO{Percentile: "p99", Bound: 10 * time.Millisecond}
	knee := server{base: time.Duration(float64(slo.Bound) * 0.5 / 4.6), rng: rand.New(rand.NewPCG(5, 6))}
	const searches = 60
	none, oldNone := 0, 0
	ends := map[string]int{}
	for range searches {
		share := search(t, knee, slo)
		ends[fmt.Sprintf("%.1f%%", 100*share)]++
		if share == 0 {
			none++
		} else if share < 0.26 || share > 0.54 {
			t.Errorf("the search ended at %.1f%% of capacity, want 26.7–53.3%%", 100*share)
		}
		if roundOneSearch(t, knee, slo) == 0 {
			oldNone++
		}
	}
	t.Logf("no figure: %d of %d searches steered by every round (ended at %v), %d steered by round 1", none, searches, ends, oldNone)
	if none > 0 || oldNone < searches/4 {
		t.Errorf("no figure in %d of %d searches (round 1 alone: %d), want none (and at least a quarter)", none, searches, oldNone)
	}
	fast := server{base: time.Microsecond, rng: rand.New(rand.NewPCG(7, 8))} // p99 5 ms even at 99.9%
	if share := search(t, fast, slo); share != 1 {
		t.Errorf("a server far inside the objective at capacity: the search ended at %.1f%%, want 100%%", 100*share)
	}
}
