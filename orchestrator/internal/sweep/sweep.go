// Package sweep is what rate sweeps and latency objectives decide: the
// rate each server is loaded at in a rate cell (an absolute rate, a share
// of the capacity it showed in the run's first round, or a probe of the
// bisection that searches an objective's sustainable throughput), whether
// a round sustained that rate, and whether it met the objective. The
// benchmark asks it before each rate cell's round; the report after.
package sweep

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// ErrorShare is the share of the planned calls a round at a rate may lose
// (failed, or never answered) and still count as sustained: a server that
// sheds load is not sustaining it, whatever its latency.
const ErrorShare = 0.001

// PoissonSpread is how many standard deviations of a Poisson count (√N
// for N calls) a round's calls may stray from its target's when its calls
// arrive as a Poisson process, beside load.RateShortfall: a round kept
// perfectly is flagged in fewer than 1 in 1000 (at 500 req/s × 4 s, 2% and
// 3√N are 3.9 standard deviations).
const PoissonSpread = 3

// Unsustained says why a round at target did not sustain it, "" when it
// did. The round is judged on the calls its window planned (the schedule's
// count when the tool records it, else target × the window): the calls
// that failed or were never answered by the end of the grace count as
// failures, more than ErrorShare of them fail it, and the rate achieved
// may stray from the planned calls' by load.RateShortfall, short (the
// server fell behind) or over (calls of the warm-up answered in the
// window). A target is compared with a count of calls that, under Poisson
// arrivals, varies by its square root, so against the target the
// tolerance widens by PoissonSpread·√N. Calls that started late do not
// decide it: their latency runs from the intended start, where an
// objective sees it.
func Unsustained(target float64, poisson bool, r record.Result) string {
	window := r.End.Sub(r.Start).Seconds()
	if window <= 0 { // a record without its window: rates alone
		window = 1
	}
	wanted := target * window
	spread := 0.0
	if poisson {
		spread = PoissonSpread * math.Sqrt(wanted)
	}
	expected, tolerance := wanted, load.RateShortfall*wanted+spread
	if r.Planned > 0 {
		expected, tolerance = float64(r.Planned), load.RateShortfall*float64(r.Planned)
	}
	// An open loop's Requests are every call its window planned, the
	// unanswered among them.
	calls := max(r.Planned, r.Requests)
	failed := r.Requests - r.OK
	achieved := r.RPS * window
	switch {
	case calls > 0 && float64(failed) > ErrorShare*float64(calls):
		return fmt.Sprintf("%.2f%% of the %d calls failed or went unanswered (%s)", 100*float64(failed)/float64(calls), calls, failuresText(r))
	case achieved < expected-tolerance:
		return fmt.Sprintf("achieved %.0f a second of %.0f planned (%.1f%% short)", r.RPS, expected/window, 100*(1-achieved/expected))
	case achieved > expected+tolerance:
		return fmt.Sprintf("achieved %.0f a second, %.1f%% above the %.0f planned: calls from before the window answered in it", r.RPS, 100*(achieved/expected-1), expected/window)
	case r.Planned > 0 && math.Abs(float64(r.Planned)-wanted) > load.RateShortfall*wanted+spread+1:
		return fmt.Sprintf("the schedule planned %d over the window, not the %.0f of %.0f a second", r.Planned, wanted, target)
	}
	return ""
}

// failuresText lists the failed calls by status and the unanswered ones
// (a status of their own in the records of tools that give them one).
func failuresText(r record.Result) string {
	text := r.Failures()
	if _, listed := r.Statuses[load.StatusUnanswered]; r.Unanswered > 0 && !listed {
		text = strings.TrimPrefix(text+fmt.Sprintf(", unanswered: %d", r.Unanswered), ", ")
	}
	return cmp.Or(text, "no status recorded")
}

// Poisson says the run's calls arrive as a Poisson process
// (GRPC_LOAD_ARRIVALS=poisson), so that a window's count of them varies.
func Poisson(run record.Run) bool {
	s, ok := run.Setting("GRPC_LOAD_ARRIVALS")
	return ok && s.Value == string(load.ArrivalsPoisson)
}

// Percentile is the latency percentile named as GRPC_LATENCY_SLO names it.
func Percentile(name string, l record.Latency) time.Duration {
	switch name {
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	case "p95":
		return l.P95
	case "p99":
		return l.P99
	case "p99.9":
		return l.P999
	}
	return 0
}

// Stage orders a round's first visits: a rate cell after the saturation
// cells, which measure the capacity a share is of and the warm-up every
// rate cell's round takes. Within a stage the order stays random. (The
// probes are not in the rounds: see ProbeDue.)
func Stage(c plan.Cell) int {
	if c.Swept() {
		return 1
	}
	return 0
}

// Saturation is the index of the saturation cell of a run's cell ci,
// -1 when the run has none.
func Saturation(run record.Run, ci int) int {
	want := plan.Of(run.Cells[ci]).Saturation()
	return slices.IndexFunc(run.Cells, func(c record.Cell) bool { return plan.Of(c) == want })
}

