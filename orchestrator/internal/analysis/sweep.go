package analysis

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/plan"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// Sweep is a saturation cell with its rate cells: each server's latency
// at each rate, the points of its latency–throughput curve, and the
// objective's ranking when the run has one.
type Sweep struct {
	// Cell is the saturation cell's index in the run, Name its name.
	Cell int
	Name string
	// Points are every server's, server by server in the cell's order,
	// each server's by target rate (a server that falls behind may
	// achieve less at a higher target).
	Points []Point
	// SLO is the run's latency objective, unset when it has none;
	// Objective is then its ranking.
	SLO       config.SLO
	Objective *Objective
	// Tool is the tool that loaded the rate cells.
	Tool string
}

// Point is one server at one rate: its medians over the rounds.
type Point struct {
	Server string
	// Cell is the rate cell's index in the run; Rate says its rate as the
	// settings do ("25%", "5000", "probe 2").
	Cell int
	Rate string
	// Target is the rate asked for in req/s; Row has the rate achieved
	// (RPS) and the latencies, medians over the rounds.
	Target float64
	Row    Row
	// Unsustained says why a round did not sustain the target, "" when
	// every round did: such a point is drawn and listed, marked, and no
	// objective counts it.
	Unsustained string
	// Meets says every round sustained the target with the objective's
	// percentile within its bound.
	Meets bool
}

// Objective is a sweep's servers ranked by the throughput each sustains
// within the latency objective: the rate achieved at its highest-rate
// point that met it in every round, rounds being that point's, with the
// groups of every ranking. At is each ranked server's point; None names
// the servers none of whose points met it. Interpolating between the last
// point that met the objective and the first that did not would assume a
// shape of the curve at its knee, where latency climbs fastest; a measured
// point is a rate that was tested.
type Objective struct {
	Ranking
	At    map[string]Point
	None  []string
	Notes []string
}

// sweeps are the run's sweeps, in the order of their saturation cells.
func (a Run) sweeps() []Sweep {
	run := a.Record
	slo := runSLO(run)
	var out []Sweep
	for si, sat := range run.Cells {
		if plan.Of(sat).Swept() {
			continue
		}
		sw := Sweep{Cell: si, Name: plan.Of(sat).Name(), SLO: slo}
		for _, srv := range sat.Servers {
			var points []Point
			for ci, c := range run.Cells {
				if plan.Of(c).Swept() && sweep.Saturation(run, ci) == si {
					if p, ok := pointOf(c, ci, srv.Name, slo, sweep.Poisson(run)); ok {
						points = append(points, p)
						sw.Tool = cmp.Or(sw.Tool, p.Row.Tools[0])
					}
				}
			}
			slices.SortStableFunc(points, func(a, b Point) int { return cmp.Compare(a.Target, b.Target) })
			sw.Points = append(sw.Points, points...)
		}
		if len(sw.Points) == 0 {
			continue
		}
		if slo.Set() {
			sw.Objective = a.objective(sw)
		}
		out = append(out, sw)
	}
	return out
}

// pointOf is a server's point in a rate cell, when every round of it was
// measured.
func pointOf(c record.Cell, ci int, name string, slo config.SLO, poisson bool) (Point, bool) {
	s, ok := c.Server(name)
	if !ok || !s.Ranked() {
		return Point{}, false
	}
	p := Point{Server: name, Cell: ci, Rate: RateName(plan.Of(c)), Target: s.Rounds[0].TargetRPS, Meets: slo.Set(),
		Row: rowOf(s, s.Rounds, loadMeasurement, c.ClientCPUs)}
	for _, r := range s.Rounds {
		if why := sweep.Unsustained(r.TargetRPS, poisson, *r.Load); why != "" && p.Unsustained == "" {
			p.Unsustained = fmt.Sprintf("round %d: %s", r.Round, why)
		}
		p.Meets = p.Meets && sweep.Meets(r, slo, poisson)
	}
	return p, true
}

