package report

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/grpcbench/grpcbench/orchestrator/internal/analysis"
)

// maxDashes dash the line of a series' longest latencies, beside its
// mean's solid one.
var maxDashes = []vg.Length{vg.Points(1.5), vg.Points(2)}

// latencyTimeChart draws one server's latency over time at each rate of a
// sweep, from the load tool's series: per 250 ms interval the mean (solid)
// and the longest (dotted) latency of the calls answered in it, a colour
// per rate and a line per round, in seconds from the start of the window
// (the warm-up before it, grey). A queue that grows shows as a line that
// climbs; one that settles, flat. Empty when no point has a series.
func latencyTimeChart(sw analysis.Sweep, server string) (template.HTML, error) {
	aria := "latency over time at each rate, " + server + ", " + sw.Name
	p := newPlot()
	p.X.Label.Text = "seconds from the start of the window"
	p.Y.Label.Text = "latency, ms (log scale)"
	p.X.Tick.Marker = shortTicks{}
	lo, hi, from, to := math.Inf(1), math.Inf(-1), 0.0, 0.0
	n := 0
	var lines []plot.Plotter // added after the warm-up's shade, which needs their range
	for _, pt := range sw.Points {
		if pt.Server != server || len(pt.Series) == 0 {
			continue
		}
		colour := seriesColours[n%len(seriesColours)]
		n++
		for _, rs := range pt.Series {
			from = min(from, rs.Start.Sub(rs.Window).Seconds())
			for _, line := range []struct {
				values []time.Duration
				dashes []vg.Length
				width  vg.Length
			}{{rs.Mean, nil, vg.Points(1.2)}, {rs.Max, maxDashes, vg.Points(0.8)}} {
				var xys plotter.XYs
				for i, d := range line.values {
					if v := msOf(d); v > 0 {
						x := rs.Start.Add(time.Duration(i)*rs.Interval + rs.Interval/2).Sub(rs.Window).Seconds()
						xys = append(xys, plotter.XY{X: x, Y: v})
						lo, hi, to = min(lo, v), max(hi, v), max(to, x)
					}
				}
				if len(xys) == 0 {
					continue
				}
				l, err := plotter.NewLine(xys)
				if err != nil {
					return "", fmt.Errorf("draw the chart %q: %w", aria, err)
				}
				l.Color, l.Width, l.Dashes = colour, line.width, line.dashes
				lines = append(lines, l)
			}
		}
		key, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}})
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		key.Color, key.Width = colour, vg.Points(1.2)
		p.Legend.Add(curveLabel(pt), key)
	}
	if math.IsInf(lo, 1) {
		return "", nil
	}
	bottom, top := lo/1.4, legendRoom(lo, hi)
	if err := shade(p, [2]float64{from, 0}, bottom, top, colourWarmup); err != nil {
		return "", fmt.Errorf("draw the chart %q: %w", aria, err)
	}
	p.Add(lines...)
	for _, k := range []struct {
		name   string
		dashes []vg.Length
	}{{"mean", nil}, {"max", maxDashes}} {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: lo}})
		if err != nil {
			return "", fmt.Errorf("draw the chart %q: %w", aria, err)
		}
		l.Color, l.Dashes = colourWhisker, k.dashes
		p.Legend.Add(k.name, l)
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = latencyTicks{top: hi * 1.4}
	p.Y.Min, p.Y.Max = bottom, top
	p.X.Min, p.X.Max = from, to
	p.Legend.Top, p.Legend.Left = true, true
	return svgOf(p, smallWidth, smallHeight+0.6*vg.Inch, aria)
}

// shade fills a span of the time axis, from bottom to top, under the
// lines.
func shade(p *plot.Plot, span [2]float64, bottom, top float64, c color.Color) error {
	if span[1] <= span[0] {
		return nil
	}
	poly, err := plotter.NewPolygon(plotter.XYs{{X: span[0], Y: bottom}, {X: span[1], Y: bottom}, {X: span[1], Y: top}, {X: span[0], Y: top}})
	if err != nil {
		return err
	}
	poly.Color, poly.Width = c, 0
	p.Add(poly)
	return nil
}
