package report

import (
	"fmt"
	"html/template"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
)

// sweepView is a sweep as report.html shows it: its curves, each
// server's distribution, its points, and its objective's ranking.
type sweepView struct {
	Anchor, Name string
	Curve        template.HTML
	Servers      []hdrView
	Points       []pointView
	// SLO is the objective, "" without one; SLORows its ranking.
	SLO      string
	SLORows  []sloRowView
	Notes    []string
	Problems []string
}

type hdrView struct {
	Server string
	Chart  template.HTML
}

type pointView struct {
	Server, Rate, Target, Achieved string
	P50, P99, P999, Sustained      string
	Class                          string
}

type sloRowView struct {
	Rank                             int
	Group, Name, RPS, Interval, Rate string
	Target, Percentile               string
}

// sweepViewsOf draws every sweep of the run.
func sweepViewsOf(a analysis.Run) []sweepView {
	var out []sweepView
	for i, sw := range a.Sweeps {
		v := sweepView{Anchor: fmt.Sprintf("sweep-%d", i+1), Name: sw.Name}
		chart := func(svg template.HTML, err error) template.HTML {
			if err != nil {
				v.Problems = append(v.Problems, err.Error())
			}
			return svg
		}
		v.Curve = chart(curveChart(sw))
		for _, name := range serversOf(sw) {
			v.Servers = append(v.Servers, hdrView{Server: name, Chart: chart(hdrChart(sw, name))})
		}
		for _, p := range sw.Points {
			pv := pointView{Server: p.Server, Rate: p.Rate, Target: fmt.Sprintf("%.0f", p.Target), Achieved: fmt.Sprintf("%.0f", p.Row.RPS.Median),
				P50: ms(p.Row.P50), P99: ms(p.Row.P99), P999: ms(p.Row.P999), Sustained: "yes"}
			if p.Unsustained != "" {
				pv.Sustained, pv.Class = "no: "+p.Unsustained, "failing"
			}
			v.Points = append(v.Points, pv)
		}
		if o := sw.Objective; o != nil {
			v.SLO = sw.SLO.String()
			for k, r := range o.Rows {
				p := o.At[r.Name]
				v.SLORows = append(v.SLORows, sloRowView{Rank: k + 1, Group: r.Group, Name: r.Name, RPS: fmt.Sprintf("%.0f", r.RPS.Median),
					Interval: intervalText(r.RPS), Rate: p.Rate, Target: fmt.Sprintf("%.0f", p.Target), Percentile: ms(r.Percentile(sw.SLO.Percentile))})
			}
			v.Notes = o.Notes
		}
		out = append(out, v)
	}
	return out
}
