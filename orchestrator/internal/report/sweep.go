package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/load"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/sweep"
)

// Sweep is a saturation cell with its rate cells: each server's latency
// at each rate, the points of its latency–throughput curve.
type Sweep struct {
	// Cell is the saturation cell's index in the run, Name its name.
	Cell int
	Name string
	// Points are every server's, server by server in the cell's order,
	// each server's by target rate (a server that falls behind may
	// achieve less at a higher target).
	Points []Point
	// SLO is the run's latency objective, unset when it has none.
	SLO config.SLO
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
	Row    RankingRow
	// Unsustained says why a round did not sustain the target, "" when
	// every round did: such a point is drawn and listed, marked, and no
	// objective counts it.
	Unsustained string
	// Meets says every round sustained the target with the objective's
	// percentile within its bound.
	Meets bool
}

// Sweeps are the run's sweeps, in the order of their saturation cells.
func Sweeps(run record.Run) []Sweep {
	slo := runSLO(run)
	var out []Sweep
	for si, sat := range run.Cells {
		if sat.Swept() {
			continue
		}
		sw := Sweep{Cell: si, Name: sat.Name(), SLO: slo}
		for _, srv := range sat.Servers {
			var points []Point
			for ci, c := range run.Cells {
				if c.Swept() && sweep.Saturation(run, ci) == si {
					if p, ok := pointOf(c, ci, srv.Name, slo); ok {
						points = append(points, p)
					}
				}
			}
			slices.SortStableFunc(points, func(a, b Point) int { return cmp.Compare(a.Target, b.Target) })
			sw.Points = append(sw.Points, points...)
		}
		if len(sw.Points) > 0 {
			out = append(out, sw)
		}
	}
	return out
}

// pointOf is a server's point in a rate cell, when every round of it was
// measured.
func pointOf(c record.Cell, ci int, name string, slo config.SLO) (Point, bool) {
	s, ok := c.Server(name)
	if !ok || !s.Ranked() {
		return Point{}, false
	}
	p := Point{Server: name, Cell: ci, Rate: rateName(c.Cell), Target: s.Rounds[0].TargetRPS, Meets: slo.Set(),
		Row: rowOf(s, s.Rounds, func(r record.Round) *record.Measurement { return &r.Measurement }, float64(c.ClientCPUs))}
	for _, r := range s.Rounds {
		if why := sweep.Unsustained(r.TargetRPS, *r.Load); why != "" && p.Unsustained == "" {
			p.Unsustained = fmt.Sprintf("round %d: %s", r.Round, why)
		}
		p.Meets = p.Meets && sweep.Meets(r, slo)
	}
	return p, true
}

// rateName is a rate cell's rate as the settings say it.
func rateName(c config.Cell) string {
	if c.Probe > 0 {
		return "probe " + strconv.Itoa(c.Probe)
	}
	return c.Rate.String()
}

// runSLO is the run's GRPC_LATENCY_SLO, unset when it has none (or a
// record from before it).
func runSLO(run record.Run) config.SLO {
	var slo config.SLO
	for _, s := range run.Settings {
		if s.Name == "GRPC_LATENCY_SLO" {
			_ = slo.UnmarshalText([]byte(s.Value)) // the run validated it
		}
	}
	return slo
}

// SLORanking ranks a sweep's servers by the throughput each sustains
// within the objective: the rate achieved at its highest-rate point that
// met it in every round, rounds being that point's, with the groups of
// every ranking. It also names the servers none of whose points met it.
// Interpolating between the last point that met the objective and the
// first that did not would assume a shape of the curve at its knee,
// where latency climbs fastest; a measured point is a rate that was
// tested.
func SLORanking(run record.Run, sw Sweep) (rows []RankingRow, at map[string]Point, none []string) {
	at = map[string]Point{}
	for _, p := range sw.Points {
		if !p.Meets {
			continue
		}
		if best, ok := at[p.Server]; !ok || p.Target > best.Target {
			at[p.Server] = p
		}
	}
	seen := map[string]bool{}
	for _, p := range sw.Points {
		if seen[p.Server] {
			continue
		}
		seen[p.Server] = true
		if best, ok := at[p.Server]; ok {
			rows = append(rows, best.Row)
		} else {
			none = append(none, p.Server)
		}
	}
	rows = sorted(rows)
	Judge(run, rows)
	return rows, at, none
}

// sloNotes are the notes under an objective's ranking: the tests'
// verdicts, the servers it does not rank, and how the ranking is made.
func sloNotes(run record.Run, sw Sweep, rows []RankingRow, none []string) []string {
	out := verdicts(run, rows, Judge(run, rows))
	for _, name := range none {
		out = append(out, fmt.Sprintf("%s: no rate met %s in every round", name, sw.SLO))
	}
	return append(out, fmt.Sprintf("sustainable throughput: the rate achieved at the highest rate that was sustained with %s of %s or less in every round (rates loaded open-loop by %s)",
		sw.SLO.Percentile, sw.SLO.Bound, config.RateTool))
}