// RateName is a rate cell's rate as the settings say it.
func RateName(c plan.Cell) string {
	if c.Probe > 0 {
		return "probe " + strconv.Itoa(c.Probe)
	}
	return c.Rate.String()
}

// runSLO is the run's GRPC_LATENCY_SLO, unset when it has none (or a
// record from before it).
func runSLO(run record.Run) config.SLO {
	var slo config.SLO
	if s, ok := run.Setting("GRPC_LATENCY_SLO"); ok {
		_ = slo.UnmarshalText([]byte(s.Value)) // the run validated it
	}
	return slo
}

// RateCell is a rate cell's sustained rate and whether it was sustained,
// for the table rows of a server in a rate cell.
func (a Run) RateCell(ci int, server string) (Point, bool) {
	return pointOf(a.Record.Cells[ci], ci, server, runSLO(a.Record), sweep.Poisson(a.Record))
}

// objective ranks a sweep's servers by its objective.
func (a Run) objective(sw Sweep) *Objective {
	o := &Objective{At: map[string]Point{}}
	for _, p := range sw.Points {
		if !p.Meets {
			continue
		}
		if best, ok := o.At[p.Server]; !ok || p.Target > best.Target {
			o.At[p.Server] = p
		}
	}
	seen := map[string]bool{}
	var rows []Row
	for _, p := range sw.Points {
		if seen[p.Server] {
			continue
		}
		seen[p.Server] = true
		if best, ok := o.At[p.Server]; ok {
			rows = append(rows, best.Row)
		} else {
			o.None = append(o.None, p.Server)
		}
	}
	o.Ranking = a.ranking(sorted(rows))
	o.Notes = slices.Clone(o.Verdicts)
	for _, name := range o.None {
		o.Notes = append(o.Notes, fmt.Sprintf("%s: no rate met %s in every round", name, sw.SLO))
	}
	o.Notes = append(o.Notes, fmt.Sprintf("sustainable throughput: the rate achieved at the highest rate that was sustained with %s of %s or less in every round (rates loaded open-loop by %s)",
		sw.SLO.Percentile, sw.SLO.Bound, sw.Tool))
	return o
}

// rateNotes say, in a rate cell, what each server was loaded at and
// whether it kept up: a row's req/s is the rate achieved, not a capacity.
func (a Run) rateNotes(c Cell) []string {
	if !c.Plan.Swept() {
		return nil
	}
	ci := slices.IndexFunc(a.Record.Cells, func(o record.Cell) bool { return plan.Of(o) == c.Plan })
	out := []string{fmt.Sprintf("rate cell: each server loaded open-loop by %s at %s; req/s is the rate achieved, beside the target", c.Tool, rateWhat(c.Plan))}
	for _, s := range c.Record.Servers {
		if p, ok := a.RateCell(ci, s.Name); ok {
			line := fmt.Sprintf("%s: target %.0f req/s, achieved %.0f", s.Name, p.Target, p.Row.RPS.Median)
			if p.Unsustained != "" {
				line += "; unsustained (" + p.Unsustained + "), so no latency objective counts this rate"
			}
			out = append(out, line)
		}
	}
	return out
}

// rateWhat says what a rate cell's rate is.
func rateWhat(c plan.Cell) string {
	switch {
	case c.Probe > 0:
		return fmt.Sprintf("the latency objective's probe %d (a bisection of the share of its capacity)", c.Probe)
	case c.Rate.Share > 0:
		return c.Rate.String() + " of its capacity (the capacity tool's req/s in round 1 of the saturation cell)"
	}
	return c.Rate.String() + " req/s"
}

// Percentile is a row's median of the percentile named as
// GRPC_LATENCY_SLO names it.
func (r Row) Percentile(name string) time.Duration {
	return sweep.Percentile(name, record.Latency{P50: r.P50, P90: r.P90, P95: r.P95, P99: r.P99, P999: r.P999})
}
