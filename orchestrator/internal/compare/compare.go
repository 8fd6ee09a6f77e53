// Package compare sets two runs side by side: for each server measured in
// both, under the same cell, the change of its median req/s and whether the
// rounds say it is real (Mann–Whitney U at α = 0.05, as benchstat does).
package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/grpcbench/grpcbench/orchestrator/internal/config"
	"github.com/grpcbench/grpcbench/orchestrator/internal/report"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// Change is one server's req/s in two runs.
type Change struct {
	Cell config.Cell `json:"cell"`
	// Differs names the settings the second run's cell had otherwise.
	Differs string           `json:"differs,omitempty"`
	Server  string           `json:"server"`
	A       stats.Estimate   `json:"a"`
	B       stats.Estimate   `json:"b"`
	Diff    stats.Difference `json:"diff"`
}

// Runs compares every server ranked in both runs under the same cell, in
// a's order. Two runs of one cell each are compared whatever their
// settings (one server at 1 and at 2 CPUs, say), and the settings that
// differ are named.
func Runs(a, b report.Run) []Change {
	var out []Change
	for _, ca := range a.Cells {
		cb, ok := find(b.Cells, ca.Cell)
		differs := ""
		if !ok && len(a.Cells) == 1 && len(b.Cells) == 1 {
			cb, ok, differs = b.Cells[0], true, difference(ca.Settings, b.Cells[0].Settings)
		}
		if !ok {
			continue
		}
		rowsB := map[string]report.Row{}
		for _, r := range report.Ranking(cb) {
			rowsB[r.Name] = r
		}
		for _, ra := range report.Ranking(ca) {
			rb, ok := rowsB[ra.Name]
			if !ok {
				continue
			}
			out = append(out, Change{Cell: ca.Cell, Differs: differs, Server: ra.Name, A: ra.RPS, B: rb.RPS, Diff: stats.Compare(ra.Values, rb.Values)})
		}
	}
	return out
}

// difference lists the settings whose values differ, as NAME=a→b.
func difference(a, b []config.Setting) string {
	values := map[string]string{}
	for _, s := range a {
		values[s.Name] = s.Value
	}
	var parts []string
	for _, s := range b {
		if v, ok := values[s.Name]; ok && v != s.Value {
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

// WriteTable prints the changes: per server both medians, the change, and
// its p-value or `~` when the change is not significant; then why nothing
// could be significant when the rounds are too few.
func WriteTable(w io.Writer, nameA, nameB string, changes []Change) error {
	if len(changes) == 0 {
		_, err := fmt.Fprintf(w, "no server was ranked in both %s and %s under the same settings\n", nameA, nameB)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	multi := false
	for _, c := range changes[1:] {
		multi = multi || c.Cell != changes[0].Cell
	}
	header := "server\t" + nameA + " req/s\t" + nameB + " req/s\tchange\tsignificance\t\n"
	var current config.Cell
	tooFew := false
	for i, c := range changes {
		if i == 0 || (multi && c.Cell != current) {
			if multi {
				fmt.Fprintf(tw, "== %s\t\t\t\t\t\n", c.Cell.Name())
			}
			if c.Differs != "" {
				fmt.Fprintf(tw, "settings that differ: %s\t\t\t\t\t\n", c.Differs)
			}
			fmt.Fprint(tw, header)
			current = c.Cell
		}
		var delta string
		sig := fmt.Sprintf("p=%.3f n=%d+%d", c.Diff.P, c.A.N, c.B.N)
		if c.Diff.Significant {
			delta = fmt.Sprintf("%+.1f%%", 100*c.Diff.Change)
		} else {
			delta = fmt.Sprintf("~ (%+.1f%%)", 100*c.Diff.Change)
		}
		tooFew = tooFew || c.Diff.TooFew
		fmt.Fprintf(tw, "%s\t%.0f ±%s\t%.0f ±%s\t%s\t%s\t\n", c.Server, c.A.Median, spread(c.A), c.B.Median, spread(c.B), delta, sig)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes []string
	notes = append(notes, "change: the second run's median req/s against the first's; ~ means the Mann–Whitney U test finds no significant difference at α = 0.05")
	if tooFew {
		notes = append(notes, "with fewer than 4 rounds a side no difference can be significant (3 a side: p ≥ 0.1); run with GRPC_BENCHMARK_ROUNDS=6 or more")
	}
	_, err := fmt.Fprintln(w, strings.Join(notes, "\n"))
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
