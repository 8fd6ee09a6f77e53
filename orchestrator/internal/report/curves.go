package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
	"github.com/grpcbench/grpcbench/orchestrator/internal/record"
)

// curveWidth and curveHeight size the latency–throughput chart.
const (
	curveWidth  = chartWidth
	curveHeight = 4.5 * vg.Inch
)

// A curve's percentiles, each with its glyph and dashes; the servers are
// told apart by colour.
var curvePercentiles = []struct {
	name   string
	of     func(analysis.Row) time.Duration
	shape  draw.GlyphDrawer
	dashes []vg.Length
}{
	{"p50", func(r analysis.Row) time.Duration { return r.P50 }, draw.CircleGlyph{}, nil},
	{"p99", func(r analysis.Row) time.Duration { return r.P99 }, draw.TriangleGlyph{}, []vg.Length{vg.Points(5), vg.Points(3)}},
	{"p99.9", func(r analysis.Row) time.Duration { return r.P999 }, draw.PyramidGlyph{}, []vg.Length{vg.Points(1.5), vg.Points(2.5)}},
}

// curveChart draws a sweep's latency–throughput curves: p50, p99 and
// p99.9 against the rate achieved, one colour per server, both axes on a
// log scale (servers of one sweep differ in capacity up to 20×, and a
// linear axis crowds the slow ones against it). A line joins a server's
// sustained points, in the order of their targets; an unsustained or
// unstable point is a cross, off its line; a target the server failed at
// (crashed, killed) is a square above the rest, at the target, for it has
// no latency. The objective's bound,
// when there is one, is a grey dashed line.
func curveChart(sw analysis.Sweep) (template.HTML, error) {
	aria := "latency against achieved " + sw.Unit + ", " + sw.Name
	p := newPlot()
	p.X.Label.Text = "achieved " + sw.Unit + " (log scale)"
	p.Y.Label.Text = "latency, ms (log scale)"
	p.X.Tick.Marker = shortLogTicks{}
	lo, hi, xMin, xMax := math.Inf(1), math.Inf(-1), math.Inf(1), 0.0
	servers := serversOf(sw)
	failed := map[int]plotter.XYs{} // by server: the targets it failed at, drawn once the top is known
	for si, name := range servers {
		colour := seriesColours[si%len(seriesColours)]
		key, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}}) // a server's key, whether any point of it was sustained
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		key.Color, key.Width = colour, vg.Points(1.2)
		p.Legend.Add(name, key)
		for _, pc := range curvePercentiles {
			var line, off plotter.XYs
			for _, pt := range sw.Points {
				if pt.Server == name && pt.Failed != "" && pt.Target > 0 && pc.name == curvePercentiles[0].name {
					failed[si] = append(failed[si], plotter.XY{X: pt.Target})
					xMin, xMax = min(xMin, pt.Target), max(xMax, pt.Target)
				}
				v := msOf(pc.of(pt.Row))
				if pt.Server != name || v <= 0 || pt.Failed != "" {
					continue
				}
				xy := plotter.XY{X: pt.Row.RPS.Median, Y: v}
				if xy.X <= 0 { // nothing answered in time: a cross at its target
					xy.X = pt.Target
				}
				lo, hi, xMin, xMax = min(lo, v), max(hi, v), min(xMin, xy.X), max(xMax, xy.X)
				if pt.Mark() != "" {
					off = append(off, xy)
				} else {
					line = append(line, xy)
				}
			}
			if len(line) > 0 {
				l, sc, err := plotter.NewLinePoints(line)
				if err != nil {
					return "", fmt.Errorf("draw the chart %q: %w", aria, err)
				}
				l.Color, l.Width, l.Dashes = colour, vg.Points(1.2), pc.dashes
				sc.GlyphStyle = draw.GlyphStyle{Color: colour, Radius: vg.Points(2.5), Shape: pc.shape}
				p.Add(l, sc)
			}
			if len(off) > 0 {
				sc, err := plotter.NewScatter(off)
				if err != nil {
					return "", fmt.Errorf("draw the chart %q: %w", aria, err)
				}
				sc.GlyphStyle = draw.GlyphStyle{Color: colour, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
				p.Add(sc)
			}
		}
	}
	if math.IsInf(lo, 1) && len(failed) > 0 { // nothing measured, only failures
		lo, hi = 1, 1
	}
	if math.IsInf(lo, 1) {
		return "", nil
	}
	for si := range servers {
		xys := failed[si]
		if len(xys) == 0 {
			continue
		}
		for i := range xys {
			xys[i].Y = hi * 1.4
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: seriesColours[si%len(seriesColours)], Radius: vg.Points(3.5), Shape: draw.BoxGlyph{}}
		p.Add(sc)
	}
	for _, pc := range curvePercentiles { // the percentiles' key, in black
		l, sc, err := plotter.NewLinePoints(plotter.XYs{{X: 0, Y: lo}})
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		l.Dashes, sc.GlyphStyle = pc.dashes, draw.GlyphStyle{Color: colourWhisker, Radius: vg.Points(2.5), Shape: pc.shape}
		p.Legend.Add(pc.name, l, sc)
	}
	cross, err := plotter.NewScatter(plotter.XYs{{X: 0, Y: lo}})
	if err != nil {
		return "", fmt.Errorf("draw the chart %q: %w", aria, err)
	}
	cross.GlyphStyle = draw.GlyphStyle{Color: colourWhisker, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
	p.Legend.Add("unsustained or unstable", cross)
	if len(failed) > 0 {
		box, err := plotter.NewScatter(plotter.XYs{{X: 0, Y: lo}})
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		box.GlyphStyle = draw.GlyphStyle{Color: colourWhisker, Radius: vg.Points(3.5), Shape: draw.BoxGlyph{}}
		p.Legend.Add("failed at this target (no latency)", box)
		hi *= 1.4
	}
	if sw.SLO.Set() {
		bound := msOf(sw.SLO.Bound)
		lo, hi = min(lo, bound), max(hi, bound)
		l, err := plotter.NewLine(plotter.XYs{{X: xMin / 1.1, Y: bound}, {X: xMax * 1.1, Y: bound}})
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		l.Color, l.Dashes = colourGuide, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("objective "+sw.SLO.String(), l)
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{top: hi * 1.4}
	p.Y.Min, p.Y.Max = lo/1.4, legendRoom(lo, hi)
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = xMin/1.15, xMax*1.15
	p.Legend.Top, p.Legend.Left = true, true
	return svgOf(p, curveWidth, curveHeight, aria)
}

// legendRoom is the top of a log latency axis from lo to hi that leaves
// the upper third of the chart to the legend.
func legendRoom(lo, hi float64) float64 {
	return hi * math.Pow(1.96*hi/lo, 0.6)
}

// latencyTicks label a log latency axis up to top, the legend's room
// above it bare; past three decades, at powers of ten only.
type latencyTicks struct{ top float64 }

func (l latencyTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := logTicks{}.Ticks(lo, min(hi, l.top))
	if math.Log10(min(hi, l.top)/lo) <= 3 {
		return ticks
	}
	var out []plot.Tick
	for _, t := range ticks {
		if e := math.Log10(t.Value); math.Abs(e-math.Round(e)) < 1e-9 {
			out = append(out, t)
		}
	}
	return out
}

// shortLogTicks label a log axis at 1, 2 and 5 of each decade, in k and
// M; an axis that spans none of those gets a linear axis's ticks.
type shortLogTicks struct{}

func (shortLogTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := logTicks{}.Ticks(lo, hi)
	if len(ticks) < 2 {
		return shortTicks{}.Ticks(lo, hi)
	}
	for i := range ticks {
		ticks[i].Label = short(ticks[i].Value)
	}
	return ticks
}

// serversOf are a sweep's servers, in the order of their points.
func serversOf(sw analysis.Sweep) []string {
	var names []string
	for _, pt := range sw.Points {
		if len(names) == 0 || names[len(names)-1] != pt.Server {
			names = append(names, pt.Server)
		}
	}
	return names
}

// percentilesOf is a row's percentile list: its tool's, else the five
// percentiles every result keeps.
func percentilesOf(r analysis.Row) []record.Percentile {
	if len(r.Percentiles) > 0 {
		return r.Percentiles
	}
	return []record.Percentile{{Q: 0.5, Latency: r.P50}, {Q: 0.9, Latency: r.P90}, {Q: 0.95, Latency: r.P95}, {Q: 0.99, Latency: r.P99}, {Q: 0.999, Latency: r.P999}}
}

// hdrChart draws one server's latency distribution at each rate of a
// sweep, as HdrHistogram's percentile plot does (the shape wrk2 made
// known): latency against the percentile on a 1/(1−q) log axis, which
// spreads the tail; one line per rate, from the percentiles of its
// rounds' merged histograms (else the medians of their lists), each one
// the calls can support.
func hdrChart(sw analysis.Sweep, server string) (template.HTML, error) {
	aria := "latency by percentile at each rate, " + server + ", " + sw.Name
	p := newPlot()
	p.X.Label.Text = "percentile (log scale of 1/(1−q))"
	p.Y.Label.Text = "latency, ms (log scale)"
	lo, hi, n, xMax := math.Inf(1), math.Inf(-1), 0, 0.0
	for _, pt := range sw.Points {
		if pt.Server != server {
			continue
		}
		var xys plotter.XYs
		for _, h := range percentilesOf(pt.Row) {
			if v := msOf(h.Latency); v > 0 {
				xys = append(xys, plotter.XY{X: 1 / (1 - h.Q), Y: v})
				xMax = max(xMax, 1/(1-h.Q))
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		colour := seriesColours[n%len(seriesColours)]
		l.Color, l.Width = colour, vg.Points(1.2)
		sc.GlyphStyle = draw.GlyphStyle{Color: colour, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		if pt.Mark() != "" {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			sc.Shape = draw.CrossGlyph{}
		}
		p.Add(l, sc)
		p.Legend.Add(curveLabel(pt), l, sc)
		n++
	}
	if n == 0 {
		return "", nil
	}
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = quantileTicks{}, latencyTicks{top: hi * 1.4}
	p.X.Min, p.X.Max = 1.5, 2*xMax
	p.Y.Min, p.Y.Max = lo/1.4, legendRoom(lo, hi)
	p.Legend.Top, p.Legend.Left = true, true
	return svgOf(p, smallWidth, smallHeight+0.6*vg.Inch, aria)
}

// curveLabel names a point in a legend: its rate, what it achieved, and
// whether it was sustained.
func curveLabel(pt analysis.Point) string {
	label := fmt.Sprintf("%s: %.0f req/s", pt.Rate, pt.Row.RPS.Median)
	switch {
	case pt.Failed != "":
		label = fmt.Sprintf("%s: %.0f req/s (failed)", pt.Rate, pt.Target)
	case pt.Unsustained != "":
		label += " (unsustained)"
	case pt.Unstable != "":
		label += " (unstable)"
	}
	return label
}

// quantileTicks label a 1/(1−q) axis with its percentiles: 2 is 50%, 10
// is 90%, 100 is 99%.
type quantileTicks struct{}

func (quantileTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, x := range []float64{2, 10, 100, 1000, 10000, 100000} {
		if x >= lo && x <= hi {
			// Six digits: 1 − 1/10⁵ is not 0.99999 in floating point.
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(100*(1-1/x), 'g', 6, 64) + "%"})
		}
	}
	return ticks
}
