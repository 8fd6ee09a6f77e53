package report

import (
	"fmt"
	"strings"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
)

// writeSLO writes an objective's ranking of each sweep, as text: the
// section bench.txt and summary.txt end with.
func writeSLO(b *strings.Builder, a analysis.Run) {
	for _, sw := range a.Sweeps {
		o := sw.Objective
		if o == nil {
			continue
		}
		fmt.Fprintf(b, "\n== latency objective %s: sustainable throughput, %s\n", sw.SLO, sw.Name)
		rule := strings.Repeat("-", sloRuleLength) + "\n"
		b.WriteString(rule)
		fmt.Fprintf(b, sloFormat, "group", "name", "req/s", "interval", "at rate", "target", sw.SLO.Percentile)
		b.WriteString(rule)
		for _, r := range o.Rows {
			p := o.At[r.Name]
			fmt.Fprintf(b, sloFormat, r.Group, r.Name, fmt.Sprintf("%.0f", r.RPS.Median), intervalText(r.RPS), p.Rate,
				fmt.Sprintf("%.0f", p.Target), millis(r.Percentile(sw.SLO.Percentile)))
		}
		b.WriteString(rule)
		for _, n := range o.Notes {
			b.WriteString("! " + n + "\n")
		}
	}
}

const (
	sloFormat     = "| %-5s | %-27s | %9s | %-28s | %-8s | %9s | %9s |\n"
	sloRuleLength = 118
)

// writeSweepsMarkdown writes each sweep's points and its objective's
// ranking as Markdown tables.
func writeSweepsMarkdown(b *strings.Builder, a analysis.Run) {
	for _, sw := range a.Sweeps {
		fmt.Fprintf(b, "\n### Latency under load: %s\n\n", sw.Name)
		b.WriteString("Each rate loaded open-loop by " + sw.Tool + "; medians of the rounds.\n\n")
		b.WriteString("| server | rate | target req/s | achieved req/s | p50 | p99 | p99.9 | sustained |\n|---|---|--:|--:|--:|--:|--:|---|\n")
		for _, p := range sw.Points {
			sustained := "yes"
			if p.Unsustained != "" {
				sustained = "no: " + p.Unsustained
			}
			fmt.Fprintf(b, "| %s | %s | %.0f | %.0f | %s | %s | %s | %s |\n", markdownText(p.Server), p.Rate, p.Target, p.Row.RPS.Median,
				ms(p.Row.P50), ms(p.Row.P99), ms(p.Row.P999), markdownText(sustained))
		}
		o := sw.Objective
		if o == nil {
			continue
		}
		fmt.Fprintf(b, "\nSustainable throughput within `%s`:\n\n| group | server | req/s | interval | at rate | target | %s |\n|---|---|--:|---|---|--:|--:|\n", sw.SLO, sw.SLO.Percentile)
		for _, r := range o.Rows {
			p := o.At[r.Name]
			fmt.Fprintf(b, "| %s | %s | %.0f | %s | %s | %.0f | %s |\n", r.Group, markdownText(r.Name), r.RPS.Median, intervalText(r.RPS), p.Rate, p.Target, ms(r.Percentile(sw.SLO.Percentile)))
		}
		b.WriteString("\nNotes:\n\n")
		for _, n := range o.Notes {
			b.WriteString("- " + markdownText(n) + "\n")
		}
	}
}
