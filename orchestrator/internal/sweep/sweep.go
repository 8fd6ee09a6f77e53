// Package sweep is what rate sweeps and latency objectives decide: the
// rate each server is loaded at in a rate cell (an absolute rate, a share
// of the capacity it showed in the run's first round, or a probe of the
// bisection that searches an objective's sustainable throughput), whether
// a round sustained that rate, and whether it met the objective. The
// benchmark asks it before each rate cell's round; the report after.
package sweep

import (
	"fmt"
	"slices"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// ErrorShare is the share of calls a round at a rate may lose and still
// count as sustained: a server that sheds load is not sustaining it,
// whatever its latency.
const ErrorShare = 0.001

// Unsustained says why a load at target did not sustain it, "" when it did:
// the rate achieved fell short, or calls failed. Calls that started late
// do not decide it: a client's own scheduling starts some more than the
// pacer's 1 ms late (10–18% of python_grpc's at 25% of its capacity, the
// server a quarter busy), and their latency runs from the intended start
// anyway, where an objective sees it; a server that cannot keep up falls
// short of the rate.
func Unsustained(target float64, r record.Result) string {
	switch {
	case r.RPS < (1-load.RateShortfall)*target:
		return fmt.Sprintf("achieved %.0f req/s of %.0f (%.1f%% short)", r.RPS, target, 100*(1-r.RPS/target))
	case r.ErrorShare() > ErrorShare:
		return fmt.Sprintf("%.2f%% of calls failed", 100*r.ErrorShare())
	}
	return ""
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

// Meets says a round at a rate sustained it with its objective's
// percentile within the bound.
func Meets(r record.Round, slo config.SLO) bool {
	return r.Failure == nil && r.Load != nil && Unsustained(r.TargetRPS, *r.Load) == "" &&
		Percentile(slo.Percentile, r.Load.Latency) <= slo.Bound
}

// Stage orders a round's first visits: a cell at a share of capacity
// after the saturation cells that measure it, each probe after the one
// before it. Within a stage the order stays random.
func Stage(c plan.Cell) int {
	switch {
	case c.Probe > 0:
		return 1 + c.Probe
	case c.Rate.Share > 0:
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
	srv, ok := run.Cells[si].Server(server)
	if !ok || len(srv.Rounds) == 0 || srv.Rounds[0].Failure != nil || srv.Rounds[0].Load == nil {
		return 0, fmt.Errorf("its capacity is not known: round 1 of its saturation load was not measured")
	}
	if c := srv.Rounds[0].Capacity; c != nil && c.Load != nil {
		return c.Load.RPS, nil
	}
	return srv.Rounds[0].Load.RPS, nil
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

// probeShare bisects the share of capacity between 0 and 1 on the first
// rounds of the probes before cell ci's: a probe that met the objective
// raises the lower end, one that did not lowers the upper.
func probeShare(run record.Run, ci int, server string, slo config.SLO) (float64, error) {
	lo, hi := 0.0, 1.0
	for k := 1; k < run.Cells[ci].Probe; k++ {
		want := plan.Of(run.Cells[ci])
		want.Probe = k
		pi := slices.IndexFunc(run.Cells, func(c record.Cell) bool { return plan.Of(c) == want })
		if pi < 0 {
			return 0, fmt.Errorf("no probe %d before probe %d", k, want.Probe)
		}
		srv, ok := run.Cells[pi].Server(server)
		if !ok || len(srv.Rounds) == 0 {
			return 0, fmt.Errorf("probe %d was not measured", k)
		}
		if mid := (lo + hi) / 2; Meets(srv.Rounds[0], slo) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, nil
}
