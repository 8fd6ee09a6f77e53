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
	// Unit is the unit of its rates: req/s, or msg/s in a streaming cell.
	Unit string
	// Latencies says where the latencies come from.
	Latencies string
	Curve     template.HTML
	Servers   []hdrView
	Points    []pointView
	// SLO is the objective, "" without one, Percentile its percentile;
	// SLORows its ranking.
	SLO, Percentile string
	SLORows         []sloRowView
	Notes           []string
	Problems        []string
}

// hdrView is one server's charts: its latency distribution at each
// rate, and its latency over time.
type hdrView struct {
	Server      string
	Chart, Time template.HTML
}

type pointView struct {
	Server, Rate, Target, Achieved string
	P50, P99, P999, State          string
	Objective, Class               string
}

type sloRowView struct {
	Rank                            int
	Group, Name, RPS, Bracket, Rate string
	Achieved, Percentile, Upper     string
}

// sweepViewsOf draws every sweep of the run.
func sweepViewsOf(a analysis.Run) []sweepView {
	var out []sweepView
	for i, sw := range a.Sweeps {
		v := sweepView{Anchor: fmt.Sprintf("sweep-%d", i+1), Name: sw.Name, Unit: sw.Unit, Latencies: pooledText(sw)}
		chart := func(svg template.HTML, err error) template.HTML {
			if err != nil {
				v.Problems = append(v.Problems, err.Error())
			}
			return svg
		}
		v.Curve = chart(curveChart(sw))
		for _, name := range serversOf(sw) {
			v.Servers = append(v.Servers, hdrView{Server: name, Chart: chart(hdrChart(sw, name)), Time: chart(latencyTimeChart(sw, name))})
		}
		for _, p := range sw.Points {
			pv := pointView{Server: p.Server, Rate: p.Rate, Target: fmt.Sprintf("%.0f", p.Target), Achieved: achievedText(p),
				P50: ms(p.Row.P50), P99: ms(p.Row.P99), P999: ms(p.Row.P999), State: pointState(p), Objective: objectiveText(p, sw.SLO.Percentile)}
			if p.Mark() != "" {
				pv.Class = "failing"
			}
			v.Points = append(v.Points, pv)
		}
		if o := sw.Objective; o != nil {
			v.SLO, v.Percentile = sw.SLO.String(), sw.SLO.Percentile
			for k, r := range o.Rows {
				v.SLORows = append(v.SLORows, sloRowView{Rank: k + 1, Group: r.Group, Name: r.Name, RPS: figureText(r),
					Bracket: bracketText(r), Rate: r.Met.Rate, Achieved: fmt.Sprintf("%.0f", r.Met.Row.RPS.Median),
					Percentile: latencyText(r.Met.Verdict.Percentile), Upper: latencyText(r.Met.Verdict.Upper)})
			}
			v.Notes = o.Notes
		}
		out = append(out, v)
	}
	return out
}
