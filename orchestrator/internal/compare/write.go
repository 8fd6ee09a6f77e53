package compare

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// metric is a figure as the tables print it; its kind says which marks
// its rows carry.
type metric struct {
	title  string
	kind   int
	figure func(Change) *Figure
	drift  func(ComparedCell) *Drift
	format func(float64) string
}

// Kinds of figures.
const (
	loadRPS = iota // the load tool's req/s
	latency
	capacityRPS
)

func count(v float64) string { return fmt.Sprintf("%.0f", v) }

var metrics = []metric{
	{"req/s", loadRPS, func(c Change) *Figure { return c.RPS }, func(c ComparedCell) *Drift { return c.RPSDrift }, count},
	{"p99 latency", latency, func(c Change) *Figure { return c.P99 }, func(ComparedCell) *Drift { return nil }, func(v float64) string {
		return fmt.Sprintf("%.2f ms", float64(time.Duration(v))/float64(time.Millisecond))
	}},
	{"capacity req/s", capacityRPS, func(c Change) *Figure { return c.Capacity }, func(c ComparedCell) *Drift { return c.CapacityDrift }, count},
}

// WriteText prints the comparison: the runs that did not finish, what
// differs between the runs, then per cell one table per figure as
// benchstat prints them (both medians with their spread, the change, `~`
// when it is not significant, and marks: client-bound, image changed,
// regression), the servers not in both rankings, the drift taken out, and
// the regressions.
func WriteText(w io.Writer, c Comparison) error {
	c = shown(c)
	var b strings.Builder
	for _, u := range c.Unfinished {
		fmt.Fprintf(&b, "! %s %s: rounds are missing, so this comparison is not final, and no gate passes it\n", runName(c, u.Run), stateText(u.State))
	}
	if len(c.Cells) > 1 && len(c.Settings) > 0 { // one cell's are its own, resolved
		fmt.Fprintf(&b, "settings that differ, as given: %s\n", settingsText(c.Settings))
	}
	if len(c.Hardware) > 0 {
		fmt.Fprintf(&b, "hardware that differs: %s\n", settingsText(c.Hardware))
	}
	tooFew := false
	for _, cell := range c.Cells {
		if len(c.Cells) > 1 || cell.In != "" {
			fmt.Fprintf(&b, "== %s\n", cell.Name)
		}
		if cell.In != "" {
			fmt.Fprintf(&b, "only %s has this cell (servers: %d), none compared\n", runName(c, cell.In), len(cell.Servers))
			continue
		}
		if len(cell.Settings) > 0 {
			fmt.Fprintf(&b, "settings that differ: %s\n", settingsText(cell.Settings))
		}
		for _, m := range metrics {
			writeMetric(&b, m, c, cell)
		}
		for _, ch := range cell.Servers {
			tooFew = tooFew || ch.RPS != nil && ch.RPS.Diff.TooFew
			if ch.Status == Compared {
				continue
			}
			line := fmt.Sprintf("%s: %s", ch.Server, statusText(c, ch.Status))
			if ch.Failure != "" {
				line += " (" + ch.Failure + ")"
			}
			if ch.Regression != "" {
				line += ": REGRESSION"
			}
			b.WriteString(line + "\n")
		}
		for _, d := range []struct {
			name  string
			drift *Drift
		}{{"req/s", cell.RPSDrift}, {"capacity req/s", cell.CapacityDrift}} {
			if d.drift != nil {
				fmt.Fprintf(&b, "drift of the machine: %s %+.1f%% (median shift of %d servers), taken out before judging each server\n",
					d.name, 100*d.drift.Change, d.drift.Servers)
			}
		}
	}
	b.WriteString("change: the second run's median against the first's (more req/s and less latency are better); " +
		"~ means the Mann–Whitney U test finds no significant difference at α = 0.05\n")
	if tooFew {
		b.WriteString("with fewer than 4 rounds a side no two-sided difference can be significant (3 a side: p ≥ 0.1); " +
			"a slowdown is tested one-sided, which 3 rounds a side can show (p = 0.05 when the ranges do not overlap)\n")
	}
	fmt.Fprintf(&b, "regression: a server ranked in %s that fails in %s, or slower by more than %.0f%% after the drift with one-sided p ≤ %.2f, "+
		"by req/s where the load tool kept up in both runs, and by capacity req/s\n", c.A, c.B, 100*c.Threshold, stats.Alpha)
	if c.Regressions == 0 {
		b.WriteString("regressions: none\n")
	} else {
		fmt.Fprintf(&b, "regressions: %d\n", c.Regressions)
		for _, cell := range c.Cells {
			for _, ch := range cell.Servers {
				if ch.Regression != "" {
					fmt.Fprintf(&b, "- %s%s: %s\n", ch.Server, cellSuffix(c, cell), ch.Regression)
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shown is c with every text its records brought (the runs', cells' and
// servers' names, the reasons, the settings) made safe to print: a record
// may be anyone's, and a name could hold a terminal escape or a line
// break that forges a row. c itself is left as it is.
func shown(c Comparison) Comparison {
	c.A, c.B = escape.Text(c.A), escape.Text(c.B)
	c.Settings, c.Hardware = shownSettings(c.Settings), shownSettings(c.Hardware)
	cells := make([]ComparedCell, len(c.Cells))
	for i, cell := range c.Cells {
		cell.Name, cell.Settings = escape.Text(cell.Name), shownSettings(cell.Settings)
		changes := make([]Change, len(cell.Servers))
		for j, ch := range cell.Servers {
			ch.Server, ch.Failure, ch.Regression = escape.Text(ch.Server), escape.Text(ch.Failure), escape.Text(ch.Regression)
			changes[j] = ch
		}
		cell.Servers = changes
		cells[i] = cell
	}
	c.Cells = cells
	return c
}

func shownSettings(list []ChangedSetting) []ChangedSetting {
	out := make([]ChangedSetting, len(list))
	for i, s := range list {
		out[i] = ChangedSetting{Name: escape.Text(s.Name), A: escape.Text(s.A), B: escape.Text(s.B)}
	}
	return out
}

// writeMetric prints one figure's table of a cell, when any server has it.
func writeMetric(b *strings.Builder, m metric, c Comparison, cell ComparedCell) {
	var rows []Change
	for _, ch := range cell.Servers {
		if m.figure(ch) != nil {
			rows = append(rows, ch)
		}
	}
	if len(rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\t%s\t%s\tchange\tsignificance\t\n", m.title, c.A, c.B)
	for _, ch := range rows {
		f := m.figure(ch)
		delta := fmt.Sprintf("%+.1f%%", 100*f.Diff.Change)
		if !f.Diff.Significant {
			delta = "~ (" + delta + ")"
		}
		fmt.Fprintf(tw, "%s\t%s ±%s\t%s ±%s\t%s\tp=%.3f n=%d+%d\t%s\n", ch.Server,
			m.format(f.A.Median), spread(f.A), m.format(f.B.Median), spread(f.B), delta, f.Diff.P, f.A.N, f.B.N,
			marks(m, ch, f, m.drift(cell) != nil))
	}
	tw.Flush()
	b.WriteString("\n")
}

// marks says what a row's figures mean beyond themselves.
func marks(m metric, ch Change, f *Figure, drift bool) string {
	var out []string
	switch {
	case m.kind == loadRPS && len(ch.ClientBound) > 0:
		out = append(out, "client-bound in "+strings.Join(ch.ClientBound, "+")+", not judged")
	case m.kind == capacityRPS && !f.Judged:
		out = append(out, "capacity tool client-bound, not judged")
	}
	if f.Judged && drift {
		out = append(out, fmt.Sprintf("%+.1f%% after drift", 100*f.Adjusted))
	}
	if m.kind == loadRPS && ch.ImageA != "" {
		out = append(out, "image changed")
	}
	if f.Regressed {
		out = append(out, "REGRESSION")
	}
	if len(out) == 0 {
		return ""
	}
	return "  " + strings.Join(out, "; ")
}

func settingsText(s []ChangedSetting) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprintf("%s=%s→%s", d.Name, d.A, d.B)
	}
	return strings.Join(parts, " ")
}

func runName(c Comparison, in string) string {
	if in == "a" {
		return c.A
	}
	return c.B
}

func statusText(c Comparison, status string) string {
	switch status {
	case OnlyInA:
		return "only in " + c.A + " (not run in " + c.B + ")"
	case OnlyInB:
		return "new in " + c.B
	case NowFails:
		return "ranked in " + c.A + ", fails in " + c.B
	case NowRanked:
		return "failed in " + c.A + ", ranked in " + c.B
	}
	return status
}

func stateText(state string) string {
	if state == string(record.Interrupted) {
		return "was interrupted (grpcbench bench --resume finishes it)"
	}
	return "did not finish (it is still running, or was killed)"
}

func cellSuffix(c Comparison, cell ComparedCell) string {
	if len(c.Cells) > 1 {
		return " (" + cell.Name + ")"
	}
	return ""
}

// spread is the interval's half-width relative to the median, as benchstat
// prints it.
func spread(e stats.Estimate) string {
	if e.Median == 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*max(e.Hi-e.Median, e.Median-e.Lo)/e.Median)
}
