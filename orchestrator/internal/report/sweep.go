package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/histogram"
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
		if len(o.Rows) > 0 {
			rule := strings.Repeat("-", sloRuleLength) + "\n"
			b.WriteString(rule)
			fmt.Fprintf(b, sloFormat, "group", "name", sw.Unit, "bracket", "at rate", "achieved", sw.SLO.Percentile, sw.SLO.Percentile+" ≤")
			b.WriteString(rule)
			for _, r := range o.Rows {
				v := r.Met.Verdict
				fmt.Fprintf(b, sloFormat, r.Group, r.Name, figureText(r), bracketText(r), r.Met.Rate,
					fmt.Sprintf("%.0f", r.Met.Row.RPS.Median), latencyText(v.Percentile), latencyText(v.Upper))
			}
			b.WriteString(rule)
		}
		for _, n := range o.Notes {
			b.WriteString("! " + n + "\n")
		}
	}
}

const (
	sloFormat     = "| %-5s | %-27s | %9s | %-26s | %-8s | %9s | %11s | %11s |\n"
	sloRuleLength = 134
)

// figureText is a sustainable throughput's figure, "≥" when it is the
// rate met with no bound above it.
func figureText(s analysis.Sustained) string {
	if !s.Bounded() {
		return fmt.Sprintf("≥ %.0f", s.Figure())
	}
	return fmt.Sprintf("%.0f", s.Figure())
}

// bracketText is a sustainable throughput's bracket: the rate met and the
// lowest failed above it, or the capacity when none failed.
func bracketText(s analysis.Sustained) string {
	switch {
	case s.Failed != nil:
		return fmt.Sprintf("%.0f–%.0f (met–failed)", s.Lo(), s.Hi())
	case s.Bounded():
		return fmt.Sprintf("%.0f–%.0f (met–capacity)", s.Lo(), s.Hi())
	}
	return fmt.Sprintf("%.0f– (none failed)", s.Lo())
}

// latencyText is a latency in ms, n/a for none and "no answer" for the
// latency of a call that had none.
func latencyText(d time.Duration) string {
	if d == histogram.Infinite {
		return "no answer"
	}
	return ms(d)
}

// pointState says whether a point counts: "yes", or why not.
func pointState(p analysis.Point) string {
	if m := p.Mark(); m != "" {
		return m
	}
	return "yes"
}

// objectiveText says an objective's verdict at a point: met with its
// bound, or why not.
func objectiveText(p analysis.Point, percentile string) string {
	v := p.Verdict
	if v == nil {
		return ""
	}
	if v.Met {
		return fmt.Sprintf("met: %s ≤ %s", percentile, latencyText(v.Upper))
	}
	return "not met: " + v.Why
}

// writeSweepsMarkdown writes each sweep's points and its objective's
// ranking as Markdown tables.
func writeSweepsMarkdown(b *strings.Builder, a analysis.Run) {
	for _, sw := range a.Sweeps {
		fmt.Fprintf(b, "\n### Latency under load: %s\n\n", sw.Name)
		b.WriteString("Each rate loaded open-loop by " + sw.Tool + "; " + pooledText(sw) + ".\n\n")
		b.WriteString("| server | rate | target req/s | achieved req/s | p50 | p99 | p99.9 | counts |")
		if sw.SLO.Set() {
			fmt.Fprintf(b, " objective %s |", sw.SLO)
		}
		b.WriteString("\n|---|---|--:|--:|--:|--:|--:|---|")
		if sw.SLO.Set() {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, p := range sw.Points {
			fmt.Fprintf(b, "| %s | %s | %.0f | %s | %s | %s | %s | %s |", markdownText(p.Server), p.Rate, p.Target, achievedText(p),
				ms(p.Row.P50), ms(p.Row.P99), ms(p.Row.P999), markdownText(pointState(p)))
			if sw.SLO.Set() {
				fmt.Fprintf(b, " %s |", markdownText(objectiveText(p, sw.SLO.Percentile)))
			}
			b.WriteString("\n")
		}
		o := sw.Objective
		if o == nil {
			continue
		}
		fmt.Fprintf(b, "\nSustainable throughput within `%s`:\n\n", sw.SLO)
		if len(o.Rows) > 0 {
			fmt.Fprintf(b, "| group | server | %s | bracket | at rate | achieved | %s | %s ≤ |\n|---|---|--:|---|---|--:|--:|--:|\n", sw.Unit, sw.SLO.Percentile, sw.SLO.Percentile)
		}
		for _, r := range o.Rows {
			v := r.Met.Verdict
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %.0f | %s | %s |\n", r.Group, markdownText(r.Name), figureText(r), bracketText(r), r.Met.Rate,
				r.Met.Row.RPS.Median, latencyText(v.Percentile), latencyText(v.Upper))
		}
		b.WriteString("\nNotes:\n\n")
		for _, n := range o.Notes {
			b.WriteString("- " + markdownText(n) + "\n")
		}
	}
}

// achievedText is a point's rate achieved, "—" when no round of it was
// measured.
func achievedText(p analysis.Point) string {
	if !p.Measured() {
		return "—"
	}
	return fmt.Sprintf("%.0f", p.Row.RPS.Median)
}

// pooledText says where a sweep's latencies come from.
func pooledText(sw analysis.Sweep) string {
	for _, p := range sw.Points {
		if p.Measured() && !p.Row.Pooled {
			return "latencies are medians of the rounds' own percentiles where a round kept no histogram, else of every call of the rounds (histograms merged); n/a: too few calls for the percentile"
		}
	}
	return "latencies of every call of the rounds (their histograms merged); n/a: too few calls for the percentile"
}