// Capacity is a server's capacity in the saturation cell of cell ci, from
// its first round: the capacity tool's figure (h2's, the tool of the rate
// cells) when it has one, else the load tool's. The first round's alone,
// so that a share is one rate in every round, and known before any rate
// cell's round.
func Capacity(run record.Run, ci int, server string) (float64, error) {
	si := Saturation(run, ci)
	if si < 0 {
		return 0, fmt.Errorf("no saturation cell for %s", plan.Of(run.Cells[ci]).Name())
	}
	srv, _ := run.Cells[si].Server(server)
	if len(srv.Rounds) > 0 {
		if capacity, ok := RoundCapacity(srv.Rounds[0]); ok {
			return capacity, nil
		}
	}
	return 0, fmt.Errorf("its capacity is not known: round 1 of its saturation load was not measured")
}

// RoundCapacity is a saturation round's capacity: the capacity tool's
// figure when it has one, else the load tool's; false when the round was
// not measured.
func RoundCapacity(r record.Round) (float64, bool) {
	switch {
	case r.Failure != nil || r.Load == nil:
		return 0, false
	case r.Capacity != nil && r.Capacity.Load != nil:
		return r.Capacity.Load.RPS, true
	}
	return r.Load.RPS, true
}

// Target is the rate a server is loaded at in cell ci: the rate of its
// first round there when it has one (every round loads at one rate), else
// the cell's rate, its share of the server's capacity, or the share the
// probes before it leave to bisect.
func Target(run record.Run, ci int, server string, slo config.SLO) (float64, error) {
	cell := run.Cells[ci]
	if srv, ok := cell.Server(server); ok && len(srv.Rounds) > 0 && srv.Rounds[0].TargetRPS > 0 {
		return srv.Rounds[0].TargetRPS, nil
	}
	if cell.Rate.PerSecond > 0 {
		return cell.Rate.PerSecond, nil
	}
	share := cell.Rate.Share
	if cell.Probe > 0 {
		var err error
		if share, err = probeShare(run, ci, server, slo); err != nil {
			return 0, err
		}
	}
	capacity, err := Capacity(run, ci, server)
	if err != nil {
		return 0, err
	}
	return max(1, share*capacity), nil
}

// Grid is the shares of capacity the objective's search can end on:
// k/Grid for k from 1 to Grid (with 4 probes, 1/15 apart up to the
// capacity itself), or none.
const Grid = 1<<plan.SLOProbes - 1

// probeShare is the share of capacity of cell ci's probe: a bisection of
// the grid's indices between 0 (met, trivially) and Grid+1 (failed,
// beyond the capacity), steered by the verdicts on every round of the
// probes before it (Decide): met raises the lower end to the probe's
// index, not met lowers the upper. Probe 1 is at 8/15 (53%); after 4
// probes the ends are one step apart, the highest index met and the
// lowest failed.
func probeShare(run record.Run, ci int, server string, slo config.SLO) (float64, error) {
	lo, hi := 0, Grid+1
	for k := 1; k < run.Cells[ci].Probe; k++ {
		srv, err := probeServer(run, ci, k, server)
		if err != nil {
			return 0, err
		}
		if mid := (lo + hi) / 2; Decide(srv.Rounds, slo, Poisson(run)).Met {
			lo = mid
		} else {
			hi = mid
		}
	}
	return float64((lo+hi)/2) / Grid, nil
}

// probeServer is the server of probe k of cell ci's search.
func probeServer(run record.Run, ci, k int, server string) (record.Server, error) {
	want := plan.Of(run.Cells[ci])
	want.Probe = k
	pi := slices.IndexFunc(run.Cells, func(c record.Cell) bool { return plan.Of(c) == want })
	if pi < 0 {
		return record.Server{}, fmt.Errorf("no probe %d before probe %d", k, run.Cells[ci].Probe)
	}
	srv, ok := run.Cells[pi].Server(server)
	if !ok || len(srv.Rounds) == 0 {
		return record.Server{}, fmt.Errorf("probe %d was not measured", k)
	}
	return srv, nil
}

// ProbeDue says whether the server's next round of probe cell ci may be
// measured, each probe having rounds rounds: the probe's rate is decided
// on every round of the probe before it, so its first round waits until
// that probe has them all, or the server failed there. The benchmark
// measures the probes after every other round, in passes of the servers
// whose probe is due.
func ProbeDue(run record.Run, ci int, server string, rounds int) bool {
	c := run.Cells[ci]
	srv, ok := c.Server(server)
	if !ok || c.Probe == 0 || srv.Unsupported != "" || srv.FirstFailure() != nil || len(srv.Rounds) >= rounds {
		return false
	}
	if c.Probe == 1 || len(srv.Rounds) > 0 {
		return true
	}
	before, err := probeServer(run, ci, c.Probe-1, server)
	return err == nil && (len(before.Rounds) >= rounds || before.FirstFailure() != nil)
}