// rateNotes say, in a rate cell, what each server was loaded at and
// whether it kept up: a row's req/s is the rate achieved, not a capacity.
func rateNotes(run record.Run, c record.Cell) []string {
	if !c.Swept() {
		return nil
	}
	ci := slices.IndexFunc(run.Cells, func(o record.Cell) bool { return o.Cell == c.Cell })
	out := []string{fmt.Sprintf("rate cell: each server loaded open-loop by %s at %s; req/s is the rate achieved, beside the target", config.RateTool, rateWhat(c.Cell))}
	for _, s := range c.Servers {
		if p, ok := pointOf(c, ci, s.Name, runSLO(run)); ok {
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
func rateWhat(c config.Cell) string {
	switch {
	case c.Probe > 0:
		return fmt.Sprintf("the latency objective's probe %d (a bisection of the share of its capacity)", c.Probe)
	case c.Rate.Share > 0:
		return c.Rate.String() + " of its capacity (the capacity tool's req/s in round 1 of the saturation cell)"
	}
	return c.Rate.String() + " req/s"
}

// writeSLO writes an objective's ranking of each sweep, as text: the
// section bench.txt and summary.txt end with.
func writeSLO(b *strings.Builder, run record.Run) {
	for _, sw := range Sweeps(run) {
		if !sw.SLO.Set() {
			continue
		}
		rows, at, none := SLORanking(run, sw)
		fmt.Fprintf(b, "\n== latency objective %s: sustainable throughput, %s\n", sw.SLO, sw.Name)
		rule := strings.Repeat("-", sloRuleLength) + "\n"
		b.WriteString(rule)
		fmt.Fprintf(b, sloFormat, "group", "name", "req/s", "interval", "at rate", "target", sw.SLO.Percentile)
		b.WriteString(rule)
		for _, r := range rows {
			p := at[r.Name]
			fmt.Fprintf(b, sloFormat, r.Group, r.Name, fmt.Sprintf("%.0f", r.RPS.Median), intervalText(r.RPS), p.Rate,
				fmt.Sprintf("%.0f", p.Target), millis(percentileOf(r, sw.SLO.Percentile)))
		}
		b.WriteString(rule)
		for _, n := range sloNotes(run, sw, rows, none) {
			b.WriteString("! " + n + "\n")
		}
	}
}

const (
	sloFormat     = "| %-5s | %-27s | %9s | %-28s | %-8s | %9s | %9s |\n"
	sloRuleLength = 118
)

// percentileOf is a row's median of the percentile named as
// GRPC_LATENCY_SLO names it.
func percentileOf(r RankingRow, name string) time.Duration {
	return sweep.Percentile(name, load.Latency{P50: r.P50, P90: r.P90, P95: r.P95, P99: r.P99, P999: r.P999})
}

// writeSweepsMarkdown writes each sweep's points and its objective's
// ranking as Markdown tables.
func writeSweepsMarkdown(b *strings.Builder, run record.Run) {
	for _, sw := range Sweeps(run) {
		fmt.Fprintf(b, "\n### Latency under load: %s\n\n", sw.Name)
		b.WriteString("Each rate loaded open-loop by " + config.RateTool + "; medians of the rounds.\n\n")
		b.WriteString("| server | rate | target req/s | achieved req/s | p50 | p99 | p99.9 | sustained |\n|---|---|--:|--:|--:|--:|--:|---|\n")
		for _, p := range sw.Points {
			sustained := "yes"
			if p.Unsustained != "" {
				sustained = "no: " + p.Unsustained
			}
			fmt.Fprintf(b, "| %s | %s | %.0f | %.0f | %s | %s | %s | %s |\n", markdownText(p.Server), p.Rate, p.Target, p.Row.RPS.Median,
				ms(p.Row.P50), ms(p.Row.P99), ms(p.Row.P999), markdownText(sustained))
		}
		if !sw.SLO.Set() {
			continue
		}
		rows, at, none := SLORanking(run, sw)
		fmt.Fprintf(b, "\nSustainable throughput within `%s`:\n\n| group | server | req/s | interval | at rate | target | %s |\n|---|---|--:|---|---|--:|--:|\n", sw.SLO, sw.SLO.Percentile)
		for _, r := range rows {
			p := at[r.Name]
			fmt.Fprintf(b, "| %s | %s | %.0f | %s | %s | %.0f | %s |\n", r.Group, markdownText(r.Name), r.RPS.Median, intervalText(r.RPS), p.Rate, p.Target, ms(percentileOf(r, sw.SLO.Percentile)))
		}
		b.WriteString("\nNotes:\n\n")
		for _, n := range sloNotes(run, sw, rows, none) {
			b.WriteString("- " + markdownText(n) + "\n")
		}
	}
}
