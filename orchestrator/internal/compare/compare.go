// Package compare sets two runs side by side: for each server measured in
// both, under the same cell, the change of its median req/s and of its
// median p99 latency, and whether the rounds say it is real (Mann–Whitney U
// at α = 0.05, as benchstat does).
package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Figure is one figure of a server in two runs: the estimates from each
// run's rounds and their difference.
type Figure struct {
	A    stats.Estimate   `json:"a"`
	B    stats.Estimate   `json:"b"`
	Diff stats.Difference `json:"diff"`
}

func figure(a, b []float64) Figure {
	return Figure{A: stats.Of(a), B: stats.Of(b), Diff: stats.Compare(a, b)}
}

// Change is one server's figures in two runs.
type Change struct {
	Cell config.Cell `json:"cell"`
	// Differs names the settings the second run's cell had otherwise.
	Differs string `json:"differs,omitempty"`
	Server  string `json:"server"`
	RPS     Figure `json:"rps"`
	// P99 is the p99 latency in nanoseconds.
	P99 Figure `json:"p99"`
}

// Runs compares every server ranked in both runs under the same cell, in
// a's order. Two runs of one cell each are compared whatever their
// settings (one server at 1 and at 2 CPUs, say), and the settings that
// differ are named.
func Runs(a, b report.Run) []Change {
	var out []Change
	for _, ca := range a.Cells {
		cb, ok := find(b.Cells, ca.Cell)
		if !ok && len(a.Cells) == 1 && len(b.Cells) == 1 {
			cb, ok = b.Cells[0], true
		}
		if !ok {
			continue
		}
		differs := difference(ca.Settings, cb.Settings)
		rowsB := map[string]report.Row{}
		for _, r := range report.Ranking(cb) {
			rowsB[r.Name] = r
		}
		for _, ra := range report.Ranking(ca) {
			rb, ok := rowsB[ra.Name]
			if !ok {
				continue
			}
			out = append(out, Change{Cell: ca.Cell, Differs: differs, Server: ra.Name,
				RPS: figure(ra.Values, rb.Values), P99: figure(ra.P99Values, rb.P99Values)})
		}
	}
	return out
}

// difference lists the settings whose values differ, as NAME=a→b; where
// the results went changes no figure.
func difference(a, b []config.Setting) string {
	values := map[string]string{}
	for _, s := range a {
		values[s.Name] = s.Value
	}
	var parts []string
	for _, s := range b {
		if v, ok := values[s.Name]; ok && v != s.Value && s.Name != "GRPC_RESULTS_DIR" {
			parts = append(parts, fmt.Sprintf("%s=%s→%s", s.Name, v, s.Value))
		}
	}
	return strings.Join(parts, " ")
}

// find is the cell of the same settings: scenario, CPUs and shape.
func find(cells []report.Cell, c config.Cell) (report.Cell, bool) {
	for _, x := range cells {
		if x.Cell == c {
			return x, true
		}
	}
	return report.Cell{}, false
}

// metric is a figure as the table prints it.
type metric struct {
	title  string
	figure func(Change) Figure
	format func(float64) string
}

var metrics = []metric{
	{"req/s", func(c Change) Figure { return c.RPS }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
	{"p99 latency", func(c Change) Figure { return c.P99 }, func(v float64) string {
		return fmt.Sprintf("%.2f ms", float64(time.Duration(v))/float64(time.Millisecond))
	}},
}

// WriteTable prints the changes, per cell (in a matrix) and per figure as
// benchstat does: per server both medians with their spread, the change,
// and `~` when it is not significant; then why nothing could be
// significant when the rounds are too few.
func WriteTable(w io.Writer, nameA, nameB string, changes []Change) error {
	if len(changes) == 0 {
		_, err := fmt.Fprintf(w, "no server was ranked in both %s and %s under the same settings\n", nameA, nameB)
		return err
	}
	multi := false
	for _, c := range changes[1:] {
		multi = multi || c.Cell != changes[0].Cell
	}
	tooFew := false
	for start := 0; start < len(changes); {
		end := start + 1
		for end < len(changes) && changes[end].Cell == changes[start].Cell {
			end++
		}
		section := changes[start:end]
		if multi {
			fmt.Fprintf(w, "== %s\n", section[0].Cell.Name())
		}
		if section[0].Differs != "" {
			fmt.Fprintf(w, "settings that differ: %s\n", section[0].Differs)
		}
		for _, m := range metrics {
			if err := writeMetric(w, m, nameA, nameB, section); err != nil {
				return err
			}
		}
		for _, c := range section {
			tooFew = tooFew || c.RPS.Diff.TooFew
		}
		start = end
	}
	notes := []string{"change: the second run's median against the first's (more req/s and less latency are better); " +
		"~ means the Mann–Whitney U test finds no significant difference at α = 0.05"}
	if tooFew {
		notes = append(notes, "with fewer than 4 rounds a side no difference can be significant (3 a side: p ≥ 0.1); run with GRPC_BENCHMARK_ROUNDS=6 or more")
	}
	_, err := fmt.Fprintln(w, strings.Join(notes, "\n"))
	return err
}

// writeMetric prints one figure's table of a cell.
func writeMetric(w io.Writer, m metric, nameA, nameB string, changes []Change) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t%s\t%s\tchange\tsignificance\t\n", m.title, nameA, nameB)
	for _, c := range changes {
		f := m.figure(c)
		delta := fmt.Sprintf("%+.1f%%", 100*f.Diff.Change)
		if !f.Diff.Significant {
			delta = "~ (" + delta + ")"
		}
		fmt.Fprintf(tw, "%s\t%s ±%s\t%s ±%s\t%s\tp=%.3f n=%d+%d\t\n", c.Server,
			m.format(f.A.Median), spread(f.A), m.format(f.B.Median), spread(f.B), delta, f.Diff.P, f.A.N, f.B.N)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// spread is the interval's half-width relative to the median, as benchstat
// prints it.
func spread(e stats.Estimate) string {
	if e.Median == 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*max(e.Hi-e.Median, e.Median-e.Lo)/e.Median)
}
