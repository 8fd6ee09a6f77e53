package report

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/escape"
	"github.com/grpcbench/grpcbench/orchestrator/internal/stats"
)

// writeGate writes a gate run's verdicts (bench --baseline): per server
// and figure, the candidate against its baseline, paired in each round,
// with the test's power.
func writeGate(b *strings.Builder, g *analysis.Gate) {
	if g == nil {
		return
	}
	fmt.Fprintf(b, "\n== gate: this tree against %s (%s), each server's two rows measured one right after the other in every round\n\n", escape.Text(g.Ref), shortCommit(g.Commit))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "cell\tserver\tfigure\trounds\tratio\tlower bound\tp (slower)\tpower at −%.0f%%\tverdict\t\n", 100*g.Threshold)
	for _, t := range g.Tests {
		verdict := "no regression"
		switch {
		case t.FailsNow != "":
			verdict = "regression: fails now: " + t.FailsNow
		case t.Untested != "":
			verdict = "not tested: " + t.Untested
		case t.Regressed:
			verdict = "regression"
		}
		row := []string{escape.Text(t.Cell), escape.Text(t.Server), t.Figure, "-", "-", "-", "-", "-", escape.Text(verdict)}
		if t.Untested == "" && t.FailsNow == "" {
			row[3], row[4], row[5], row[6], row[7] = fmt.Sprint(t.N), fmt.Sprintf("%.3f", t.Ratio), fmt.Sprintf("%.3f", t.Lo), fmt.Sprintf("%.4f", t.P), fmt.Sprintf("%.0f%%", 100*t.Power)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintf(b, "! ratio is this tree's figure over %s's, the geometric mean of the rounds' ratios, with its one-sided %.0f%% lower bound; "+
		"p is the paired one-sided t-test's of \"slower\"; Holm's step-down over the %d tests holds the chance of any false regression at %.0f%%\n",
		escape.Text(g.Ref), 100*(1-stats.Alpha), g.Tested, 100*stats.Alpha)
	if g.Tested > 0 {
		fmt.Fprintf(b, "! power: the chance that a true %.0f%% slowdown of a server is flagged, at the spread of this run's pairs (per cell and figure) and Holm's first level, %.0f%%/%d: the least a single regression gets\n",
			100*g.Threshold, 100*stats.Alpha, g.Tested)
	}
	fmt.Fprintf(b, "! %d regressions\n", g.Regressions)
}

// shortCommit is a commit's first 12 hex digits.
func shortCommit(commit string) string { return commit[:min(12, len(commit))] }
